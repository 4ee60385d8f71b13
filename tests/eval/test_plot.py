"""``gem plot`` writes real PNG charts of an eval directory."""

from __future__ import annotations

import pytest

from gem.cli import main
from gem.eval.runner import EvalConfig, EvalRunner

pytest.importorskip("matplotlib")


def test_plot_writes_pngs(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    EvalRunner(
        EvalConfig(
            env_ids=["game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard"],
            out=str(out),
            agent="random",
            episodes=4,
            repeats=2,
            progress=False,
        )
    ).run()
    assert main(["plot", str(out)]) == 0
    printed = capsys.readouterr().out.split()
    names = sorted(p.rsplit("/", 1)[-1] for p in printed)
    assert names == ["rewards.png", "success.png", "turns.png"]
    for name in names:
        data = (out / "plots" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_plot_refuses_a_directory_without_episodes(tmp_path, capsys) -> None:
    assert main(["plot", str(tmp_path)]) == 2
    assert "no episodes.jsonl" in capsys.readouterr().err


def test_success_label_counts_solved_episodes(tmp_path) -> None:
    import json

    from gem.eval.plot import plot_dir, success_notes

    out = tmp_path / "run"
    EvalRunner(EvalConfig(env_ids=["game:GuessTheNumber-v0-easy"], out=str(out), agent="solver", episodes=5,
                          progress=False)).run()
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert all(r["success"] for r in records)
    records[0]["status"], records[0]["success"] = "error", False  # one episode the infrastructure lost
    records[1]["success"] = False  # one the agent failed
    (out / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    # the label counts solved episodes out of every episode: the one the infrastructure lost counts as
    # not solved (it used to be left out: 3/4), and is named on a second line
    assert success_notes(out) == {"game:GuessTheNumber-v0-easy": "3/5 solved\n1 not scored"}
    assert len(plot_dir(out)) == 3


def test_plot_survives_bad_lines_and_names_them(tmp_path, caplog) -> None:
    from gem.eval.plot import plot_dir

    out = tmp_path / "run"
    EvalRunner(EvalConfig(env_ids=["game:GuessTheNumber-v0-easy"], out=str(out), agent="solver", episodes=2,
                          progress=False)).run()
    path = out / "episodes.jsonl"
    with path.open("a") as fh:
        fh.write('[1]\n{"key": "k", "env_id": "e", "status": "ok", "index": 0, "total_reward": "NaN"}\n')
    caplog.set_level("WARNING")
    assert len(plot_dir(out)) == 3
    assert f"{path} line 3: not a JSON object but list" in caplog.text
    assert f"{path} line 4: field 'total_reward' must be" in caplog.text
