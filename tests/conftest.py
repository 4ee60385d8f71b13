"""Shared fixtures: small envs written for the tests."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import time
from typing import Any, Optional

import pytest

from gem.core import Env, StepResult, strict_step
from gem.errors import install_hint

# Infrastructure failures (a grader timeout, a scorer or sandbox that broke) raise in GEM's own
# tests instead of passing as a wrong answer; tests of the non-strict reporting unset it with
# monkeypatch.delenv("GEM_STRICT_INFRA").
os.environ["GEM_STRICT_INFRA"] = "1"


class CountEnv(Env):
    """Counts to ``target``: action "\\boxed{+}" adds one; anything else is a format error."""

    def __init__(self, target: int = 3, sleep: float = 0.0, fail_on: Optional[int] = None) -> None:
        self.target, self.sleep, self.fail_on = target, sleep, fail_on
        self.max_episode_steps = target  # "\\boxed{+}" (its only sampled action) ends it in target steps
        self.count = 0
        self.start = 0

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.count = 0
        self.start = self.rng.randint(0, 1000)
        return f"start {self.start}", {}

    def _step(self, action: str) -> StepResult:
        if self.sleep:
            time.sleep(self.sleep)
        if self.fail_on is not None and self.count == self.fail_on:
            raise RuntimeError("boom")
        if action != "\\boxed{+}":
            return self._result("format error", self.format_error_reward, terminated=True)
        self.count += 1
        done = self.count >= self.target
        return self._result(f"count {self.count}", 1.0 if done else 0.0, terminated=done, info={"count": self.count})

    def sample_random_action(self) -> str:
        return "\\boxed{+}"


@pytest.fixture
def count_env_cls() -> type:
    return CountEnv


@pytest.fixture
def lenient_step() -> Any:
    """Stepping after the end warns and returns a terminal result in this test, even when the suite
    runs in strict mode (``GEM_STRICT_STEP=1``), for tests of that default behaviour."""
    with strict_step(False):
        yield


@functools.lru_cache(maxsize=None)
def extra_installed(extra: str) -> bool:
    """Whether every package of gem-llm's ``extra`` is installed (read from the package metadata)."""
    try:
        requirements = importlib.metadata.requires("gem-llm") or []
        extras = importlib.metadata.metadata("gem-llm").get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        return False
    if extra not in extras:
        raise ValueError(f"gem-llm has no extra {extra!r}; its extras: {', '.join(extras)}")
    from packaging.requirements import Requirement  # pytest's own dependency

    for line in requirements:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue  # another extra's, or not for this Python
        if requirement.name == "gem-llm":
            continue
        try:
            importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
    return True


def needs_extra(extra: str) -> None:
    """Skip the calling test with "needs the X extra", only when that extra is truly absent."""
    if not extra_installed(extra):
        pytest.skip(f"needs the {extra} extra ({install_hint(extra)})", allow_module_level=True)


def needs_env(env_id: str) -> None:
    """Skip the calling test with "needs the X extra" when ``env_id`` comes with an extra that is not
    installed (its spec's ``extra``); an id that needs no extra always runs."""
    import gem

    extra = gem.spec(env_id).extra
    if extra:
        needs_extra(extra)


# Modules whose package has another name (the rest: the module's name, "_" read as "-").
_PACKAGE_OF_MODULE = {
    "llama_cpp": "llama-cpp-python", "faiss": "faiss-cpu", "yaml": "pyyaml", "openenv": "openenv-core",
    "PIL": "pillow", "sklearn": "scikit-learn",
}
_AGGREGATE_EXTRAS = ("all", "dev")


@functools.lru_cache(maxsize=None)
def extras_providing(module: str) -> tuple[str, ...]:
    """The extras of gem-llm that install the package of ``module`` (``torch`` -> ``("rl",)``);
    an aggregate extra (``all``, ``dev``) only when no other one does."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    top = module.split(".")[0]
    package = canonicalize_name(_PACKAGE_OF_MODULE.get(top, top))
    try:
        requirements = importlib.metadata.requires("gem-llm") or []
        extras = importlib.metadata.metadata("gem-llm").get_all("Provides-Extra") or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    found = []
    for extra in extras:
        for line in requirements:
            requirement = Requirement(line)
            if (canonicalize_name(requirement.name) == package and requirement.marker is not None
                    and requirement.marker.evaluate({"extra": extra})):
                found.append(extra)
                break
    return tuple([e for e in found if e not in _AGGREGATE_EXTRAS] or found)


_COULD_NOT_IMPORT = re.compile(r"could not import '([\w.]+)'")


def _name_the_extra(report: pytest.CollectReport | pytest.TestReport) -> None:
    """A skip for a missing module (``pytest.importorskip``) names the extra that brings it."""
    if not report.skipped or not isinstance(report.longrepr, tuple) or len(report.longrepr) != 3:
        return
    path, lineno, reason = report.longrepr
    found = _COULD_NOT_IMPORT.search(reason)
    if found is None or " extra" in reason:
        return
    extras = extras_providing(found.group(1))
    if extras:
        names = extras[0] if len(extras) == 1 else f"{', '.join(extras[:-1])} or {extras[-1]}"
        report.longrepr = (path, lineno, f"{reason}: needs the {names} extra ({install_hint(extras[0])})")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    _name_the_extra(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    _name_the_extra(outcome.get_result())
