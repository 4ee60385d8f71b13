"""Players of the customer-service env: the scripted customer, the LLM customer and the scripted
agent (the solver). Each reads only its own seat's observation and ``info["view"]``."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.multiagent.customer_service.tools import ADDRESS_FIELDS, STOP

USER_SYSTEM_PROMPT = """You are a user interacting with an agent.

Instruction: {instruction}

Rules:
- Just generate one line at a time to simulate the user's message.
- Do not give away all the instruction at once. Only provide the information that is necessary for the current step.
- Do not hallucinate information that is not provided in the instruction; if asked for something you do not know, say so.
- If the instruction goal is satisfied, generate '###STOP###' as a standalone message without anything else
  to end the conversation.
- Do not repeat the exact instruction in the conversation. Instead, use your own words to convey the same information.
- Try to make the conversation as natural as possible."""

MAX_USER_TURNS = 8
_CONFIRM = ("confirm", "proceed", "(yes/no)", "shall i", "would you like me to")
_DONE = ("has been", "is now", "done", "completed", "submitted", "updated")


def _identity_text(identity: dict[str, str]) -> str:
    if "email" in identity:
        return f"My email is {identity['email']}."
    return f"My name is {identity['first_name']} {identity['last_name']} and my zip code is {identity['zip']}."


def opening(script: dict[str, Any]) -> str:
    """The scripted customer's first message for its task."""
    kind, who = script["kind"], _identity_text(script["identity"])
    oid = script.get("order_id", "")
    address = ", ".join(str(script.get("address", {}).get(f, "")) for f in ADDRESS_FIELDS)
    if kind == "cancel":
        return f"Hi! I'd like to cancel my order {oid} because it was {script['reason']}. {who}"
    if kind == "order_address":
        return f"Hi, please change the shipping address of my order {oid} to {address}. {who}"
    if kind == "user_address":
        return f"Hello, please change my default address to {address}. {who}"
    if kind == "return":
        return f"Hi, I want to return the {script['item']} from order {oid}, refunded to my {script['payment']}. {who}"
    if kind == "exchange":
        wanted = ", ".join(f"{k}: {v}" for k, v in script["new_options"].items())
        return (f"Hi, I want to exchange the {script['item']} in order {oid} for the version with {wanted}; "
                f"please use my {script['payment']} for any difference. {who}")
    if kind == "order_total":
        return f"Hi, what was the total amount I paid for order {oid}? {who}"
    return f"Hi, what is the status of my order {oid}? {who}"


class ScriptedUser(Agent):
    """A customer that states its request, answers questions, confirms, and stops when served."""

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.script = ((info or {}).get("view") or {}).get("script") or {}
        self.turns = 0

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if not getattr(self, "script", None):
            self.reset(observation, info)
        self.turns += 1
        if self.turns == 1:
            return opening(self.script)
        said = observation.lower()
        if self.turns > MAX_USER_TURNS:
            return STOP
        if any(word in said for word in _CONFIRM):
            return "Yes, please go ahead."
        if self.script["kind"] in ("order_total", "order_status") and not said.rstrip().endswith("?"):
            return STOP
        if any(word in said for word in _DONE):
            return STOP
        if "email" in said or "zip" in said or "name" in said:
            return _identity_text(self.script["identity"])
        return "Could you please help me with my request? " + opening(self.script)


class LLMUser(Agent):
    """A customer played by a chat model behind an OpenAI-compatible endpoint (tau-bench's prompt)."""

    def __init__(self, model: str, base_url: Optional[str] = None, api_key: Optional[str] = None, **kwargs: Any) -> None:
        self.model, self.base_url, self.api_key, self.kwargs = model, base_url, api_key, kwargs
        self.agent: Any = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        from gem.agents.openai_agent import OpenAIAgent

        instruction = ((info or {}).get("view") or {}).get("instruction", "")
        self.close()  # the last episode's client and event loop
        self.agent = OpenAIAgent(self.model, base_url=self.base_url, api_key=self.api_key,
                                 system_prompt=USER_SYSTEM_PROMPT.format(instruction=instruction), **self.kwargs)
        self.agent.reset(observation, info)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if self.agent is None:
            self.reset(observation, info)
        text = self.agent.act(observation, info).strip()
        # a customer has no tools: braces would read as a malformed tool call
        text = text.replace("{", "(").replace("}", ")").replace("<tool_call", "<tool call")
        return text or STOP

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NAME_ZIP = re.compile(r"my name is (\w+) (\w+) and my zip code is (\d{5})", re.I)
_ORDER = re.compile(r"#W\d{7}")


class ScriptedAgent(Agent):
    """Shared plumbing: the last customer message and the last tool result in an observation."""

    @staticmethod
    def customer_message(observation: str) -> Optional[str]:
        found = re.findall(r"Customer: (.*?)(?:\n\n|$)", observation, re.S)
        return found[-1].strip() if found else None

    @staticmethod
    def tool_result(observation: str) -> Any:
        text = observation.split("\n\nReply to the customer")[0].strip()
        try:
            return json.loads(text)
        except ValueError:
            return text


class ScriptedAssistant(ScriptedAgent):
    """Solves the bundled task kinds: authenticate, look up, confirm, act, report."""

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.request: Optional[str] = None
        self.queue: list[dict[str, Any]] = []
        self.last_tool: Optional[str] = None
        self.facts: dict[str, Any] = {}
        self.phase = "lookup"

    @staticmethod
    def _call(name: str, **arguments: Any) -> str:
        return json.dumps({"name": name, "arguments": arguments})

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if not hasattr(self, "phase"):
            self.reset(observation, info)
        if self.last_tool is not None:
            self.facts[self.last_tool] = self.tool_result(observation)
            self.last_tool = None
        else:
            message = self.customer_message(observation) or ""
            if self.request is None:
                self.request = message
                self.queue = self._plan_lookups(message)
            elif self.phase == "confirm" and "yes" in message.lower():
                self.phase = "write"
        if self.queue:
            step = self.queue.pop(0)
            if callable(step):
                step = step()
            self.last_tool = step["name"]
            return self._call(step["name"], **step["arguments"])
        return self._next_message()

    # ------------------------------------------------------------------ planning
    def _plan_lookups(self, message: str) -> list:
        text = message.lower()
        email = _EMAIL.search(message)
        name = _NAME_ZIP.search(message)
        order = _ORDER.search(message)
        self.order_id = order.group(0) if order else None
        self.kind = ("cancel" if "cancel" in text else "order_address" if "shipping address" in text else
                     "user_address" if "default address" in text else "exchange" if "exchange" in text else
                     "return" if "return" in text else "order_total" if "total amount" in text else "order_status")
        plan: list = []
        if email:
            plan.append({"name": "find_user_id_by_email", "arguments": {"email": email.group(0)}})
        elif name:
            first, last, zipcode = name.groups()
            names = {"first_name": first, "last_name": last, "zip": zipcode}
            plan.append({"name": "find_user_id_by_name_zip", "arguments": names})
        if self.kind in ("return", "exchange"):
            plan.append(lambda: {"name": "get_user_details", "arguments": {"user_id": self._user_id()}})
        if self.kind != "user_address" and self.order_id:
            plan.append({"name": "get_order_details", "arguments": {"order_id": self.order_id}})
        if self.kind == "exchange":
            plan.append(lambda: {"name": "get_product_details", "arguments": {"product_id": self._item()["product_id"]}})
        return plan

    def _fact(self, tool: str) -> dict[str, Any]:
        value = self.facts.get(tool)
        return value if isinstance(value, dict) else {}

    def _user_id(self) -> str:
        return self.facts.get("find_user_id_by_email") or self.facts.get("find_user_id_by_name_zip") or ""

    def _item(self) -> dict[str, Any]:
        order = self._fact("get_order_details")
        match = re.search(r"(?:return|exchange) the (.+?) (?:from|in) order", self.request or "", re.I)
        wanted = match.group(1).lower() if match else ""
        return next((i for i in order.get("items", []) if i["name"].lower() == wanted), {})

    def _payment_id(self) -> str:
        match = re.search(r"(?:refunded to|use) my (.+?)(?: for any difference)?\.", self.request or "", re.I)
        wanted = match.group(1).lower() if match else ""
        methods = self._fact("get_user_details").get("payment_methods", {})
        for mid, method in methods.items():
            label = (f"credit card ending in {method.get('last_four')}" if method["source"] == "credit_card"
                     else method["source"].replace("_", " "))
            if label == wanted:
                return mid
        return ""

    def _address(self) -> dict[str, str]:
        match = re.search(r"address (?:of my order \S+ )?to (.+?)\. (?:My|$)", self.request or "")
        parts = [p.strip() for p in match.group(1).split(",")] if match else []
        return dict(zip(ADDRESS_FIELDS, parts)) if len(parts) == len(ADDRESS_FIELDS) else {}

    def _new_item_id(self) -> str:
        match = re.search(r"version with (.+?); please", self.request or "")
        wanted = dict(p.split(": ", 1) for p in match.group(1).split(", ")) if match else {}
        product = self._fact("get_product_details")
        for iid, variant in sorted(product.get("variants", {}).items()):
            if variant["options"] == wanted and variant["available"]:
                return iid
        return ""

    def _write_call(self) -> dict[str, Any]:
        if self.kind == "cancel":
            reason = "ordered by mistake" if "by mistake" in (self.request or "") else "no longer needed"
            return {"name": "cancel_pending_order", "arguments": {"order_id": self.order_id, "reason": reason}}
        if self.kind == "order_address":
            return {"name": "modify_pending_order_address", "arguments": {"order_id": self.order_id, **self._address()}}
        if self.kind == "user_address":
            return {"name": "modify_user_address", "arguments": {"user_id": self._user_id(), **self._address()}}
        if self.kind == "return":
            return {"name": "return_delivered_order_items", "arguments": {
                "order_id": self.order_id, "item_ids": [self._item().get("item_id")], "payment_method_id": self._payment_id()}}
        return {"name": "exchange_delivered_order_items", "arguments": {
            "order_id": self.order_id, "item_ids": [self._item().get("item_id")], "new_item_ids": [self._new_item_id()],
            "payment_method_id": self._payment_id()}}

    def _next_message(self) -> str:
        order = self._fact("get_order_details")
        if self.kind == "order_total":
            paid = sum(p["amount"] for p in order.get("payment_history", []) if p["transaction_type"] == "payment")
            return f"You paid {paid:.2f} in total for order {self.order_id}."
        if self.kind == "order_status":
            return f"Your order {self.order_id} is {order.get('status', 'unknown')}."
        if self.phase == "lookup":
            self.phase = "confirm"
            call = self._write_call()
            details = json.dumps(call["arguments"])[1:-1].replace("{", "(").replace("}", ")")
            return f"I can do this for you: {call['name']} with {details}. Do you confirm (yes/no)?"
        if self.phase == "write":
            self.phase = "report"
            call = self._write_call()
            self.last_tool = call["name"]
            return self._call(call["name"], **call["arguments"])
        return "Your request has been completed. Is there anything else?"
