"""rg answers are paid only when they solve the item: no hedges, no scorer that pays anything, no
expression over other numbers. ``gem validate`` found each on rg ids (hedges on spell_backward,
simple_integration, ...; any answer on game_of_life_halting; another item's 24 on puzzle24)."""

import pytest

import gem
from tests.conftest import needs_extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def _rg():
    needs_extra("rg")


def _env(name: str, seed: int = 0):
    env = gem.make(f"rg:{name}")
    env.reset(seed=seed)
    return env


def _pay(env, seed: int, answer: str) -> float:
    env.reset(seed=seed)
    return env.step(f"\\boxed{{{answer}}}")[1]


@pytest.mark.parametrize("name", ["spell_backward", "letter_jumble", "simple_integration", "polynomial_multiplication", "gsm_symbolic"])
def test_the_gold_answer_hedged_with_a_wrong_one_earns_nothing(name):
    env = _env(name)
    gold = str(env.unwrapped.answer)
    assert _pay(env, 0, gold) == 1.0
    for hedge in (f"{gold} \\text{{ or }} zzz", f"zzz and {gold}", f"zzz \\lor {gold}", f"{gold} or zzz"):
        assert _pay(env, 0, hedge) == 0.0, hedge


def test_a_scorer_that_pays_anything_pays_only_the_gold_answer():
    env = _env("game_of_life_halting")
    gold = str(env.unwrapped.answer)
    wrong = "True" if gold == "False" else "False"
    assert _pay(env, 0, gold) == 1.0
    for answer in (wrong, "banana", "1"):
        assert _pay(env, 0, answer) == 0.0, answer


def test_an_expression_puzzle_pays_only_for_its_own_numbers():
    env = _env("puzzle24")
    item = env.unwrapped.item
    assert _pay(env, 0, str(env.unwrapped.answer)) == 1.0
    assert _pay(env, 0, "4*2*4 - 8") == 0.0  # 24, but not from this puzzle's numbers
    assert sorted(item["metadata"]["numbers"]) != [2, 4, 4, 8]


def test_a_seed_played_again_reuses_its_item_and_hands_out_copies():
    import time

    env = gem.make("rg:zebra_puzzles")  # about a second to build an item
    t0 = time.perf_counter()
    first = env.reset(seed=3)
    built = time.perf_counter() - t0
    env.unwrapped.item["answer"] = "tampered"
    t0 = time.perf_counter()
    again = env.reset(seed=3)
    reused = time.perf_counter() - t0
    assert again == first and env.unwrapped.item["answer"] != "tampered"
    assert reused < built / 3, (built, reused)
    assert env.reset(seed=4)[0] != first[0]


@pytest.mark.parametrize("reply", ["nan", "NaN + nani", "3.0 - nan i", "-nan", "inf", "1e999 - 13.0i"])
def test_a_number_that_is_not_finite_earns_nothing(reply):
    # reasoning-gym scores complex_arithmetic min(1, exp(-|x - gold|)): for x = nan that is 1.0
    env = _env("complex_arithmetic")
    gold = str(env.unwrapped.answer)
    assert _pay(env, 0, gold) == 1.0
    env.reset(seed=0)
    _, reward, _, _, info = env.step(f"\\boxed{{{reply}}}")
    assert reward == 0.0 and info["correct"] is False
    partial = gem.make("rg:complex_arithmetic", partial_credit=True)
    assert _pay(partial, 0, reply) == 0.0
    assert _pay(partial, 0, gold) == 1.0


def test_words_that_merely_contain_nan_or_inf_are_still_read():
    from gem.envs.reasoning_gym import _non_finite

    assert not _non_finite("banana information 1e5 3.0 - 13.0i")
    assert _non_finite("nanj") and _non_finite("Infinity") and _non_finite("2e400")
