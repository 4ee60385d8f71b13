"""``OpenAIAgent``: an LLM behind any OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, llama.cpp).

The conversation is kept as chat messages: an optional system prompt, the first observation as a
``user`` message, each action as an ``assistant`` message, and each later observation as a
``user`` message. Every observation is shown with the env's instruction:
:func:`gem.utils.prompting.user_content` joins ``info["prefix"]``, the observation and
``info["suffix"]`` (``Put your final answer within \\boxed{}.``) into the message's text.

Tool calling (``tool_calling``):

* ``"text"`` (default): the model writes tool calls in its reply (``<python>...</python>``,
  ``<search>...</search>``, ``<tool_call>{...}</tool_call>``) and the tool's output comes back as
  a ``user`` message, which every server and chat template accepts. No ``tool`` message is ever
  sent in this mode: a ``tool`` message must answer a ``tool_call_id``, and a text call has none.
* ``"native"``: the request carries ``tools=`` (the OpenAI function schemas in ``info["tools"]``,
  which :class:`gem.tools.tool_env_wrapper.ToolEnvWrapper` and the tool-using envs provide). When
  the reply has ``tool_calls``, each call is one action, as JSON (``{"id": ..., "type":
  "function", "function": {"name": ..., "arguments": "..."}}``, which the tools accept): the first
  is returned now and the others are queued, and the next ``act`` calls return them in order
  without asking the server. The assistant message carries all the reply's calls, and each
  observation goes back as a ``tool`` message with the ``tool_call_id`` of the call it answers;
  the server is asked again once every call has its answer. ``reset`` empties the queue. A reply
  without ``tool_calls`` is the final answer text.

``tool_role`` is kept from earlier versions: ``"tool"`` (default) means a tool's output is a
``tool`` message exactly when it answers a native call's id (so, only in native mode), a ``user``
message otherwise; ``"user"`` always sends ``user`` messages and is therefore text mode only.

Requests are retried with exponential backoff (``backoff_s * 2**attempt``, capped at
``max_backoff_s``) on timeouts, connection errors, 429 and 5xx; each try has its own ``timeout_s``,
which counts the request's own time only (not a wait for a free connection in the client's pool).
A request carries nothing but the standard chat fields: nothing about the episode.

Token recording (``record_tokens=True``, ``gem eval --record-tokens``): each request also asks for
the sampled tokens' ids and log-probabilities, with the standard ``logprobs: true, top_logprobs: 0``
and the token-id options of vLLM (``return_token_ids``, ``return_tokens_as_token_ids``) and SGLang
(``return_token_ids``, ``return_prompt_token_ids``) (servers that do not know them ignore them:
llama.cpp does). Each call record then carries ``token_source`` and the ids
(:func:`server_token_fields`, :data:`TOKEN_SOURCE_NOTES`):

* ``server``: the server returned the ids of this request (the choice's ``token_ids``, and
  ``prompt_token_ids`` on the response (vLLM) or the choice (SGLang), or logprob tokens written
  ``token_id:N``).
* ``server_logprob_tokens``: the server returned one text piece and logprob per sampled token
  (llama.cpp); each piece is mapped to the one vocabulary id whose text it is, through the
  server's own ``/extras/tokenize`` and checked with its ``/extras/detokenize``: every piece must
  be exactly one id and the ids must decode to the reply. A piece that is not (part of a UTF-8
  character, which llama.cpp sends as ``""``) makes the turn ``none``, with ``token_note`` saying why.
  The prompt's ids are not returned by llama.cpp, so ``prompt_token_ids`` is ``null``.
* ``none``: nothing exact came back; ``token_note`` says why.

``token_drift`` (per call: ``True``/``False``/``None``) says whether tokenising the reply's text again
with the server's tokenizer gives other ids than those sampled (``None``: the server has no
tokenize endpoint). It is a measurement, never a source of ids.

``openai`` is imported when the agent is built, never at ``import gem.agents``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from typing import Any, Optional

from gem.agents.base import Agent
from gem.utils.prompting import user_content

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0
DEFAULT_MAX_BACKOFF_S = 30.0
TOOL_ROLES = ("tool", "user")
TOOL_CALLING = ("text", "native")
TOKEN_REQUEST = {"logprobs": True, "top_logprobs": 0}
# vLLM: return_token_ids (reply: choice token_ids, response prompt_token_ids), return_tokens_as_token_ids
# (logprob tokens written token_id:N); SGLang: return_token_ids and return_prompt_token_ids (reply:
# choice token_ids and choice prompt_token_ids). Each server ignores the others' fields.
TOKEN_EXTRA_BODY = {"return_token_ids": True, "return_tokens_as_token_ids": True, "return_prompt_token_ids": True}
MAX_PIECES = 32768  # pieces recovered per reply at most (a reply is bounded by max_tokens anyway)


class ModelRequestError(RuntimeError):
    """A chat request failed after all its retries (``attempts`` tries; ``status`` if HTTP)."""

    def __init__(self, message: str, attempts: int, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status


def _retryable(exc: BaseException) -> tuple[bool, Optional[int]]:
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True, None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return status == 429 or status >= 500, status
    return False, None


class OpenAIAgent(Agent):
    """Chat agent over an OpenAI-compatible server.

    Args:
        model: the served model name.
        base_url: the server's ``/v1`` URL (``None``: the SDK's default, api.openai.com, or
            ``OPENAI_BASE_URL``).
        api_key: the key (default ``OPENAI_API_KEY``; local servers accept any, ``"EMPTY"`` is used).
        system_prompt: an optional first ``system`` message.
        temperature, top_p, max_tokens, seed, stop: sampling parameters (``None``: server default).
        extra_body: extra request fields (``{"top_k": 20}`` for vLLM/SGLang).
        timeout_s: per-request timeout in seconds.
        max_retries: retries after the first try; ``backoff_s``/``max_backoff_s``: their delays.
        tool_role: ``"tool"`` (a ``tool`` message only for the answer to a native call) or
            ``"user"`` (always ``user``; text mode only). See the module doc.
        client: an ``openai.AsyncOpenAI`` to share between agents (one per event loop).
        tool_calling: ``"text"`` (tool calls written in the reply) or ``"native"`` (the server's
            function calling, with ``tools=`` from ``info["tools"]``). See the module doc.
        record_tokens: ask the server for token ids and logprobs and keep them in ``calls``
            (see the module doc: ``token_source``, ``token_note``, ``token_drift``).
    """

    def __init__(
        self,
        model: str,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        system_prompt: Optional[str] = None,
        temperature: Optional[float] = None,
        top_p: Optional[float] = None,
        max_tokens: Optional[int] = None,
        seed: Optional[int] = None,
        stop: Optional[list[str]] = None,
        extra_body: Optional[dict[str, Any]] = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        tool_role: str = "tool",
        client: Any = None,
        tool_calling: str = "text",
        record_tokens: bool = False,
    ) -> None:
        if not model:
            raise ValueError(
                "OpenAIAgent needs a model name (the name the server serves, e.g. Qwen/Qwen3-4B)."
            )
        if tool_role not in TOOL_ROLES:
            raise ValueError(f"tool_role must be one of {TOOL_ROLES}, got {tool_role!r}.")
        if tool_calling not in TOOL_CALLING:
            raise ValueError(f"tool_calling must be one of {TOOL_CALLING}, got {tool_calling!r}.")
        if tool_calling == "native" and tool_role == "user":
            raise ValueError("tool_role='user' cannot answer native tool calls (they need tool messages); "
                             "use tool_role='tool' with tool_calling='native'.")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive seconds, got {timeout_s!r}.")
        if max_retries < 0 or backoff_s < 0:
            raise ValueError("max_retries and backoff_s must be >= 0.")
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            from gem.errors import missing_extra

            raise missing_extra("OpenAIAgent", "eval", "openai") from exc
        self.model = model
        self.base_url = base_url
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.system_prompt = system_prompt
        self.sampling = {
            k: v
            for k, v in dict(
                temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed, stop=stop
            ).items()
            if v is not None
        }
        self.extra_body = dict(extra_body or {})
        self.record_tokens = bool(record_tokens)
        if self.record_tokens:
            self.extra_body = {**TOKEN_EXTRA_BODY, **self.extra_body}
        self._tokens: Optional[TokenRecovery] = None
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s = float(backoff_s)
        self.max_backoff_s = float(max_backoff_s)
        self.tool_role = tool_role
        self.tool_calling = tool_calling
        self.tools: list[dict[str, Any]] = []  # OpenAI function schemas offered in native mode
        self._open_call: Optional[str] = None  # id of the native call the next observation answers
        self._queued: list[dict[str, Any]] = []  # native calls of the last reply still to be acted
        self._client = client
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pending: Optional[str] = None
        self.messages: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []  # per request: latency_s, usage, attempts

    # ------------------------------------------------------------------- episode state
    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        """Start a conversation whose first user message is ``observation`` with its instruction."""
        self.messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        self.calls = []
        self.tools = []
        self._open_call = None
        self._queued = []
        self._update_tools(info)
        self._pending = user_content(observation, info)

    def _update_tools(self, info: Optional[dict[str, Any]]) -> None:
        tools = (info or {}).get("tools")
        if isinstance(tools, list):
            self.tools = [t for t in tools if isinstance(t, dict) and isinstance(t.get("function"), dict)]

    def observe(self, observation: str, info: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """Append ``observation`` (with its instruction) to the history.

        It is a ``tool`` message answering the open native call, if the last reply made one;
        otherwise a ``user`` message.
        """
        self._update_tools(info)
        content = user_content(observation, info)
        if self._open_call is not None:
            message = {"role": "tool", "tool_call_id": self._open_call, "content": content}
            self._open_call = None
        else:
            message = {"role": "user", "content": content}
        self.messages.append(message)
        return message

    def _prepare(self, observation: str, info: Optional[dict[str, Any]]) -> None:
        pending = self._pending
        if pending is not None:  # first act after reset: the observation is the opening user message
            self.messages.append({"role": "user", "content": pending})
            self._pending = None
        else:
            self.observe(observation, info)

    # --------------------------------------------------------------------------- acting
    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0)
        return self._client

    async def complete(
        self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]] = None
    ) -> tuple[str, dict[str, Any]]:
        """One chat completion with retries: ``(text, call record)``; raises :class:`ModelRequestError`.

        ``tools``: function schemas for native tool calling; the reply's calls are in
        ``record["tool_calls"]`` (``[{"id", "type", "function": {"name", "arguments"}}]``).
        """
        import httpx

        client = self._get_client()
        # timeout_s bounds connecting, sending and each read of this request; waiting for a free
        # connection in the client's pool (behind other episodes' requests) is not the request's time.
        timeout = httpx.Timeout(self.timeout_s, pool=None)
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                response = await client.chat.completions.create(
                    model=self.model,
                    messages=messages,
                    timeout=timeout,
                    extra_body=self.extra_body or None,
                    **({"tools": tools} if tools else {}),
                    **(TOKEN_REQUEST if self.record_tokens else {}),
                    **self.sampling,
                )
                break
            except Exception as exc:  # noqa: BLE001 -- classified below
                if self.record_tokens and _refuses_token_options(exc) and any(k in self.extra_body for k in TOKEN_EXTRA_BODY):
                    # a strict server (OpenAI's own API) refuses vLLM's fields: ask with the standard ones only
                    logger.warning("the server refuses vLLM's token-id options; asking for logprobs only")
                    self.extra_body = {k: v for k, v in self.extra_body.items() if k not in TOKEN_EXTRA_BODY}
                    continue
                retry, status = _retryable(exc)
                if not retry or attempt >= self.max_retries:
                    raise ModelRequestError(
                        f"chat request to {self.base_url or 'the default endpoint'} failed after "
                        f"{attempt + 1} attempt(s): {type(exc).__name__}: {exc}",
                        attempts=attempt + 1,
                        status=getattr(exc, "status_code", status),
                    ) from exc
                delay = min(self.max_backoff_s, self.backoff_s * (2**attempt))
                logger.warning(
                    "chat request failed (%s), retry %d in %.2fs", type(exc).__name__, attempt + 1, delay
                )
                attempt += 1
                await asyncio.sleep(delay)
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content if choice is not None else None) or ""
        usage = response.usage
        record = {
            "latency_s": round(time.perf_counter() - start, 4),
            "attempts": attempt + 1,
            "finish_reason": getattr(choice, "finish_reason", None),
            "usage": {
                "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
            },
        }
        calls = _tool_calls(getattr(choice.message, "tool_calls", None) if choice is not None else None)
        if calls:
            record["tool_calls"] = calls
        if self.record_tokens:
            if self._tokens is None:
                base = str(client.base_url).rstrip("/")
                self._tokens = TokenRecovery(base, self.model, self.api_key, self.timeout_s)
            record.update(await self._tokens.fields(response, text))
        return text, record

    @property
    def queued_calls(self) -> list[dict[str, Any]]:
        """The native calls of the last reply that later ``act`` calls will return (a copy)."""
        return [dict(call) for call in self._queued]

    async def aact(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """The model's reply to ``observation`` (appended to the history with the reply), or the
        next native call queued from the last reply (then the server is not asked)."""
        self._prepare(observation, info)
        if self._queued:
            return self._act_call(self._queued.pop(0))
        native = self.tool_calling == "native"
        text, record = await self.complete(list(self.messages), self.tools if native else None)
        calls = record.get("tool_calls") if native else None
        self.calls.append(record)
        if not calls:
            self.messages.append({"role": "assistant", "content": text})
            return text
        seen: set[str] = set()
        for k, call in enumerate(calls):  # every call needs its own id for its tool message
            if not call.get("id") or call["id"] in seen:
                call["id"] = f"call_{len(self.calls)}" + (f"_{k}" if k else "")
            seen.add(call["id"])
        self.messages.append({"role": "assistant", "content": text, "tool_calls": calls})
        self._queued = list(calls[1:])  # one action per step: the others follow, in order
        return self._act_call(calls[0])

    def _act_call(self, call: dict[str, Any]) -> str:
        """``call`` as the action (JSON text); the next observation answers its id."""
        self._open_call = call["id"]
        return json.dumps(call, ensure_ascii=False)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """Synchronous :meth:`aact` (runs on the agent's own event loop; use ``aact`` inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "OpenAIAgent.act() was called inside a running event loop; await agent.aact(...) instead."
            )
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
            self._client = None  # a client is bound to the loop that made it
        return self._loop.run_until_complete(self.aact(observation, info))

    def close(self) -> None:
        """Close the agent's own event loop (if ``act`` made one)."""
        if self._loop is not None and not self._loop.is_closed():
            if self._client is not None:
                self._loop.run_until_complete(self._client.close())
            self._loop.close()
        self._loop = None


class TokenRecovery:
    """Token ids of chat replies from one server: what it returns, or its pieces mapped exactly.

    ``base_url`` is the server's ``/v1`` URL; the tokenizer endpoints are beside it
    (llama.cpp's ``/extras/tokenize`` and ``/extras/detokenize``, vLLM's ``/tokenize``). See the
    module doc for the sources. Shared by :class:`OpenAIAgent` and ``gem proxy``.
    """

    def __init__(self, base_url: str, model: str, api_key: str = "EMPTY", timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        base = base_url.rstrip("/")
        self.root = base[: -len("/v1")] if base.endswith("/v1") else base
        self.model = model
        self.api_key = api_key
        self.timeout_s = float(timeout_s)
        self._tokenizer_api: Any = None  # "llama.cpp", "vllm" or False once probed
        self._piece_ids: dict[str, Optional[int]] = {}
        self._lead: Optional[list[int]] = None

    async def _post_json(self, http: Any, path: str, body: dict[str, Any]) -> Any:
        """POST to the server's ``path`` (beside ``/v1``); ``None`` on any failure."""
        import httpx

        try:
            reply = await http.post(
                self.root + path, json=body, headers={"Authorization": f"Bearer {self.api_key}"}
            )
            if reply.status_code != 200 or len(reply.content) > 16 << 20:
                return None
            return reply.json()
        except (httpx.HTTPError, ValueError):
            return None

    async def _tokenize(self, http: Any, text: str) -> Optional[list[int]]:
        """``text`` tokenised by the server's own tokenizer, without special tokens; ``None``: no endpoint."""
        if self._tokenizer_api in (None, "llama.cpp"):
            if self._lead is None:  # what the server puts before any text (a BOS, or nothing)
                empty = await self._post_json(http, "/extras/tokenize", {"model": self.model, "input": ""})
                self._lead = _int_list(empty.get("tokens") if isinstance(empty, dict) else None)
            got = await self._post_json(http, "/extras/tokenize", {"model": self.model, "input": text})
            ids = _int_list(got.get("tokens") if isinstance(got, dict) else None)
            lead = self._lead
            if ids is not None and lead is not None:
                self._tokenizer_api = "llama.cpp"
                return ids[len(lead):] if ids[: len(lead)] == lead else ids
        if self._tokenizer_api in (None, "vllm"):
            got = await self._post_json(http, "/tokenize", {"model": self.model, "prompt": text, "add_special_tokens": False})
            ids = _int_list((got or {}).get("tokens") if isinstance(got, dict) else None)
            if ids is not None:
                self._tokenizer_api = "vllm"
                return ids
        if self._tokenizer_api is None:
            self._tokenizer_api = False
        return None

    async def _detokenize(self, http: Any, ids: list[int]) -> Optional[str]:
        got = await self._post_json(http, "/extras/detokenize", {"model": self.model, "tokens": ids})
        text = got.get("text") if isinstance(got, dict) else None
        return text if isinstance(text, str) else None

    async def _piece_id(self, http: Any, piece: str) -> Optional[int]:
        """The one vocabulary id whose text is ``piece`` (llama.cpp), or ``None``."""
        if piece not in self._piece_ids:
            ids = await self._tokenize(http, piece) if piece else None
            found = None
            if ids is not None and len(ids) == 1 and await self._detokenize(http, ids) == piece:
                found = ids[0]
            if len(self._piece_ids) < 65536:
                self._piece_ids[piece] = found
            return found
        return self._piece_ids[piece]

    async def fields(self, response: Any, text: str) -> dict[str, Any]:
        """The call record's token fields for ``response`` (SDK object or JSON dict) whose text is ``text``."""
        import httpx

        async with httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False) as http:
            return await self._fields_with(http, response, text)

    async def _fields_with(self, http: Any, response: Any, text: str) -> dict[str, Any]:
        raw = response.model_dump() if hasattr(response, "model_dump") else response
        fields = server_token_fields(raw if isinstance(raw, dict) else {})
        pieces = fields.pop("pieces", None)
        if fields["token_source"] == "none" and pieces is not None:
            fields = await self._recover(http, pieces, fields, text)
        ids = fields.get("completion_token_ids")
        fields["token_drift"] = None
        if ids is not None:
            again = await self._tokenize(http, text)
            fields["token_drift"] = None if again is None else again != ids
        return fields

    async def _recover(self, http: Any, pieces: list[str], fields: dict[str, Any], text: str) -> dict[str, Any]:
        """llama.cpp: map each returned piece to its vocabulary id (see the module doc)."""
        none = dict(fields, completion_logprobs=None)
        if len(pieces) > MAX_PIECES:
            return dict(none, token_note=f"{len(pieces)} logprob tokens: more than {MAX_PIECES}")
        if pieces and (await self._tokenize(http, "a") is None or self._tokenizer_api != "llama.cpp"):
            return dict(none, token_note="the server returned token text, not ids, and no vocabulary endpoint "
                        "(llama.cpp's /extras/tokenize) to map the text to ids exactly")
        ids = []
        for k, piece in enumerate(pieces):
            found = await self._piece_id(http, piece)
            if found is None:
                why = "an empty piece (part of a UTF-8 character)" if not piece else f"piece {piece!r:.40} is not one vocabulary id"
                return dict(none, token_note=f"logprob token {k}: {why}; the ids cannot be recovered exactly")
            ids.append(found)
        decoded = await self._detokenize(http, ids) if ids else ""
        if decoded != text:
            return dict(none, token_note="the recovered ids do not decode to the reply; not recorded")
        return {
            "token_source": "server_logprob_tokens",
            "prompt_token_ids": None,
            "completion_token_ids": ids,
            "completion_logprobs": fields["logprob_values"],
            "token_note": "completion ids from the server's logprob tokens and its vocabulary; "
            "the server does not return the prompt's ids",
        }


def _refuses_token_options(exc: BaseException) -> bool:
    """Whether ``exc`` is a 400/422 that names one of the token-id options (vLLM's, SGLang's)."""
    status = getattr(exc, "status_code", None)
    return status in (400, 422) and any(k in str(exc) for k in TOKEN_EXTRA_BODY)


def _int_list(value: Any) -> Optional[list[int]]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return None
    return list(value)


def _float_list(value: Any) -> Optional[list[float]]:
    out = []
    for v in value if isinstance(value, list) else [None]:
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v:
            return None
        out.append(float(v))
    return out


_TOKEN_ID = re.compile(r"token_id:(\d+)")


def server_token_fields(response: dict[str, Any]) -> dict[str, Any]:
    """The token fields a chat completion's JSON carries by itself (no tokenizer involved).

    Returns ``token_source`` (``server`` or ``none``), ``prompt_token_ids``,
    ``completion_token_ids``, ``completion_logprobs``, ``token_note`` and, for ``none`` with
    per-token text pieces (llama.cpp), ``pieces`` and ``logprob_values`` for the caller to map
    to ids exactly or not at all.
    """
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    entries = [e for e in content if isinstance(e, dict)] if isinstance(content, list) else None
    values = _float_list([e.get("logprob") for e in entries]) if entries is not None else None
    pieces = [e.get("token") for e in entries] if entries is not None else None
    none: dict[str, Any] = {"token_source": "none", "prompt_token_ids": None, "completion_token_ids": None,
                            "completion_logprobs": None}
    prompt_ids = _int_list(response.get("prompt_token_ids"))  # vLLM puts them on the response
    if prompt_ids is None:
        prompt_ids = _int_list(choice.get("prompt_token_ids"))  # SGLang, on the choice
    ids = _int_list(choice.get("token_ids"))
    if ids is None and pieces is not None and pieces and all(isinstance(p, str) and _TOKEN_ID.fullmatch(p) for p in pieces):
        ids = [int(_TOKEN_ID.fullmatch(p).group(1)) for p in pieces]  # type: ignore[union-attr]
    if ids is not None:
        same = values is not None and len(values) == len(ids)
        return {"token_source": "server", "prompt_token_ids": prompt_ids, "completion_token_ids": ids,
                "completion_logprobs": values if same else None,
                "token_note": None if same else "the server returned ids without one logprob per id"}
    if pieces is None:
        return dict(none, token_note="the server returned neither token ids nor logprobs")
    if values is None or not all(isinstance(p, str) for p in pieces):
        return dict(none, token_note="the server's logprobs are malformed")
    return dict(none, token_note="the server returned token text, not ids", pieces=pieces, logprob_values=values)


def _tool_calls(raw: Any) -> list[dict[str, Any]]:
    """A reply's ``tool_calls`` (SDK objects or dicts) as plain JSON-safe dicts; function calls only."""
    out = []
    for item in raw or []:
        item = item.model_dump() if hasattr(item, "model_dump") else item
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        out.append({"id": str(item.get("id") or ""), "type": "function",
                    "function": {"name": function["name"], "arguments": arguments}})
    return out
