"""The figures of docs/rl.md's CPU experiment are the output files of examples/rl_experiment.py,
never numbers typed by hand: each table on the page is, verbatim, the table of a run directory's
``rl_results.md``, which is the script's :func:`results_table` of that directory's
``rl_results.json``; the page shows the command that wrote each directory."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "rl.md"
RUNS = ("docs/rl_experiment", "docs/rl_ablation_ppo1")


def _experiment():
    pytest.importorskip("torch")  # the script imports it; the rl extra
    spec = importlib.util.spec_from_file_location("rl_experiment", REPO / "examples" / "rl_experiment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("run", RUNS)
def test_the_page_shows_the_run_files_unchanged(run: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    md = (REPO / run / "rl_results.md").read_text(encoding="utf-8")
    table, _, footer = md.partition("\n\n")
    assert table + "\n" in doc, f"docs/rl.md does not show {run}/rl_results.md's table verbatim"
    assert footer.strip() in doc, f"docs/rl.md does not show {run}/rl_results.md's last line"
    args = json.loads((REPO / run / "rl_results.json").read_text(encoding="utf-8"))["args"]
    commands = [c for c in re.findall(r"python examples/rl_experiment\.py[^\n`]*", doc) if f"--out {run}" in c]
    assert commands, f"docs/rl.md shows no command writing {run}"
    for flag, key in (("--updates", "updates"), ("--algos", "algos"), ("--ppo-epochs", "ppo_epochs")):
        if flag in commands[0]:
            assert f"{flag} {args[key]}" in commands[0], (flag, args[key], commands[0])
    assert args["out"] == run
    assert (REPO / run / "rl_curves.png").read_bytes()[:4] == b"\x89PNG"
    if run == RUNS[0]:  # the page shows the main run's curves (a link relative to docs/)
        assert f"]({run.removeprefix('docs/')}/rl_curves.png)" in doc


@pytest.mark.parametrize("run", RUNS)
def test_each_table_is_the_script_output_of_its_results(run: str) -> None:
    experiment = _experiment()
    data = json.loads((REPO / run / "rl_results.json").read_text(encoding="utf-8"))
    md = (REPO / run / "rl_results.md").read_text(encoding="utf-8")
    assert md.startswith(experiment.results_table(data["results"], data["args"]["last"]) + "\n")


def test_results_table_reads_the_last_updates() -> None:
    experiment = _experiment()
    runs = {"a": [{"return": [0.0, 1.0, 1.0], "success": [0, 1, 1], "turns": [7, 2, 4]},
                  {"return": [0.0, 0.5, 0.5], "success": [0, 0, 1], "turns": [7, 6, 6]}]}
    table = experiment.results_table(runs, last=2)
    assert table.splitlines()[0].startswith("| algorithm | final return (mean ± std over 2 seeds) |")
    assert table.splitlines()[2] == "| a | 0.750 ± 0.250 | 0.750 ± 0.250 | 4.50 ± 1.50 |"
