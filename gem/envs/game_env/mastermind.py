"""Mastermind: find a secret code of digits from black/white peg feedback.

A guess is the last ``\\boxed{...}`` in the action holding ``code_length`` digits separated by spaces
(``\\boxed{1 2 3 4}``; commas and brackets are tolerated, and ``\\boxed{1234}`` works while the digits
are single). A black peg is a right digit in the right place, a white peg a right digit in the wrong
place. Rewards: cracking the code 1; any other guess 0; an invalid guess (wrong length, digit out of
range, a repeated digit when duplicates are not allowed, a guess made before) 0 and the turn is
spent; no parsable guess -0.1 and the episode ends. Running out of turns truncates the episode.
GEM's shaping reward for new black pegs is not given: the episode's return is 1 exactly when solved.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Optional

from gem.envs.game_env._prompts import GAME_OVER_SUFFIX, first_request
from gem.core import Agent, Env, StepResult
from gem.envs.game_env._shaping import ProgressReward
from gem.params import Param, check_params, max_turns_param
from gem.utils.constants import LanguageGameReward as R
from gem.utils.parsing import extract_last_boxed_answer
from gem.utils.text import preview

# (code_length, num_numbers, max_turns) drawn by the -random preset, as GEM.
RANDOM_CONFIGS: tuple[tuple[int, int, int], ...] = ((2, 4, 10), (4, 6, 20), (4, 8, 30))

_SEPARATORS = str.maketrans(",;[]()", "      ")
_PLAIN = re.compile(r"[1-9]\d{0,2}(?: [1-9]\d{0,2})*", re.ASCII)  # the usual form, parsed on a fast path
_NUMBER = {str(i): i for i in range(1000)}  # int() is slow for the hot path
_PLAIN_GUESSES: dict[str, tuple[int, ...]] = {}  # "1 2 3" -> (1, 2, 3), remembered across episodes
_PLAIN_CACHE_SIZE = 1 << 14


def score(secret: tuple[int, ...], guess: tuple[int, ...]) -> tuple[int, int]:
    """(black pegs, white pegs) for ``guess`` against ``secret``."""
    black = sum(s == g for s, g in zip(secret, guess))
    if len(set(secret)) == len(secret):  # no repeats in the code: each shared digit counts once
        common = len(set(secret).intersection(guess))
    else:
        common = sum(min(secret.count(d), guess.count(d)) for d in set(guess))
    return black, common - black


class MastermindEnv(Env):
    """Crack a ``code_length``-digit code over digits ``1..num_numbers`` in ``max_turns`` guesses.

    ``code_length=None``/``num_numbers=None``/``max_turns=None`` draw the three from
    :data:`RANDOM_CONFIGS` per episode (the ``-random`` preset).

    ``dense_reward=True`` (default, as GEM) pays each new best count of black pegs as its share of
    the code, so a cracked code returns 1 in total; ``False`` pays only the win (see
    :mod:`._shaping`).
    """

    reset_before_first_step = True  # a step before reset plays in a fresh episode
    PARAMS = (
        Param("code_length", int, "digits in the code (None: drawn per episode)", min=1, nullable=True,
              client={"max": 8}),
        Param("num_numbers", int, "digits to choose from, 1 to num_numbers (None: drawn per episode)",
              min=1, max=99, nullable=True, client={"max": 10}),
        Param("duplicate_numbers", bool, "a digit may appear more than once in the code"),
        max_turns_param("guesses allowed (None: drawn per episode)"),
        Param("dense_reward", bool, "each new best count of black pegs earns its share of the code"),
    )

    def __init__(
        self,
        code_length: Optional[int] = 4,
        num_numbers: Optional[int] = 6,
        duplicate_numbers: bool = False,
        max_turns: Optional[int] = 20,
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self._random_params = code_length is None or num_numbers is None or max_turns is None
        if not self._random_params:
            _validate(code_length, num_numbers, max_turns, duplicate_numbers)
        self.code_length = code_length or 4
        self.num_numbers = num_numbers or 6
        self.max_turns = max_turns or 20
        self.duplicate_numbers = bool(duplicate_numbers)
        self.shaping = ProgressReward(dense_reward)
        self.secret: tuple[int, ...] = ()
        self.turn_count = 0
        self.history: list[tuple[tuple[int, ...], int, int]] = []
        self._lines: list[str] = []  # the history as rendered, one line per guess
        self._guessed: set[tuple[int, ...]] = set()
        self._places: dict[int, int] = {}
        self._shown: Optional[str] = None  # the last parsed guess as written, when already canonical

    # ------------------------------------------------------------------ API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        rng = self.rng
        if self._random_params:
            self.code_length, self.num_numbers, self.max_turns = rng.choice(RANDOM_CONFIGS)
        digits = range(1, self.num_numbers + 1)
        if self.duplicate_numbers:
            self.secret = tuple(rng.choice(digits) for _ in range(self.code_length))
        else:
            self.secret = tuple(rng.sample(digits, self.code_length))
        self.turn_count = 0
        self.shaping.reset()
        self.history = []
        self._lines = ["Guesses so far:"]
        self._guessed = set()
        # digit -> place in the code, for scoring codes without repeats in one pass
        self._places = {} if self.duplicate_numbers else {d: i for i, d in enumerate(self.secret)}
        return self._instructions(), {"suffix": first_request(self.get_task_suffix())}

    def _step(self, action: str) -> StepResult:
        turn = self.turn_count = self.turn_count + 1
        guess = self._parse(action)
        if guess is None:
            return self._result(
                f"Turn {turn}: no valid guess found in '{preview(action, 60)}'. A guess is {self.code_length} digits "
                f"separated by spaces in \\boxed{{}}, e.g. {self._example()}. The game is over.",
                self.format_error_reward,
                terminated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        problem = self._problem(guess)
        if problem is None:
            black, white = self._score(guess)
            shown = self._shown if self._shown is not None else " ".join(map(str, guess))
            self.history.append((guess, black, white))
            self._guessed.add(guess)
            self._lines.append(f"  {len(self.history):2}. {shown}  black {black}  white {white}")
            if black == self.code_length:
                return self._result(
                    f"Turn {turn}: {shown} is the secret code. You cracked it in {turn} turns!",
                    self.shaping.win(self),
                    terminated=True,
                    info={"suffix": GAME_OVER_SUFFIX, "success": True},
                )
            feedback = f"Turn {turn}: you guessed {shown}: {black} black peg(s), {white} white peg(s)."
            reward = self.shaping.progress(black / self.code_length, self)
        else:
            shown = self._shown if self._shown is not None else _fmt(guess)  # digits: only shorten
            if len(shown) > 60:
                shown = shown[:57] + "..."
            feedback = f"Turn {turn}: invalid guess {shown}: {problem}"
            reward = self.invalid_action_reward
        if turn >= self.max_turns:
            return self._result(
                f"{feedback}\nYou have used all {self.max_turns} turns; the code was {_fmt(self.secret)}.",
                reward,
                truncated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        return f"{feedback}\n{self.render()}", float(reward), False, False, {"suffix": self.get_task_suffix()}

    def sample_random_action(self) -> str:
        rng = self.action_rng
        digits = range(1, self.num_numbers + 1)
        if self.duplicate_numbers:
            guess = [rng.choice(digits) for _ in range(self.code_length)]
        else:
            guess = rng.sample(digits, self.code_length)
        return "\\boxed{" + " ".join(map(str, guess)) + "}"

    def make_solver(self) -> Agent:
        return MastermindSolver()

    # -------------------------------------------------------------- helpers
    def get_task_suffix(self) -> str:
        return "Enter your next guess."

    def render(self) -> str:
        """The guesses so far with their pegs, and the turns left."""
        head = "\n".join(self._lines) if self.history else "No guesses yet."
        return f"{head}\nTurns left: {self.max_turns - self.turn_count}."

    def _score(self, guess: tuple[int, ...]) -> tuple[int, int]:
        """``score(self.secret, guess)``, in one pass when the code has no repeated digit."""
        places = self._places
        if not places:
            return score(self.secret, guess)
        black = white = 0
        for i, d in enumerate(guess):
            j = places.get(d)
            if j is not None:
                if i == j:
                    black += 1
                else:
                    white += 1
        return black, white

    def _parse(self, action: str) -> Optional[tuple[int, ...]]:
        content = extract_last_boxed_answer(action)
        if not content or len(content) > 200:
            return None
        plain = _PLAIN_GUESSES.get(content)
        if plain is None and _PLAIN.fullmatch(content):
            plain = tuple(map(_NUMBER.__getitem__, content.split(" ")))
            if len(_PLAIN_GUESSES) < _PLAIN_CACHE_SIZE:
                _PLAIN_GUESSES[content] = plain
        if plain is not None:
            self._shown = content  # already "d d d d"
            return plain
        self._shown = None
        tokens = content.translate(_SEPARATORS).split()
        if not tokens or not all(t.isascii() and t.isdigit() for t in tokens):
            return None
        if len(tokens) == 1 and len(tokens[0]) == self.code_length > 1 and self.num_numbers <= 9:
            tokens = list(tokens[0])  # "1234" written without spaces
        if any(len(t) > 3 for t in tokens):
            return None
        return tuple(map(int, tokens))

    def _problem(self, guess: tuple[int, ...]) -> Optional[str]:
        """Why ``guess`` is not a legal guess, or None."""
        if len(guess) != self.code_length:
            return f"it has {len(guess)} digit(s) but the code has {self.code_length}."
        if min(guess) < 1 or max(guess) > self.num_numbers:
            return f"every digit must be between 1 and {self.num_numbers}."
        if not self.duplicate_numbers and len(set(guess)) != len(guess):
            return "it repeats a digit, and the code has no repeated digits."
        if guess in self._guessed:
            return "you made this guess before."
        return None

    def _example(self) -> str:
        return "\\boxed{" + " ".join(str(d) for d in range(1, self.code_length + 1)) + "}"

    def _instructions(self) -> str:
        return _instructions(self.code_length, self.num_numbers, self.max_turns, self.duplicate_numbers)


@functools.lru_cache(maxsize=256)
def _instructions(code_length: int, num_numbers: int, max_turns: int, duplicates: bool) -> str:
    """The first observation for a variant (cached: resets are frequent and the text is fixed)."""
    example = "\\boxed{" + " ".join(str(d) for d in range(1, code_length + 1)) + "}"
    repeats = "may repeat" if duplicates else "are all different"
    return (
        "You are playing Mastermind.\n"
        f"I have chosen a secret code of {code_length} digits, each from 1 to {num_numbers}; "
        f"the digits of the code {repeats}. You have {max_turns} turns to find it.\n"
        "After each guess I give you pegs: a black peg for each digit that is right and in the right "
        "place, and a white peg for each digit that is in the code but in a different place.\n"
        f"Write your guess as {code_length} digits separated by spaces inside \\boxed{{}}, for "
        f"example {example}; only the last \\boxed{{}} in your reply counts. A guess of the "
        "wrong length, with a digit out of range"
        + ("" if duplicates else ", with a repeated digit")
        + " or that you made before wastes the turn; a reply without a boxed guess ends the game.\n"
        "Enter your first guess."
    )


def _fmt(code: tuple[int, ...]) -> str:
    return " ".join(map(str, code))


def _validate(code_length: Any, num_numbers: Any, max_turns: Any, duplicates: bool) -> None:
    if not duplicates and code_length > num_numbers:
        raise ValueError(
            f"A code of {code_length} different digits needs num_numbers >= {code_length} "
            f"(got {num_numbers}); lower code_length or pass duplicate_numbers=True."
        )


# ---------------------------------------------------------------------------------------- solver
_RULES = re.compile(
    r"secret code of (\d+) digits, each from 1 to (\d+); the digits of the code (may repeat|are)"
)
_FEEDBACK = re.compile(r"you guessed ([\d ]+): (\d+) black peg\(s\), (\d+) white peg\(s\)")


class MastermindSolver(Agent):
    """Knuth's minimax: each guess minimises the largest set of codes still consistent afterwards.

    Ties go to a code that is still consistent (so it may win at once), then to the smallest code.
    Feedback tables come from :mod:`gem.envs.game_env.mastermind_tables` (NumPy, cached per process).
    """

    def __init__(self) -> None:
        self.table: Any = None
        self.candidates: Any = None
        self.last: Optional[int] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        from gem.envs.game_env.mastermind_tables import feedback_table

        found = _RULES.search(observation)
        if found is None:
            raise ValueError("MastermindSolver: the first observation does not state the code's rules.")
        length, numbers, repeats = int(found.group(1)), int(found.group(2)), found.group(3) == "may repeat"
        self.table = feedback_table(length, numbers, repeats)
        self.candidates = None
        self.last = None

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        table = self.table
        if table is None:
            raise RuntimeError("MastermindSolver.act() before reset().")
        found = _FEEDBACK.search(observation)
        if found is not None and self.last is not None:
            self.candidates = table.filter(
                self.candidates, self.last, int(found.group(2)), int(found.group(3))
            )
        self.last = table.best_guess(self.candidates)
        return "\\boxed{" + _fmt(table.codes[self.last]) + "}"
