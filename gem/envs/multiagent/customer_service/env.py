"""Retail customer service with a simulated user, in the style of tau-bench.

Two seats take turns: ``user`` (a customer with a hidden goal, played by a scripted policy or by an
LLM behind any OpenAI-compatible endpoint) and ``assistant`` (the agent being trained). The user
opens; the assistant answers with either

- a tool call: a JSON object ``{"name": ..., "arguments": {...}}`` (``"kwargs"`` is read too, and
  OpenAI's ``{"type": "function", "function": {"name", "arguments": "<json>"}}``), or the same JSON
  inside ``<tool_call>...</tool_call>``. The result comes back to the assistant, who keeps the turn;
- a message to the customer: plain text, or ``{"name": "respond", "arguments": {"content": ...}}``.

The episode ends when the user writes ``###STOP###``, when the assistant calls
``transfer_to_human_agents``, or at ``max_steps`` (truncated). Reward (both seats, as tau-bench
scores it): 1 if the database equals the one the task's ground-truth actions produce from the same
start **and** every required answer appears in one of the assistant's messages (case-insensitive,
commas removed), else 0. Stricter than tau-bench, an answer counts only when the assistant commits to
it (see :func:`answer_said`): amounts compare as numbers (``147.5`` says ``147.50``), and an answer
glued to others or stated beside another value of its kind earns nothing. Text that contains ``{`` or ``<tool_call`` but holds no readable tool call,
empty or unprintable text and text over :data:`MAX_ACTION_CHARS` are format errors (the game ends,
-0.1), as in every multi-agent game here.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import re
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, Optional

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv
from gem.envs.multiagent.customer_service.tools import STOP, TERMINATE_TOOLS, TOOL_SCHEMAS, TOOLS, invoke
from gem.params import Param, check_params
from gem.utils.parsing import function_call_from_json
from gem.utils.text import preview

DATA_FILE = Path(__file__).resolve().parent / "data" / "retail.json.gz"
USER, ASSISTANT = "user", "assistant"
GREETING = "Hi! How can I help you today?"
MAX_ACTION_CHARS = 20_000
DEFAULT_MAX_STEPS = 60
USER_MODES = ("scripted", "llm")
_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_DATA: dict[str, Any] = {}
_LOCK = threading.Lock()

POLICY = (
    "You are a customer service agent of an online retail store. Help the customer with their request using "
    "the tools below. Authenticate the customer first (find their user id by email, or by name and zip code). "
    "Before any action that changes the database (cancel, modify, return, exchange), describe it and ask the "
    "customer to confirm. Only cancel pending orders, return or exchange delivered ones.\n"
    "Call a tool by answering with a JSON object {\"name\": <tool>, \"arguments\": {...}} (or the same inside "
    "<tool_call>...</tool_call>); anything else is a message to the customer.\nTools:\n"
)


def load_data() -> dict[str, Any]:
    """The bundled database and tasks (read once; callers deep-copy what they change)."""
    with _LOCK:
        if not _DATA:
            with gzip.open(DATA_FILE, "rt", encoding="utf-8") as fh:
                _DATA.update(json.load(fh))
    return _DATA


def _hash(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()


def _printable(text: str) -> bool:
    if not text.strip() or "\x00" in text or len(text) > MAX_ACTION_CHARS:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_assistant_action(text: str) -> Optional[tuple[str, dict[str, Any]]]:
    """``(tool name or "respond", arguments)``, or ``None`` for a format error."""
    if not isinstance(text, str) or not _printable(text):
        return None
    tagged = _TOOL_TAG.search(text)
    if tagged is not None:
        body = tagged.group(1).strip()
    elif "{" in text or "<tool_call" in text:
        body = text.strip()
    else:
        return "respond", {"content": text.strip()}
    try:
        parsed = function_call_from_json(json.loads(body))
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None
    if parsed is not None and parsed[0] == "respond":
        content = parsed[1].get("content")
        return ("respond", {"content": content.strip()}) if isinstance(content, str) and content.strip() else None
    return parsed


class CustomerServiceEnv(MultiAgentEnv):
    """A retail support conversation between ``user`` and ``assistant`` (see the module docstring).

    Args:
        task_split: ``"test"`` (all bundled tasks) or ``"train"``/``"dev"`` (the same tasks; the
            bundled set is small, so the splits are not held out) -- kept for tau-bench's signature.
        task_index: a fixed task; ``None`` draws one per reset from the env's generator.
        user_mode: who plays the user seat for ``make_scripted_player("user")``: ``"scripted"``
            (offline) or ``"llm"``.
        user_model, user_base_url, user_api_key: the LLM user's model and OpenAI-compatible endpoint.
        max_steps: steps before the conversation is cut (truncated).
    """

    name = "customer_service"

    PARAMS = (
        Param("task_split", str, "which task set episodes draw from", choices=("train", "test", "dev")),
        Param("task_index", int, "one task of the split (None: drawn per episode)", min=0, nullable=True,
              client={"max": 10_000}),
        Param("user_mode", str, "who plays the customer: a script or an LLM", choices=USER_MODES,
              client={"choices": ("scripted",)}),
        Param("max_steps", int, "moves before the episode is cut", min=1, client={"max": 500}),
    )

    def __init__(
        self,
        task_split: str = "test",
        task_index: Optional[int] = None,
        user_mode: str = "scripted",
        user_model: str = "gpt-4o",
        user_provider: str = "openai",
        user_base_url: Optional[str] = None,
        user_api_key: Optional[str] = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        check_params(self, locals())
        super().__init__([USER, ASSISTANT], mode="sequential", max_steps=max_steps)
        if task_index is not None and not (isinstance(task_index, int) and 0 <= task_index < len(self.tasks)):
            raise ValueError(f"task_index={task_index!r} is past the {task_split!r} split: its tasks are 0..{len(self.tasks) - 1}.")
        self.task_split = task_split
        self.fixed_task = task_index
        self.user_mode = user_mode
        self.user_model = user_model
        self.user_provider = user_provider
        self.user_base_url = user_base_url
        self.user_api_key = user_api_key
        self.tool_schemas = TOOL_SCHEMAS
        self.data: dict[str, Any] = {}
        self.task: dict[str, Any] = {}
        self.task_index = 0
        self.actions_taken: list[dict[str, Any]] = []
        self.transcript: list[dict[str, str]] = []
        self._pending: dict[str, str] = {}
        self._started = False
        self.final_reward: Optional[float] = None

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The bundled tasks (shared and read-only, so copies of the env do not copy them)."""
        return load_data()["tasks"]

    # ------------------------------------------------------------------ game hooks
    def _reset_game(self, task_index: Optional[int] = None, **kwargs: Any) -> None:
        index = task_index if task_index is not None else self.fixed_task
        if index is None:
            index = self.rng.randrange(len(self.tasks))
        if not (isinstance(index, int) and 0 <= index < len(self.tasks)):
            raise ValueError(f"task_index must be in 0..{len(self.tasks) - 1}, got {index!r}.")
        self.task_index = index
        self.task = self.tasks[index]
        self.data = copy.deepcopy(load_data()["db"])
        self.actions_taken = []
        self.transcript = [{"role": ASSISTANT, "content": GREETING}]
        self._pending = {USER: GREETING, ASSISTANT: ""}
        self._started = False
        self.final_reward = None

    def observe(self, agent: str) -> str:
        text = self._pending.get(agent, "")
        if agent == ASSISTANT and not self._started:
            tools = "\n".join(json.dumps(s["function"]) for s in TOOL_SCHEMAS)
            intro = POLICY + tools
            text = f"{intro}\n\nCustomer: {text}" if text else intro
        return text

    def action_prompt(self, agent: str) -> str:
        if agent == ASSISTANT:
            return "Reply to the customer, or call a tool with a JSON object."
        return ""

    def _agent_info(self, agent: str) -> dict[str, Any]:
        info = super()._agent_info(agent)
        if agent == ASSISTANT:  # the function schemas, for models that call tools natively
            info["tools"] = copy.deepcopy(TOOL_SCHEMAS)
        return info

    def view(self, agent: str) -> dict[str, Any]:
        if agent == USER:
            return {"instruction": self.task.get("instruction", ""), "script": copy.deepcopy(self.task.get("script", {}))}
        return {"tools": TOOL_SCHEMAS}

    def parse_action(self, agent: str, text: str) -> Any:
        if agent == ASSISTANT:
            return parse_assistant_action(text)
        if not _printable(text) or "{" in text or "<tool_call" in text:
            return None
        return text.strip()

    def legal_actions(self, agent: str) -> list[str]:
        if agent not in self.active_agents():
            return []
        if agent == USER:
            return ["Could you help me with my order, please?", "Yes, please go ahead.", STOP]
        return ["How can I help you with your order?", json.dumps({"name": "list_all_product_types", "arguments": {}}),
                json.dumps({"name": "think", "arguments": {"thought": "I should ask for the customer's email."}})]

    def _apply(self, moves: dict[str, Any]) -> None:
        if USER in moves:
            message = moves[USER]
            self.transcript.append({"role": USER, "content": message})
            if STOP in message:
                self._finish("the customer ended the conversation")
                return
            self._pending[ASSISTANT] = f"Customer: {message}" if self._started else message
            self._give_turn(ASSISTANT)
            return
        name, kwargs = moves[ASSISTANT]
        self._started = True
        self.actions_taken.append({"name": name, "kwargs": kwargs})
        if name == "respond":
            self.transcript.append({"role": ASSISTANT, "content": kwargs["content"]})
            self._pending[USER] = kwargs["content"]
            self._give_turn(USER)
            return
        if name not in TOOLS:
            self._pending[ASSISTANT] = f"Unknown action {preview(name, 60)!r}; tools: {', '.join(TOOLS)}."
        else:
            self._pending[ASSISTANT] = preview(invoke(self.data, name, kwargs), 8000)
        self.transcript.append({"role": "tool", "content": self._pending[ASSISTANT]})
        if name in TERMINATE_TOOLS:
            self._finish("the assistant transferred the customer to a human agent")
            return
        self._give_turn(ASSISTANT)

    def _truncation_rewards(self) -> dict[str, float]:
        reward = self._paid(self.calculate_reward())
        return {a: reward for a in self.agents}

    def _paid(self, score: float) -> float:
        """The env's reward for a task score (1 solved, 0 not): its success or fail level."""
        return self.success_reward if score >= 1.0 else self.fail_reward

    def _finish(self, reason: str) -> None:
        score = self.calculate_reward()
        reward = self._paid(score)
        self._note_all(f"The conversation is over: {reason}.")
        self._end_game({a: reward for a in self.agents}, winners=list(self.agents) if score >= 1.0 else [],
                       info={"reason": reason, "task_reward": score})

    # ------------------------------------------------------------------ reward
    def expected_data(self) -> dict[str, Any]:
        """The database the task's ground-truth actions produce from the episode's start."""
        data = copy.deepcopy(load_data()["db"])
        for action in self.task["actions"]:
            if action["name"] in TOOLS and action["name"] not in TERMINATE_TOOLS:
                invoke(data, action["name"], dict(action["kwargs"]))
        return data

    def calculate_reward(self) -> float:
        """tau-bench's score: database equal to the ground truth's, and every output said.

        Stricter than tau-bench in one way: an answer counts only if the assistant committed to it.
        A required status or amount is not said when the assistant's messages also state another
        value of the same kind (another order status, another amount), so listing every candidate
        earns nothing.
        """
        reward = 1.0 if _hash(self.data) == _hash(self.expected_data()) else 0.0
        said = [a["kwargs"]["content"] for a in self.actions_taken if a["name"] == "respond"]
        outputs = self.task["outputs"]
        if not all(answer_said(output, outputs, said) for output in outputs):
            reward = 0.0
        self.final_reward = reward
        return reward

    # ------------------------------------------------------------------ players
    def make_scripted_player(self, agent: str) -> Agent:
        if agent == ASSISTANT:
            from gem.envs.multiagent.customer_service.players import ScriptedAssistant

            return ScriptedAssistant()
        if self.user_mode == "llm":
            from gem.envs.multiagent.customer_service.players import LLMUser

            return LLMUser(model=self.user_model, base_url=self.user_base_url, api_key=self.user_api_key)
        from gem.envs.multiagent.customer_service.players import ScriptedUser

        return ScriptedUser()


# ------------------------------------------------------------------ committing to an answer
# Text is compared lower-cased with commas removed (so "1,147.50" is 1147.50 and "a,b" is glued "ab").
# A required answer is *said* when a message mentions it as a value of its kind, and *hedged* when
# any message mentions another value of that kind, so naming several candidates earns nothing:
# - an order status: the closed set below, each a whole word; statuses glued into one word
#   ("pendingprocessed") mention each of them; "canceled" is "cancelled";
# - an amount (the answer is a decimal number, or starts with "$"): every decimal number; every
#   integer written with "$" or followed by "dollars"/"usd"/"bucks" ("147 dollars and 50 cents"
#   is 147.50) or "cents"; every amount in words ("one hundred forty-seven dollars and fifty
#   cents"); all compared by value ("147.5" is 147.50);
#   a digit run with two or more points ("147.50233.16", two amounts glued) is never a clean value;
#   bare integers (counts, zip codes, ids) are not amounts;
# - any other answer holding a digit (an order id "#W0008062", "ORD123"): it is said standing alone
#   (not glued to other letters or digits); every token of its shape (its letters and symbols with
#   any digits), glued or not, is a mention, so "ORD123ORD456" mentions two ids and says neither;
# - any other answer: said as a whole word, not part of a longer word; its other values are unknown.
_STATUSES = ("pending", "processed", "delivered", "cancelled", "return requested", "exchange requested")
_STATUS_ATOM = r"pending|processed|delivered|cancel{1,2}ed|return[\s_-]*requested|exchange[\s_-]*requested"
_STATUS_RUN = re.compile(rf"(?<![a-z])(?:{_STATUS_ATOM})+(?![a-z])")
_STATUS_PART = re.compile(_STATUS_ATOM)
_NUMBER = re.compile(
    r"(?<![\d.])(\$\s*)?(\d+(?:\.\d+)*)(?:\s*(dollars?|usd|bucks|cents?)\b(?:\s+and\s+(\d+)\s+cents?\b)?)?(?!\d|\.\d)"
)
_AMOUNT_ANSWER = re.compile(r"\$?\s*\d+\.\d+|\$\s*\d+")
_GLUED = "glued"  # the value of a digit run that holds several amounts: never an answer


def _canonical_status(text: str) -> str:
    words = re.sub(r"[\s_-]+", " ", text).strip()
    return "cancelled" if words in ("canceled", "cancelled") else words


def _statuses(text: str) -> list[Any]:
    return [_canonical_status(part) for run in _STATUS_RUN.finditer(text) for part in _STATUS_PART.findall(run.group())]


_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER_WORDS = {w: i for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD = "|".join([*_NUMBER_WORDS, *_SCALES])
_WORDS = rf"(?:{_WORD})(?:[\s-]+(?:and[\s-]+)?(?:{_WORD}))*"
_SPELLED = re.compile(
    rf"\b(?:({_WORDS})\s+(?:us\s+)?(?:dollars?|bucks|usd)(?:\s+and\s+({_WORDS})\s+cents?)?|({_WORDS})\s+cents?)\b"
)


def _spelled(words: str) -> int:
    """The value of number words ("one hundred forty-seven")."""
    total = current = 0
    for word in re.split(r"[\s-]+", words):
        if word in _NUMBER_WORDS:
            current += _NUMBER_WORDS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES:
            total, current = total + max(current, 1) * _SCALES[word], 0
    return total + current


def _amounts(text: str) -> list[Any]:
    found: list[Any] = []
    for match in _NUMBER.finditer(text):
        dollar, digits, unit, cents = match.groups()
        if digits.count(".") > 1:
            found.append(_GLUED)
        elif unit and unit.startswith("cent") and not dollar:
            found.append(Decimal(digits) / 100)
        elif "." in digits or dollar or unit:
            found.append(Decimal(digits) + (Decimal(cents) / 100 if cents else 0))
    for match in _SPELLED.finditer(text):  # "one hundred forty-seven dollars and fifty cents"
        dollars, cents, only_cents = match.groups()
        found.append(Decimal(_spelled(dollars or "zero")) + Decimal(_spelled(cents or only_cents or "zero")) / 100)
    return found


def _alone(answer: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(answer)}(?![a-z0-9])")


def _kind(answer: str) -> tuple[Callable[[str], bool], Callable[[str], list[Any]]]:
    """``(said(text), mentions(text))`` for ``answer``'s kind (see the rules above)."""
    if answer in _STATUSES:
        value = _canonical_status(answer)
        return (lambda text: value in _statuses(text)), _statuses
    if _AMOUNT_ANSWER.fullmatch(answer):
        amount = _amounts(answer)[0]
        return (lambda text: amount in _amounts(text)), _amounts
    alone = _alone(answer)
    if any(c.isdigit() for c in answer):
        shape = re.compile("".join(r"\d+" if p.isdigit() else re.escape(p) for p in re.split(r"(\d+)", answer) if p))
        return (lambda text: alone.search(text) is not None), shape.findall
    return (lambda text: alone.search(text) is not None), (lambda text: [])


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower().replace(",", "")).strip()


def answer_said(output: str, outputs: list[str], messages: list[str]) -> bool:
    """Whether the assistant's ``messages`` commit to the required answer ``output``.

    Some message must say it, and no message may mention another value of its kind than the
    required ``outputs`` (see the rules above this function).
    """
    answer = _normal(output)
    said, mentions = _kind(answer)
    texts = [_normal(m) for m in messages]
    allowed = [v for o in outputs for v in mentions(_normal(o))]
    return any(said(t) for t in texts) and all(v != _GLUED and v in allowed for t in texts for v in mentions(t))


TauBenchEnv = CustomerServiceEnv  # the name of GEM's tau-bench retail example
