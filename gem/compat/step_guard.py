"""The step contract for envs written the original GEM's way.

The original GEM's envs implement ``step`` themselves: they end an episode by returning
``terminated``/``truncated`` and never check whether one is running. :class:`gem.Env` promises
more: ``step`` after the end warns once and returns a terminal result (strict mode: raises
:class:`~gem.errors.ResetNeeded`). ``Env.step`` keeps that promise and calls ``_step``, so an env
written for this API implements ``_step`` and runs as written. A class that overrides ``step``
itself (``"step"`` in its own ``__dict__``) is wrapped here, once, when the class is created
(:func:`guard_subclass`, called by ``Env.__init_subclass__``): the wrapper answers a step after the
end and remembers the end the env returned. Not wrapped: a wrapper's ``step`` (``EnvWrapper``:
the wrapped env keeps the contract) and a ``step`` marked ``_gem_step_guard = True`` (it handles
the end its own way).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from gem.errors import ResetNeeded


class EpisodeOver(ResetNeeded):
    """Raised by the deprecated ``Env._check_step`` after the end (lenient mode); the step wrapper
    turns it into the terminal result."""


def needs_step_guard(cls: type) -> bool:
    """Whether ``cls`` overrides ``step`` itself the original GEM's way, so its ``step`` is wrapped.

    Decided by class attributes: ``step`` defined in the class's own body, not marked
    ``_gem_step_guard`` (already guarded, or it handles the end its own way), in a class that is
    not a wrapper (``_delegates_step``: ``EnvWrapper`` and its subclasses step the wrapped env,
    which keeps the contract).
    """
    step = cls.__dict__.get("step")
    return (
        callable(step)
        and not getattr(step, "_gem_step_guard", False)
        and not getattr(cls, "_delegates_step", False)
    )


def guard_step(step: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a ``step`` written the original GEM's way: a step after the end returns the terminal
    result (or raises in strict mode), and a step that ends the episode is remembered, so the env
    keeps the same contract as one written for this API.
    """

    @functools.wraps(step)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        # After the end only: the original's envs may step before a reset of the base class.
        if self._needs_reset and self._episode_started:
            ended = self._no_episode_step()
            if ended is not None:
                return ended
        try:
            result = step(self, *args, **kwargs)
        except EpisodeOver:  # the deprecated statement form, self._check_step(), in the step
            return self._episode_over_result()
        if type(result) is tuple and len(result) == 5 and (result[2] or result[3]) and not self._needs_reset:
            self._note_end(result[2], result[3])  # an end the env did not record itself
        return result

    guarded._gem_step_guard = True  # type: ignore[attr-defined]
    return guarded


def guard_sample(sample: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``sample_random_action`` of an env with ``reset_before_first_step``: before any episode
    it starts one, as the original GEM's games (reset in their constructor) had one to sample from."""

    @functools.wraps(sample)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._episode_started:
            self.reset()
        return sample(self, *args, **kwargs)

    guarded._gem_sample_guard = True  # type: ignore[attr-defined]
    return guarded


def guard_subclass(cls: type) -> None:
    """Give a new ``Env`` subclass the step contract where it overrides ``step`` itself.

    Runs once per class (``Env.__init_subclass__``). A class that overrides ``step`` and has no
    ``_step`` (the original GEM's way) gets its own ``step`` as ``_step`` too, so it is not abstract.
    """
    step = cls.__dict__.get("step")
    if callable(step) and getattr(getattr(cls, "_step", None), "__isabstractmethod__", False):
        cls._step = step  # type: ignore[attr-defined]  # the step's body, without the wrapper
    if needs_step_guard(cls):
        cls.step = guard_step(step)  # type: ignore[attr-defined]
    sample = cls.__dict__.get("sample_random_action")
    if getattr(cls, "reset_before_first_step", False) and callable(sample) and not getattr(sample, "_gem_sample_guard", False):
        cls.sample_random_action = guard_sample(sample)  # type: ignore[attr-defined]
