"""Wordle: find a secret English word from coloured letter feedback.

A guess is the last ``\\boxed{...}`` in the action holding one word (letters only; spaces between
letters are ignored): ``\\boxed{CRANE}``. Each letter is marked G (right letter, right place), Y (in the
word, elsewhere) or X (not in the word, or already accounted for by other copies). Secrets are common
English words (:mod:`gem.envs.game_env.words`); with ``only_real_words=True`` a guess must be in the
dictionary too.

Rewards, as GEM (``dense_reward=True``, the default): a guess that turns new places green pays half the
success reward times the share of places newly green; finding the word pays the rest, so a won episode
returns 1. With ``dense_reward=False`` only the win pays (1). Other guesses 0; an invalid guess (wrong
length, not a word, guessed before) 0 and the turn is spent; no parsable guess -0.1 and the episode
ends. Running out of turns truncates the episode.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env import words
from gem.envs.game_env._word_base import SECRET_WORD_PARAMS, SecretWordEnv
from gem.params import Param, check_params
from gem.utils.text import preview

RANDOM_LENGTHS = (3, 4, 5)  # -random: this many letters and 5 turns per letter


def feedback(secret: str, guess: str) -> str:
    """The G/Y/X marks of ``guess`` against ``secret`` (same length, same case)."""
    if secret == guess:
        return "G" * len(guess)
    marks = ["X"] * len(guess)
    spare = []  # letters of the secret not matched in place
    for i, (s, g) in enumerate(zip(secret, guess)):
        if s == g:
            marks[i] = "G"
        else:
            spare.append(s)
    for i, g in enumerate(guess):
        if marks[i] == "X" and g in spare:
            marks[i] = "Y"
            spare.remove(g)
    return "".join(marks)


class WordleEnv(SecretWordEnv):
    """Guess a ``word_length``-letter word within ``max_turns`` guesses.

    ``word_length=None`` or ``max_turns=None`` draws 3 to 5 letters and 5 turns per letter per episode
    (the ``-random`` preset).
    """

    PARAMS = (
        SECRET_WORD_PARAMS[0],
        Param("only_real_words", bool, "a guess must be a word of the word list"),
        *SECRET_WORD_PARAMS[1:],
    )

    def __init__(
        self,
        word_length: Optional[int] = 5,
        only_real_words: bool = True,
        max_turns: Optional[int] = 20,
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        super().__init__(word_length, max_turns, "common", RANDOM_LENGTHS, dense_reward)
        self.only_real_words = bool(only_real_words)
        self.history: list[tuple[str, str]] = []
        self._guessed: set[str] = set()  # the guesses of the history, for the repeat check
        self._lines: list[str] = []  # the history as rendered
        self._board = ""  # the history and the absent letters as rendered, redrawn after each guess
        self._present: set[str] = set()
        self._absent: set[str] = set()
        self._green: set[int] = set()  # places found green so far (GEM's milestones)

    # ------------------------------------------------------------------ API
    def sample_random_action(self) -> str:
        return self._random_word(self.action_rng)

    def make_solver(self) -> Agent:
        return WordleSolver()

    # ------------------------------------------------------------ game hooks
    def _draw_config(self, rng: random.Random) -> None:
        self.word_length = rng.choice(RANDOM_LENGTHS)
        self.max_turns = 5 * self.word_length

    shaping_weight = 0.5  # GEM: half the success reward for green places, half for the win

    def _new_episode(self, rng: random.Random) -> str:
        self._draw_secret(rng)
        self._green = set()
        self.history = []
        self._guessed = set()
        self._lines = ["Guesses so far:"]
        self._present, self._absent = set(), set()
        self._draw_board()
        return self._instructions()

    def _play(self, found: re.Match[str], turn: int) -> tuple[str, float, bool]:
        guess = found.group().replace(" ", "").upper()
        problem = self._problem(guess)
        if problem is not None:
            return (
                f"Turn {turn}: invalid guess {preview(guess, 40)}: {problem}",
                self.invalid_action_reward,
                False,
            )
        marks = feedback(self.secret, guess)
        shown = " ".join(marks)
        self.history.append((guess, marks))
        self._guessed.add(guess)
        self._lines.append(f"  {len(self.history):2}. {' '.join(guess)}\n      {shown}")
        absent, present = self._absent, self._present
        for g, m in zip(guess, marks):
            (absent if m == "X" else present).add(g)
        if guess == self.secret:
            return (
                f"Turn {turn}: {guess} is the secret word. You solved it in {turn} turns!",
                self.internal_step_reward,  # the win itself is paid by WordGameEnv.step
                True,
            )
        self._draw_board()
        green = self._green
        green.update(i for i, m in enumerate(marks) if m == "G")
        reward = self.shaping.progress(len(green) / len(marks), self)
        return f"Turn {turn}: you guessed {guess}; feedback {shown}.", reward, False

    def _answer_hint(self) -> str:
        return (
            f"A guess is one {self.word_length}-letter word (letters only) in \\boxed{{}}, e.g. {self._example()}."
        )

    # -------------------------------------------------------------- helpers
    def render(self) -> str:
        """Every guess with its marks, the letters known to be absent, and the turns left."""
        return f"{self._board}Turns left: {self.max_turns - self.turn_count}."

    def _draw_board(self) -> None:
        lines = list(self._lines)
        absent = sorted(self._absent - self._present)
        if absent:
            lines.append("Letters not in the word: " + " ".join(absent))
        lines.append("")
        self._board = "\n".join(lines)

    def _problem(self, guess: str) -> Optional[str]:
        if len(guess) != self.word_length:
            return f"it has {len(guess)} letters but the secret word has {self.word_length}."
        if self.only_real_words and not words.is_word(guess):
            return "it is not in the word list; guess an English word."
        if guess in self._guessed:
            return "you guessed this word before."
        return None

    def _example(self) -> str:
        return "\\boxed{" + self._example_word() + "}"

    def _instructions(self) -> str:
        return (
            "You are playing Wordle.\n"
            f"Find the secret {self.word_length}-letter word, a common English word, within {self.max_turns} turns.\n"
            "After each guess every letter is marked: G (green) the letter is in the word at this place; "
            "Y (yellow) the letter is in the word at another place; X the letter is not in the word (or "
            "the word has no more copies of it).\n"
            + ("Every guess must be an English word. " if self.only_real_words else "")
            + f"Write your guess inside \\boxed{{}}, for example {self._example()}; only the "
            "last \\boxed{} in your reply counts. A guess of the wrong length"
            + (", a word not in the dictionary" if self.only_real_words else "")
            + " or a word you guessed before wastes the turn; a reply without a boxed guess ends the game.\n"
            "Enter your first guess."
        )


# ---------------------------------------------------------------------------------------- solver
_LENGTH = re.compile(r"Find the secret (\d+)-letter word")
_FEEDBACK = re.compile(r"you guessed ([A-Z]+); feedback ([GYX](?: [GYX])*)\.")
EXACT_LIMIT = 100  # pick guesses by partition count when at most this many words remain


class WordleSolver(Agent):
    """Keeps the common words consistent with all feedback; guesses the one that splits them most.

    While many words remain it guesses the candidate with the most frequent letters (a cheap proxy);
    with at most :data:`EXACT_LIMIT` left it picks the candidate giving the most distinct feedbacks.
    """

    def __init__(self) -> None:
        self.candidates: list[str] = []
        self.last: Optional[str] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        found = _LENGTH.search(observation)
        if found is None:
            raise ValueError("WordleSolver: the first observation does not state the word length.")
        self.candidates = [w.upper() for w in words.words(int(found.group(1)), "common")]
        self.last = None

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        found = _FEEDBACK.search(observation)
        if found is not None:
            guess, marks = found.group(1), found.group(2).replace(" ", "")
            self.candidates = [w for w in self.candidates if w != guess and feedback(w, guess) == marks]
        if not self.candidates:
            raise RuntimeError("WordleSolver: no common word fits the feedback.")
        self.last = self._pick()
        return "\\boxed{" + self.last + "}"

    def _pick(self) -> str:
        cands = self.candidates
        if len(cands) <= 2:
            return cands[0]
        if len(cands) > EXACT_LIMIT:
            return _frequent_letters_word(tuple(cands))
        return max(cands, key=lambda g: len({feedback(w, g) for w in cands}))


@functools.lru_cache(maxsize=64)
def _frequent_letters_word(cands: tuple[str, ...]) -> str:
    """The candidate whose distinct letters are the most common among the candidates (cached: the
    first guess of every episode of a length sees the same list)."""
    freq: dict[str, int] = {}
    for w in cands:
        for ch in set(w):
            freq[ch] = freq.get(ch, 0) + 1
    return max(cands, key=lambda w: sum(freq[ch] for ch in set(w)))
