"""Per-env random generators.

Envs never touch the module-global ``random`` or ``numpy.random`` state: each owns a
``random.Random`` and, when it needs one, a ``numpy.random.Generator``, both derived from the seed
given to ``reset``. ``set_seed`` is for a user's own script (it seeds the global generators of
Python, NumPy and torch); GEM itself never calls it. ``np_random``, ``RNG`` and
``RandomNumberGenerator`` are GEM's (and Gymnasium's) names.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Optional


_system_random = random.SystemRandom()


def fresh_seed() -> int:
    """A seed from the operating system's entropy, for envs reset without one."""
    return _system_random.getrandbits(63)  # what secrets.randbits does, without importing hashlib


def make_rng(seed: int) -> random.Random:
    """A Python generator for ``seed``."""
    return random.Random(seed)


def make_np_rng(seed: int) -> Any:
    """A NumPy generator for ``seed`` (NumPy is imported here, not at ``import gem``)."""
    import numpy as np

    return np.random.default_rng(seed)


def np_random(seed: Optional[int] = None) -> tuple[Any, Any]:
    """``(numpy.random.Generator, seed)``: a PCG64 generator for ``seed`` and the entropy it was
    built from (drawn from the OS when ``seed`` is ``None``), as Gymnasium's.

    Raises ``ValueError`` unless ``seed`` is ``None`` or a non-negative int.
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"The seed must be None or a non-negative int, got {seed!r}.")
    import numpy as np

    seed_seq = np.random.SeedSequence(seed)
    return np.random.Generator(np.random.PCG64(seed_seq)), seed_seq.entropy


def set_seed(seed: Optional[int] = None) -> None:
    """Seed the global generators of Python, NumPy and (if imported) torch, for user scripts.

    ``None`` (the default) reseeds Python and NumPy from the OS and leaves
    torch alone.
    """
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(None if seed is None else seed % (2**32))
    except ImportError:
        pass
    torch = sys.modules.get("torch")
    if torch is not None and seed is not None:
        torch.manual_seed(seed)


def __getattr__(name: str) -> Any:
    # ``RNG``/``RandomNumberGenerator`` are numpy.random.Generator, resolved on first use so that
    # importing this module (every ``import gem`` does) does not import NumPy.
    if name in ("RNG", "RandomNumberGenerator"):
        import numpy as np

        return np.random.Generator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
