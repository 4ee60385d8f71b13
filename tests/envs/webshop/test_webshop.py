"""WebShop: data, pages, actions, reward (and the cheats it must not pay), solver, original-data loader."""

from __future__ import annotations

import json
import sys
from urllib.parse import quote
from pathlib import Path

import pytest

from tests.conftest import needs_extra

needs_extra("search")  # the shop's search engine (bm25s)

import gem  # noqa: E402
from gem.envs.webshop import products as products_mod  # noqa: E402
from gem.envs.webshop.goal import get_reward  # noqa: E402
from gem.envs.webshop.products import get_store  # noqa: E402
from gem.envs.webshop.webshop import WebshopEnv, parse_action  # noqa: E402
from gem.errors import DependencyNotInstalled  # noqa: E402

from tests.envs.webshop._helpers import assert_step_after_end_pays_nothing, load_script  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FORMAT_ERROR = -0.1


def make(split: str = "test", mode: str = "text", **kwargs) -> WebshopEnv:
    return gem.make(f"webshop:{split}-{mode}", **kwargs).unwrapped


def play_solver(env: WebshopEnv, session: int) -> tuple[float, dict, int]:
    obs, info = env.reset(session=session)
    solver = env.make_solver()
    solver.reset(obs, info)
    reward, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(solver.act(obs, info))
        steps += 1
        if terminated or truncated:
            return reward, info, steps


def go_to_item(env: WebshopEnv, asin: str) -> None:
    """Search for the product's title and open it (from the search page)."""
    product = env.store.by_asin[asin]
    env.step(f"\\boxed{{search[{product['name']}]}}")
    for _ in range(5):
        if asin in env.clickables() or asin.lower() in env.clickables():
            break
        env.step("\\boxed{click[Next >]}")
    obs, reward, *_ = env.step(f"\\boxed{{click[{asin}]}}")
    assert reward == 0.0 and "Buy Now" in obs


# ------------------------------------------------------------------ data
def test_generator_rebuilds_the_shipped_files_byte_for_byte():
    gen = load_script("gen_webshop_data")
    for name, data in gen.build().items():
        assert (products_mod.DATA_DIR / name).read_bytes() == data, f"{name} is stale: run scripts/gen_webshop_data.py"


def test_bundled_catalog_size_and_goals_have_an_exact_match():
    store = get_store()
    assert len(store.products) >= 1000
    assert len(store.goals["train"]) + len(store.goals["test"]) >= 500
    assert {p["category"] for p in store.products} >= {"beauty", "grocery", "fashion", "garden", "electronics"}
    assert all(p["options"] and p["attributes"] and p["price"] > 0 for p in store.products)
    for goal in store.goals["test"] + store.goals["train"]:
        target = store.by_asin[goal["asin"]]
        reward, _ = get_reward(target, goal, target["price"], goal["goal_options"], store.attribute_words)
        assert reward == 1.0, goal


def test_splits_hold_different_goals():
    store = get_store()
    assert len(store.goals["test"]) == 100 and len(store.goals["train"]) == 500
    assert not {g["asin"] for g in store.goals["test"]} & {g["asin"] for g in store.goals["train"]}


# ------------------------------------------------------------------ pages and actions
def test_reset_shows_instruction_and_search_page_in_each_mode():
    for mode, marker in (("text", "WebShop [SEP] Search"), ("text_rich", "[button] Search [button_]"),
                         ("html", '<input id="search_input"')):
        env = make(mode=mode)
        obs, info = env.reset(seed=3)
        assert env.instruction_text in obs and marker in obs
        assert "search[<your query>]" in info["suffix"] and env.instruction_text in info["prefix"]


def test_same_seed_same_goal_and_session_picks_goal():
    env = make()
    assert env.reset(seed=11)[0] == env.reset(seed=11)[0]
    env.reset(session=7)
    assert env.goal is env.goals[7]
    env.reset(session=7 + len(env.goals))
    assert env.goal is env.goals[7]


def test_results_paging_item_subpages_and_back():
    env = make(mode="text_rich")
    env.reset(session=0)
    obs, reward, *_ = env.step("\\boxed{search[black leather wallet with color]}")
    assert reward == 0.0 and "Page 1 (Total results: 50)" in obs and "[button] Next > [button_]" in obs
    assert "< Prev" not in obs
    obs, *_ = env.step("\\boxed{click[Next >]}")
    assert "Page 2" in obs and "[button] < Prev [button_]" in obs
    asin = next(e.text for e in env.page() if e.kind == "product")
    obs, *_ = env.step(f"click[{asin.lower()}]")  # bare action, any case
    assert "[button] Buy Now [button_]" in obs and "Price: $" in obs
    obs, *_ = env.step("\\boxed{click[Features]}")
    assert "designed with" in obs and "Buy Now" not in obs
    obs, *_ = env.step("\\boxed{click[< Prev]}")
    assert "Buy Now" in obs
    obs, *_ = env.step("\\boxed{click[< Prev]}")
    assert "Page 2" in obs and f"[clicked button] {asin} [clicked button_]" in obs
    obs, *_ = env.step("\\boxed{click[Back to Search]}")
    assert "[button] Search [button_]" in obs


def test_html_mode_has_webshop_markup():
    env = make(mode="html")
    env.reset(session=1)
    obs, *_ = env.step("\\boxed{search[tea]}")
    assert 'class="product-link"' in obs and '<button class="btn">Next &gt;</button>' in obs
    asin = next(e.text for e in env.page() if e.kind == "product")
    obs, *_ = env.step(f"\\boxed{{click[{asin}]}}")
    assert '<input type="radio"' in obs


def test_url_mode_follows_webshop_url_scheme():
    env = WebshopEnv(observation_mode="url")
    obs, _ = env.reset(session=3)
    assert obs.endswith("http://127.0.0.1:3000/3")
    obs, *_ = env.step("\\boxed{search[green tea]}")
    assert obs == "http://127.0.0.1:3000/search_results/3/green%20tea/1"
    asin = next(e.text for e in env.page() if e.kind == "product")
    obs, *_ = env.step(f"\\boxed{{click[{asin}]}}")
    assert obs == f"http://127.0.0.1:3000/item_page/3/{asin}/green%20tea/1/%7B%7D"
    value = next(e for e in env.page() if e.kind == "option")
    obs, *_ = env.step(f"\\boxed{{click[{value.text}]}}")
    assert obs.endswith(quote(json.dumps({value.group: value.text}), safe=""))


def test_query_matching_nothing_gives_an_empty_result_page():
    env = make()
    env.reset(session=0)
    obs, reward, terminated, truncated, _ = env.step("\\boxed{search[zzqx vvkw]}")
    assert "Total results: 0" in obs and "No results" in obs and reward == 0.0 and not terminated


@pytest.mark.parametrize(
    "action, why",
    [
        ("", "Invalid action"),
        ("a" * 1_000_000, "Invalid action"),
        ("\\boxed{click[[Buy Now}", "Invalid action"),
        ("\\boxed{search[]}", "needs keywords"),
        ("\\boxed{click[Buy Now]}", "not clickable"),  # not on the search page
        ("\\boxed{click[B0NOTHERE1]}", "not clickable"),
        ("\\boxed{jump[B0NOTHERE1]}", "unknown action"),
    ],
)
def test_bad_actions_get_format_error_and_a_clear_observation(action, why):
    env = make()
    env.reset(session=0)
    obs, reward, terminated, truncated, _ = env.step(action)
    assert reward == FORMAT_ERROR and why in obs and len(obs) < 5000
    assert not terminated and not truncated


def test_search_without_a_search_bar_is_invalid():
    env = make()
    env.reset(session=0)
    env.step("\\boxed{search[tea]}")
    obs, reward, *_ = env.step("\\boxed{search[coffee]}")
    assert reward == FORMAT_ERROR and "no search bar" in obs


def test_error_tolerance_ends_the_episode_and_max_turns_truncates():
    env = make(error_tolerance=2)
    env.reset(session=0)
    results = [env.step("nonsense") for _ in range(3)]
    assert [r[2] for r in results] == [False, False, True] and "Too many invalid" in results[-1][0]
    env = make(max_turns=3)
    env.reset(session=0)
    env.step("\\boxed{search[tea]}")
    env.step("\\boxed{click[Next >]}")
    obs, reward, terminated, truncated, _ = env.step("\\boxed{click[Next >]}")
    assert truncated and not terminated and reward == 0.0 and "limit of 3 actions" in obs
    assert_step_after_end_pays_nothing(env, "\\boxed{click[Next >]}")


# ------------------------------------------------------------------ reward and cheats
def test_buying_the_target_with_its_options_pays_one():
    env = make(split="train")
    env.reset(session=4)
    goal = env.goal
    go_to_item(env, goal["asin"])
    for value in goal["goal_options"].values():
        env.step(f"\\boxed{{click[{value}]}}")
    obs, reward, terminated, truncated, info = env.step("\\boxed{click[Buy Now]}")
    assert reward == 1.0 and terminated and info["success"] and "Your score" in obs
    assert_step_after_end_pays_nothing(env, "\\boxed{click[Buy Now]}")  # buying again pays nothing more


def test_buying_without_choosing_options_pays_less():
    env = make(split="train")
    env.reset(session=4)
    go_to_item(env, env.goal["asin"])
    _, reward, terminated, _, info = env.step("\\boxed{click[Buy Now]}")
    n_att, n_opt = len(env.goal["attributes"]), len(env.goal["goal_options"])
    assert terminated and reward == pytest.approx((n_att + 1) / (n_att + n_opt + 1))
    assert reward < 1.0 and not info["success"]


def test_buying_another_product_type_pays_nothing():
    env = make(split="train")
    env.reset(session=4)
    goal = env.goal
    other = next(p for p in env.store.products if p["category"] != goal["category"] and goal["query"] not in p["name"].lower())
    go_to_item(env, other["asin"])
    _, reward, terminated, _, info = env.step("\\boxed{click[Buy Now]}")
    assert terminated and reward == 0.0 and info["reward_parts"]["r_type"] == 0.0


def test_wrong_option_and_over_price_lose_their_share():
    store = get_store()
    goal = store.goals["train"][4]
    target = store.by_asin[goal["asin"]]
    group, value = next(iter(goal["goal_options"].items()))
    wrong = next(v for v in target["options"][group] if v != value)
    reward, parts = get_reward(target, goal, target["price"], {**goal["goal_options"], group: wrong}, store.attribute_words)
    assert reward < 1.0 and parts["r_option"] < 1.0
    reward, parts = get_reward(target, goal, goal["price_upper"] + 0.01, goal["goal_options"], store.attribute_words)
    assert reward < 1.0 and parts["r_price"] is False
    # a near-miss option ("large" for "x-large") is not a match
    assert get_reward(target, {**goal, "goal_options": {"size": "x-large"}}, 1.0, {"size": "large"})[1]["r_option"] == 0.0


# ------------------------------------------------------------------ solver
@pytest.mark.parametrize("split", ["test", "train"])
def test_solver_buys_an_exact_match_for_every_instruction(split):
    env = make(split=split)
    failures = []
    for session in range(len(env.goals)):
        reward, info, steps = play_solver(env, session)
        if reward != 1.0:
            failures.append((session, reward))
        assert steps <= env.max_turns
    assert not failures, f"solver missed {len(failures)}/{len(env.goals)}: {failures[:5]}"


def test_random_policy_rarely_succeeds():
    env = make()
    wins = 0
    for seed in range(30):
        env.reset(seed=seed)
        while True:
            _, reward, terminated, truncated, _ = env.step(env.sample_random_action())
            if terminated or truncated:
                break
        wins += reward == 1.0
    assert wins <= 2


# ------------------------------------------------------------------ original WebShop files
def test_loader_reads_the_original_webshop_format():
    store = products_mod.load_original(FIXTURES)
    assert set(store.by_asin) == {"B07ABC1234", "B07ABC5678", "B08XYZ0001", "B08XYZ0002", "B09NOINS01"}
    lipstick = store.by_asin["B07ABC1234"]
    assert lipstick["options"] == {"color": ["ruby red", "nude | pink"]} and lipstick["price"] == 12.99
    assert lipstick["attributes"] == ["long lasting", "cruelty free"]
    assert 8.0 <= store.by_asin["B07ABC5678"]["price"] <= 16.0  # a price range draws one price
    assert store.by_asin["B09NOINS01"]["price"] == products_mod.DEFAULT_PRICE
    goals = store.goals["test"] + store.goals["train"]
    assert sorted(g["asin"] for g in goals) == ["B07ABC1234", "B08XYZ0001"]  # no attributes / unknown ASIN dropped
    for goal in goals:
        assert goal["instruction_text"].endswith(f", and price lower than {goal['price_upper']:.2f} dollars")
        target = store.by_asin[goal["asin"]]
        assert goal["price_upper"] > target["price"]
        assert get_reward(target, goal, target["price"], dict(enumerate(goal["goal_options"])))[0] == 1.0


def test_env_plays_on_the_original_files():
    env = WebshopEnv(observation_mode="text", split="train", data_dir=str(FIXTURES), error_tolerance=5,
                     format_error_reward=FORMAT_ERROR)
    for session in range(len(env.goals)):
        reward, info, _ = play_solver(env, session)
        assert reward == 1.0, (env.goal, info)


def test_loader_errors_name_the_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="items_shuffle"):
        products_mod.load_original(tmp_path)


def test_bad_kwargs_raise_clear_errors():
    with pytest.raises(ValueError, match="html, text, text_rich, url"):
        WebshopEnv(observation_mode="markdown")
    with pytest.raises(ValueError, match="train, test"):
        WebshopEnv(split="dev")


def test_missing_bm25s_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)
    monkeypatch.setattr(products_mod, "_STORES", {})
    with pytest.raises(DependencyNotInstalled, match=r"pip install -e \"\.\[search\]\" in the GEM checkout"):
        WebshopEnv()


def test_parse_action():
    assert parse_action("think... \\boxed{click[Buy Now]}") == ("click", "Buy Now")
    assert parse_action("search[ red shoes ]") == ("search", "red shoes")
    assert parse_action("\\boxed{click}") == (None, None)
    assert parse_action(None) == (None, None)
