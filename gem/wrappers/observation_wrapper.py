"""``ObservationWrapper``: give the agent the whole episode so far, not just the last observation.

Every observation is first turned into the text of a user turn with
:func:`gem.utils.prompting.user_content`: the env's ``info["prefix"]``, the observation and the
env's instruction ``info["suffix"]`` (``Put your final answer within \\boxed{}.``), each once. So
the instruction is part of the turn it belongs to, and nothing the env says lands inside an
assistant turn. The observation of a step that ended the episode is shown without its suffix:
nothing asks for a move after the end.

Modes (GEM's options):

* ``include_action=False``: those user turns, concatenated (one per line).
* ``include_action=True, include_chat_template=False``: user turns and actions interleaved as
  plain text (for a tool call, the action as the tool cut it: ``info["parsed_action"]``).
* ``include_chat_template=True``: the history as chat messages rendered with a ``transformers``
  tokenizer's chat template, ending with the generation prompt. Env observations and tool outputs
  are ``user`` messages and actions are ``assistant`` messages. Only a tool output that answers a
  native function call (``ToolEnvWrapper``'s record of the step's call, ``info["tool_call"]``, with
  ``source`` ``"native"`` and an ``id``) is a ``tool`` message with that ``tool_call_id``; its
  action is then an assistant message with empty content and that call in ``tool_calls``. The
  wrapper reads the call from the record and never parses the action again (an env below that
  reports ``info["tool_call_id"]`` without a record has its action read as a function call).
* ``apply_chat_template_on_reset=True``: append-only. The first observation is rendered as a user
  turn with the generation prompt; each later step appends the action exactly as the agent wrote
  it, followed by the template's own end of the assistant turn, the next user turn and the
  generation prompt. The text only ever grows (what the model generated is never re-rendered), and
  every observation is still inside a user turn.

``max_history_length`` keeps only the last N actions (and N+1 observations).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections import deque
from typing import Any, NamedTuple, Optional

from gem.core import Env, EnvWrapper, StepResult
from gem.tools.function_call import parse_function_call
from gem.utils.prompting import user_content

logger = logging.getLogger(__name__)



def maybe_add_new_line(text: str) -> str:
    """``text`` ending with a newline (an empty text stays empty)."""
    return text if not text or text.endswith("\n") else text + "\n"


def assistant_text(action: Any, info: dict[str, Any]) -> str:
    """What the assistant turn holds for ``action``: the action as a tool cut it
    (``info["parsed_action"]``) when there is one, else the action as the agent wrote it.

    An env that could not parse a reply reports ``parsed_action=None`` (math, QA, code, logic):
    the turn is then the raw reply (as for an env that sets no ``parsed_action``), never
    ``None``, which a template that joins strings cannot render.
    """
    parsed = info.get("parsed_action")
    if isinstance(parsed, str):
        return parsed
    return action if isinstance(action, str) else str(action)


class Turn(NamedTuple):
    """One observation as the model sees it: the user turn's text, and the native call it answers
    (its id, and its ``(name, arguments)``)."""

    content: str
    tool_call_id: Optional[str] = None
    function: Optional[tuple[str, dict[str, Any]]] = None


def answered_call(action: str, info: dict[str, Any]) -> tuple[Optional[str], Optional[tuple[str, dict[str, Any]]]]:
    """``(tool_call_id, (name, arguments))`` of the native function call a step answered, else ``(None, None)``.

    Read from ``ToolEnvWrapper``'s record (``info["tool_call"]``); an env that reports only
    ``info["tool_call_id"]`` has ``action`` read as a function call.
    """
    if not info.get("use_tool"):
        return None, None
    record = info.get("tool_call")
    if isinstance(record, dict):
        call_id, name, arguments = record.get("id"), record.get("name"), record.get("arguments")
        if (record.get("source") == "native" and isinstance(call_id, str) and call_id
                and isinstance(name, str) and isinstance(arguments, dict)):
            return call_id, (name, arguments)
        return None, None
    call_id = info.get("tool_call_id")
    function = parse_function_call(action) if isinstance(call_id, str) and call_id else None
    return (call_id, function) if function is not None else (None, None)


class ObservationWrapper(EnvWrapper):
    """Renders the episode history as the observation (see the module doc)."""

    def __init__(
        self,
        env: Env,
        include_action: bool = True,
        include_chat_template: bool = True,
        apply_chat_template_on_reset: bool = False,
        max_history_length: Optional[int] = None,
        tokenizer: Any = None,
    ) -> None:
        super().__init__(env)
        if include_chat_template and apply_chat_template_on_reset:
            raise ValueError("include_chat_template and apply_chat_template_on_reset are exclusive; set one of them.")
        if include_chat_template and not include_action:
            raise ValueError("include_chat_template=True needs include_action=True (the assistant turns are the actions).")
        if (include_chat_template or apply_chat_template_on_reset) and tokenizer is None:
            raise ValueError(
                "A chat template needs a tokenizer: pass tokenizer=AutoTokenizer.from_pretrained(...) "
                "(or gem.utils.tiny_tokenizer.get_tiny_tokenizer() offline)."
            )
        if tokenizer is not None and (include_chat_template or apply_chat_template_on_reset):
            if not callable(getattr(tokenizer, "apply_chat_template", None)):
                raise ValueError(f"tokenizer must have apply_chat_template (a transformers tokenizer), got {type(tokenizer).__name__}.")
        if max_history_length is not None and (not isinstance(max_history_length, int) or max_history_length < 1):
            raise ValueError(f"max_history_length must be a positive int or None, got {max_history_length!r}.")
        self.include_action = include_action
        self.include_chat_template = include_chat_template
        self.apply_chat_template_on_reset = apply_chat_template_on_reset
        self.max_history_length = max_history_length
        self.tokenizer = tokenizer
        self.obs_queue: deque[Turn] = deque(maxlen=max_history_length + 1 if max_history_length else None)
        self.act_queue: deque[str] = deque(maxlen=max_history_length)
        # apply_chat_template_on_reset: the text each step appended (its action, then its user turn).
        self.appended: deque[str] = deque(maxlen=max_history_length)

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        self.obs_queue.clear()
        self.act_queue.clear()
        self.appended.clear()
        obs, info = self.env.reset(seed=seed, **kwargs)
        self.obs_queue.append(Turn(user_content(obs, info)))
        return self.observation(info), info

    def step(self, action: str) -> StepResult:
        obs, reward, terminated, truncated, info = self.env.step(action)
        previous = self.obs_queue[-1] if self.obs_queue else Turn("")
        act = assistant_text(action, info)
        call_id, function = answered_call(act, info)
        # A step that ended the episode asks for nothing more: its suffix (a request for the next
        # move or answer) is left out, whatever the env or a wrapper below put there.
        shown = {k: v for k, v in info.items() if k != "suffix"} if terminated or truncated else info
        turn = Turn(user_content(obs, shown), call_id, function)
        self.act_queue.append(act)
        self.obs_queue.append(turn)
        if self.apply_chat_template_on_reset:
            self.appended.append(self._appended_text(previous, act, turn))
        return self.observation(info), reward, terminated, truncated, info

    # ------------------------------------------------------------------------- rendering
    @staticmethod
    def _message(turn: Turn) -> dict[str, Any]:
        if turn.tool_call_id:
            return {"role": "tool", "tool_call_id": turn.tool_call_id, "content": turn.content}
        return {"role": "user", "content": turn.content}

    @staticmethod
    def _assistant(action: str, answered_by: Turn) -> dict[str, Any]:
        call = answered_by.function if answered_by.tool_call_id else None
        if call is None:
            return {"role": "assistant", "content": action}
        return {"role": "assistant", "content": "", "tool_calls": [{
            "id": answered_by.tool_call_id, "type": "function",
            "function": {"name": call[0], "arguments": json.dumps(call[1], ensure_ascii=False)},
        }]}

    def messages(self) -> list[dict[str, Any]]:
        """The history as chat messages: user (or, for a native call's result, tool) turns and assistant actions."""
        observations, actions = list(self.obs_queue), list(self.act_queue)
        out: list[dict[str, Any]] = []
        for i, turn in enumerate(observations):
            out.append(self._message(turn))
            if i < len(actions):
                out.append(self._assistant(actions[i], observations[i + 1]))
        return out

    def _template(self, messages: list[dict[str, Any]]) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _appended_text(self, previous: Turn, action: str, turn: Turn) -> str:
        """The action as written, then the template's text that closes its turn and opens the next ones."""
        # A mark no text of the episode can hold (tool output is the policy's to shape): a fresh nonce.
        mark = f"\x00gem-assistant-turn-{secrets.token_hex(8)}\x00"
        rendered = self._template([self._message(previous), {"role": "assistant", "content": mark}, self._message(turn)])
        at = rendered.find(mark)
        if at < 0:  # a template that drops assistant text: fall back to plain lines
            logger.warning("The chat template does not render assistant content; appending plain text.")
            return maybe_add_new_line(action) + maybe_add_new_line(turn.content)
        return action + rendered[at + len(mark):]

    def observation(self, info: dict[str, Any]) -> str:
        """The text the agent sees now."""
        if self.include_chat_template:
            return self._template(self.messages())
        if self.apply_chat_template_on_reset:
            head = self._template([{"role": "user", "content": self.obs_queue[0].content}])
            return head + "".join(self.appended)
        if self.include_action:
            turns, actions = list(self.obs_queue), list(self.act_queue)
            return "".join(maybe_add_new_line(turn.content) + maybe_add_new_line(actions[i] if i < len(actions) else "")
                           for i, turn in enumerate(turns))
        return "".join(maybe_add_new_line(turn.content) for turn in self.obs_queue)

    # The tokenizer is shared, never copied: snapshots and spawned copies keep the same object.
    def get_state(self) -> dict[str, Any]:
        return self._without_tokenizer(super().get_state)

    def set_state(self, state: dict[str, Any]) -> None:
        tokenizer = self.tokenizer
        super().set_state(state)
        self.tokenizer = tokenizer

    def spawn(self, same_state: bool = False, **kwargs: Any) -> "ObservationWrapper":
        return self._without_tokenizer(lambda: super(ObservationWrapper, self).spawn(same_state, **kwargs), restore_on=True)

    def _without_tokenizer(self, fn: Any, restore_on: bool = False) -> Any:
        tokenizer, self.tokenizer = self.tokenizer, None
        try:
            result = fn()
        finally:
            self.tokenizer = tokenizer
        if restore_on:
            result.tokenizer = tokenizer
        return result
