"""python -m gem.rl.task_race: one run per task sampler, every checkpoint evaluated on every env."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gem.rl.task_race import DOC_BEGIN, DOC_END, first_reaching, main, render_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_first_reaching_is_the_first_checkpoint_at_or_above_the_target():
    cps = [{"step": 0, "score": 0.0}, {"step": 10, "score": 0.2}, {"step": 20, "score": 0.1},
           {"step": 30, "score": 0.3}]
    assert first_reaching(cps, 0.2)["step"] == 10
    assert first_reaching(cps, 0.25)["step"] == 30
    assert first_reaching(cps, 0.5) is None


def test_bad_arguments_are_refused_before_training(tmp_path):
    with pytest.raises(SystemExit, match="two or more"):
        main(["--model", "tiny", "--env", "math:Arithmetic-easy", "--output-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="uniform, sequential, learnability"):
        main(["--model", "tiny", "--samplers", "uniform,best", "--output-dir", str(tmp_path)])


def test_a_tiny_race_evaluates_every_checkpoint(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("matplotlib")
    out = tmp_path / "race.json"
    doc = tmp_path / "rl.md"
    doc.write_text(f"x\n{DOC_BEGIN}old\n{DOC_END}\n")
    code = main(["--model", "tiny", "--env", "math:Arithmetic-easy,game:GuessTheNumber-v0-easy",
                 "--samplers", "uniform,learnability", "--steps", "3", "--eval-every", "2", "--num-envs", "4",
                 "--group-size", "2", "--max-new-tokens", "4", "--max-turns", "2", "--eval-episodes", "2",
                 "--target", "0.0", "--train-layers", "0", "--output-dir", str(tmp_path / "runs"), "--out", str(out), "--doc", str(doc),
                 "--quiet"])
    assert code == 0
    data = json.loads(out.read_text())
    assert out.with_suffix(".png").is_file()
    assert set(data["runs"]) == {"uniform", "learnability"}
    for name, run in data["runs"].items():
        steps = [c["step"] for c in run["checkpoints"]]
        assert steps == [0, 2, 3]  # the start, every --eval-every steps, and the end
        seconds = [c["seconds"] for c in run["checkpoints"]]
        assert seconds == sorted(seconds) and seconds[-1] > 0
        for c in run["checkpoints"]:
            assert set(c["per_env"]) == set(data["envs"]) and all(v["n"] == 2 for v in c["per_env"].values())
            rates = [v["success_rate"] for v in c["per_env"].values()]
            assert c["score"] == pytest.approx(sum(rates) / len(rates))
        assert sum(run["groups_by_task"].values()) == 3 * 2  # 3 steps of 2 groups
        assert run["reached"]["step"] == 0  # a target of 0 is reached at the start
        assert not (tmp_path / "runs" / name / "checkpoint-2").exists()  # deleted once evaluated
        assert (tmp_path / "runs" / name / "final" / "config.json").is_file()
    # the untrained model is evaluated once, for both runs
    assert data["runs"]["uniform"]["checkpoints"][0] == data["runs"]["learnability"]["checkpoints"][0]
    assert "old" not in doc.read_text() and render_markdown(data) in doc.read_text()


def test_docs_show_the_race_exactly():
    """docs/rl.md's task-race table is the rendering of the record its command wrote."""
    path = ROOT / "docs" / "learning" / "probes" / "task-sampler-race.json"
    text = (ROOT / "docs" / "rl.md").read_text()
    m = re.search(re.escape(DOC_BEGIN) + r"(.*?)" + re.escape(DOC_END), text, re.S)
    assert m, "docs/rl.md lacks the task-race block"
    assert m.group(1) == render_markdown(json.loads(path.read_text()))
