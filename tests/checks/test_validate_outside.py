"""``gem validate`` on what comes from outside: bridged ids (``gymnasium:``, ``openenv:``), declared
limits, ``--strict``, and envs whose extra is not installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

import gem
from gem.checks import validate
from tests.checks import planted
from tests.conftest import needs_extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = "tests.checks.outside_ids"


@pytest.fixture(autouse=True)
def _registries_as_they_were():
    """Importing OUTSIDE here (for its classes) registers its ids in GEM's and Gymnasium's registries;
    take them out again, so that later tests see only the bundled ids."""
    from gem.envs.registration import registry

    gem_before = set(dict.keys(registry))
    gym = sys.modules.get("gymnasium")
    gym_before = set(gym.registry) if gym is not None else None
    yield
    for env_id in set(dict.keys(registry)) - gem_before:
        dict.pop(registry, env_id, None)
    gym = sys.modules.get("gymnasium")
    if gym is not None:
        for env_id in set(gym.registry) - (gym_before if gym_before is not None else set()):
            if env_id.startswith(("planted/", "gem/planted.")):
                gym.registry.pop(env_id, None)


def _gem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem.cli", "validate", "--jobs", "1", *args],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)


# ===================================================================== bridged ids
def test_gymnasium_ids_are_validated_through_the_bridge():
    needs_extra("gymnasium")
    out = _gem("--import", OUTSIDE, "--json", "gymnasium:planted/Quiz-v0",
               "gymnasium:planted/QuizSubstring-v0")
    assert out.returncode == 1, out.stdout + out.stderr
    clean, holed = json.loads(out.stdout)["envs"]
    assert clean["env_id"] == "gymnasium:planted/Quiz-v0" and clean["ok"] and clean["complete"], clean
    # the answer the Gymnasium env keeps, found through Gymnasium's wrapper chain
    assert clean["kind"] == "answer" and "env.gym_env.unwrapped._target" in clean["gold_source"]
    assert {"reference", "wrong-answer", "gold-leak"} <= set(clean["checked"])
    # the substring grader pays a list of cities and a nested tag around the capital
    assert {f["strategy"] for f in holed["findings"]} == {"hedge", "repeated-tags"}


def test_a_gem_id_round_trips_through_gymnasium_and_is_fully_checked():
    needs_extra("gymnasium")
    report = validate("gymnasium:gem/game.GuessTheNumber-v0-easy")
    assert report.ok and report.complete, report.summary()
    # the secret number, in GEM's env inside Gymnasium's wrappers
    assert ".unwrapped" in (report.gold_source or "")
    assert "reference" in report.checked and "replay" in report.checked


def test_openenv_ids_are_validated_against_a_served_env():
    needs_extra("server")
    from gem.interop.openenv.server import create_openenv_app
    from tests.server.conftest import ServerThread

    server = ServerThread(create_openenv_app(["game:GuessTheNumber-v0-easy"])).start()
    try:
        report = validate(f"openenv:{server.url}",
                          strategies=["degenerate", "claim", "spray", "noop", "replay", "reference"])
    finally:
        server.stop()
    assert report.ok, report.summary()
    assert {"noop", "replay"} <= set(report.checked) and report.episodes > 10
    # the secret number lives on the server: no gold answer, no reference, and the report says so
    assert not report.complete and "reference" in report.not_run
    assert "NOT fully checked" in report.summary()
    assert "check_state_roundtrip" in report.declared_limits  # the bridge's own declaration, shown


# ===================================================================== declared limits
class _DeclaresReplay(planted.UnseededEnv):
    declared_limits: ClassVar[dict[str, str]] = {"replay": "the remote server does not take seeds"}


@pytest.mark.parametrize("name", ["replay", "determinism", "seed"])
def test_a_declared_replay_limit_is_reported_not_found(name):
    env = planted.UnseededEnv()
    env.declared_limits = {name: "the remote server does not take seeds"}
    report = validate(env)
    assert report.ok, report.summary()  # without the declaration, replay is a finding (test_validate.py)
    assert "replay" not in report.checked
    assert report.not_checked["replay"] == "declared limit: the remote server does not take seeds"
    assert f"declared limit: {name}: the remote server does not take seeds" in report.summary()
    assert report.complete  # a declared limit is an answer, not a gap


def test_a_declared_limit_of_another_name_excuses_nothing():
    env = planted.UnseededEnv()
    env.declared_limits = {"check_state_roundtrip": "state lives on a server", "replays": "a typo"}
    report = validate(env)
    assert {f.strategy for f in report.findings} == {"replay"}
    assert "declared limit: check_state_roundtrip: state lives on a server" in report.summary()


def test_a_class_level_declaration_is_read_too():
    report = validate(_DeclaresReplay())
    assert report.ok and report.declared_limits == {"replay": "the remote server does not take seeds"}


# ===================================================================== --strict and missing extras
def test_strict_fails_only_where_a_class_of_attack_could_not_run():
    lenient = _gem("--import", OUTSIDE, "planted:Unguessable")
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert "NOT fully checked (not run: reference:" in lenient.stdout and "answer attacks:" in lenient.stdout
    assert "1 not fully checked" in lenient.stdout
    strict = _gem("--import", OUTSIDE, "--strict", "planted:Unguessable")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    clean = _gem("--import", "tests.checks.planted_ids", "--strict", "planted:Clean")
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_an_env_that_needs_a_missing_extra_is_skipped_naming_it():
    out = _gem("--import", OUTSIDE, "planted:NeedsExtra")
    assert out.returncode == 0, out.stdout + out.stderr  # a skip is no finding ...
    assert "planted:NeedsExtra: skipped (needs the games extra: " in out.stdout
    assert 'pip install -e ".[games]"' in out.stdout and "1 skipped" in out.stdout
    strict = _gem("--import", OUTSIDE, "--strict", "--json", "planted:NeedsExtra")
    assert strict.returncode == 1  # ... but --strict fails on it: nothing was checked
    (env,) = json.loads(strict.stdout)["envs"]
    assert env["skipped"].startswith("needs the games extra") and env["ok"] and not env["complete"]


def test_an_extra_missing_only_when_stepping_is_a_skip_too():
    from gem.errors import missing_extra

    class GraderNeedsExtra(planted.ArithmeticEnv):
        def grade(self, action):
            raise missing_extra("the grader", "math", "math-verify")

    report = validate(GraderNeedsExtra())
    assert report.skipped and report.skipped.startswith("needs the math extra") and not report.findings


def test_a_multi_agent_game_is_played_through_its_views():
    from gem.checks.cli import offline_ids, resolve_targets

    views = ["multi:TicTacToe-v0-vs-scripted", "multi:TicTacToe-v0-vs-random"]
    assert resolve_targets(["multi:TicTacToe-v0"], []) == views
    ids = offline_ids()
    assert "multi:KuhnPoker-v0" not in ids and "multi:KuhnPoker-v0-vs-random" in ids


def test_a_one_move_game_of_chance_with_a_solver_has_no_answer_to_hedge():
    # Kuhn poker against the scripted player: one move, then the cards decide. The solver's move is no
    # gold answer (it loses with a low card), the reference control checks the solver instead.
    report = validate("multi:KuhnPoker-v0-vs-scripted")
    assert report.ok and report.complete, report.summary()
    assert report.multi_turn is False and report.gold_source is None and "reference" in report.checked
    assert "list-every-answer" in report.strategies


def test_a_solver_that_never_wins_leaves_the_answer_attacks_open():
    from gem.agents.base import Agent
    from tests.checks.outside_ids import UnguessableEnv

    class Wrong(Agent):
        def act(self, observation, info=None):
            return "0"

    class WithBadSolver(UnguessableEnv):
        def make_solver(self):
            return Wrong()

    report = validate(WithBadSolver())
    # it earns what random play earns (0): no reference finding for a game, but no answer either
    assert report.kind == "game" and "reference" in report.checked
    assert "answer attacks" in report.not_run and not report.complete


class HostRunner(gem.Env):
    """An outside author's code env that runs the agent's program with a plain ``subprocess.run`` on
    the host (or in GEM's sandbox), and pays when it prints the right sum."""

    def __init__(self, sandboxed: bool = False) -> None:
        super().__init__()
        self.sandboxed = sandboxed

    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        self._a, self._b = self.rng.randint(1, 99), self.rng.randint(1, 99)
        return (f"Write a Python program that prints {self._a} + {self._b}. "
                "Reply with the code in a ```python block."), {}

    def _step(self, action):
        m = re.search(r"```python\n(.*?)```", action, re.S)
        if not m:
            return self._result("no code", 0.0, True)
        if self.sandboxed:
            from gem.sandbox import default_sandbox

            out = default_sandbox().run(m.group(1), timeout=10.0).stdout
        else:
            out = subprocess.run([sys.executable, "-c", m.group(1)], capture_output=True, text=True, timeout=10).stdout
        return self._result("graded", 1.0 if out.strip() == str(self._a + self._b) else 0.0, True)


def test_programs_that_can_signal_the_validator_are_reported_and_no_signal_is_sent():
    report = validate(HostRunner(), strategies=["stop-harness"], seeds=[0])
    [finding] = report.findings
    assert finding.strategy == "stop-harness" and f"pid {os.getpid()}" in finding.reason
    assert "were not sent" in finding.reason  # this process is still running: no SIGSTOP, SIGKILL or kill -1


def test_a_sandboxed_runner_is_attacked_as_before():
    pytest.importorskip("gem.sandbox")
    report = validate(HostRunner(sandboxed=True), strategies=["stop-harness"], seeds=[0])
    assert report.ok and not report.errors, report.summary()
