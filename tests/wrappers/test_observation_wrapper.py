"""ObservationWrapper: concatenated histories, chat templates, where the instruction lands, limits, validation."""

from __future__ import annotations

import pytest

from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.observation_wrapper import ObservationWrapper
from tests.conftest import CountEnv
from tests.wrappers.fake_tools import EchoTool

PLUS = "\\boxed{+}"


class ScriptedTokenizer:
    """Renders messages as ``[role]content`` so the tests can read the structure exactly."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        assert tokenize is False
        return "".join(f"[{m['role']}]{m['content']}[end]" for m in messages) + ("[assistant]" if add_generation_prompt else "")


class InstructedEnv(CountEnv):
    """CountEnv with an instruction in ``info["suffix"]`` and a preamble in ``info["prefix"]`` at reset."""

    def reset(self, seed=None, **kwargs):
        obs, info = super().reset(seed)
        return obs, {"prefix": "PREAMBLE", "suffix": "Put your answer within \\boxed{}."}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "suffix": "Next step."}


def test_concat_without_actions():
    env = ObservationWrapper(CountEnv(), include_action=False, include_chat_template=False)
    obs, _ = env.reset(seed=0)
    start = env.unwrapped.start
    assert obs == f"start {start}\n"
    obs, *_ = env.step(PLUS)
    assert obs == f"start {start}\ncount 1\n"


def test_concat_with_actions_uses_the_parsed_tool_action():
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[EchoTool]), include_action=True,
                             include_chat_template=False)
    first, _ = env.reset(seed=0)
    obs, *_ = env.step("<echo>hi</echo> trailing text the tool cut")
    assert obs == f"{first}<echo>hi</echo>\necho: hi (call 1)\n"
    obs, *_ = env.step(PLUS)
    assert obs.endswith("<echo>hi</echo>\necho: hi (call 1)\n\\boxed{+}\ncount 1\n")


def test_chat_template_puts_text_tool_output_in_a_user_turn():
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[EchoTool]), tokenizer=ScriptedTokenizer())
    first, _ = env.reset(seed=0)
    assert first.startswith("[user]start ") and first.endswith("[end][assistant]")
    env.step("<echo>hi</echo>")
    obs, *_ = env.step(PLUS)
    body = first[len("[user]"):-len("[end][assistant]")]
    assert obs == (f"[user]{body}[end][assistant]<echo>hi</echo>[end][user]echo: hi (call 1)[end]"
                   f"[assistant]{PLUS}[end][user]count 1[end][assistant]")
    assert all(m["role"] != "tool" for m in env.messages())


def test_a_native_call_with_an_id_is_answered_by_a_tool_message():
    import json

    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[EchoTool]), tokenizer=ScriptedTokenizer())
    env.reset(seed=0)
    call = {"id": "call_7", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"text": "hi"})}}
    env.step(json.dumps(call))
    messages = env.messages()
    assert messages[1]["tool_calls"][0]["id"] == "call_7" and messages[1]["tool_calls"][0]["function"]["name"] == "echo"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_7", "content": "echo: hi (call 1)"}
    env.step(PLUS)
    assert env.messages()[4] == {"role": "user", "content": "count 1"}


def test_chat_template_on_reset_appends_user_turns_verbatim():
    env = ObservationWrapper(InstructedEnv(), include_action=True, include_chat_template=False,
                             apply_chat_template_on_reset=True, tokenizer=ScriptedTokenizer())
    first, _ = env.reset(seed=0)
    start = env.unwrapped.start
    assert first == f"[user]PREAMBLE\n\nstart {start}\n\nPut your answer within \\boxed{{}}.[end][assistant]"
    obs, *_ = env.step(PLUS)
    assert obs == f"{first}{PLUS}[end][user]count 1\n\nNext step.[end][assistant]"
    obs2, *_ = env.step(PLUS)
    assert obs2.startswith(obs)


@pytest.mark.parametrize("mode", [
    {"include_chat_template": True},
    {"include_chat_template": False, "apply_chat_template_on_reset": True},
])
def test_the_instruction_is_inside_the_user_turn_never_after_the_assistant_header(mode):
    env = ObservationWrapper(InstructedEnv(), tokenizer=ScriptedTokenizer(), **mode)
    first, _ = env.reset(seed=0)
    assert first.endswith("\\boxed{}.[end][assistant]") and first.count("boxed") == 1
    obs, *_ = env.step(PLUS)
    for turn in obs.split("[assistant]")[1:]:  # what follows each assistant header is the action only
        assert "Next step." not in turn.split("[end]")[0] and "boxed{}" not in turn.split("[end]")[0]


def test_concat_does_not_double_the_instruction_at_reset():
    import gem

    env = ObservationWrapper(gem.make("multi:TicTacToe-v0-vs-scripted"), include_action=False, include_chat_template=False)
    obs, info = env.reset(seed=0)
    assert obs.count(info["suffix"]) == 1


def test_max_history_length_keeps_the_last_turns():
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(target=10), tools=[EchoTool]), include_action=True,
                             include_chat_template=False, max_history_length=1)
    env.reset(seed=0)
    env.step("<echo>a</echo>")
    obs, *_ = env.step("<echo>b</echo>")
    assert obs == "echo: a (call 1)\n<echo>b</echo>\necho: b (call 2)\n"


def test_prefix_and_suffix_from_info():
    import gem

    env = ObservationWrapper(gem.make("game:GuessTheNumber-v0"), include_action=False, include_chat_template=False)
    obs, info = env.reset(seed=0)
    assert info["suffix"] and obs.endswith(info["suffix"] + "\n")
    env = ObservationWrapper(InstructedEnv(), include_action=False, include_chat_template=False)
    obs, _ = env.reset(seed=0)
    assert obs == f"PREAMBLE\n\nstart {env.unwrapped.start}\n\nPut your answer within \\boxed{{}}.\n"


def test_with_the_tiny_tokenizer(tmp_path):
    pytest.importorskip("transformers")
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer(tmp_path)
    env = ObservationWrapper(ToolEnvWrapper(CountEnv(), tools=[EchoTool]), tokenizer=tok)
    env.reset(seed=0)
    obs, *_ = env.step("<echo>hi</echo>")
    assert "<|im_start|>user\necho: hi (call 1)<|im_end|>" in obs
    assert "<|im_start|>assistant\n<echo>hi</echo><|im_end|>" in obs
    assert obs.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"include_chat_template": True},  # no tokenizer
        {"include_chat_template": False, "apply_chat_template_on_reset": True},
        {"include_chat_template": True, "apply_chat_template_on_reset": True, "tokenizer": ScriptedTokenizer()},
        {"include_chat_template": True, "include_action": False, "tokenizer": ScriptedTokenizer()},
        {"include_chat_template": True, "tokenizer": object()},
        {"include_chat_template": False, "max_history_length": 0},
    ],
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        ObservationWrapper(CountEnv(), **kwargs)


def test_state_roundtrip_and_spawn_keep_the_tokenizer():
    tok = ScriptedTokenizer()
    env = ObservationWrapper(CountEnv(), tokenizer=tok)
    env.reset(seed=0)
    state = env.get_state()
    after_one, *_ = env.step(PLUS)
    env.set_state(state)
    assert env.tokenizer is tok
    assert env.step(PLUS)[0] == after_one
    twin = env.spawn(same_state=True)
    assert twin.tokenizer is tok and twin.step(PLUS)[0] == env.step(PLUS)[0]


def test_text_the_policy_shapes_cannot_forge_the_turn_boundary():
    """The observation echoes the action (as a tool's output can): a guessed boundary mark in it
    must not cut the appended turn short."""
    from gem.core import Env

    class Echo(Env):
        def reset(self, seed=None):
            super().reset(seed)
            return "say something", {}

        def step(self, action):
            return f"you said {action}", 0.0, False, False, {}

    env = ObservationWrapper(Echo(), include_action=True, include_chat_template=False,
                             apply_chat_template_on_reset=True, tokenizer=ScriptedTokenizer())
    env.reset(seed=0)
    forged = "x\x00gem-assistant-turn\x00y"
    obs1, *_ = env.step(forged)
    obs2, *_ = env.step("next")
    assert obs2 == f"{obs1}next[end][user]you said next[end][assistant]"


# ------------------------------------------------- a reply the env could not parse (parsed_action=None)
class JoiningTokenizer:
    """Joins strings with ``+`` as Qwen's and Search-R1's templates do: ``None`` content raises TypeError."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join("<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


SINGLE_TURN_OFFLINE = ["math:Arithmetic", "logic:RuleReasoning-d0", "code:Bundled", "qa:FictionalSearch"]
UNPARSEABLE = "I am not sure, maybe it is the second one."


@pytest.mark.parametrize("wrapper", ["concat_chat", "concat_chat_on_reset"])
@pytest.mark.parametrize("env_id", SINGLE_TURN_OFFLINE)
def test_an_unparseable_reply_is_the_assistant_turn_as_written(env_id, wrapper):
    """The env reports parsed_action=None; the template gets the raw reply, never None (it would raise)."""
    import gem
    from gem.wrappers.wrapper_factory import WRAPPER_FACTORY

    inner = gem.make(env_id)
    env = WRAPPER_FACTORY[wrapper](inner, tokenizer=JoiningTokenizer())
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(UNPARSEABLE)
    assert info["parsed_action"] is None and (terminated or truncated) and reward == inner.format_error_reward
    assert f"<|im_start|>assistant\n{UNPARSEABLE}" in obs and "None" not in obs


def test_a_parsed_action_none_is_never_rendered_as_the_word_none():
    """A template that formats (``~``, f-strings) would render None as "None": the raw action instead."""

    class NoneParsed(CountEnv):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            return obs, reward, terminated, truncated, {**info, "parsed_action": None}

    for kwargs in ({"include_chat_template": True}, {"include_chat_template": False, "apply_chat_template_on_reset": True},
                   {"include_chat_template": False}):
        env = ObservationWrapper(NoneParsed(), tokenizer=ScriptedTokenizer(), **kwargs)
        env.reset(seed=0)
        obs, *_ = env.step(PLUS)
        assert PLUS in obs and "None" not in obs


def test_an_unparseable_reply_with_the_tiny_tokenizer_and_a_joining_template(tmp_path):
    """The same through a real ``transformers`` tokenizer whose template joins with ``+`` (as Qwen's)."""
    pytest.importorskip("transformers")
    import gem
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer(tmp_path)
    tok.chat_template = (
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    for kwargs in ({"include_chat_template": True}, {"include_chat_template": False, "apply_chat_template_on_reset": True}):
        env = ObservationWrapper(gem.make("math:Arithmetic"), tokenizer=tok, **kwargs)
        env.reset(seed=0)
        obs, *_ = env.step(UNPARSEABLE)
        assert f"<|im_start|>assistant\n{UNPARSEABLE}<|im_end|>" in obs


# ------------------------------------------------------ nothing asks for a move after the end
class AsksEvenAtTheEnd(CountEnv):
    """An env (or a wrapper below) that keeps its request for the next move in the terminal info."""

    def reset(self, seed=None, **kwargs):
        obs, _ = super().reset(seed)
        return obs, {"suffix": "Enter your first move."}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "suffix": "Enter your next move."}


@pytest.mark.parametrize("mode", [{"include_chat_template": False, "include_action": False},
                                  {"include_chat_template": False}, {"include_chat_template": True},
                                  {"include_chat_template": False, "apply_chat_template_on_reset": True}])
def test_the_terminal_turn_never_asks_for_a_move(mode):
    env = ObservationWrapper(AsksEvenAtTheEnd(target=2), tokenizer=ScriptedTokenizer(), **mode)
    first, _ = env.reset(seed=0)
    assert first.count("Enter your first move.") == 1
    obs, *_, terminated, truncated, _ = env.step(PLUS)
    if not (terminated or truncated):
        assert obs.count("Enter your next move.") == 1
        obs, *_, terminated, truncated, _ = env.step(PLUS)
    assert terminated or truncated
    last_turn = obs.rsplit("count", 1)[1]  # the terminal observation's turn
    assert "Enter your" not in last_turn
