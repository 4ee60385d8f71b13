"""The retail tools the customer-service agent calls, with their OpenAI function-calling schemas.

Each tool is ``fn(data, **kwargs) -> str`` over the episode's database (``users``, ``products``,
``orders``); it validates its arguments and raises :class:`ToolError` (shown to the agent as
``Error: ...``) instead of changing anything when a call is not allowed.
"""

from __future__ import annotations

import ast
import json
import operator
from typing import Any, Callable

STOP = "###STOP###"  # the customer ends the conversation with this (the env and its players read it)
ADDRESS_FIELDS = ("address1", "address2", "city", "state", "country", "zip")
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class ToolError(Exception):
    """A tool call that cannot be carried out; the message is shown to the agent."""


def _dump(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


def _order(data: dict[str, Any], order_id: str) -> dict[str, Any]:
    order = data["orders"].get(str(order_id))
    if order is None:
        raise ToolError("Order not found")
    return order


def _user(data: dict[str, Any], user_id: str) -> dict[str, Any]:
    user = data["users"].get(str(user_id))
    if user is None:
        raise ToolError("User not found")
    return user


def _payment(data: dict[str, Any], order: dict[str, Any], method_id: str) -> dict[str, Any]:
    method = data["users"][order["user_id"]]["payment_methods"].get(str(method_id))
    if method is None:
        raise ToolError("Payment method not found")
    return method


def _items(order: dict[str, Any], item_ids: Any) -> list[dict[str, Any]]:
    if not isinstance(item_ids, list) or not item_ids or len(set(map(str, item_ids))) != len(item_ids):
        raise ToolError("item_ids must be a non-empty list of distinct item ids")
    found = []
    for iid in item_ids:
        item = next((i for i in order["items"] if i["item_id"] == str(iid)), None)
        if item is None:
            raise ToolError(f"Item {iid} not found in the order")
        found.append(item)
    return found


def _address(kwargs: dict[str, Any]) -> dict[str, str]:
    return {f: str(kwargs.get(f, "")) for f in ADDRESS_FIELDS}


def find_user_id_by_email(data: dict[str, Any], email: str) -> str:
    for uid, user in data["users"].items():
        if user["email"].lower() == str(email).lower():
            return uid
    raise ToolError("User not found")


def find_user_id_by_name_zip(data: dict[str, Any], first_name: str, last_name: str, zip: str) -> str:  # noqa: A002
    for uid, user in data["users"].items():
        name = user["name"]
        if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (
            str(first_name).lower(), str(last_name).lower(), str(zip)):
            return uid
    raise ToolError("User not found")


def get_user_details(data: dict[str, Any], user_id: str) -> str:
    return _dump(_user(data, user_id))


def get_order_details(data: dict[str, Any], order_id: str) -> str:
    return _dump(_order(data, order_id))


def get_product_details(data: dict[str, Any], product_id: str) -> str:
    product = data["products"].get(str(product_id))
    if product is None:
        raise ToolError("Product not found")
    return _dump(product)


def list_all_product_types(data: dict[str, Any]) -> str:
    return _dump({p["name"]: pid for pid, p in sorted(data["products"].items())})


def cancel_pending_order(data: dict[str, Any], order_id: str, reason: str) -> str:
    order = _order(data, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise ToolError(f"Invalid reason; choose one of {list(CANCEL_REASONS)}")
    for payment in list(order["payment_history"]):
        if payment["transaction_type"] == "payment":
            order["payment_history"].append({"transaction_type": "refund", "amount": payment["amount"],
                                             "payment_method_id": payment["payment_method_id"]})
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return _dump(order)


def modify_pending_order_address(data: dict[str, Any], order_id: str, **address: Any) -> str:
    order = _order(data, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    order["address"] = _address(address)
    return _dump(order)


def modify_user_address(data: dict[str, Any], user_id: str, **address: Any) -> str:
    user = _user(data, user_id)
    user["address"] = _address(address)
    return _dump(user)


def return_delivered_order_items(data: dict[str, Any], order_id: str, item_ids: list, payment_method_id: str) -> str:
    order = _order(data, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    items = _items(order, item_ids)
    _payment(data, order, payment_method_id)
    order["status"] = "return requested"
    order["return_items"] = sorted(i["item_id"] for i in items)
    order["return_payment_method_id"] = str(payment_method_id)
    return _dump(order)


def exchange_delivered_order_items(data: dict[str, Any], order_id: str, item_ids: list, new_item_ids: list,
                                   payment_method_id: str) -> str:
    order = _order(data, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    items = _items(order, item_ids)
    if not isinstance(new_item_ids, list) or len(new_item_ids) != len(items):
        raise ToolError("new_item_ids must list one new item per exchanged item")
    _payment(data, order, payment_method_id)
    difference = 0.0
    for item, new_id in zip(items, new_item_ids):
        variant = data["products"][item["product_id"]]["variants"].get(str(new_id))
        if variant is None or not variant["available"]:
            raise ToolError(f"New item {new_id} not found or not available")
        if variant["item_id"] == item["item_id"]:
            raise ToolError("The new item must differ from the old one")
        difference += variant["price"] - item["price"]
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(i["item_id"] for i in items)
    order["exchange_new_items"] = sorted(map(str, new_item_ids))
    order["exchange_payment_method_id"] = str(payment_method_id)
    order["exchange_price_difference"] = round(difference, 2)
    return _dump(order)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


def calculate(data: dict[str, Any], expression: str) -> str:
    """Arithmetic on numbers only (+ - * / and parentheses), rounded to 2 decimals."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ToolError("Only numbers, + - * / and parentheses are allowed")

    text = str(expression)
    if len(text) > 200:
        raise ToolError("Expression too long")
    try:
        return str(round(ev(ast.parse(text, mode="eval").body), 2))
    except (SyntaxError, ZeroDivisionError, OverflowError) as exc:
        raise ToolError(f"Cannot evaluate: {type(exc).__name__}") from exc


def think(data: dict[str, Any], thought: str) -> str:
    return ""


def transfer_to_human_agents(data: dict[str, Any], summary: str) -> str:
    return "Transfer successful"


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


_S = {"type": "string"}
_IDS = {"type": "array", "items": {"type": "string"}}
_ADDRESS = {f: {"type": "string"} for f in ADDRESS_FIELDS}
TOOLS: dict[str, tuple[Callable[..., str], dict[str, Any]]] = {
    "find_user_id_by_email": (find_user_id_by_email, _schema(
        "find_user_id_by_email", "Find a user id by email.", {"email": _S}, ["email"])),
    "find_user_id_by_name_zip": (find_user_id_by_name_zip, _schema(
        "find_user_id_by_name_zip", "Find a user id by first name, last name and zip code.",
        {"first_name": _S, "last_name": _S, "zip": _S}, ["first_name", "last_name", "zip"])),
    "get_user_details": (get_user_details, _schema(
        "get_user_details", "Get a user's details (address, payment methods, orders).", {"user_id": _S}, ["user_id"])),
    "get_order_details": (get_order_details, _schema(
        "get_order_details", "Get an order's status, items, address and payments.", {"order_id": _S}, ["order_id"])),
    "get_product_details": (get_product_details, _schema(
        "get_product_details", "Get a product's variants (item ids, options, availability, prices).",
        {"product_id": _S}, ["product_id"])),
    "list_all_product_types": (list_all_product_types, _schema(
        "list_all_product_types", "List product names and their product ids.", {}, [])),
    "cancel_pending_order": (cancel_pending_order, _schema(
        "cancel_pending_order", "Cancel a pending order; reason is 'no longer needed' or 'ordered by mistake'.",
        {"order_id": _S, "reason": {"type": "string", "enum": list(CANCEL_REASONS)}}, ["order_id", "reason"])),
    "modify_pending_order_address": (modify_pending_order_address, _schema(
        "modify_pending_order_address", "Change the shipping address of a pending order.",
        {"order_id": _S, **_ADDRESS}, ["order_id", *ADDRESS_FIELDS])),
    "modify_user_address": (modify_user_address, _schema(
        "modify_user_address", "Change a user's default address.", {"user_id": _S, **_ADDRESS},
        ["user_id", *ADDRESS_FIELDS])),
    "return_delivered_order_items": (return_delivered_order_items, _schema(
        "return_delivered_order_items", "Request a return of items of a delivered order, refunded to a payment method.",
        {"order_id": _S, "item_ids": _IDS, "payment_method_id": _S}, ["order_id", "item_ids", "payment_method_id"])),
    "exchange_delivered_order_items": (exchange_delivered_order_items, _schema(
        "exchange_delivered_order_items", "Exchange items of a delivered order for other variants of the same products.",
        {"order_id": _S, "item_ids": _IDS, "new_item_ids": _IDS, "payment_method_id": _S},
        ["order_id", "item_ids", "new_item_ids", "payment_method_id"])),
    "calculate": (calculate, _schema("calculate", "Evaluate an arithmetic expression.", {"expression": _S}, ["expression"])),
    "think": (think, _schema("think", "Think out loud; changes nothing.", {"thought": _S}, ["thought"])),
    "transfer_to_human_agents": (transfer_to_human_agents, _schema(
        "transfer_to_human_agents", "Hand the conversation to a human agent (ends it).", {"summary": _S}, ["summary"])),
}
TERMINATE_TOOLS = ("transfer_to_human_agents",)
TOOL_SCHEMAS: list[dict[str, Any]] = [schema for _, schema in TOOLS.values()]


def invoke(data: dict[str, Any], name: str, kwargs: dict[str, Any]) -> str:
    """Run tool ``name``; a refused or malformed call returns ``Error: ...`` and changes nothing."""
    fn, schema = TOOLS[name]
    params = schema["function"]["parameters"]
    missing = [p for p in params["required"] if p not in kwargs]
    unknown = [k for k in kwargs if k not in params["properties"]]
    if missing or unknown:
        return f"Error: {name} needs {params['required']}; missing {missing}, unexpected {unknown}"
    try:
        return fn(data, **kwargs)
    except ToolError as exc:
        return f"Error: {exc}"
