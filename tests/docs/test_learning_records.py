"""Each learning record in docs/rl.md shows the command that produced it, and says where the record
differs from what that command reads as (a record renamed after its run, a run cut by a time budget)."""

from __future__ import annotations

import json
from pathlib import Path

from gem.rl.evaluate import command_differences

ROOT = Path(__file__).resolve().parents[2]
RECORDS = sorted((ROOT / "docs" / "learning").glob("*.json"))


def _record(**fields):
    base = {"name": "run-a", "steps": 46, "command": "python -m gem.rl.learn --name run-a --steps 46 --algo rebn"}
    return {**base, **fields}


def test_a_record_that_matches_its_command_needs_no_note():
    assert command_differences(_record()) == ""


def test_a_renamed_record_and_a_time_capped_run_are_named():
    renamed = _record(name="run-a-timecapped")
    assert command_differences(renamed) == (
        "it ran as `--name run-a` and the record was renamed `run-a-timecapped` afterwards"
    )
    capped = _record(command="python -m gem.rl.learn --name run-a --steps 150 --max-minutes 36")
    assert command_differences(capped) == (
        "its training was stopped by `--max-minutes 36` after 46 of the 150 steps it asked for"
    )


def test_every_record_in_the_docs_shows_its_own_command_and_any_difference():
    doc = (ROOT / "docs" / "rl.md").read_text(encoding="utf-8")
    assert RECORDS
    for path in RECORDS:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert record["name"] == path.stem
        shown = f"`{record['name']}`: `{record['command']}`"
        assert shown in doc, f"docs/rl.md does not show the command of {path.name}"
        note = command_differences(record)
        if note:
            after = doc.split(shown, 1)[1].split("\n`", 1)[0]
            assert note in after, f"docs/rl.md does not say how {path.name} differs from its command"


def test_the_time_capped_record_is_explained():
    record = json.loads((ROOT / "docs" / "learning" / "smollm2-guess-easy-rebn-timecapped.json").read_text())
    note = command_differences(record)
    assert "--max-minutes 36" in note and f"after {record['steps']} of the 150 steps" in note
    assert "renamed `smollm2-guess-easy-rebn-timecapped`" in note
