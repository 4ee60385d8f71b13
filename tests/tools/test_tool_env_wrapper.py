"""ToolEnvWrapper: tool calls don't step the env, rewards, limits, counters, factories, threads."""

from __future__ import annotations

import threading
from functools import partial

import pytest

import gem
from gem.core import EPISODE_OVER_OBSERVATION, strict_step
from gem.errors import GemError, InfrastructureError, ResetNeeded, StepAfterEndWarning
from gem.tools.tool_env_wrapper import (
    DEFAULT_MAX_TURNS_UNLIMITED_TOOLS,
    TOOL_LIMIT_NOTICE,
    ToolEnvWrapper,
)
from gem.utils.env_checker import check_env
from tests.conftest import CountEnv
from tests.wrappers.fake_tools import BrokenTool, EchoTool, ShoutTool

pytestmark = pytest.mark.usefixtures("lenient_step")  # these tests pin the default (lenient) step-after-end

PLUS = "\\boxed{+}"


def wrap(**kwargs):
    kwargs.setdefault("tools", [EchoTool])
    return ToolEnvWrapper(CountEnv(target=3), **kwargs)


def test_reset_adds_instructions_and_resets_tools():
    env = wrap(tools=[EchoTool, ShoutTool])
    obs, info = env.reset(seed=1)
    assert obs.startswith("start ")
    assert "Available tools:" in obs and "<echo>text</echo>" in obs and "<shout>text</shout>" in obs
    assert info["use_tool"] is False and info["tool_use_counter"] == 0
    assert [t.resets for t in env.tools] == [1, 1]
    single = wrap()
    obs, _ = single.reset(seed=1)
    assert "Available tools:" not in obs and obs.endswith("Write <echo>text</echo> to hear it back.")


def test_tool_call_does_not_step_the_env():
    env = wrap(tool_reward=0.1, tool_success_reward=0.5, tool_execute_error_reward=-0.2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("let me check <echo>hi</echo> and more text")
    assert obs == "echo: hi (call 1)"
    assert reward == pytest.approx(0.6)
    assert (terminated, truncated) == (False, False)
    assert env.unwrapped.count == 0  # the inner env was not stepped
    assert info["use_tool"] is True and info["tool_type"] == "echo"
    assert info["parsed_action"] == "let me check <echo>hi</echo>"
    assert info["tool_use_counter"] == 1 and info["tool_success_counter"] == 1
    assert info["tool_use_counts"] == {"echo": 1}
    obs, reward, *_ , info = env.step("<echo>fail</echo>")
    assert reward == pytest.approx(0.1 - 0.2) and info["tool_error"] is True
    assert info["tool_error_counter"] == 1 and info["tool_success_counter"] == 1
    obs, reward, terminated, truncated, info = env.step(PLUS)
    assert obs == "count 1" and reward == 0.0 and info["use_tool"] is False and info["count"] == 1
    assert info["tool_use_counter"] == 2 and info["turn_counter"] == 3


def test_first_tool_that_finds_a_call_runs_it():
    env = wrap(tools=[EchoTool, ShoutTool])
    env.reset(seed=0)
    obs, *_, info = env.step("<shout>a</shout> <echo>b</echo>")
    assert obs == "echo: b (call 1)"  # tools are tried in order
    obs, *_, info = env.step("<shout>a</shout>")
    assert obs == "SHOUT: a (call 1)" and info["tool_use_counts"] == {"echo": 1, "shout": 1}


def test_max_tool_uses_passes_later_calls_to_the_env_as_gem():
    env = wrap(max_tool_uses=2)
    env.reset(seed=0)
    assert not env.step("<echo>1</echo>")[0].endswith(TOOL_LIMIT_NOTICE)
    obs, *_ = env.step("<echo>2</echo>")
    assert obs.endswith(TOOL_LIMIT_NOTICE)
    obs, reward, terminated, truncated, info = env.step("<echo>3</echo>")
    assert obs == "format error" and terminated and info["use_tool"] is False  # the env judged it
    assert env.tools[0].calls == 2
    with pytest.warns(StepAfterEndWarning, match="after the episode ended"):
        assert env.step(PLUS)[:4] == (EPISODE_OVER_OBSERVATION, 0.0, True, False)


def test_truncate_on_tool_limit():
    env = wrap(max_tool_uses=1, truncate_on_tool_limit=True)
    env.reset(seed=0)
    env.step("<echo>1</echo>")
    obs, reward, terminated, truncated, info = env.step("<echo>2</echo>")
    assert (terminated, truncated, reward) == (False, True, 0.0) and info["tool_limit_reached"]
    assert env.tools[0].calls == 1
    # an ordinary action past the cap still reaches the env
    env.reset(seed=0)
    env.step("<echo>1</echo>")
    assert env.step(PLUS)[0] == "count 1"


def test_max_turns_truncates_a_tool_loop():
    env = wrap(max_tool_uses=None, max_turns=4)
    env.reset(seed=0)
    for _ in range(3):
        assert env.step("<echo>x</echo>")[3] is False
    obs, reward, terminated, truncated, info = env.step("<echo>x</echo>")
    assert truncated and not terminated and "maximum number of turns" in obs
    with strict_step(), pytest.raises(ResetNeeded, match="after the episode ended"):
        env.step("<echo>x</echo>")
    assert env.tools[0].calls == 4  # the step after the end ran no tool
    # env steps count too
    env.reset(seed=0)
    env.step("<echo>x</echo>"), env.step(PLUS), env.step("<echo>x</echo>")
    assert env.step(PLUS)[3] is True


def test_unlimited_tools_get_a_default_turn_cap():
    env = wrap(max_tool_uses=None)
    assert env.max_turns == DEFAULT_MAX_TURNS_UNLIMITED_TOOLS
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        if env.step("<echo>x</echo>")[3]:
            break
    assert steps == DEFAULT_MAX_TURNS_UNLIMITED_TOOLS


def test_a_raising_tool_is_a_failed_call(monkeypatch):
    env = wrap(tools=[BrokenTool], tool_execute_error_reward=-0.5)
    env.reset(seed=0)
    with pytest.raises(InfrastructureError, match="tool:boom failed: RuntimeError: the tool exploded"):
        env.step("<boom>")  # strict mode (GEM's own tests): a tool crashing is fatal
    monkeypatch.delenv("GEM_STRICT_INFRA", raising=False)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<boom>")
    assert "the tool exploded" in obs and reward == -0.5 and info["tool_error"] and not terminated
    assert info["infra_error"] == {"component": "tool:boom", "type": "RuntimeError", "message": "the tool exploded"}


def test_step_before_reset_raises():
    with pytest.raises(ResetNeeded, match="before reset"):
        wrap().step("<echo>x</echo>")


def test_step_after_the_end_names_the_end_not_reset():
    env = wrap()
    env.reset(seed=0)
    env.step("no call")  # a format error ends CountEnv's episode
    with pytest.warns(StepAfterEndWarning, match="ToolEnvWrapper.step\\(\\) was called after the episode ended"):
        obs, reward, terminated, truncated, info = env.step("<echo>x</echo>")
    assert (obs, reward, terminated, truncated, info["episode_over"]) == (EPISODE_OVER_OBSERVATION, 0.0, True, False, True)
    assert env.tools[0].calls == 0


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"tools": []}, ValueError),
        ({"tools": [42]}, TypeError),
        ({"tools": [lambda: "not a tool"]}, TypeError),
        ({"tools": EchoTool()}, TypeError),
        ({"max_tool_uses": -1}, ValueError),
        ({"max_turns": 2.5}, ValueError),
    ],
)
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        wrap(**kwargs)


def test_factories_and_shared_instances_give_each_wrapper_its_own_tool_state():
    wrapper = partial(ToolEnvWrapper, tools=[EchoTool])
    a, b = wrapper(CountEnv()), wrapper(CountEnv())
    assert a.tools[0] is not b.tools[0]
    a.reset(seed=0), b.reset(seed=0)
    a.step("<echo>x</echo>")
    assert a.tools[0].calls == 1 and b.tools[0].calls == 0
    # one instance shared the original's way: the second wrapper gets a fork with its own state
    shared = EchoTool(prefix="shared: ")
    first, second = ToolEnvWrapper(CountEnv(), tools=[shared]), ToolEnvWrapper(CountEnv(), tools=[shared])
    assert first.tools[0] is shared and second.tools[0] is not shared
    assert second.tools[0].prefix == "shared: " and second.tools[0]._lock is not shared._lock
    first.reset(seed=0), second.reset(seed=0)
    assert second.step("<echo>y</echo>")[0] == "shared: y (call 1)"
    assert first.step("<echo>y</echo>")[0] == "shared: y (call 1)"
    second.reset(seed=0)  # resetting one wrapper leaves the other's tool state alone
    assert shared.calls == 1
    del first  # once its wrapper is gone, the instance itself may be used again
    import gc

    gc.collect()
    assert ToolEnvWrapper(CountEnv(), tools=[shared]).tools[0] is shared


def test_a_shared_tool_that_cannot_be_forked_says_how_to_fix_it():
    class Unforkable(EchoTool):
        def fork(self):
            raise RuntimeError("holds a process")

    tool = Unforkable()
    keep = ToolEnvWrapper(CountEnv(), tools=[tool])
    with pytest.raises(GemError, match="factory"):
        ToolEnvWrapper(CountEnv(), tools=[tool])
    assert keep.tools[0] is tool


def test_original_wrapper_factory_pattern_with_one_shared_instance_in_make_vec():
    tool = EchoTool()
    vec = gem.make_vec("game:GuessTheNumber-v0", num_envs=3, async_mode=True,
                       wrappers=[partial(ToolEnvWrapper, tools=[tool], max_tool_uses=5)])
    try:
        vec.reset(seed=0)
        tools = [e.tools[0] for e in vec.envs]
        assert len({id(t) for t in tools}) == 3 and sum(t is tool for t in tools) == 1
        obs, *_ = vec.step(["<echo>a</echo>", "<echo>b</echo>", "\\boxed{1}"])
        assert obs[0] == "echo: a (call 1)" and obs[1] == "echo: b (call 1)"
        assert [t.calls for t in tools] == [1, 1, 0]
    finally:
        vec.close()


def test_vector_envs_do_not_share_tools():
    vec = gem.make_vec("game:GuessTheNumber-v0", num_envs=3, wrappers=[partial(ToolEnvWrapper, tools=[EchoTool])])
    try:
        vec.reset(seed=0)
        tools = [e.tools[0] for e in vec.envs]
        assert len({id(t) for t in tools}) == 3
        obs, rewards, terminated, truncated, infos = vec.step(["<echo>a</echo>", "\\boxed{1}", "<echo>b</echo>"])
        assert [t.calls for t in tools] == [1, 0, 1]
    finally:
        vec.close()


def test_counters_survive_state_roundtrip_and_spawn_builds_new_tools():
    env = wrap()
    env.reset(seed=0)
    env.step("<echo>x</echo>")
    state = env.get_state()
    env.step("<echo>y</echo>"), env.step(PLUS)
    env.set_state(state)
    assert env.tool_use_counter == 1 and env.unwrapped.count == 0
    assert env.step(PLUS)[4]["tool_use_counter"] == 1
    copy_env = env.spawn(same_state=True)
    assert copy_env.tools[0] is not env.tools[0]
    assert copy_env.tool_use_counter == env.tool_use_counter and copy_env.unwrapped.count == env.unwrapped.count


def test_close_closes_tools():
    env = wrap()
    env.close()
    assert env.tools[0].closed


def test_thread_safe_per_instance():
    env = wrap(max_tool_uses=None, max_turns=10_000)
    env.reset(seed=0)
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(50):
            env.step("<echo>x</echo>")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert env.tool_use_counter == 400 and env.turn_counter == 400 and env.tools[0].calls == 400


def test_wrapped_game_passes_the_env_checker():
    env = ToolEnvWrapper(gem.make("game:GuessTheNumber-v0"), tools=[EchoTool])
    check_env(env)


def test_with_the_real_python_tool():
    from gem.tools import python_code_tool as python_tool
    env = ToolEnvWrapper(gem.make("game:GuessTheNumber-v0"), tools=[partial(python_tool.PythonCodeTool, timeout=10)],
                         tool_reward=0.05, tool_success_reward=0.25, max_tool_uses=5)
    try:
        obs, _ = env.reset(seed=0)
        assert "<python>" in obs
        obs, reward, terminated, truncated, info = env.step("<python>print(6 * 7)</python>")
        assert "42" in obs and reward == pytest.approx(0.3) and info["use_tool"] and not terminated
        obs, reward, *_, info = env.step("<python>raise ValueError('bad')</python>")
        assert "ValueError" in obs and reward == pytest.approx(0.05) and info["tool_error"]
        assert env.unwrapped.turn_count == 0
    finally:
        env.close()
