"""Code written for the original GEM (gem-llm 0.1.0 and its main branch) runs unchanged against the
math, QA and code envs and the grader module: kwargs, single-turn semantics, rewards, names and
signatures."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import pytest

import gem
from gem.envs.code_env import CodeEnv
from gem.envs.math_env import MathEnv
from gem.envs.qa_env import QaEnv
from gem.errors import ResourceUnavailable

pytest.importorskip("math_verify")


@pytest.fixture()
def qa_file(tmp_path: Path) -> Path:
    path = tmp_path / "qa.jsonl"
    rows = [
        {"question": "Capital of France?", "problem": "Capital of France?", "answer": ["Paris"]},
        {"question": "Who wrote Hamlet?", "problem": "Who wrote Hamlet?", "answer": "William Shakespeare"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def math_file(tmp_path: Path) -> Path:
    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps({"problem": "What is 6 * 7?", "answer": "42"}) + "\n")
    return path


# ------------------------------------------------------------------ kwargs the original accepts
def test_qa_ids_accept_verbose_and_max_turns(qa_file, monkeypatch):
    env = gem.make("eval:QaOpen", verbose=True, dataset_name=str(qa_file))
    env.reset(idx=0)
    assert env.step("<answer>Paris</answer>")[1] == 1.0
    env = gem.make("qa:NaturalQuestions", max_turns=3, dataset_name=str(qa_file))
    env.reset(idx=0)
    assert env.step("<answer>Paris</answer>")[1:3] == (1.0, True)  # single-turn: max_turns is ignored
    # offline, the hub ids fail with the usual clear error, not a TypeError about the kwarg
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("datasets")
    with pytest.raises(ResourceUnavailable, match="dataset_name="):
        gem.make("eval:QaOpen", verbose=True)
    with pytest.raises(ResourceUnavailable, match="dataset_name="):
        gem.make("qa:NaturalQuestions", max_turns=3)


@pytest.mark.parametrize("cls", ["math", "visual", "qa"])
def test_single_turn_constructors_take_the_ignored_kwargs_outside_their_signature(
    cls, math_file, qa_file, tmp_path, caplog, monkeypatch
):
    """The original's constructors took verbose/max_turns and ignored them (``**kwargs``); ours do
    not name them, gem.compat lets a direct call pass them (logged once), and a typo still fails."""
    import logging

    from gem.compat import kwargs as compat_kwargs
    from gem.envs.math_visual_env import MathVisualEnv

    monkeypatch.setattr(compat_kwargs, "_ignored_logged", set())  # what earlier tests logged

    pictured = tmp_path / "pictured.jsonl"
    pictured.write_text(json.dumps({"problem": "What is 6 * 7?", "answer": "42", "images": ["<png>"]}) + "\n")
    klass, path, answer = {
        "math": (MathEnv, math_file, "\\boxed{42}"),
        "visual": (MathVisualEnv, pictured, "\\boxed{42}"),
        "qa": (QaEnv, qa_file, "<answer>Paris</answer>"),
    }[cls]
    assert not {"verbose", "max_turns"} & set(inspect.signature(klass).parameters)
    with caplog.at_level(logging.WARNING, logger="gem.envs.registration"):
        env = klass(dataset_name=str(path), verbose=True, max_turns=3)
        klass(dataset_name=str(path), verbose=False)
    assert [r.getMessage() for r in caplog.records].count(
        f"{klass.__name__} ignores verbose=...: the original GEM accepted it (for other envs, or without "
        "using it); it has no effect here.") == 1
    assert not hasattr(env, "verbose")
    env.reset(idx=0)
    assert env.step(answer)[1:3] == (1.0, True)
    with pytest.raises(TypeError, match="verbos"):
        klass(dataset_name=str(path), verbos=True)


def test_code_and_math_envs_accept_max_turns_and_the_original_kwargs(math_file):
    code = CodeEnv(dataset_name="code_problems", max_turns=3, verbose=True, sandbox_type="none", max_workers=2)
    code.reset(idx=0)
    assert code.step(code.reference_solution())[1] == 1.0
    math = MathEnv(dataset_name=str(math_file), max_turns=3, verbose=True, use_mp=False, seed=3)
    math.reset(idx=0)
    assert math.step("\\boxed{42}")[1] == 1.0


# ------------------------------------------------------------------ single-turn semantics
@pytest.mark.parametrize("make", ["math", "qa", "code"])
def test_the_one_step_is_terminated_and_truncated_and_no_answer_scores_zero(make, math_file, qa_file):
    env, answer, unparseable = {
        "math": (MathEnv(dataset_name=str(math_file)), "\\boxed{42}", "the answer is 42"),
        "qa": (QaEnv(dataset_name=str(qa_file)), "<answer>Paris</answer>", "Paris"),
        "code": (CodeEnv(dataset_name="code_problems"), None, "print(1)"),
    }[make]
    env.reset(idx=0)
    answer = answer or env.reference_solution()
    _, reward, terminated, truncated, info = env.step(answer)
    assert (reward, terminated, truncated, info["correct"]) == (1.0, True, True, True)
    env.reset(idx=0)
    _, reward, terminated, truncated, info = env.step(unparseable)
    assert (reward, terminated, truncated, info["correct"]) == (0.0, True, True, False)
    # the -0.1 format-error penalty is one keyword away
    strict = type(env)(dataset_name=env.dataset_name, use_format_error_reward=True)
    strict.reset(idx=0)
    assert strict.step(unparseable)[1] == pytest.approx(-0.1)


def test_qa_without_extract_boxed_scores_a_boxed_answer_zero(qa_file):
    env = QaEnv(dataset_name=str(qa_file), extract_boxed=False)
    env.reset(idx=0)
    assert env.step("\\boxed{Paris}")[1] == 0.0
    boxed = QaEnv(dataset_name=str(qa_file), extract_boxed=True)
    boxed.reset(idx=0)
    assert boxed.step("\\boxed{Paris}")[1] == 1.0


# ------------------------------------------------------------------ names and signatures
def _params(fn) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_check_correct_is_a_static_method_with_the_original_signature():
    for cls in (MathEnv, QaEnv):
        assert isinstance(inspect.getattr_static(cls, "check_correct"), staticmethod)
        assert [name for name, _ in _params(cls.check_correct)] == ["model_answer", "gt_answer"]
    assert MathEnv.check_correct("so \\boxed{\\frac{84}{2}}", "42") is True
    assert MathEnv.check_correct("\\boxed{41}", ["42", 43]) is False
    assert QaEnv.check_correct("42", [42, "x"]) is True
    with pytest.raises(ValueError, match="Unexpected answer type"):
        MathEnv.check_correct("\\boxed{1}", {"a": 1})


ORIGINAL_GRADER_SIGNATURES = {
    "mathd_normalize_answer": ["answer"],
    "normalize_final_answer": ["final_answer"],
    "repeatness": ["s"],
    "latex_eval": ["latex"],
    "numeric_equal": ["prediction", "reference"],
    "symbolic_equal": ["a", "b"],
    "is_latex_equal": ["given_answer", "ground_truth"],
    "is_value_equal": ["given_answer", "ground_truth"],
    "count_unknown_letters_in_expr": ["expr"],
    "should_allow_eval": ["expr"],
    "are_equal_under_sympy": ["ground_truth_normalized", "given_normalized"],
    "split_tuple": ["expr"],
    "last_boxed_only_string": ["string"],
    "remove_boxed": ["s"],
    "extract_boxed_answer": ["solution"],
    "grade_answer_sympy": ["given_answer", "ground_truth"],
    "grade_answer_mathd": ["given_answer", "ground_truth"],
    "extract_answer": ["passage"],
    "grade": ["model_answer", "gt_answer", "fast"],
    "boxed_reward_fn": ["model_response", "gt_answer", "fast", "correct_reward", "incorrect_reward"],
    "r1_distill_qwen_math_reward_fn": ["model_response", "gt_answer", "fast", "correct_reward", "incorrect_reward"],
    "answer_tag_reward_fn": ["model_response", "gt_answer", "fast", "correct_reward", "incorrect_reward"],
    "answer_tag_reward_fn_for_orz": ["model_response", "gt_answer", "fast", "correct_reward", "incorrect_reward"],
    "run_with_timeout_signal": ["func", "args", "kwargs", "timeout_seconds"],
}


def test_the_original_grader_names_exist_with_their_signatures():
    mg = importlib.import_module("gem.utils.math_grader")
    for name, params in ORIGINAL_GRADER_SIGNATURES.items():
        assert [p for p, _ in _params(getattr(mg, name))] == params, name
    for name in ("unit_texts", "SUBSTITUTIONS", "REMOVED_EXPRESSIONS", "BAD_SUBSTRINGS", "BAD_REGEXES", "TUPLE_CHARS",
                 "TimeoutException", "timeout"):
        assert hasattr(mg, name), name
    assert dict(_params(mg.grade))["fast"] is True
    assert dict(_params(mg.run_with_timeout_signal))["timeout_seconds"] == 5
    assert [p for p, _ in _params(importlib.import_module("gem.utils.qa_em").normalize_answer)] == ["s"]


def test_the_original_grader_functions_behave_as_before():
    from gem.utils import math_grader as mg

    assert mg.grade("0.5", "\\frac{1}{2}") is True and mg.grade("3", "4") is False
    assert mg.grade("x^2+2x+1", "(x+1)^2", fast=False) is True
    assert mg.grade("12", "\\boxed{12}") is True  # a boxed gold answer is unwrapped
    assert mg.grade_answer_sympy("(1, 2]", "(1,2]") is True and mg.grade_answer_sympy("(1, 2)", "[1, 2]") is False
    assert mg.grade_answer_sympy("2/4", "1/2") is False  # unreduced fractions must match exactly
    assert mg.grade_answer_mathd("\\text{5}", "5") is True
    assert mg.extract_answer("so \\boxed{7}.") == "7" and mg.extract_answer("no box") is None
    assert mg.extract_boxed_answer("\\boxed{1} and \\boxed{2}") == "2"
    assert mg.is_value_equal("5.0", "5") and not mg.is_value_equal("5.1", "5")
    assert mg.numeric_equal(1.00001, 1.0) and not mg.numeric_equal(1.1, 1.0)
    assert mg.split_tuple("(1,000, 2]") == ["1000", "2"] and mg.split_tuple("7") == ["7"]
    assert mg.should_allow_eval("x+y") and not mg.should_allow_eval("2^{2^{2}}")
    assert mg.repeatness("ab" * 100) and not mg.repeatness("the quick brown fox jumps over the lazy dog")
    assert mg.normalize_final_answer("$1,000$ dollars") == "1000"
    assert mg.boxed_reward_fn("\\boxed{4}", 4) == ({"formatted": True}, 1.0)
    assert mg.boxed_reward_fn("4", "4") == ({"formatted": False}, 0.0)
    assert mg.r1_distill_qwen_math_reward_fn("think</think> so \\boxed{4}", "4") == ({"formatted": True}, 1.0)
    assert mg.r1_distill_qwen_math_reward_fn("no think tag \\boxed{4}", "4") == ({"formatted": False}, 0.0)
    assert mg.answer_tag_reward_fn("x</think> <answer>4</answer>", ["3", "4"]) == ({"formatted": True}, 1.0)
    assert mg.answer_tag_reward_fn("<answer>4</answer>", "4") == ({"formatted": False}, 0.0)
    assert mg.answer_tag_reward_fn_for_orz("<answer>\\boxed{4}</answer>", "4") == ({"formatted": True}, 1.0)
    assert mg.run_with_timeout_signal(lambda a, b=0: a + b, args=(1,), kwargs={"b": 2}) == 3
    assert mg.run_with_timeout_signal(lambda: 1 / 0) is None
    assert mg.run_with_timeout_signal(lambda: __import__("time").sleep(5), timeout_seconds=1) is None
    with pytest.raises(TimeoutError):
        with mg.timeout(seconds=1):
            __import__("time").sleep(3)


def test_verify_fn_and_apply_prompt():
    from gem.envs.math_env import verify_fn
    from gem.envs.qa_env import apply_prompt

    assert verify_fn("so \\boxed{\\sqrt{1764}}", "42") == ({"formatted": True}, 1)
    assert verify_fn("42", "42") == ({"formatted": False}, 0)
    assert [p for p, _ in _params(apply_prompt)] == ["example", "question_key"]
    row = apply_prompt({"question": "Who wrote Hamlet?", "answer": "Shakespeare"})
    assert "Who wrote Hamlet?" in row["question"] and "<answer>" in row["question"] and row["answer"] == "Shakespeare"
    row = apply_prompt({"q": "Why?"}, question_key="q")
    assert row["q"].endswith("Why?\n")


# ------------------------------------------------------------------ the visual math env module
def test_math_visual_env_module_has_the_original_class_and_kwargs(tmp_path, monkeypatch):
    from gem.envs import math_env
    from gem.envs.math_visual_env import MathVisualEnv

    assert math_env.MathVisualEnv is MathVisualEnv and issubclass(MathVisualEnv, MathEnv)
    names = [p for p, _ in _params(MathVisualEnv.__init__)][1:9]
    assert names == ["dataset_name", "split", "dataset", "image_key", "question_key", "answer_key", "seed", "use_mp"]
    path = tmp_path / "geo.jsonl"
    path.write_text(json.dumps({"problem": "Find x.", "answer": "30", "images": ["<png bytes>"]}) + "\n")
    env = MathVisualEnv(dataset_name=str(path), use_mp=False)
    obs, info = env.reset(idx=0)
    assert obs == "Find x." and info["images"] == ["<png bytes>"]
    assert env.step("\\boxed{30}")[1:3] == (1.0, True)
    pics = tmp_path / "pics.jsonl"
    pics.write_text(json.dumps({"problem": "Find y.", "answer": "2", "pics": "a.png"}) + "\n")
    env = MathVisualEnv(dataset_name=str(pics), image_key="pics")
    assert env.reset(idx=0)[1]["images"] == "a.png"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("datasets")
    with pytest.raises(ResourceUnavailable, match="dataset_name="):
        MathVisualEnv(dataset_name="axon-rl/geometry3k", split="train")
    with pytest.raises(ResourceUnavailable):
        gem.make("math:Geometry3K")
