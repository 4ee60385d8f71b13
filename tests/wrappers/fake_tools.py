"""Small tools for the wrapper tests: they find ``<echo>...</echo>`` / ``<shout>...</shout>`` calls."""

from __future__ import annotations

import threading

from gem.tools.base_tool import BaseTool
from gem.tools.function_call import find_function_call, function_schema


class EchoTool(BaseTool):
    """Echoes the text in ``<echo>...</echo>``; ``<echo>fail</echo>`` is a failed call.

    Keeps per-episode state (``calls``), cleared by ``reset``, to show that envs don't share it.
    """

    tool_type = "echo"
    tag = "echo"

    def __init__(self, prefix: str = "echo: ") -> None:
        super().__init__()
        self.prefix = prefix
        self.calls = 0
        self.resets = 0
        self.closed = False
        self._lock = threading.Lock()

    def instruction_string(self) -> str:
        return f"Write <{self.tag}>text</{self.tag}> to hear it back."

    def openai_schemas(self):
        return [function_schema(self.tag, f"{self.tag.capitalize()} the text back.", {"text": {"type": "string"}})]

    def _parse_action(self, action: str):
        call = find_function_call(action, (self.tag,))
        if call is not None:
            return str(call[1].get("text", "")), call[2], True
        start = action.find(f"<{self.tag}>")
        end = action.find(f"</{self.tag}>", start + 1)
        if start < 0 or end < 0:
            return None, action, False
        return action[start + len(self.tag) + 2 : end], action[: end + len(self.tag) + 3], True

    def execute_action(self, action: str):
        text, parsed, ok = self._parse_action(action)
        if not ok:
            return False, False, "", action
        with self._lock:
            self.calls += 1
            calls = self.calls
        if text == "fail":
            return True, True, f"{self.tag} failed (call {calls})", parsed
        return True, False, f"{self.prefix}{text} (call {calls})", parsed

    def reset(self) -> None:
        self.calls = 0
        self.resets += 1

    def close(self) -> None:
        self.closed = True


class ShoutTool(EchoTool):
    tool_type = "shout"
    tag = "shout"

    def __init__(self) -> None:
        super().__init__(prefix="SHOUT: ")


class BrokenTool(BaseTool):
    """Raises on every call of ``<boom>`` (a buggy tool must not crash the episode)."""

    tool_type = "boom"

    def instruction_string(self) -> str:
        return "Write <boom> to break things."

    def execute_action(self, action: str):
        if "<boom>" in action:
            raise RuntimeError("the tool exploded")
        return False, False, "", action
