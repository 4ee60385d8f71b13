"""The original GEM's ReasoningGym names: ``ds`` and ``dataset`` (reasoning-gym's dataset object)
and ``data`` (the current item).

:class:`ReasoningGymCompat` gives :class:`gem.envs.reasoning_gym.ReasoningGymEnv` those names,
read-only, on top of its own state: ``dataset``/``ds`` are the dataset ``reset()`` walks now
(``score_answer`` scores an item as the env does), ``data`` is ``item``.
"""

from __future__ import annotations

from typing import Any


class ReasoningGymCompat:
    """``ds``, ``dataset`` and ``data`` (see the module docstring).

    The class using it holds ``_pass_ds`` (the pass number and its dataset) and ``item``.
    """

    _pass_ds: tuple[int, Any]
    item: dict[str, Any]

    @property
    def dataset(self) -> Any:
        """reasoning-gym's dataset object for the items ``reset()`` walks now."""
        return self._pass_ds[1]

    ds = dataset

    @property
    def data(self) -> dict[str, Any]:
        """The current item (question, answer, metadata): ``item``."""
        return self.item
