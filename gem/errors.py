"""Named exceptions raised by GEM.

Bad arguments raise these (never ``assert``, which ``python -O`` strips). Each message says what was
wrong and how to fix it.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import Any, Optional



class GemError(Exception):
    """Base class of every error GEM raises on purpose."""


class UnknownEnvError(GemError, KeyError, ValueError):
    """An env id that is not in the registry.

    Also a ``KeyError`` and a ``ValueError``: code written for GEM's ``make`` catches
    ``ValueError``.
    """

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly instead.
        return str(self.args[0]) if self.args else ""


class ResetNeeded(GemError, RuntimeError):
    """``step`` was called before ``reset`` (or, in strict mode, after the episode ended)."""


class GemWarning(UserWarning):
    """Base class of the warnings GEM issues."""


class StepAfterEndWarning(GemWarning):
    """``step`` was called after the episode ended; it returned the terminal result again.

    Issued once per env. ``gem.core.set_strict_step(True)`` (or ``GEM_STRICT_STEP=1``) makes such a
    step raise :class:`ResetNeeded` instead.
    """


class DependencyNotInstalled(GemError, ImportError):
    """An optional dependency (a pip extra) that an env or tool needs is missing."""


def install_hint(extra: str) -> str:
    """How to install one of GEM's extras: from GEM's checkout, ``pip install -e ".[EXTRA]"``.

    GEM is installed from its source checkout. The PyPI package named ``gem-llm`` is the original
    GEM 0.1.0, which has none of these extras: installing ``gem-llm[EXTRA]`` from PyPI would install
    another project, so no hint says that.
    """
    return f'pip install -e ".[{extra}]" in the GEM checkout'


def missing_extra(feature: str, extra: str, package: Optional[str] = None) -> DependencyNotInstalled:
    """The one error for a missing optional dependency: it names the feature, package and extra.

    ``raise missing_extra("SearchTool", "search", "requests") from exc`` gives
    ``SearchTool needs requests, from the 'search' extra: pip install -e ".[search]" in the GEM checkout``.
    """
    needs = f"needs {package}, from" if package else "needs"
    return DependencyNotInstalled(f"{feature} {needs} the {extra!r} extra: {install_hint(extra)}")


class InfrastructureError(GemError, RuntimeError):
    """A part of GEM's machinery (a grader, a sandbox, a tool's server, a scorer) failed.

    Such a failure is not the agent's fault: it is reported in ``info["infra_error"]`` and counted
    apart from wrong answers; in strict mode (``GEM_STRICT_INFRA=1``, on in GEM's own tests) it is
    raised instead.
    """


def strict_infra() -> bool:
    """Whether infrastructure failures raise (``GEM_STRICT_INFRA=1``)."""
    return os.environ.get("GEM_STRICT_INFRA", "").strip().lower() in ("1", "true", "yes", "on")


def report_infra_failure(
    info: MutableMapping[str, Any], component: str, error: BaseException | str
) -> dict[str, str]:
    """Record that ``component`` (``"grader"``, ``"tool:python"``, ``"rg:scorer"``...) failed.

    Sets ``info["infra_error"] = {"component", "type", "message"}``, logs a warning and returns the
    record; in strict mode raises :class:`InfrastructureError` instead.
    """
    if isinstance(error, BaseException):
        record = {"component": component, "type": type(error).__name__, "message": str(error)[:500]}
    else:
        record = {"component": component, "type": "InfrastructureError", "message": str(error)[:500]}
    if strict_infra():
        raise InfrastructureError(f"{component} failed: {record['type']}: {record['message']}") from (
            error if isinstance(error, BaseException) else None
        )
    import logging  # here, not at import: `import gem` stays light

    logging.getLogger(__name__).warning("infrastructure failure in %s: %s: %s", component, record["type"], record["message"])
    info["infra_error"] = record
    return record


class ResourceUnavailable(GemError, RuntimeError):
    """An external resource (a dataset on the hub, a server, a model) cannot be reached."""


class DatasetNotFound(GemError, FileNotFoundError):
    """A local dataset file or a bundled dataset name that does not exist.

    Distinct from :class:`ResourceUnavailable` (the hub cannot be reached): a missing local or
    bundled file is a mistake in the setup or the package, never an outage to skip over.
    """


class VectorEnvError(GemError, RuntimeError):
    """An env inside a vector env raised; the message names its index and id."""

    def __init__(self, message: str, index: int, env_id: str | None) -> None:
        super().__init__(message)
        self.index = index
        self.env_id = env_id


class VectorEnvTimeout(VectorEnvError, TimeoutError):
    """An env of a vector env did not finish a call (reset, step, ``call``...) within ``step_timeout``.

    Attributes:
        index, env_id: the first env (lowest index) that hung.
        timeout: the limit in seconds.
        indices: every env that hung in this call.
        results: ``{index: result}`` of the envs whose part of the call did finish (a step's
            ``(obs, reward, terminated, truncated, info)``, a reset's ``(obs, info)``...).
    """

    def __init__(
        self,
        message: str,
        index: int,
        env_id: str | None,
        timeout: float,
        indices: tuple[int, ...] = (),
        results: dict[int, object] | None = None,
    ) -> None:
        super().__init__(message, index=index, env_id=env_id)
        self.timeout = timeout
        self.indices = indices or (index,)
        self.results = results or {}


class EnvsNotInProcess(GemError, AttributeError):
    """``vec.envs`` on a vector env whose envs live in other processes or machines."""


class UnsupportedVectorOperation(GemError, NotImplementedError):
    """A vector env operation that this backend cannot perform (the message says what can)."""
