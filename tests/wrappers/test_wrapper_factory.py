"""WRAPPER_FACTORY and get_wrapper_fns: GEM's names, lazy tools, per-env tool instances, errors."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import partial

import pytest

import gem
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper
from gem.wrappers.observation_wrapper import ObservationWrapper
from gem.wrappers.wrapper_factory import STAGES, TOOLS, WRAPPER_FACTORY, ToolPreset, get_wrapper_fns, wrapper_stage
from tests.conftest import needs_extra
from tests.wrappers.fake_tools import EchoTool
from tests.wrappers.test_observation_wrapper import ScriptedTokenizer

GEM_NAMES = {
    "python_tool", "python_tool_no_int_reward", "python_tool_no_int_reward_last_line_error", "search_tool",
    "search_tool_no_int_reward", "concat", "concat_chat", "concat_with_action", "concat_chat_on_reset",
    "episode_tracking",
}


def test_gem_names():
    assert set(WRAPPER_FACTORY) == GEM_NAMES


def test_import_builds_no_tool_and_imports_nothing_heavy():
    code = (
        "import sys, gem.wrappers.wrapper_factory\n"
        "heavy = [m for m in ('gem.tools.python_code_tool', 'gem.tools.search_tool', 'gem.sandbox.sandbox',"
        " 'transformers', 'mcp', 'requests', 'numpy') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_name_lists_valid_ones():
    with pytest.raises(KeyError, match="concat_chat") as err:
        get_wrapper_fns("python_tool,concat_chta")
    assert "Did you mean 'concat_chat'" in str(err.value)


def test_chat_wrappers_need_a_tokenizer():
    with pytest.raises(ValueError, match="tokenizer"):
        get_wrapper_fns("concat_chat")
    assert get_wrapper_fns("") == [] and get_wrapper_fns(None) == []


def test_observation_and_tracking_presets_apply_in_order():
    fns = get_wrapper_fns(" concat_chat , episode_tracking", tokenizer=ScriptedTokenizer())
    env = gem.make("game:GuessTheNumber-v0")
    for fn in fns:
        env = fn(env)
    assert isinstance(env, EpisodeTrackingWrapper) and isinstance(env.env, ObservationWrapper)
    obs, info = env.reset(seed=0)
    # The instruction closes the user turn; the prompt ends with the bare assistant header.
    assert obs.startswith("[user]") and obs.endswith(info["suffix"] + "[end][assistant]")
    for name, chat, on_reset, action in [("concat", False, False, False), ("concat_with_action", False, False, True),
                                         ("concat_chat_on_reset", False, True, True)]:
        wrapped = get_wrapper_fns(name, tokenizer=ScriptedTokenizer())[0](gem.make("game:GuessTheNumber-v0"))
        assert (wrapped.include_chat_template, wrapped.apply_chat_template_on_reset, wrapped.include_action) == (
            chat, on_reset, action)


def test_python_tool_preset_builds_one_tool_per_env():
    fn = get_wrapper_fns(["python_tool"])[0]
    a, b = fn(gem.make("game:GuessTheNumber-v0")), fn(gem.make("game:GuessTheNumber-v0"))
    try:
        assert isinstance(a, ToolEnvWrapper) and a.tools[0] is not b.tools[0]
        assert (a.tool_reward, a.tool_success_reward, a.max_tool_uses) == (0.05, 0.25, 5)
        a.reset(seed=0)
        obs, reward, *_ = a.step("<python>print(2 ** 5)</python>")
        assert "32" in obs and reward == pytest.approx(0.3)
        last_line = get_wrapper_fns("python_tool_no_int_reward_last_line_error")[0](gem.make("game:GuessTheNumber-v0"))
        assert last_line.tools[0].keep_error_last_line and last_line.tool_reward == 0.0
        last_line.close()
    finally:
        a.close(), b.close()


def test_search_tool_preset_builds_one_tool_per_env():
    needs_extra("search")  # SearchTool needs requests
    fn = WRAPPER_FACTORY["search_tool"]
    a, b = fn(gem.make("game:GuessTheNumber-v0")), fn(gem.make("game:GuessTheNumber-v0"))
    assert a.tools[0] is not b.tools[0] and a.tools[0].topk == 3 and a.tool_reward == 0.3


def test_full_stack_in_a_threaded_vector(tmp_path):
    pytest.importorskip("transformers")
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    fns = get_wrapper_fns("python_tool,concat_chat,episode_tracking", tokenizer=get_tiny_tokenizer(tmp_path))
    vec = gem.make_vec("game:GuessTheNumber-v0", num_envs=2, wrappers=fns, async_mode=True)
    try:
        obs, infos = vec.reset(seed=0)
        assert all(o.startswith("<|im_start|>user\n") and "<|im_end|>\n<|im_start|>assistant\n" in o for o in obs)
        tools = [e.env.env.tools[0] for e in vec.envs]
        assert tools[0] is not tools[1]
        obs, rewards, terminated, truncated, infos = vec.step(["<python>print(3 * 4)</python>", "\\boxed{7}"])
        # A text-tag tool call's output comes back as a user turn (no tool_call_id exists to answer).
        assert "<|im_start|>user\nCode execution result: 12" in obs[0] and "<|im_start|>tool" not in obs[0]
        assert "Code execution result: 12" not in obs[1]
        assert rewards[0] == pytest.approx(0.3)
        assert (infos["tool_bonus"][0] if isinstance(infos, dict) else infos[0]["tool_bonus"]) == pytest.approx(0.3)
    finally:
        vec.close()


# ------------------------------------------------------------------- stages and the TOOLS table
STAGE_CLASS = {"tool": ToolEnvWrapper, "observation": ObservationWrapper, "tracking": EpisodeTrackingWrapper}
EXPECTED_STAGE = {name: "tool" for name in GEM_NAMES if "tool" in name and name != "episode_tracking"}
EXPECTED_STAGE.update({name: "observation" for name in GEM_NAMES if name.startswith("concat")}, episode_tracking="tracking")


def _extras_for(name: str) -> None:
    if name.startswith("search_tool"):
        needs_extra("search")  # SearchTool needs requests


@pytest.mark.parametrize("name", sorted(WRAPPER_FACTORY))
def test_every_preset_builds_and_sits_in_its_stage(name, caplog):
    _extras_for(name)
    stage = wrapper_stage(WRAPPER_FACTORY[name])
    assert stage == EXPECTED_STAGE[name]
    (fn,) = get_wrapper_fns(name, tokenizer=ScriptedTokenizer())
    env = fn(gem.make("game:GuessTheNumber-v0"))
    try:
        assert isinstance(env, STAGE_CLASS[stage]) and env.reset(seed=0)[0]
        # the full stack around it, in stage order: no warning, and each layer is its stage's class
        around = {"tool": "python_tool", "observation": "concat", "tracking": "episode_tracking"}
        around[stage] = name
        caplog.clear()
        fns = get_wrapper_fns([around[s] for s in STAGES], tokenizer=ScriptedTokenizer())
        assert "out of the usual order" not in caplog.text
        stack = gem.make("game:GuessTheNumber-v0")
        for f in fns:
            stack = f(stack)
        layers = [stack.env.env, stack.env, stack]  # innermost first, as STAGES
        assert [type(layer) for layer in layers] == [STAGE_CLASS[s] for s in STAGES]
        stack.reset(seed=0)
        stack.close()
        # any other order is reported
        get_wrapper_fns([around[s] for s in reversed(STAGES)], tokenizer=ScriptedTokenizer())
        assert "out of the usual order" in caplog.text
    finally:
        env.close()


def test_the_stage_comes_from_the_class_or_a_declared_attribute_not_the_name(caplog):
    class Chatty(ObservationWrapper):
        pass

    def plain(env):
        return env

    staged = partial(plain)
    staged.wrapper_stage = "tracking"
    try:
        WRAPPER_FACTORY["bash"] = partial(ToolEnvWrapper, tools=[EchoTool])
        WRAPPER_FACTORY["toolbox_view"] = partial(Chatty, include_chat_template=False)  # "tool" in its name
        WRAPPER_FACTORY["plain"] = plain
        WRAPPER_FACTORY["staged"] = staged
        assert [wrapper_stage(WRAPPER_FACTORY[n]) for n in ("bash", "toolbox_view", "plain", "staged")] == [
            "tool", "observation", None, "tracking"]
        caplog.clear()
        get_wrapper_fns("bash,toolbox_view,plain,staged")
        assert "out of the usual order" not in caplog.text
        get_wrapper_fns("toolbox_view,bash")
        assert "out of the usual order" in caplog.text
        staged.wrapper_stage = "middle"
        with pytest.raises(ValueError, match="wrapper_stage must be one of"):
            get_wrapper_fns("staged")
    finally:
        for name in ("bash", "toolbox_view", "plain", "staged"):
            WRAPPER_FACTORY.pop(name, None)


def test_tool_presets_are_generated_from_the_tools_table():
    assert set(TOOLS) == {n for n, s in EXPECTED_STAGE.items() if s == "tool"}
    for name, row in TOOLS.items():
        entry = WRAPPER_FACTORY[name]
        assert entry.func is ToolEnvWrapper and set(entry.keywords) == {"tools", "tool_reward", "tool_success_reward", "max_tool_uses"}
        assert (entry.keywords["tool_reward"], entry.keywords["tool_success_reward"], entry.keywords["max_tool_uses"]) == (
            row.tool_reward, row.tool_success_reward, 5)
        assert pickle.loads(pickle.dumps(entry)).keywords["tool_reward"] == row.tool_reward  # process vectors send presets
    assert TOOLS["search_tool"].kwargs == {"topk": 3, "timeout": 5} and TOOLS["search_tool"].tool_reward == 0.3
    assert TOOLS["python_tool_no_int_reward_last_line_error"].kwargs["keep_error_last_line"] is True


def test_a_new_tool_is_one_row():
    try:
        TOOLS["bash"] = ToolPreset(EchoTool, {"prefix": "$ "}, tool_success_reward=0.5, max_tool_uses=2)
        assert list(WRAPPER_FACTORY)[: len(TOOLS) - 1] == list(TOOLS)[:-1]
        (fn,) = get_wrapper_fns("bash")
        a, b = fn(gem.make("game:GuessTheNumber-v0")), fn(gem.make("game:GuessTheNumber-v0"))
        assert wrapper_stage(WRAPPER_FACTORY["bash"]) == "tool" and a.tools[0] is not b.tools[0]
        a.reset(seed=0)
        obs, reward, *_ = a.step("<echo>ls</echo>")
        assert obs == "$ ls (call 1)" and reward == 0.5 and a.max_tool_uses == 2
        TOOLS["bash"] = ToolPreset("tests.wrappers.fake_tools:ShoutTool", max_tool_uses=None, max_turns=4,
                                   truncate_on_tool_limit=True, tool_execute_error_reward=-1.0)
        env = WRAPPER_FACTORY["bash"](gem.make("game:GuessTheNumber-v0"))
        assert (env.max_turns, env.truncate_on_tool_limit, env.tool_execute_error_reward) == (4, True, -1.0)
        assert type(env.tools[0]).__name__ == "ShoutTool"
        del TOOLS["bash"]
        assert "bash" not in WRAPPER_FACTORY
    finally:
        TOOLS.pop("bash", None)
    assert "bash" not in WRAPPER_FACTORY and set(WRAPPER_FACTORY) == GEM_NAMES


def test_bad_tool_rows_are_refused():
    with pytest.raises(ValueError, match="not a tool"):
        TOOLS["concat"] = ToolPreset(EchoTool)
    with pytest.raises(TypeError, match="ToolPreset"):
        TOOLS["bash"] = EchoTool
    with pytest.raises(ValueError, match="without commas"):
        TOOLS["a,b"] = ToolPreset(EchoTool)
    with pytest.raises(ValueError, match="module:Class"):
        ToolPreset("gem.tools.bash_tool.BashTool")
    with pytest.raises(TypeError, match="kwargs"):
        ToolPreset(EchoTool, ["prefix"])
    assert set(WRAPPER_FACTORY) == GEM_NAMES and isinstance(TOOLS.copy(), dict)
