"""The step contract for envs written the original GEM's way.

The original GEM's envs end an episode by returning ``terminated``/``truncated`` and never check
whether one is running. :class:`gem.Env` promises more: ``step`` before ``reset`` raises, ``step``
after the end warns once and returns a terminal result. An env written for this API keeps that
promise itself (its ``step`` starts with ``self._step_without_episode()`` and ends episodes through
``self._result``), so it runs exactly as written. Every other ``step`` is wrapped here, once, when
its class is created (:func:`guard_subclass`, called by ``Env.__init_subclass__``): the wrapper
answers a step after the end and remembers the end the env returned.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from gem.errors import ResetNeeded


# The idiom by which a step keeps the contract itself (see gem.core.Env._step_without_episode).
NATIVE_STEP_CALL = "_step_without_episode"
# The older, statement form of the same check: it raises EpisodeOver, which the wrapper answers.
STATEMENT_STEP_CALL = "_check_step"

_FLAG_TYPES = frozenset(("bool", "bool_"))  # Python's and NumPy's booleans


class EpisodeOver(ResetNeeded):
    """Raised by ``Env._check_step`` after the end (lenient mode); the step wrapper turns it into
    the terminal result."""


def keeps_step_contract(cls: type, step: Callable[..., Any]) -> bool:
    """Whether ``cls.step`` keeps the step contract itself, so it needs no wrapper.

    True for a step that calls ``self._step_without_episode()``, for one marked
    ``_gem_step_guard = True`` (it handles the end its own way), and for a wrapper's step
    (``EnvWrapper``: the wrapped env keeps the contract) that does not use ``_check_step``.
    """
    if getattr(step, "_gem_step_guard", False):
        return True
    names = getattr(getattr(step, "__code__", None), "co_names", None)
    if names is None:
        return False
    if NATIVE_STEP_CALL in names:
        return True
    return bool(getattr(cls, "_delegates_step", False)) and STATEMENT_STEP_CALL not in names


def guard_step(step: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a ``step`` written the original GEM's way (or with the statement form ``_check_step``):
    a step after the end returns the terminal result (or raises in strict mode), and a step that
    ends the episode is remembered, so the env keeps the same contract as one written for this API.
    """

    @functools.wraps(step)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._needs_reset and self._episode_started:
            try:
                self._check_step()
            except EpisodeOver:
                return self._episode_over_result()
        try:
            result = step(self, *args, **kwargs)
        except EpisodeOver:
            return self._episode_over_result()
        if type(result) is tuple and len(result) == 5 and (result[2] or result[3]) and not self._needs_reset:
            # An end the env did not record itself.
            terminated, truncated = result[2], result[3]
            if type(terminated).__name__ in _FLAG_TYPES and type(truncated).__name__ in _FLAG_TYPES:
                self._needs_reset = True
                self._end_flags = (bool(terminated), bool(truncated))
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
    """Give a new ``Env`` subclass the step contract where its own methods do not keep it.

    Runs once per class (``Env.__init_subclass__``); a ``step`` that keeps the contract itself is
    left as written, so it costs nothing per step.
    """
    step = cls.__dict__.get("step")
    if callable(step) and not keeps_step_contract(cls, step):
        cls.step = guard_step(step)  # type: ignore[attr-defined]
    sample = cls.__dict__.get("sample_random_action")
    if getattr(cls, "reset_before_first_step", False) and callable(sample) and not getattr(sample, "_gem_sample_guard", False):
        cls.sample_random_action = guard_sample(sample)  # type: ignore[attr-defined]
