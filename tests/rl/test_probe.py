"""``python -m gem.rl.probe``: first-turn figures, the learnability weight, and the docs' table."""

import json
import re
from pathlib import Path

import pytest

from gem.rl.probe import DOC_BEGIN, DOC_END, first_turn_stats, learnability, main, render_markdown, spread, update_doc

ROOT = Path(__file__).resolve().parents[2]
PROBE_JSON = ROOT / "docs" / "learning" / "probes" / "learnability.json"


def test_learnability_is_the_chance_a_group_is_not_uniform():
    assert learnability(0.0, 4) == 0.0 and learnability(1.0, 4) == 0.0
    assert learnability(0.5, 4) == pytest.approx(1 - 2 / 16)
    assert learnability(0.25, 1) == 0.0  # one episode never disagrees with itself
    assert learnability(0.1, 8) > learnability(0.1, 4)
    with pytest.raises(ValueError, match="rate"):
        learnability(1.5, 4)
    with pytest.raises(ValueError, match="group_size"):
        learnability(0.5, 0)


def test_spread_counts_every_reward_difference():
    assert spread([0.0] * 5, 4) == 0.0 and spread([1.0, 1.0], 4) == 0.0
    # the format penalty alone: 15 unboxed (-0.1) and 1 boxed wrong (0) of 16
    assert spread([-0.1] * 15 + [0.0], 4) == pytest.approx(1 - (15 / 16) ** 4 - (1 / 16) ** 4)
    # two values, one of them positive: the same as the positive-turn learnability
    assert spread([1.0, 0.0, 0.0, 0.0], 4) == pytest.approx(learnability(0.25, 4))
    # three values: 1 - sum of q^G
    assert spread([-0.1, 0.0, 1.0], 2) == pytest.approx(1 - 3 / 9)
    assert spread([-0.1, 0.0, 1.0], 1) == 0.0
    with pytest.raises(ValueError, match="empty"):
        spread([], 4)
    with pytest.raises(ValueError, match="group_size"):
        spread([0.0], 0)


def test_first_turn_stats_counts_what_happened():
    s = first_turn_stats([1.0, -0.1, 0.0, 0.5], [True, False, False, False], [True, False, True, True], 4)
    assert s["n"] == 4 and s["positive"] == 2 and s["solved"] == 1 and s["boxed"] == 3
    assert s["mean_reward"] == pytest.approx(1.4 / 4)
    assert s["learnability"] == pytest.approx(learnability(0.5, 4))
    assert s["rewards"] == [1.0, -0.1, 0.0, 0.5] and s["spread"] == pytest.approx(1 - 4 / 4**4)
    with pytest.raises(ValueError):
        first_turn_stats([], [], [], 4)


def test_probe_command_writes_json_and_the_table(tmp_path):
    pytest.importorskip("torch", reason="needs the rl extra (torch)")
    pytest.importorskip("transformers", reason="needs the rl extra (transformers)")
    out, doc = tmp_path / "probe.json", tmp_path / "doc.md"
    doc.write_text(f"before\n{DOC_BEGIN}stale\n{DOC_END}\nafter\n")
    code = main(["--model", "tiny", "--envs", "game:GuessTheNumber-v0-easy,math:Arithmetic", "--n", "3",
                 "--max-new-tokens", "4", "--out", str(out), "--doc", str(doc)])
    assert code == 0
    data = json.loads(out.read_text())
    assert set(data["results"]) == {"game:GuessTheNumber-v0-easy", "math:Arithmetic"}
    for r in data["results"].values():
        assert r["n"] == 3 and 0 <= r["positive"] <= 3 and 0.0 <= r["learnability"] <= 1.0
        assert len(r["rewards"]) == 3 and r["spread"] == pytest.approx(spread(r["rewards"], 4))
        assert r["mean_reward"] == pytest.approx(sum(r["rewards"]) / 3)
    assert data["command"].startswith("python -m gem.rl.probe --model tiny")
    text = doc.read_text()
    assert "stale" not in text and "`math:Arithmetic` | math | 3 |" in text and text.endswith("after\n")
    old = {"group_size": 4, "results": {"math:Arithmetic": {k: v for k, v in r.items() if k not in ("spread", "rewards")}}}
    assert render_markdown(old).splitlines()[-1].endswith("| - |")  # a JSON from before the column
    with pytest.raises(SystemExit, match="names no env"):
        main(["--envs", ",", "--model", "tiny"])
    with pytest.raises(KeyError):
        main(["--envs", "game:NoSuchGame-v0", "--model", "tiny"])


def test_update_doc_needs_the_markers(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    with pytest.raises(ValueError, match="learnability:begin"):
        update_doc(doc, {"group_size": 4, "results": {}})


def test_docs_show_the_probe_exactly():
    """docs/rl.md's learnability table is the rendering of the probe's JSON (no typed figures)."""
    data = json.loads(PROBE_JSON.read_text())
    text = (ROOT / "docs" / "rl.md").read_text()
    m = re.search(re.escape(DOC_BEGIN) + r"(.*?)" + re.escape(DOC_END), text, re.S)
    assert m, "docs/rl.md lacks the learnability block"
    assert m.group(1) == render_markdown(data)
