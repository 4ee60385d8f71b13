"""Reward levels and other constants shared by every env, in one place.

Every game speaks the same scale: success 1, failure 0, an ordinary step 0, an invalid move 0 and a
format error (an action that cannot be parsed) -0.1. These are the class defaults of
:class:`gem.Env`'s reward levels (``gem.core.REWARD_LEVELS``); every env pays the levels its
instance holds, which any id's kwargs set: ``gem.make("game:GuessTheNumber-v0-easy",
success_reward=2.0, invalid_action_reward=-1.0)``. Shares of the task (shaped progress, partial
credit) are paid as shares of ``success_reward``.
"""

from __future__ import annotations

SUCCESS_REWARD: float = 1.0
INTERNAL_STEP_REWARD: float = 0.0
FAIL_REWARD: float = 0.0
INVALID_ACTION_REWARD: float = 0.0
FORMAT_ERROR_REWARD: float = -0.1

# Marker GEM uses for the observation after the final step of some wrappers.
TERMINAL_STATE = "<｜TERMINAL_STATE｜>"


class LanguageGameReward:
    """The reward levels under the names GEM's games use (kept so GEM code runs unchanged)."""

    success_reward: float = SUCCESS_REWARD
    internal_step_reward: float = INTERNAL_STEP_REWARD
    fail_reward: float = FAIL_REWARD
    invalid_action_reward: float = INVALID_ACTION_REWARD
    format_error_reward: float = FORMAT_ERROR_REWARD


# Imports GEM's Python tool added (by running the program a second time) when a name was missing;
# here they are put in front of the code before its only run, and only when asked (``auto_imports``).
COMMON_IMPORTS = (
    "from itertools import accumulate, chain, combinations, count, permutations, product\n"
    "from itertools import groupby, islice, repeat\n"
    "from copy import deepcopy\n"
    "from string import ascii_lowercase, ascii_uppercase\n"
    "from math import floor, log2, log10, sqrt, comb, gcd, ceil, inf, isqrt, factorial, atan2, pi\n"
    "from collections import defaultdict, deque, Counter\n"
    "from bisect import bisect, bisect_left, bisect_right, insort\n"
    "from heapq import heappush, heappop, heapify, heappushpop, nlargest, nsmallest\n"
    "from functools import reduce, lru_cache, cache, cmp_to_key\n"
    "import math, random, re, sys, string, heapq, itertools, collections, functools, bisect\n"
)

# The original GEM's header of imports for generated code (``gem.utils.constants.BASE_IMPORTS``):
# the common imports plus typing names, a few more standard modules and NumPy/pandas when installed.
BASE_IMPORTS = COMMON_IMPORTS + (
    "from typing import List, Tuple, Dict, Set, Optional, Union, Any, Callable, Iterable, Iterator\n"
    "from collections import OrderedDict\n"
    "from itertools import zip_longest, cycle, pairwise\n"
    "from functools import partial\n"
    "from operator import itemgetter, iand, sub, xor, or_\n"
    "from math import log, prod\n"
    "from os.path import commonprefix\n"
    "from time import time\n"
    "import copy, datetime, io, operator, os\n"
    "try:\n"
    "    import numpy as np\n"
    "except ImportError:\n"
    "    pass\n"
    "try:\n"
    "    import pandas as pd\n"
    "except ImportError:\n"
    "    pass\n"
)
