"""QA envs: local files for hub ids, tags or boxes, EM and F1 rewards, offline errors."""

import json

import pytest

import gem
from gem.envs.qa_env import QaEnv
from gem.errors import ResourceUnavailable
from gem.utils.env_checker import check_env
from tests.conftest import needs_extra

HUB_IDS = [
    "qa:NaturalQuestions", "qa:HotpotQA", "eval:QaOpen", "eval:2Wiki", "eval:PopQA", "eval:TriviaQA",
    "eval:HotpotQA", "eval:Bamboogle", "eval:NaturalQuestions", "eval:Musique",
]


@pytest.fixture
def qa_file(tmp_path):
    rows = [
        {"question": "Capital of France?", "problem": "Capital of France?", "answer": ["Paris", "City of Paris"]},
        {"question": "Who wrote Hamlet?", "problem": "Who wrote Hamlet?", "answer": "William Shakespeare"},
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("env_id", HUB_IDS)
def test_hub_ids_fail_offline_and_load_locally(env_id, qa_file, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    needs_extra("qa")  # datasets reads the hub
    with pytest.raises(ResourceUnavailable, match="dataset_name=") as exc:
        gem.make(env_id)
    assert gem.spec(env_id).kwargs["dataset_name"] in str(exc.value)
    env = gem.make(env_id, dataset_name=str(qa_file))
    check_env(env)


def test_rewards_tags_boxes_and_format_errors(qa_file):
    env = QaEnv(dataset_name=str(qa_file))
    obs, info = env.reset(idx=0)
    assert "Capital of France?" in obs and "<answer>" in obs and "<answer>" in info["suffix"]
    _, reward, terminated, truncated, info = env.step("<think>easy</think><answer>paris</answer>")
    assert (reward, terminated, truncated, info["correct"], info["f1"]) == (1.0, True, True, True, 1.0)
    env.reset(idx=0)
    assert env.step("<answer>The City of Paris.</answer>")[1] == 1.0  # normalization
    env.reset(idx=0)
    _, reward, _, _, info = env.step("\\boxed{Paris}")  # tags only, as the original GEM
    assert (reward, info["correct"], info["formatted"]) == (0.0, False, False)
    env.reset(idx=1)
    _, reward, _, _, info = env.step("<answer>Shakespeare</answer>")
    assert reward == 0.0 and info["correct"] is False and info["f1"] == pytest.approx(2 / 3)
    env.reset(idx=1)
    obs, reward, terminated, _, info = env.step("William Shakespeare")
    assert (reward, terminated, info["correct"]) == (0.0, True, False) and "<answer>" in obs
    strict = QaEnv(dataset_name=str(qa_file), use_format_error_reward=True)
    strict.reset(idx=1)
    assert strict.step("William Shakespeare")[1] == pytest.approx(-0.1)


def test_f1_reward_and_boxed_only(qa_file):
    env = QaEnv(dataset_name=str(qa_file), reward="f1")
    env.reset(idx=1)
    assert env.step("<answer>Shakespeare</answer>")[1] == pytest.approx(2 / 3)
    boxed = QaEnv(dataset_name=str(qa_file), extract_boxed=True)
    boxed.reset(idx=0)
    assert boxed.step("<answer>Paris</answer>")[1] == 0.0
    boxed.reset(idx=0)
    assert boxed.step("\\boxed{The City of Paris}")[1] == 1.0
    assert boxed.sample_random_action().startswith("\\boxed{")
    with pytest.raises(ValueError, match="reward must be one of em, f1"):
        QaEnv(dataset_name=str(qa_file), reward="bleu")
    with pytest.raises(ValueError, match="question"):
        QaEnv(dataset_name=str(qa_file), prompt_template="no placeholder")


def test_check_correct_is_gem_compatible():
    assert QaEnv.check_correct("paris", ["Paris"]) and QaEnv.check_correct("42", [42, "x"])
    assert not QaEnv.check_correct("43", [42])


def test_qa_hub_ids_map_problem_column(qa_file):
    # GEM's qa:NaturalQuestions reads the "problem" column; the env calls it "question".
    env = gem.make("qa:NaturalQuestions", dataset_name=str(qa_file))
    obs, _ = env.reset(seed=0)
    assert "?" in obs and env.unwrapped.item["question"] in obs
