"""Math envs: the bundled set, local files for hub ids, grading, rewards, offline errors."""

import json

import pytest

import gem
from gem.data import arithmetic
from gem.envs.math_env import MathEnv, MathVisualEnv
from gem.errors import InfrastructureError, ResourceUnavailable
from gem.utils.env_checker import check_env
from tests.conftest import needs_extra

needs_extra("math")  # math-verify grades

HUB_IDS = [
    "math:ASDiv2K", "math:GSM8K", "math:Math12K", "math:Math8K-3to5", "math:Orz57K",
    "math:DeepScaleR40K", "math:Geometry3K",
    "eval:MATH500", "eval:AMC", "eval:OlympiadBench", "eval:Minerva", "eval:AIME24",
]


@pytest.fixture
def math_file(tmp_path):
    rows = [
        {"problem": "What is 1/2 + 1/4?", "answer": "\\frac{3}{4}"},
        {"problem": "Solve x + 1 = 3.", "answer": "2"},
        {"problem": "Name the roots of x^2 = 1.", "answer": ["\\{-1, 1\\}", "\\pm 1"]},
    ]
    path = tmp_path / "math.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bundled_file_matches_its_generator():
    assert arithmetic.bundled_matches_generator(), "run `python -m gem.data.arithmetic` to rewrite it"
    assert arithmetic.bundled_matches_generator(arithmetic.EASY_FILE, arithmetic.EASY_NAME)
    assert arithmetic.main(["--check"]) == 0
    assert arithmetic.make_item(17) == arithmetic.make_item(17)
    assert arithmetic.make_item(17, seed=1) != arithmetic.make_item(17)


def test_arithmetic_rewards_right_wrong_and_missing_answers():
    env = gem.make("math:Arithmetic")
    obs, info = env.reset(seed=3)
    assert obs == env.unwrapped.item["problem"] and "\\boxed" in info["suffix"]
    gold = env.unwrapped.answer
    _, reward, terminated, truncated, info = env.step(f"Reasoning... so \\boxed{{{gold}}}.")
    assert (reward, terminated, truncated, info["correct"], info["grading"]) == (1.0, True, True, True, "ok")
    env.reset(seed=3)
    _, reward, terminated, _, info = env.step("\\boxed{not a number at all}")
    assert (reward, terminated, info["correct"]) == (0.0, True, False)
    env.reset(seed=3)
    obs, reward, terminated, _, info = env.step(f"the answer is {gold}")
    assert (reward, terminated, info["correct"], info["formatted"]) == (0.0, True, False, False)
    assert "\\boxed" in obs
    strict = gem.make("math:Arithmetic", use_format_error_reward=True)
    strict.reset(seed=3)
    assert strict.step(f"the answer is {gold}")[1] == pytest.approx(-0.1)


def test_equivalent_forms_are_accepted(math_file):
    env = MathEnv(dataset_name=str(math_file))
    env.reset(idx=0)
    assert env.step("\\boxed{0.75}")[1] == 1.0
    env.reset(idx=2)  # a list of gold answers: any one counts
    assert env.step("\\boxed{\\{1, -1\\}}")[1] == 1.0
    env.reset(idx=1)
    assert env.step("\\boxed{x = 2}")[1] == 1.0


@pytest.mark.parametrize("env_id", HUB_IDS)
def test_hub_ids_fail_offline_with_a_clear_message(env_id, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    needs_extra("math")  # datasets reads the hub
    with pytest.raises(ResourceUnavailable, match="dataset_name="):
        gem.make(env_id)


@pytest.mark.parametrize("env_id", ["math:GSM8K", "eval:MATH500"])
def test_hub_ids_load_from_a_local_file(env_id, math_file):
    env = gem.make(env_id, dataset_name=str(math_file))
    check_env(env)
    env.reset(idx=1)
    assert env.step("\\boxed{2}")[1] == 1.0


def test_eval_ids_walk_the_dataset_in_order(math_file):
    env = gem.make("eval:AIME24", dataset_name=str(math_file))
    assert [env.reset()[0] for _ in range(4)] == [
        "What is 1/2 + 1/4?", "Solve x + 1 = 3.", "Name the roots of x^2 = 1.", "What is 1/2 + 1/4?"
    ]


def test_unseeded_resets_cover_an_epoch_and_follow_make_seed(math_file):
    env = gem.make("math:GSM8K", dataset_name=str(math_file), seed=5)
    first = [env.reset()[0] for _ in range(3)]
    assert len(set(first)) == 3
    again = gem.make("math:GSM8K", dataset_name=str(math_file), seed=5)
    assert [again.reset()[0] for _ in range(3)] == first


def test_geometry_images_go_in_info(tmp_path):
    needs_extra("math")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"problem": "Find x in the figure.", "answer": "30", "images": ["<png bytes>"]}]
    path = tmp_path / "geo.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    env = gem.make("math:Geometry3K", dataset_name=str(path))
    assert isinstance(env, MathVisualEnv)
    obs, info = env.reset(seed=0)
    assert obs == "Find x in the figure." and info["images"] == ["<png bytes>"]
    assert env.step("\\boxed{30}")[1] == 1.0
    with pytest.raises(ValueError, match="no column.*'pics'"):
        MathVisualEnv(dataset_name=str(path), image_key="pics")


def test_dataset_argument_and_bad_arguments(math_file):
    env = MathEnv(dataset=[{"question": "2+2?", "sol": "4"}], question_key="question", answer_key="sol")
    env.reset(seed=0)
    assert env.step("\\boxed{4}")[1] == 1.0
    assert env.check_correct("\\boxed{4}", env.answer) and not env.check_correct("4", env.answer)
    assert MathEnv.check_correct("so \\boxed{\\sqrt{16}}", ["5", 4]) is True
    with pytest.raises(ValueError, match="grade_timeout"):
        MathEnv(dataset_name=str(math_file), grade_timeout=0)
    with pytest.raises(ValueError, match="idx"):
        MathEnv(dataset_name=str(math_file)).reset(idx=99)
    with pytest.raises(ValueError, match="empty"):
        MathEnv(dataset=[])


def test_state_roundtrip_and_spawn_share_rows():
    env = gem.make("math:Arithmetic")
    env.reset(seed=1)
    clone = env.spawn(same_state=True)
    assert clone.unwrapped._rows is env.unwrapped._rows
    assert clone.step(f"\\boxed{{{env.unwrapped.answer}}}")[1] == 1.0
    assert "_rows" not in env.get_state()


def test_hostile_answers_are_graded_quickly(monkeypatch):
    import time

    monkeypatch.delenv("GEM_STRICT_INFRA")  # an answer the grader cannot finish is reported, not raised

    from gem.utils import math_grader as mg

    assert mg.default_grader().warm_up()  # time the grading, not the workers' first start

    env = gem.make("math:Arithmetic")
    cases = {
        "\\boxed{9^{9^{9^9}}}": 0.0,
        "\\boxed{" + "1+" * 50000 + "1}": 0.0,
        "\\boxed{(10^{10^{7}})!}": 0.0,
        "\\boxed{\\frac{1}{}": 0.0,  # the box never closes: no answer
    }
    for bad, expected in cases.items():
        env.reset(seed=0)
        start = time.monotonic()
        _, reward, terminated, _, info = env.step(bad)
        assert reward == expected and terminated
        if info["correct"] is None:  # cut by the grader's limit: reported as the grader's failure
            assert info["infra_error"]["component"] == "grader:math-verify"
        # at most the grader's wall-clock backstop for the default 2 s budget, plus slack
        assert time.monotonic() - start < 2.0 * mg.HARD_LIMIT_FACTOR + mg.HARD_LIMIT_SLACK_S + 1.0


def test_ungraded_answers_are_reported_and_counted_by_gem_eval(tmp_path, monkeypatch):
    """A grading call that cannot finish is not a wrong answer: the step says so in info, pays the
    documented ungraded reward (0.0), and ``gem eval`` counts it in its summary."""
    from gem.eval.runner import EvalConfig, EvalRunner
    from gem.utils import math_grader

    def cannot_finish(self, pred, gold, timeout=None):
        return math_grader.ungraded("timeout", "math-verify", "used its whole budget of 2 s of CPU time.")

    monkeypatch.setattr(math_grader.MathGrader, "judge", cannot_finish)
    env = gem.make("math:Arithmetic")
    env.reset(seed=0)
    with pytest.raises(InfrastructureError, match=r"grader:math-verify failed: .*timeout: used its whole budget"):
        env.step(f"\\boxed{{{env.unwrapped.answer}}}")  # the suite's strict mode raises it
    monkeypatch.delenv("GEM_STRICT_INFRA")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{env.unwrapped.answer}}}")
    assert (reward, terminated, truncated, info["correct"], info["grading"]) == (0.0, True, True, None, "timeout")
    assert info["grading_error"] == {"component": "math-verify", "reason": "used its whole budget of 2 s of CPU time."}
    assert info["infra_error"] == {
        "component": "grader:math-verify", "type": "InfrastructureError",
        "message": "timeout: used its whole budget of 2 s of CPU time.",
    }
    assert "could not be graded" in obs and "math-verify" in obs

    summary = EvalRunner(
        EvalConfig(env_ids=["math:Arithmetic"], out=str(tmp_path), agent="random", episodes=3, progress=False)
    ).run()
    s = summary["envs"]["math:Arithmetic"]
    assert (s["episodes"], s["errors"], s["ungraded"], s["ungraded_by_status"]) == (3, 0, 3, {"timeout": 3})
    # No episode was scored: each ungraded one counts as not solved (and is counted apart).
    assert s["scored"] == 0 and s["success_rate"] == 0.0 and summary["overall"]["ungraded"] == 3


def test_a_grader_that_crashes_is_an_infrastructure_failure_not_a_wrong_answer(monkeypatch):
    from gem.utils import math_grader

    def crash(self, pred, gold, timeout=None):
        raise MemoryError("the grader ran out of memory")

    monkeypatch.setattr(math_grader.MathGrader, "judge", crash)
    env = gem.make("math:Arithmetic")
    env.reset(seed=0)
    with pytest.raises(InfrastructureError, match="grader failed: MemoryError: the grader ran out of memory"):
        env.step(f"\\boxed{{{env.unwrapped.answer}}}")
    monkeypatch.delenv("GEM_STRICT_INFRA")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(f"\\boxed{{{env.unwrapped.answer}}}")
    assert (reward, terminated, info["correct"], info["grading"]) == (0.0, True, None, "error")
    assert info["infra_error"] == {"component": "grader", "type": "MemoryError", "message": "the grader ran out of memory"}


def test_easy_level_is_one_digit_and_pays_a_format_error():
    """math:Arithmetic-easy: one-digit + and - with non-negative answers; no box pays -0.1."""
    import re

    for i in range(200):
        item = arithmetic.make_item(i, level="arithmetic-easy")
        m = re.fullmatch(r"Compute \$(\d) ([+-]) (\d)\$\.", item["problem"])
        assert m, item
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        assert item["answer"] == str(a + b if op == "+" else a - b) and int(item["answer"]) >= 0
    with pytest.raises(ValueError, match="arithmetic-easy"):
        arithmetic.make_item(0, level="hard")
    env = gem.make("math:Arithmetic-easy")
    env.reset(seed=3)
    gold = env.answer
    assert env.step(f"\\boxed{{{gold}}}")[1] == 1.0
    env.reset(seed=3)
    assert env.step(f"\\boxed{{{int(gold) + 1}}}")[1] == 0.0
    env.reset(seed=3)
    assert env.step(f"The answer is {gold}.")[1] == pytest.approx(-0.1)
