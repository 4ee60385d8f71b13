"""Customer service with a simulated user: data, tools, action formats, tau-bench's reward (and the
cheats it must not pay), the scripted solver on every task, and an LLM user over a loopback endpoint."""

from __future__ import annotations

import copy
import json
from http.server import BaseHTTPRequestHandler

import pytest

import gem
from gem.envs.multiagent.customer_service.env import (
    ASSISTANT,
    DATA_FILE,
    STOP,
    USER,
    CustomerServiceEnv,
    load_data,
    parse_assistant_action,
)
from gem.envs.multiagent.customer_service.players import ScriptedUser, opening
from gem.envs.multiagent.customer_service.tools import TOOL_SCHEMAS, invoke
from tests.envs.webshop._helpers import load_script, loopback_server
from tests.conftest import needs_extra

TASKS = load_data()["tasks"]


def task_of(kind: str) -> int:
    return next(i for i, t in enumerate(TASKS) if t["script"]["kind"] == kind)


def view(index: int):
    env = gem.make("multi:CustomerService-v0-vs-scripted")
    obs, info = env.reset(seed=0, task_index=index)
    return env, obs, info


def run_solver(env, obs, info) -> float:
    solver = env.make_solver()
    solver.reset(obs, info)
    while True:
        obs, reward, terminated, truncated, info = env.step(solver.act(obs, info))
        if terminated or truncated:
            return reward


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


# ------------------------------------------------------------------ data and tools
def test_generator_rebuilds_the_shipped_data_byte_for_byte():
    assert DATA_FILE.read_bytes() == load_script("gen_customer_service_data").build(), "stale data: run scripts/gen_customer_service_data.py"


def test_every_task_is_achievable_and_checkable():
    assert len(TASKS) >= 30
    db = load_data()["db"]
    for task in TASKS:
        data = copy.deepcopy(db)
        for action in task["actions"]:
            result = invoke(data, action["name"], dict(action["kwargs"]))
            assert not result.startswith("Error"), (task["script"], action, result)
        assert data != db or task["outputs"], "a task must change the database or require an answer"


def test_tools_refuse_what_the_policy_forbids_and_change_nothing():
    db = copy.deepcopy(load_data()["db"])
    delivered = next(o for o in db["orders"].values() if o["status"] == "delivered")
    pending = next(o for o in db["orders"].values() if o["status"] == "pending")
    before = copy.deepcopy(db)
    assert invoke(db, "cancel_pending_order", {"order_id": delivered["order_id"], "reason": "no longer needed"}).startswith("Error")
    assert invoke(db, "cancel_pending_order", {"order_id": pending["order_id"], "reason": "bored"}).startswith("Error")
    assert invoke(db, "return_delivered_order_items", {"order_id": pending["order_id"], "item_ids": ["x"], "payment_method_id": "y"}).startswith("Error")
    assert invoke(db, "get_order_details", {"order_id": "#W0000000"}) == "Error: Order not found"
    assert "missing ['order_id']" in invoke(db, "get_order_details", {})
    assert invoke(db, "calculate", {"expression": "__import__('os')"}).startswith("Error")
    assert invoke(db, "calculate", {"expression": "(10 + 2.5) * 2"}) == "25.0"
    assert db == before
    assert {s["function"]["name"] for s in TOOL_SCHEMAS} >= {"cancel_pending_order", "exchange_delivered_order_items"}
    assert all(s["type"] == "function" and s["function"]["parameters"]["type"] == "object" for s in TOOL_SCHEMAS)


# ------------------------------------------------------------------ action formats
@pytest.mark.parametrize("text, expected", [
    ('{"name": "get_order_details", "arguments": {"order_id": "#W1"}}', ("get_order_details", {"order_id": "#W1"})),
    ('{"name": "get_order_details", "kwargs": {"order_id": "#W1"}}', ("get_order_details", {"order_id": "#W1"})),
    ('{"type": "function", "function": {"name": "think", "arguments": "{\\"thought\\": \\"x\\"}"}}', ("think", {"thought": "x"})),
    ('Let me look. <tool_call>{"name": "think", "arguments": {"thought": "y"}}</tool_call>', ("think", {"thought": "y"})),
    ('{"name": "respond", "arguments": {"content": "Hello"}}', ("respond", {"content": "Hello"})),
    ("Sure, what is your email?", ("respond", {"content": "Sure, what is your email?"})),
    ('{"name": "think", "arguments": ', None),
    ("", None),
    ("x" * 30_000, None),
    ("\ud800 text", None),
])
def test_assistant_action_formats(text, expected):
    assert parse_assistant_action(text) == expected


def test_first_observation_has_policy_tools_and_the_customer_request():
    env, obs, info = view(task_of("cancel"))
    assert "customer service agent" in obs and '"name": "cancel_pending_order"' in obs
    assert f"Customer: {opening(env.game.task['script'])}" in obs
    assert info["view"]["tools"] == TOOL_SCHEMAS
    assert "instruction" not in info["view"]  # the hidden goal is the user's alone


def test_tool_results_keep_the_turn_and_errors_are_shown():
    env, obs, _ = view(task_of("order_status"))
    order_id = env.game.task["script"]["order_id"]
    obs, reward, terminated, *_ = env.step(call("get_order_details", order_id=order_id))
    assert json.loads(obs.split("\n\n")[0])["order_id"] == order_id and reward == 0.0 and not terminated
    obs, reward, terminated, *_ = env.step(call("drop_database"))
    assert "Unknown action 'drop_database'" in obs and reward == 0.0 and not terminated
    obs, *_ = env.step(call("get_order_details", id=order_id))
    assert obs.startswith("Error: get_order_details needs ['order_id']")


def test_malformed_tool_call_is_a_format_error():
    env, _, _ = view(0)
    obs, reward, terminated, truncated, _ = env.step('{"name": "cancel_pending_order", "arguments": {')
    assert reward == -0.1 and terminated and "Could not read a move" in obs


# ------------------------------------------------------------------ reward and cheats
@pytest.mark.parametrize("index", range(len(TASKS)))
def test_scripted_solver_succeeds_on_every_task(index):
    env, obs, info = view(index)
    assert run_solver(env, obs, info) == 1.0


def test_transferring_at_once_earns_nothing():
    env, _, _ = view(task_of("cancel"))
    obs, reward, terminated, _, info = env.step(call("transfer_to_human_agents", summary="help"))
    assert terminated and reward == 0.0 and info["task_reward"] == 0.0


def test_claiming_success_without_acting_earns_nothing():
    env, _, _ = view(task_of("cancel"))
    obs, reward, terminated, _, info = env.step("Your order has been cancelled.")
    assert terminated and reward == 0.0  # the customer leaves; the database is unchanged


def test_an_extra_write_spoils_the_database_match():
    index = task_of("cancel")
    env, obs, info = view(index)
    task = env.game.task
    order_id = task["script"]["order_id"]
    lookup = task["actions"][0]
    env.step(call(lookup["name"], **lookup["kwargs"]))
    env.step(call("cancel_pending_order", order_id=order_id, reason=task["script"]["reason"]))
    user = env.game.data["users"][task["user_id"]]
    env.step(call("modify_user_address", user_id=user["user_id"], address1="1 Nowhere", address2="", city="X",
                  state="Y", country="Z", zip="00000"))
    obs, reward, terminated, *_ = env.step("Your order has been cancelled.")
    assert terminated and reward == 0.0
    assert env.game.calculate_reward() == 0.0


def test_answers_must_be_said():
    index = task_of("order_total")
    env, _, _ = view(index)
    obs, reward, terminated, *_ = env.step("Your total was 1.00 dollars.")
    assert terminated and reward == 0.0  # the customer leaves with a wrong answer
    env, _, _ = view(index)
    answer = env.game.task["outputs"][0]
    obs, reward, terminated, *_ = env.step(f"You paid {answer} in total.")
    assert terminated and reward == 1.0


def test_listing_every_candidate_answer_earns_nothing():
    # A policy under RL pressure would name every status (or several amounts) to hit the required one.
    env, _, _ = view(task_of("order_status"))
    obs, reward, terminated, *_ = env.step("Your order is pending, processed or delivered.")
    assert terminated and reward == 0.0
    env, _, _ = view(task_of("order_status"))
    env.game.actions_taken.append({"name": "respond", "kwargs": {"content": "It might be delivered."}})
    answer = env.game.task["outputs"][0]
    obs, reward, terminated, *_ = env.step(f"Your order is {answer}.")
    assert terminated and reward == 0.0  # hedged across two messages
    env, _, _ = view(task_of("order_total"))
    answer = env.game.task["outputs"][0]
    obs, reward, terminated, *_ = env.step(f"You paid 1.00, 99.99 or {answer}.")
    assert terminated and reward == 0.0


def answer_reward(index: int, message: str, outputs=None) -> float:
    """The reward of answering task ``index`` at once with ``message`` (optionally other outputs)."""
    env, _, _ = view(index)
    if outputs is not None:
        env.game.task = dict(env.game.task, outputs=outputs)
    obs, reward, terminated, *_ = env.step(message)
    assert terminated
    return reward


TOTAL_ENDING_IN_ZERO = next(i for i, t in enumerate(TASKS) if t["outputs"] == ["147.50"])  # said in words below


@pytest.mark.parametrize("glued", ["pendingprocesseddeliveredcancelled", "deliveredprocessedpending",
                                   "pending,processed,delivered", "Pending-Processed", "processedpendingdelivered"])
def test_statuses_glued_into_one_word_earn_nothing(glued):
    for kind in ("pending", "processed", "delivered"):
        index = next(i for i, t in enumerate(TASKS) if t["outputs"] == [kind])
        assert answer_reward(index, f"Your order is {glued}.") == 0.0
        assert answer_reward(index, f"Your order is {kind}.") == 1.0


def test_amounts_glued_together_earn_nothing():
    index = task_of("order_total")
    answer = TASKS[index]["outputs"][0]
    for message in (f"You paid {answer}99.99.", f"You paid 99.99{answer}.", f"You paid {answer}.99.99",
                    f"You paid {answer}$99.99.", f"You paid {answer}usd99.99."):
        assert answer_reward(index, message) == 0.0, message


def test_numeric_variants_that_hedge_between_values_earn_nothing():
    index = task_of("order_total")
    answer = TASKS[index]["outputs"][0]
    shifted = answer.replace(".", "")[:-1] + "." + answer[-1]  # 331.91 -> 3319.1: another value
    for message in (f"You paid {answer} or {shifted}.", f"You paid {answer} (or $99).", f"{answer} or 12 dollars",
                    f"You paid {answer} or {answer}1.", f"You paid {answer} or 0.5.",
                    f"You paid {answer}, or maybe two hundred dollars.", f"{answer}, or ninety-nine cents",
                    f"{answer} or 20 bucks", f"{answer} or 3 dollars and 10 cents"):
        assert answer_reward(index, message) == 0.0, message


def test_a_correct_amount_earns_in_any_reasonable_formatting():
    answer = TASKS[TOTAL_ENDING_IN_ZERO]["outputs"][0]
    short = answer.rstrip("0")  # 147.50 -> 147.5
    dollars, cents = answer.split(".")
    for message in (f"You paid {answer}.", f"You paid ${short} in total.", f"You paid {answer}0 dollars.",
                    f"You paid {short} USD.", f"That was {answer} ({short} USD) for 2 items, zip 75069.",
                    f"You paid {dollars} dollars and {cents} cents.",
                    "You paid one hundred forty-seven dollars and fifty cents.",
                    f"You paid {answer} (one hundred and forty-seven dollars and fifty cents) for two items."):
        assert answer_reward(TOTAL_ENDING_IN_ZERO, message) == 1.0, message
    assert answer_reward(TOTAL_ENDING_IN_ZERO, f"You paid {answer}1.") == 0.0  # a longer number is another value


def test_a_correct_status_earns_in_any_reasonable_formatting():
    index = next(i for i, t in enumerate(TASKS) if t["outputs"] == ["pending"])
    for message in ("Your order is PENDING.", "Status: pending!", "It's pending (order #W1342277)."):
        assert answer_reward(index, message) == 1.0, message
    for message in ("Your order is spending.", "It is pendings."):  # not the word
        assert answer_reward(index, message) == 0.0, message


def test_glued_ids_earn_nothing():
    # an answer of another shape (an order id): glued candidates say neither, listed ones hedge
    index = task_of("order_status")
    order = TASKS[index]["script"]["order_id"]
    other = "#W0000001"
    assert answer_reward(index, f"The order is {order}.", outputs=[order]) == 1.0
    assert answer_reward(index, f"The order is {order}{other}.", outputs=[order]) == 0.0
    assert answer_reward(index, f"The order is {other}{order}.", outputs=[order]) == 0.0
    assert answer_reward(index, f"The order is {order} or {other}.", outputs=[order]) == 0.0
    assert answer_reward(index, "Your id is ORD123ORD456.", outputs=["ORD123"]) == 0.0
    assert answer_reward(index, "Your id is ORD123.", outputs=["ORD123"]) == 1.0
    assert answer_reward(index, "Your id is XORD123.", outputs=["ORD123"]) == 0.0


def test_step_limit_truncates_and_scores_the_state():
    env = gem.make("multi:CustomerService-v0-vs-scripted", game_kwargs={"max_steps": 3})
    env.reset(seed=0, task_index=task_of("order_status"))
    result = None
    for _ in range(3):
        result = env.step(call("think", thought="hmm"))
        if result[2] or result[3]:
            break
    assert result[3] and result[1] == 0.0


def test_raw_game_with_both_seats_scripted():
    env = gem.make("multi:CustomerService-v0")
    index = task_of("return")
    observations, infos = env.reset(seed=0, task_index=index)
    assert env.active_agents() == [USER] and "instruction" in infos[USER]["view"]
    players = {USER: env.make_scripted_player(USER), ASSISTANT: env.make_scripted_player(ASSISTANT)}
    for agent, player in players.items():
        player.reset(observations[agent], infos[agent])
    rewards = {}
    while env.agents:
        agent = env.active_agents()[0]
        observations, rewards, _, _, infos = env.step({agent: players[agent].act(observations[agent], infos[agent])})
    assert rewards == {USER: 1.0, ASSISTANT: 1.0}
    assert env.transcript[-1] == {"role": USER, "content": STOP}


def test_bad_kwargs_name_the_choices():
    with pytest.raises(ValueError, match="scripted, llm"):
        CustomerServiceEnv(user_mode="human")
    with pytest.raises(ValueError, match="task_index"):
        CustomerServiceEnv(task_index=10_000)


def test_scripted_user_asks_to_be_identified_and_confirms():
    index = task_of("cancel")
    user = ScriptedUser()
    user.reset("", {"view": {"script": TASKS[index]["script"]}})
    assert user.act("Hi! How can I help you today?") == opening(TASKS[index]["script"])
    assert user.act("Could you give me your email or name and zip code?").startswith("My ")
    assert user.act("I will cancel it. Do you confirm (yes/no)?") == "Yes, please go ahead."
    assert user.act("The order has been cancelled.") == STOP


# ------------------------------------------------------------------ LLM user over a loopback endpoint
class _ChatHandler(BaseHTTPRequestHandler):
    replies: list[str] = []
    requests: list[dict] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _ChatHandler.requests.append(body)
        text = _ChatHandler.replies.pop(0) if _ChatHandler.replies else STOP
        data = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def chat_server():
    needs_extra("eval")  # the OpenAI client
    _ChatHandler.requests = []
    with loopback_server(_ChatHandler) as url:
        yield f"{url}/v1"


def test_llm_user_plays_through_an_openai_compatible_endpoint(chat_server):
    index = task_of("order_status")
    _ChatHandler.replies = [opening(TASKS[index]["script"]), STOP]
    env = gem.make("multi:CustomerService-v0-vs-scripted",
                   game_kwargs={"user_mode": "llm", "user_model": "stand-in", "user_base_url": chat_server,
                                "user_api_key": "test"})
    obs, info = env.reset(seed=0, task_index=index)
    assert opening(TASKS[index]["script"]) in obs
    assert run_solver(env, obs, info) == 1.0
    first, last = _ChatHandler.requests[0], _ChatHandler.requests[-1]
    assert first["model"] == "stand-in" and first["messages"][0]["role"] == "system"
    assert TASKS[index]["instruction"] in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "Hi! How can I help you today?"}
    assert last["messages"][-1]["content"].startswith("Your order")  # the assistant's answer, as the user sees it
    env.close()
