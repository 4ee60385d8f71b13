"""Tool calls written as OpenAI-style function calls: reading them from an action, and their schemas.

Every tool accepts a call in two written forms besides its own tags:

* the whole action is the JSON of one function call, ``{"name": "python", "arguments": {"code":
  "print(1)"}}`` (also ``{"function": {...}}``, ``{"tool_calls": [...]}`` or a one-call list): what
  :class:`gem.agents.OpenAIAgent` sends when it maps a native ``tool_calls`` reply to an action
  (:func:`parse_function_call`; it may carry the call's ``"id"``, :func:`function_call_id`);
* ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` inside the text (the Hermes/Qwen
  form, and GEM's ``<tool_call><tool_name>...</tool_name><arguments>...</arguments></tool_call>``),
  read by :func:`parse_tool_call`.

:func:`read_function_call` reads either form once into a :class:`gem.tools.types.ToolCall` (what
``ToolEnvWrapper`` routes by name); both read the JSON with
:func:`gem.utils.parsing.function_call_from_json`, the one parser of function calls.
:func:`read_structured_call` reads an action that is already data (a ``ToolCall``, or an OpenAI
``tool_calls`` dict or list) the same way, without writing it as text and parsing it back. :func:`function_schema` builds the ``{"type": "function", "function": {...}}``
entry a tool lists in :meth:`gem.tools.base_tool.BaseTool.openai_schemas`.
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import replace
from typing import Any, NamedTuple, Optional

from gem.tools.types import ToolCall
from gem.utils.parsing import function_call_from_json
from gem.utils.text import preview

MAX_CALL_CHARS = 1_000_000
OPEN_TAG, CLOSE_TAG = "<tool_call>", "</tool_call>"


def function_schema(name: str, description: str, properties: dict[str, Any], required: Optional[list[str]] = None) -> dict[str, Any]:
    """One OpenAI ``tools`` entry: a function ``name`` taking an object with ``properties``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required or properties)},
        },
    }


def _json_action(action: str) -> Any:
    """The action parsed as JSON when it is a JSON object or array, else ``None``."""
    text = action.strip() if isinstance(action, str) else ""
    if not text.startswith(("{", "[")) or len(text) > MAX_CALL_CHARS * 4:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None


def parse_function_call(action: str) -> Optional[tuple[str, dict[str, Any]]]:
    """``(name, arguments)`` when the whole ``action`` is an OpenAI-style function call, else ``None``."""
    data = _json_action(action)
    return None if data is None else function_call_from_json(data)


def _call_entry(data: Any) -> Any:
    """The one call entry of parsed JSON: a one-element list and a ``tool_calls`` array unwrapped."""
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if isinstance(data, dict) and isinstance(data.get("tool_calls"), list) and data["tool_calls"]:
        data = data["tool_calls"][0]
    return data


def _entry_id(entry: Any) -> Optional[str]:
    call_id = entry.get("id") if isinstance(entry, dict) else None
    return call_id if isinstance(call_id, str) and call_id else None


def function_call_id(action: str) -> Optional[str]:
    """The ``id`` of the function call that the whole ``action`` is (a mapped ``tool_calls`` entry), else ``None``."""
    entry = _call_entry(_json_action(action))
    call_id = _entry_id(entry)
    return call_id if call_id is not None and function_call_from_json(entry) is not None else None


def _diagnose(call: Any) -> str:
    """Why ``call`` (parsed JSON) is not a function call."""
    if not isinstance(call, dict) or "name" not in call:
        return 'the tool call must be a JSON object with "name" and "arguments"'
    raw_args = next((call[k] for k in ("arguments", "parameters", "kwargs") if k in call), {})
    if isinstance(raw_args, str):
        return "the arguments are not valid JSON"
    if not isinstance(raw_args, dict):
        return f"the arguments must be a JSON object, got {type(raw_args).__name__}"
    return "the tool name must be a non-empty string"


def _xml_call(body: str) -> tuple[Optional[dict[str, Any]], str]:
    """GEM's ``<tool_name>NAME</tool_name><arguments>{...}</arguments>`` body as a call dict, or an error."""
    name_end = body.find("</tool_name>")
    if name_end < 0:
        return None, "<tool_name> has no closing </tool_name> tag"
    name = body[len("<tool_name>") : name_end].strip()
    rest = body[name_end + len("</tool_name>") :].strip()
    raw_args = "{}"
    if rest:
        if not (rest.startswith("<arguments>") and rest.endswith("</arguments>")):
            return None, "after </tool_name> expected <arguments>{...}</arguments>"
        raw_args = rest[len("<arguments>") : -len("</arguments>")].strip() or "{}"
    return {"name": name, "arguments": raw_args}, ""


def parse_tool_call(action: str) -> tuple[bool, Optional[str], Optional[dict[str, Any]], str, str]:
    """Find the first ``<tool_call>...</tool_call>`` in ``action``.

    Returns ``(found, name, arguments, parsed_action, error)``: ``found`` is whether ``action``
    contains ``<tool_call>``; when the call is malformed ``arguments`` is ``None`` and ``error``
    says why. ``parsed_action`` is ``action`` up to the end of the call.
    """
    start = action.find(OPEN_TAG)
    if start < 0:
        return False, None, None, action, ""
    end = action.find(CLOSE_TAG, start)
    if end < 0:
        return True, None, None, action, f"the tool call has no closing {CLOSE_TAG} tag"
    parsed_action = action[: end + len(CLOSE_TAG)]
    body = action[start + len(OPEN_TAG) : end].strip()
    if len(body) > MAX_CALL_CHARS:
        return True, None, None, parsed_action, f"the tool call is too long ({len(body)} characters, at most {MAX_CALL_CHARS})"
    if body.startswith("<tool_name>"):
        call, error = _xml_call(body)
        if call is None:
            return True, None, None, parsed_action, error
    else:
        try:
            call = json.loads(body)
        except (json.JSONDecodeError, RecursionError) as exc:
            return True, None, None, parsed_action, f"the tool call is not valid JSON ({getattr(exc, 'msg', exc)})"
    if isinstance(call, dict) and call.get("arguments", "") is None:
        call = {**call, "arguments": {}}
    parsed = function_call_from_json(call) if isinstance(call, dict) else None
    if parsed is None:
        name = call.get("name") if isinstance(call, dict) and isinstance(call.get("name"), str) else None
        return True, name, None, parsed_action, _diagnose(call)
    name, arguments = parsed
    if not name:
        return True, None, None, parsed_action, "the tool name must be a non-empty string"
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return True, name, None, parsed_action, "the arguments contain characters that cannot be sent (lone surrogates)"
    return True, name, arguments, parsed_action, ""


def find_function_call(action: str, names: Any) -> Optional[tuple[str, dict[str, Any], str]]:
    """``(name, arguments, parsed_action)`` of a well-formed call of one of ``names`` in ``action``.

    The whole action as a function call (the native form) comes first, then the first
    ``<tool_call>`` tag; ``None`` when neither names one of ``names``.
    """
    if not isinstance(action, str):
        return None
    call = parse_function_call(action)
    if call is not None:
        return (call[0], call[1], action) if call[0] in names else None
    if OPEN_TAG not in action:
        return None
    found, name, arguments, parsed_action, _error = parse_tool_call(action)
    if found and name in names and arguments is not None:
        return name, arguments, parsed_action
    return None


def _native_call(action: str, data: Any) -> Optional[ToolCall]:
    """The call that parsed JSON ``data`` (the whole ``action``) is; a named call whose arguments are
    malformed comes back with ``error``. ``None`` when ``data`` is not shaped as a call."""
    entry = _call_entry(data)
    parsed = function_call_from_json(entry)
    if parsed is not None:
        return ToolCall(parsed[0], parsed[1], action, action, _entry_id(entry), "native")
    function = entry.get("function") if isinstance(entry, dict) and isinstance(entry.get("function"), dict) else entry
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return None  # JSON, but not a function call (an answer written as JSON): not a tool's business
    return ToolCall(function["name"], {}, action, action, _entry_id(entry), "native", _diagnose(function))


def read_function_call(action: Any) -> Optional[ToolCall]:
    """The function call ``action`` holds in one of the forms every tool accepts, read once.

    The whole action as a function call (``source="native"``, with the call's ``id`` when it has
    one) comes first, then the first ``<tool_call>...</tool_call>`` (``source="tool_call"``). A
    call that cannot run (malformed JSON inside ``<tool_call>``, arguments that are not an object)
    is returned with ``error`` saying why, so the tool it names can answer it. ``None`` when the
    action holds neither form (a whole action that is not valid JSON is ordinary text).
    """
    if not isinstance(action, str):
        return None
    data = _json_action(action)
    if data is not None:
        call = _native_call(action, data)
        if call is not None:
            return call
    start = action.find(OPEN_TAG)
    if start < 0:
        return None
    _found, name, arguments, parsed_action, error = parse_tool_call(action)
    return ToolCall(name or "", arguments or {}, parsed_action[start:], parsed_action, None, "tool_call", error or None)


class StructuredCall(NamedTuple):
    """What :func:`read_structured_call` read: the first call, and how many calls the action held."""

    call: ToolCall
    count: int


def _render(action: Any) -> tuple[str, Optional[str]]:
    """``action`` (data) as compact JSON text, for the record and the inner env; with the reason
    it is not JSON data (the text is then a short ``repr``)."""
    try:
        text = json.dumps(action, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return reprlib.repr(action), f"the action is not JSON data ({type(exc).__name__}: {preview(str(exc), 120)})"
    if len(text) > MAX_CALL_CHARS * 4:
        return preview(text), f"the tool call is too long ({len(text)} characters of JSON, at most {MAX_CALL_CHARS * 4})"
    return text, None


def _structured_arguments(function: dict[str, Any]) -> tuple[dict[str, Any], Optional[str]]:
    """The arguments of one ``function`` object (a dict, or its JSON text), or why they cannot be read."""
    raw = next((function[k] for k in ("arguments", "parameters", "kwargs") if k in function), None)
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        if len(raw) > MAX_CALL_CHARS:
            return {}, f"the arguments are too long ({len(raw)} characters, at most {MAX_CALL_CHARS})"
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return {}, "the arguments are not valid JSON"
    if not isinstance(raw, dict):
        return {}, f"the arguments must be a JSON object, got {type(raw).__name__}"
    return raw, None


def _given_call(call: ToolCall) -> ToolCall:
    """A ``ToolCall`` passed as the action: as given, with its text written when it has none."""
    if not isinstance(call.name, str):
        return replace(call, name="", error=call.error or "the tool name must be a non-empty string")
    if call.text:
        return call if call.parsed_action else replace(call, parsed_action=call.text)
    body: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    if call.id is not None:
        body = {"id": call.id, **body}
    text, why = _render(body)
    return replace(call, text=text, parsed_action=call.parsed_action or text, error=call.error or why)


def read_structured_call(action: Any) -> Optional[StructuredCall]:
    """The call an action given as data holds, read without a JSON round trip; ``None`` for text
    (and any other type), which :func:`read_function_call` reads.

    Accepted: a :class:`ToolCall` (used as given; its ``text`` is written as JSON when empty), and an
    OpenAI-style call as a dict or list: ``{"tool_calls": [{"id": ..., "type": "function",
    "function": {"name": ..., "arguments": "{...}" or {...}}}]}``, the ``tool_calls`` list itself,
    one entry, or ``{"name": ..., "arguments": ...}``. The first call is read (``source="native"``,
    with its ``id``) and ``count`` says how many the action held. The call's ``text`` is the action as
    compact JSON (what the inner env gets when it judges the action). An action that cannot be read
    (no calls, an entry that is not an object, a ``type`` other than ``"function"``, no name,
    arguments that are not a JSON object or not valid JSON text, values that are not JSON data)
    gives a call whose ``error`` says why; this never raises.
    """
    if isinstance(action, ToolCall):
        return StructuredCall(_given_call(action), 1)
    if not isinstance(action, (dict, list)):
        return None
    text, why = _render(action)
    if isinstance(action, dict) and "tool_calls" in action:
        entries: Any = action["tool_calls"]
    else:
        entries = action if isinstance(action, list) else [action]
    count = len(entries) if isinstance(entries, list) else 0

    def bad(reason: str, name: str = "", call_id: Optional[str] = None) -> StructuredCall:
        return StructuredCall(ToolCall(name, {}, text, text, call_id, "native", reason), count)

    if why is not None:
        return bad(why)
    if not isinstance(entries, list) or not entries:
        return bad('"tool_calls" must be a non-empty list of function calls')
    entry = entries[0]
    if not isinstance(entry, dict):
        return bad('a tool call must be an object: {"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}')
    call_id = _entry_id(entry)
    kind = entry.get("type", "function")
    if kind != "function":
        return bad(f"only function calls can run, got a call of type {preview(str(kind), 40)!r}", call_id=call_id)
    function = entry["function"] if isinstance(entry.get("function"), dict) else entry
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        return bad("the tool name must be a non-empty string", call_id=call_id)
    arguments, why = _structured_arguments(function)
    if why is not None:
        return bad(why, name, call_id)
    return StructuredCall(ToolCall(name, arguments, text, text, call_id, "native"), count)
