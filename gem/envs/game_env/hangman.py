"""Hangman: find a secret English word by guessing letters or the whole word.

A guess is the last ``\\boxed{...}`` in the action: one letter (``\\boxed{E}``) or a whole word
(``\\boxed{TIGER}``), letters only. A correct letter shows every place it stands in the word; the game is
won when the whole word shows or a whole-word guess is right. As in GEM, every guess costs one of the
``max_turns`` turns. Secrets are common English words (``hardcore=True``: less common ones) from
:mod:`gem.envs.game_env.words`.

Rewards, as GEM (``dense_reward=True``, the default): a letter that shows new places in the word pays
half the success reward times the share of the word it shows; the win pays the rest, so a won episode
returns 1. With ``dense_reward=False`` only the win pays (1). Other guesses 0; an invalid guess (a
letter guessed before, a word of the wrong length or guessed before) 0 and the turn is spent; no
parsable guess -0.1 and the episode ends. Running out of turns truncates the episode.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env import words
from gem.envs.game_env._word_base import SECRET_WORD_PARAMS, SecretWordEnv
from gem.params import Param, check_params
from gem.utils.text import preview

RANDOM_CONFIGS: tuple[tuple[int, int], ...] = ((3, 10), (5, 15), (7, 20))  # (word_length, max_turns)
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _tier(hardcore: bool) -> words.Tier:
    return "rare" if hardcore else "common"


class HangmanEnv(SecretWordEnv):
    """Find a ``word_length``-letter word within ``max_turns`` guesses.

    ``word_length=None`` or ``max_turns=None`` draws (3, 10), (5, 15) or (7, 20) per episode
    (the ``-random`` preset).
    """

    reset_before_first_step = True  # a step before reset plays in a fresh episode
    PARAMS = (
        SECRET_WORD_PARAMS[0],
        Param("hardcore", bool, "secret words from the rare word list"),
        *SECRET_WORD_PARAMS[1:],
    )

    def __init__(
        self,
        word_length: Optional[int] = 5,
        hardcore: bool = False,
        max_turns: Optional[int] = 20,
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self.hardcore = bool(hardcore)
        super().__init__(
            word_length, max_turns, _tier(self.hardcore), tuple(n for n, _ in RANDOM_CONFIGS), dense_reward
        )
        self.guessed_letters: list[str] = []
        self.guessed_words: list[str] = []
        self._board = ""  # the word and letter lines as rendered, redrawn when a new letter is guessed

    # ------------------------------------------------------------------ API
    def sample_random_action(self) -> str:
        rng = self.action_rng
        if rng.random() < 0.8:
            return "\\boxed{" + rng.choice(ALPHABET) + "}"
        return self._random_word(rng)

    def make_solver(self) -> Agent:
        return HangmanSolver()

    # ------------------------------------------------------------ game hooks
    def _tier(self) -> words.Tier:
        return _tier(self.hardcore)

    def _draw_config(self, rng: random.Random) -> None:
        self.word_length, self.max_turns = rng.choice(RANDOM_CONFIGS)

    shaping_weight = 0.5  # GEM: half the success reward for revealed letters, half for the win

    def _new_episode(self, rng: random.Random) -> str:
        self._draw_secret(rng)
        self.guessed_letters = []
        self.guessed_words = []
        self._draw_board()
        return self._instructions() + "\n\n" + self.render()

    def _play(self, found: re.Match[str], turn: int) -> tuple[str, float, bool]:
        guess = found.group().replace(" ", "").upper()
        secret = self.secret
        letters = self.guessed_letters
        reward = self.internal_step_reward
        if len(guess) == 1:
            if guess in letters:
                headline = f"Turn {turn}: you already guessed the letter {guess}."
                reward = self.invalid_action_reward
            else:
                letters.append(guess)
                self._draw_board()
                hits = secret.count(guess)
                if hits:
                    shown = sum(ch in letters for ch in secret)
                    reward = self.shaping.progress(shown / len(secret), self)
                headline = (
                    f"Turn {turn}: yes, {guess} appears {hits} time(s) in the word."
                    if hits
                    else f"Turn {turn}: no, {guess} is not in the word."
                )
        elif len(guess) != self.word_length:
            headline = (
                f"Turn {turn}: {preview(guess, 30)} has {len(guess)} letters but the word has {self.word_length}; "
                "guess one letter or the whole word."
            )
            reward = self.invalid_action_reward
        elif guess in self.guessed_words:
            headline = f"Turn {turn}: you already guessed the word {guess}."
            reward = self.invalid_action_reward
        else:
            self.guessed_words.append(guess)
            headline = f"Turn {turn}: {guess} is not the word."
        if guess == secret or set(secret).issubset(letters):
            return f"Turn {turn}: the word is {secret}. You win in {turn} turns!", reward, True
        return headline, reward, False

    def _answer_hint(self) -> str:
        return "A guess is one letter, e.g. \\boxed{E}, or the whole word, in \\boxed{}."

    # -------------------------------------------------------------- helpers
    def pattern(self) -> str:
        """The word with unguessed letters as '_' (letters separated by spaces)."""
        letters = self.guessed_letters
        return " ".join([ch if ch in letters else "_" for ch in self.secret])

    def render(self) -> str:
        """The word so far, the letters tried and the turns left."""
        return f"{self._board}Turns left: {self.max_turns - self.turn_count}."

    def _draw_board(self) -> None:
        letters = sorted(self.guessed_letters)
        wrong = [ch for ch in letters if ch not in self.secret]
        self._board = (
            f"Word: {self.pattern()}\n"
            f"Letters guessed: {' '.join(letters) or '(none)'}\n"
            f"Letters not in the word: {' '.join(wrong) or '(none)'}\n"
        )

    def _instructions(self) -> str:
        kind = "a less common English word" if self.hardcore else "a common English word"
        return (
            "You are playing Hangman.\n"
            f"Find the secret {self.word_length}-letter word, {kind}, within {self.max_turns} turns.\n"
            "Each turn, guess one letter or the whole word. A letter in the word is shown at every place it "
            "stands; you win when the whole word is shown or you guess the word. Every guess uses a turn.\n"
            "Write your guess inside \\boxed{}: \\boxed{E} guesses a letter, \\boxed{"
            + self._example_word()
            + "} a whole word. Only the last \\boxed{} in your reply counts. A letter or word you guessed "
            "before, or a word of the wrong length, wastes the turn; a reply without a boxed guess ends the game.\n"
            "Unguessed letters are shown as '_'."
        )


# ---------------------------------------------------------------------------------------- solver
_RULES = re.compile(r"Find the secret (\d+)-letter word, a (less )?common English word, within (\d+) turns")
_STATE = re.compile(r"Word: ([A-Z_ ]+)\nLetters guessed: ([A-Z ]+|\(none\))\n")
_TURNS = re.compile(r"Turns left: (\d+)\.")
ENTROPY_LIMIT = 150  # above this many candidate words, pick the letter most of them contain


class HangmanSolver(Agent):
    """Keeps the listed words consistent with the board; guesses the most informative letter.

    The letter is the one whose revealed positions split the remaining words most evenly (highest
    entropy); while more than :data:`ENTROPY_LIMIT` words remain, the one most of them contain.

    With one or two words left (or on the last turn) it guesses the most frequent remaining word.
    """

    def __init__(self) -> None:
        self.candidates: list[str] = []
        self.tried_words: set[str] = set()

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        found = _RULES.search(observation)
        if found is None:
            raise ValueError("HangmanSolver: the first observation does not state the word length.")
        tier = _tier(found.group(2) is not None)
        self.candidates = [w.upper() for w in words.words(int(found.group(1)), tier)]
        self.tried_words = set()

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        state = _STATE.search(observation)
        turns = _TURNS.search(observation)
        if state is None:
            raise RuntimeError("HangmanSolver: the observation does not show the board.")
        pattern = state.group(1).split(" ")
        guessed = set() if state.group(2) == "(none)" else set(state.group(2).split())
        self.candidates = [
            w for w in self.candidates if w not in self.tried_words and _fits(w, pattern, guessed)
        ]
        if not self.candidates:
            raise RuntimeError("HangmanSolver: no listed word fits the board.")
        left = int(turns.group(1)) if turns else 1
        if len(self.candidates) <= 2 or left <= 1:
            word = self.candidates[0]
            self.tried_words.add(word)
            return "\\boxed{" + word + "}"
        open_letters = [ch for ch in ALPHABET if ch not in guessed]
        if len(self.candidates) > ENTROPY_LIMIT:  # cheap proxy while many words remain
            counts = dict.fromkeys(open_letters, 0)
            for w in self.candidates:
                for ch in set(w):
                    if ch in counts:
                        counts[ch] += 1
            return "\\boxed{" + max(open_letters, key=lambda ch: (counts[ch], -ord(ch))) + "}"
        return "\\boxed{" + max(open_letters, key=self._score) + "}"

    def _score(self, letter: str) -> tuple[float, int]:
        """Entropy of the positions ``letter`` would show across the candidates (ties: earlier letter)."""
        parts: dict[tuple[int, ...], int] = {}
        for w in self.candidates:
            key = tuple(i for i, ch in enumerate(w) if ch == letter)
            parts[key] = parts.get(key, 0) + 1
        n = len(self.candidates)
        return -sum(c / n * math.log(c / n) for c in parts.values()), -ord(letter)


def _fits(word: str, pattern: list[str], guessed: set[str]) -> bool:
    """Whether ``word`` shows as ``pattern`` after the letters ``guessed``."""
    for ch, shown in zip(word, pattern):
        if shown == "_":
            if ch in guessed:
                return False
        elif ch != shown:
            return False
    return True
