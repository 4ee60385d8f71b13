"""gem regrade: recorded answers re-scored with today's graders, without the model."""

from __future__ import annotations

import json
import pytest

import gem
from gem.cli import main
from gem.records.regrade import regrade_report

from tests.records.test_replay import _records, _write, record_run

MATH = "math:Arithmetic"
GAME = "game:Sudoku-v0-easy"


def test_a_run_graded_by_todays_graders_regrades_unchanged(tmp_path, capsys) -> None:
    record_run(tmp_path, [MATH], agent="gold", seeds=(0, 1, 2))
    record_run(tmp_path / "game", [GAME], seeds=(0, 1))  # and a game, played by its solver
    records = _records(tmp_path) + _records(tmp_path / "game")
    _write(tmp_path, records)
    assert main(["regrade", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "5 episodes: 5 regraded, 0 verdicts changed, 0 skipped." in out
    assert MATH in out and GAME in out


def test_answers_scored_by_an_older_grader_show_their_changed_verdicts(tmp_path, capsys) -> None:
    """Before single-turn envs scored a missing answer 0 and reported their grading, the math env
    gave a missing answer the format-error reward -0.1 and no grading status: records from then."""
    record_run(tmp_path, [MATH], agent="random", seeds=(0, 1, 2, 3))
    records = _records(tmp_path)
    for rec in records[:3]:
        rec["turns"][0]["action"] = "I am not sure."
        rec["turns"][0]["reward"] = rec["rewards"][0] = rec["total_reward"] = -0.1
        rec["success"], rec["grading_status"] = False, None
        rec["turns"][0]["info"].pop("grading", None)
    records[3]["grading_status"] = None  # graded the same: an older record's missing status is no change
    _write(tmp_path, records)
    assert main(["regrade", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    for k in range(3):
        assert f"{MATH}#{k} (seed {k}): total_reward -0.1 -> 0.0" in out
    assert f"{MATH}#3" not in out
    assert "4 episodes: 4 regraded, 3 verdicts changed, 0 skipped." in out
    assert main(["regrade", str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    totals = report["by_env"][MATH]
    assert (totals["regraded"], totals["changed"]) == (4, 3)
    assert totals["old_reward"] == pytest.approx(-0.3 + records[3]["total_reward"])
    assert totals["new_reward"] == pytest.approx(records[3]["total_reward"])
    assert [c["new"]["grading_status"] for c in report["changes"]] == ["ok"] * 3


def test_a_stricter_grader_today_flips_recorded_successes(tmp_path, monkeypatch) -> None:
    record_run(tmp_path, [MATH], agent="gold", seeds=(0, 1))
    assert all(r["success"] for r in _records(tmp_path))
    import gem.envs.math_env as math_env
    from gem.grading.result import graded

    monkeypatch.setattr(math_env, "grade_math", lambda answer, gold, timeout=None: graded(False))
    report = regrade_report(tmp_path)
    assert report["changed"] == 2
    assert all(c["old"]["success"] is True and c["new"]["success"] is False for c in report["changes"])
    assert all(c["old"]["total_reward"] == 1.0 and c["new"]["total_reward"] == 0.0 for c in report["changes"])


def test_ungraded_today_is_a_changed_verdict(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("GEM_STRICT_INFRA")  # an ungraded answer is reported, not raised (as users run it)
    record_run(tmp_path, [MATH], agent="gold", seeds=(0,))
    import gem.envs.math_env as math_env
    from gem.grading.result import ungraded

    monkeypatch.setattr(
        math_env, "grade_math", lambda answer, gold, timeout=None: ungraded("timeout", "grader", "a test's budget")
    )
    report = regrade_report(tmp_path)
    assert report["changed"] == 1, (report["skipped_episodes"], report["warnings"])
    change = report["changes"][0]
    assert change["old"]["grading_status"] == "ok" and change["new"]["grading_status"] == "timeout"
    assert change["new"]["success"] is False


def test_errored_episodes_and_other_problems_are_skipped_with_the_reason(tmp_path, capsys) -> None:
    record_run(tmp_path, [MATH], agent="gold", seeds=(0, 1))
    records = _records(tmp_path)
    records[0]["status"] = "error"
    records[0]["error"] = {"stage": "model", "turn": 1, "type": "ModelRequestError", "message": "HTTP 500"}
    records[1]["gold"] = "a problem this seed no longer gives"
    _write(tmp_path, records)
    assert main(["regrade", str(tmp_path)]) == 2  # nothing could be regraded
    out = capsys.readouterr().out
    assert f"skipped {MATH}#0: the episode ended in an error" in out
    assert f"skipped {MATH}#1: seed 1 gives another problem today" in out
