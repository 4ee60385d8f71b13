"""A fake ``openai.AsyncOpenAI`` that records every request, and the checks a real server would make.

``FakeClient(reply)`` answers each ``chat.completions.create`` with ``reply(request)``: a string
(the assistant's text) or a dict ``{"content": ..., "tool_calls": [...]}``. Replies are real
``ChatCompletion`` objects of the SDK. :func:`validate_request` checks a recorded request the way an
OpenAI-compatible server does: every message against the SDK's ``ChatCompletionMessageParam``
(pydantic), no unknown keys, every ``tool`` message answering the id of a call made just before it,
every call answered before the conversation goes on, and the ``tools`` against
``ChatCompletionToolParam``.
"""

from __future__ import annotations

import typing
from types import SimpleNamespace
from typing import Any, Callable, Union

Reply = Union[str, dict[str, Any]]

_ROLE_CLASSES = {
    "system": "ChatCompletionSystemMessageParam",
    "developer": "ChatCompletionDeveloperMessageParam",
    "user": "ChatCompletionUserMessageParam",
    "assistant": "ChatCompletionAssistantMessageParam",
    "tool": "ChatCompletionToolMessageParam",
}


class FakeClient:
    """Records ``chat.completions.create`` keyword arguments in ``requests``; answers with ``reply``."""

    def __init__(self, reply: Callable[[dict[str, Any]], Reply]) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = reply
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, **request: Any) -> Any:
        from openai.types.chat import ChatCompletion

        request = {**request, "messages": [dict(m) for m in request["messages"]]}
        self.requests.append(request)
        answer = self.reply(request)
        message: dict[str, Any] = {"role": "assistant", "content": answer if isinstance(answer, str) else answer.get("content")}
        if isinstance(answer, dict) and answer.get("tool_calls"):
            message["tool_calls"] = answer["tool_calls"]
        return ChatCompletion.model_validate({
            "id": f"cmpl-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        })

    async def close(self) -> None:
        pass


def validate_request(request: dict[str, Any]) -> None:
    """Raise ``AssertionError`` (or pydantic's ``ValidationError``) where a real server would refuse the request."""
    from openai.types import chat
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
    from pydantic import TypeAdapter

    messages = request["messages"]
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(messages)
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        allowed = set(typing.get_type_hints(getattr(chat, _ROLE_CLASSES[role]))) if role in _ROLE_CLASSES else set()
        assert set(message) <= allowed, f"message {i} ({role}) has keys a server does not know: {set(message) - allowed}"
        if role == "tool":
            assert message["tool_call_id"] in pending, f"tool message {i} answers no open tool call: {message}"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"message {i} ({role}) comes before the tool calls {pending} were answered"
        if role == "assistant":
            pending = {call["id"] for call in message.get("tool_calls") or []}
    if "tools" in request:
        TypeAdapter(list[ChatCompletionToolParam]).validate_python(request["tools"])
        assert request["tools"], "an empty tools list is refused by some servers; leave it out"


def user_texts(request: dict[str, Any]) -> list[str]:
    """The text of every user and tool message of a request, in order."""
    return [m["content"] for m in request["messages"] if m["role"] in ("user", "tool")]


async def play(env: Any, agent: Any, seed: int = 0, max_steps: int = 10) -> list[tuple[str, float, bool, bool, dict[str, Any]]]:
    """One episode of ``env`` with an agent that has ``aact``: the list of step results."""
    obs, info = env.reset(seed=seed)
    agent.reset(obs, info)
    steps = []
    for _ in range(max_steps):
        action = await agent.aact(obs, info)
        result = env.step(action)
        steps.append(result)
        obs, _reward, terminated, truncated, info = result
        if terminated or truncated:
            break
    return steps
