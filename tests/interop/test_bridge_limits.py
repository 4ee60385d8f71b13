"""What each inbound bridge declares it cannot do, kept exact; scripts that use a bridge end; and the
Gymnasium bridge's border (rewards and success, both ways).

``declared_limits`` on a bridge env class names the ``check_env`` checks the bridge cannot pass and
why; check_env reports those as declared limits. Here every check is run on a well-behaved env
through each bridge, ignoring the declaration, and the checks that fail must be exactly the declared
ones: a bridge bug cannot hide behind a declaration, and a declaration cannot outlive its reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import gem
from gem.checks.env_checker import CHECKS, EnvCheckError
from gem.errors import InfrastructureError

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"


def failing_checks(env: Any, seed: int = 0) -> dict[str, str]:
    """``check name -> failure`` of every check in check_env's list that fails on ``env`` (no skips)."""
    failed = {}
    for name, check in CHECKS.items():
        try:
            check(env, seed=seed)
        except EnvCheckError as exc:
            failed[name] = str(exc)
        except Exception as exc:  # check_env reports these as failures too
            failed[name] = f"raised {type(exc).__name__}: {exc}"
    return failed


def _assert_declared_exactly(env: Any) -> None:
    declared = dict(type(env.unwrapped).declared_limits)
    assert set(declared) <= set(CHECKS), f"unknown check names declared: {set(declared) - set(CHECKS)}"
    assert all(isinstance(reason, str) and reason for reason in declared.values())
    failed = failing_checks(env)
    assert set(failed) == set(declared), (
        f"failing but not declared: {sorted(set(failed) - set(declared))}; "
        f"declared but passing: {sorted(set(declared) - set(failed))}\n" + "\n".join(failed.values()))


def test_openenv_bridge_declares_exactly_what_it_cannot_pass(serve):
    pytest.importorskip("websockets", reason="needs the server extra")
    pytest.importorskip("fastapi", reason="needs the server extra")
    server = serve([GAME])
    env = gem.make(f"openenv:{server.url}")
    try:
        _assert_declared_exactly(env)
    finally:
        env.close()


def test_gymnasium_bridge_declares_exactly_what_it_cannot_pass():
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra")
    env = gem.make("gymnasium:gem/game.GuessTheNumber-v0")
    try:
        _assert_declared_exactly(env)
    finally:
        env.close()


def test_verifiers_bridge_declares_exactly_what_it_cannot_pass(tmp_path, monkeypatch):
    pytest.importorskip("verifiers.v1", reason="needs the verifiers extra")
    from gem.interop.verifiers.export import export_verifiers, taskset_id

    monkeypatch.syspath_prepend(str(export_verifiers(GAME, tmp_path / taskset_id(GAME))))
    env = gem.make(f"verifiers:{taskset_id(GAME)}", step_timeout=60)
    try:
        _assert_declared_exactly(env)
    finally:
        env.close()


# ----------------------------------------------------------------- scripts end
def _doc_block(marker: str) -> str:
    """The python block of docs/interop.md that contains ``marker``."""
    text = (REPO / "docs" / "interop.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (block,) = [b for b in blocks if marker in b]
    return block


def test_the_verifiers_doc_block_ends_without_close(tmp_path):
    """The docs' verifiers -> GEM block (a multi-turn env, left mid-episode, never closed) ends."""
    pytest.importorskip("verifiers.v1", reason="needs the verifiers extra")
    from gem.interop.verifiers.export import export_verifiers

    block = _doc_block('gem.make("verifiers:')
    assert "close()" not in block  # the case that used to hang: nobody closes the env
    package = export_verifiers(GAME, tmp_path / "pkg")
    script = tmp_path / "block.py"
    script.write_text(block + "\nprint('reward', reward, terminated)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(REPO)])}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "reward 0.0 False" in run.stdout  # one wrong guess: the episode was mid-way when Python exited


def test_an_openenv_script_ends_without_close(serve):
    pytest.importorskip("websockets", reason="needs the server extra")
    pytest.importorskip("fastapi", reason="needs the server extra")
    server = serve([GAME])
    code = textwrap.dedent(f"""
        import gem
        env = gem.make("openenv:{server.url}")
        env.reset(seed=0)
        print(env.step("\\\\boxed{{1}}")[1])
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0 and run.stdout.strip() == "0.0", run.stderr[-2000:]


# ------------------------------------------------------- Gymnasium, both ways
class _Scripted:
    """The pieces of a Gymnasium Text env whose step returns what the test says."""

    def make(self, reward: Any, info: dict, terminated: Any = True) -> Any:
        import gymnasium
        from gymnasium import spaces

        class Scripted(gymnasium.Env):
            observation_space = spaces.Text(100)
            action_space = spaces.Text(100)

            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                return "go", {"success": True}

            def step(self, action):
                return "done", reward, terminated, False, dict(info)

        return Scripted()


@pytest.mark.parametrize("reward", [float("nan"), float("inf"), -float("inf"), 1e308, "1.0", None, [1.0]])
def test_gymnasium_to_gem_refuses_a_reward_that_is_not_a_finite_number(reward):
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra")
    from gem.core import Agent
    from gem.interop.gymnasium import from_gymnasium
    from gem.rollout import run_episode

    class Say(Agent):
        def act(self, observation, info=None):
            return "x"

    env = from_gymnasium(_Scripted().make(reward, {"success": True}))
    env.reset(seed=0)
    with pytest.raises(InfrastructureError, match="reward"):
        env.step("x")
    episode = run_episode(env, Say(), seed=0, catch=True)
    assert episode.success is False and episode.infra_error is not None


def test_gymnasium_to_gem_decides_success_itself():
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra")
    from gem.interop.gymnasium import from_gymnasium

    env = from_gymnasium(_Scripted().make(0.0, {"success": True, "correct": True}))
    _, info = env.reset(seed=0)
    assert "success" not in info and info["remote_success"] is True
    _, reward, terminated, _, info = env.step("x")
    assert (reward, terminated, info["success"]) == (0.0, True, False)
    assert info["remote_success"] is True and info["remote_correct"] is True
    honest = from_gymnasium(_Scripted().make(1.0, {}))
    honest.reset(seed=0)
    assert honest.step("x")[4]["success"] is True
    import numpy as np

    numpy_typed = from_gymnasium(_Scripted().make(np.float32(1.0), {}, terminated=np.bool_(True)))  # as many envs
    numpy_typed.reset(seed=0)
    assert numpy_typed.step("x")[1:4] == (1.0, True, False)
    bad_flag = from_gymnasium(_Scripted().make(1.0, {}, terminated="yes"))
    bad_flag.reset(seed=0)
    with pytest.raises(InfrastructureError, match="terminated"):
        bad_flag.step("x")


@pytest.mark.parametrize("reward", [float("nan"), float("inf"), 1e308])
def test_gem_to_gymnasium_refuses_a_reward_that_is_not_a_finite_number(reward):
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra")
    from gem.interop.gymnasium import GemGymnasiumEnv

    env = gem.make(GAME)
    env.step = lambda action: ("obs", reward, True, False, {"success": True})  # a broken GEM env
    wrapped = GemGymnasiumEnv(env=env)
    wrapped.reset(seed=0)
    with pytest.raises(InfrastructureError, match="reward"):
        wrapped.step("\\boxed{1}")
