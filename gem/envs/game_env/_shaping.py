"""GEM's shaped game rewards: credit for progress along the way, a return of 1 for a win.

GEM pays its word and logic games per turn: a share of the success reward for every new black peg,
green letter, revealed letter, found word or revealed cell. The agent then learns from failed
episodes too, and the per-turn returns that REINFORCE with return batch normalization uses are
informative. :class:`ProgressReward` keeps that bookkeeping in one place for every such game:

* ``progress(p)`` pays the part of ``weight * p`` (``p`` the share of the task done, 0..1) that
  has not been paid yet, so credit is paid once and progress never lost costs nothing;
* ``win()`` pays what is left of the success reward, so a won episode returns exactly 1 in total,
  however the credit was spread;
* with ``dense=False`` (every game's ``dense_reward=False``) nothing is paid along the way and a
  win pays the whole success reward: the sparse reward, 1 exactly when the episode is won.
"""

from __future__ import annotations

from typing import Any

from gem.utils.constants import LanguageGameReward as R


class ProgressReward:
    """Pays progress once, and the rest of the success reward on a win (see the module docstring).

    ``weight`` is the share of the success reward that progress can earn before the win (GEM: 0.5
    for Wordle and Hangman, all of it for the others).
    """

    __slots__ = ("dense", "weight", "paid")

    def __init__(self, dense: bool = True, weight: float = 1.0) -> None:
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be between 0 and 1, got {weight!r}.")
        self.dense = bool(dense)
        self.weight = float(weight)
        self.paid = 0.0

    def reset(self) -> None:
        """A new episode: nothing paid yet."""
        self.paid = 0.0

    def progress(self, share: float, levels: Any = R) -> float:
        """The reward for having reached ``share`` (0..1) of the task: only what is new.

        ``levels`` holds the reward levels (``success_reward``, ``internal_step_reward``): the env,
        so that levels set on it (``gem.make(id, success_reward=2.0)``) are what it pays.
        """
        if not self.dense:
            return levels.internal_step_reward
        earned = self.weight * levels.success_reward * share
        if earned <= self.paid:
            return levels.internal_step_reward
        new, self.paid = earned - self.paid, earned
        return new

    def win(self, levels: Any = R) -> float:
        """The reward of the winning move: the success reward less what progress already paid."""
        rest = levels.success_reward - self.paid if self.dense else levels.success_reward
        self.paid = levels.success_reward
        return rest

    def __repr__(self) -> str:
        return f"ProgressReward(dense={self.dense}, weight={self.weight}, paid={self.paid:.4g})"
