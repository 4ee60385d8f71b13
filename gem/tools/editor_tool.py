"""File viewing and exact-string editing in a sandboxed workspace (for repository tasks).

The operations run inside the same sandbox session as the shell (:class:`SandboxShell`), on
paths relative to the shell's current directory, and never outside the workspace:

* ``view``: a file with line numbers (optionally ``view_range=[first, last]``, ``-1`` for the
  end), or a directory listing two levels deep;
* ``str_replace``: replace ``old_str``, which must occur exactly once, by ``new_str``;
* ``insert``: insert ``new_str`` after line ``insert_line`` (0 for the top);
* ``create``: write a file with ``file_text`` (overwriting).

Written as tags::

    <view path="pkg/mod.py"/>            <view path="pkg/mod.py" range="10,40"/>
    <str_replace path="pkg/mod.py"><old>return a</old><new>return b</new></str_replace>
    <insert path="pkg/mod.py" line="3">import os</insert>
    <create path="notes.txt">text</create>

or as OpenAI function calls (:data:`EDITOR_SCHEMAS`): ``{"name": "str_replace", "arguments":
{"path": ..., "old_str": ..., "new_str": ...}}``.
"""

from __future__ import annotations

import copy
import html
import json
import re
from typing import Any, Callable, Optional

from gem.tools.base_tool import BaseTool
from gem.sandbox.shell import ShellError
from gem.sandbox.shell_sandbox import SandboxShell
from gem.tools.types import ToolCall, ToolResult
from gem.sandbox import SandboxError

_PATH = {"type": "string", "description": "file or directory path, relative to the current directory"}
EDITOR_SCHEMAS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "view", "description": "Show a file with line numbers, or list a directory.",
        "parameters": {"type": "object", "properties": {
            "path": _PATH,
            "view_range": {"type": "array", "items": {"type": "integer"},
                           "description": "[first, last] line to show; last may be -1 for the end"}},
            "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "str_replace", "description": "Replace old_str (which must occur exactly once) by new_str.",
        "parameters": {"type": "object", "properties": {
            "path": _PATH, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
            "required": ["path", "old_str", "new_str"]}}},
    {"type": "function", "function": {
        "name": "insert", "description": "Insert new_str after line insert_line (0 inserts at the top).",
        "parameters": {"type": "object", "properties": {
            "path": _PATH, "insert_line": {"type": "integer"}, "new_str": {"type": "string"}},
            "required": ["path", "insert_line", "new_str"]}}},
    {"type": "function", "function": {
        "name": "create", "description": "Create (or overwrite) a file with file_text.",
        "parameters": {"type": "object", "properties": {"path": _PATH, "file_text": {"type": "string"}},
                       "required": ["path", "file_text"]}}},
]
OPERATIONS = tuple(s["function"]["name"] for s in EDITOR_SCHEMAS)

_ATTR = re.compile(r"""(\w+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_TAG_OPEN = re.compile(r"<(view|str_replace|insert|create)\b")
_TAG = re.compile(r"<(view|str_replace|insert|create)\b([^>]{0,4000}?)(/>|>(.*?)</\1>)", re.DOTALL)


def _between(text: str, tag: str) -> Optional[str]:
    """The text inside the first ``<tag>...</tag>`` (found with ``str.find``: linear time)."""
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start + len(tag) + 2)
    return None if end < 0 else text[start + len(tag) + 2 : end]


def _strip_one_newline(text: str) -> str:
    """Tag bodies usually start and end with a newline the author did not mean as content."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def parse_editor_tag(action: str) -> Optional[tuple[dict[str, Any], int, int]]:
    """The first editor tag in ``action``: ``(request, start, end)``; a malformed tag gives a
    request with ``"error"``. ``None`` when there is no editor tag."""
    opening = _TAG_OPEN.search(action)  # only the first opening is tried: linear time
    if opening is None:
        return None
    match = _TAG.match(action, opening.start())
    if match is None:
        op = opening.group(1)
        return {"op": op, "path": "", "error": f"the <{op}> tag is not closed (use <{op} .../> or </{op}>)"}, \
            opening.start(), opening.end()
    op, attrs_text, body = match.group(1), match.group(2), match.group(4)
    attrs = {k: html.unescape(dq or sq) for k, dq, sq in _ATTR.findall(attrs_text)}
    req: dict[str, Any] = {"op": op, "path": attrs.get("path", "")}
    if op == "view":
        if attrs.get("range"):
            try:
                req["view_range"] = [int(x) for x in attrs["range"].replace(" ", "").split(",")]
                if len(req["view_range"]) != 2:
                    raise ValueError
            except ValueError:
                req["error"] = 'range must look like range="10,40"'
        if not req["path"] and body:
            req["path"] = body.strip()
    elif op == "str_replace":
        old, new = _between(body or "", "old"), _between(body or "", "new")
        if old is None or new is None:
            req["error"] = "str_replace needs <old>...</old> and <new>...</new> inside it"
        else:
            req.update(old_str=_strip_one_newline(old), new_str=_strip_one_newline(new))
    elif op == "insert":
        try:
            req["insert_line"] = int(attrs.get("line", ""))
        except ValueError:
            req["error"] = 'insert needs line="N"'
        req["new_str"] = _strip_one_newline(body or "")
    else:
        req["file_text"] = _strip_one_newline(body or "")
        if body and not req["file_text"].endswith("\n"):
            req["file_text"] += "\n"
    if not req["path"]:
        req["error"] = f'{op} needs path="..."'
    return req, match.start(), match.end()


def request_from_call(name: str, args: dict[str, Any]) -> Optional[dict[str, Any]]:
    """An editor request from a function call, or ``None`` when ``name`` is not an editor op."""
    if name == "str_replace_editor":  # one tool with a "command" argument, as some agents send it
        name = str(args.get("command", ""))
    if name not in OPERATIONS:
        return None
    req = {"op": name, **{k: v for k, v in args.items() if k != "command"}}
    if not isinstance(req.get("path"), str) or not req["path"]:
        req["error"] = f'{name} needs a string "path"'
    return req


def run_editor_request(
    shell: SandboxShell, req: dict[str, Any], on_infra_failure: Optional[Callable[[BaseException], None]] = None
) -> tuple[bool, str]:
    """``(ok, text)`` of one request, run in ``shell``'s session.

    ``on_infra_failure`` is called with the error when the workspace itself is unavailable.
    """
    if "error" in req:
        return False, f"Editor error: {req['error']}."
    try:
        if not shell.started:
            shell.start()
        text = shell.python(f"print(_gem_edit({json.dumps(req)!r}))").rstrip("\n")
    except (ShellError, SandboxError) as exc:
        if on_infra_failure is not None:
            on_infra_failure(exc)
        return False, f"Editor error: the workspace is not available ({exc})."
    if text.startswith("ERROR:"):
        return False, f"Editor error: {text[6:].strip()}."
    return True, text


class EditorTool(BaseTool):
    """View and edit files of a :class:`SandboxShell`'s workspace (see the module doc).

    Args:
        shell: the shell whose workspace to edit (share the :class:`BashTool`'s ``shell`` to
            use both tools on one workspace).
    """

    tool_type = "editor"

    def __init__(self, shell: SandboxShell, num_workers: int = 1) -> None:
        super().__init__(num_workers=num_workers)
        self.shell = shell

    @staticmethod
    def tool_schemas() -> list[dict[str, Any]]:
        return copy.deepcopy(EDITOR_SCHEMAS)

    def openai_schemas(self) -> list[dict[str, Any]]:
        """The four editing functions (:data:`EDITOR_SCHEMAS`)."""
        return self.tool_schemas()

    def instruction_string(self) -> str:
        return (
            "You can view and edit files: <view path=\"FILE\"/> (add range=\"A,B\" for lines A..B), "
            "<str_replace path=\"FILE\"><old>EXACT OLD TEXT</old><new>NEW TEXT</new></str_replace> "
            "(the old text must occur exactly once), <insert path=\"FILE\" line=\"N\">TEXT</insert> and "
            "<create path=\"FILE\">CONTENT</create>."
        )

    def function_names(self) -> tuple[str, ...]:
        return (*OPERATIONS, "str_replace_editor")

    def parse_tags(self, action: str) -> Optional[ToolCall]:
        """The first editor tag (``<view/>``, ``<str_replace>``, ``<insert>``, ``<create>``)."""
        found = parse_editor_tag(action)
        if found is None:
            return None
        req, start, end = found
        arguments = {k: v for k, v in req.items() if k not in ("op", "error")}
        return ToolCall(req["op"], arguments, action[start:end], action[:end], source="tag", error=req.get("error"))

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Run the edit the call asks for; a malformed call is an ``Editor error:`` observation."""
        req = request_from_call(call.name, call.arguments) if call.error is None else None
        if req is None:
            error = call.error or (f"unknown editor command {call.arguments.get('command')!r}; "
                                   f"valid commands: {', '.join(OPERATIONS)}")
            req = {"op": call.name, "error": error}
        ok, text = run_editor_request(self.shell, req, self.record_infra_failure)
        return ToolResult(text + "\n", not ok, call)
