"""The original GEM's ReasoningGym names: ``ds`` and ``dataset`` (reasoning-gym's dataset object)
and ``data`` (the current item).

:func:`reasoning_gym_compat` gives :class:`gem.envs.reasoning_gym.ReasoningGymEnv` those names,
read-only, on top of its own state: ``dataset``/``ds`` are the dataset ``reset()`` walks now
(``score_answer`` scores an item as the env does), ``data`` is ``item``.
"""

from __future__ import annotations

from typing import Any

from gem.compat.attach import decorator


class ReasoningGymNames:
    """The names :func:`reasoning_gym_compat` adds (see the module docstring).

    The class given them holds ``_pass_ds`` (the pass number and its dataset) and ``item``.
    """

    @property
    def dataset(self) -> Any:
        """reasoning-gym's dataset object for the items ``reset()`` walks now."""
        return self._pass_ds[1]  # type: ignore[attr-defined]

    ds = dataset

    @property
    def data(self) -> dict[str, Any]:
        """The current item (question, answer, metadata): ``item``."""
        return self.item  # type: ignore[attr-defined]


reasoning_gym_compat = decorator(ReasoningGymNames)
