"""The comparison of methods over training seeds, generated from learning records."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from gem.rl.evaluate import (
    comparison_figure_name,
    method_comparison,
    plot_comparison,
    render_comparison,
    update_doc,
)

ROOT = Path(__file__).resolve().parents[2]


def _rec(name, algo, seed, before, after, n=100, env="game:X-easy", steps=10, lr=2e-4):
    def side(p):
        return {"success_rate": p, "se": math.sqrt(p * (1 - p) / n), "n": n}

    return {"name": name, "model": "m.gguf", "env": env, "algo": algo, "steps": steps,
            "command": f"python -m gem.rl.learn --name {name}", "seconds": 1.0, "before": side(before),
            "after": side(after), "curve": [], "eval": {"episodes": n},
            "settings": {"seed": seed, "steps": steps, "lr": lr, "threads": None}}


def test_groups_by_protocol_and_computes_the_spread_over_seeds():
    recs = [_rec("a0", "rebn", 0, 0.0, 0.3), _rec("a1", "rebn", 1, 0.0, 0.2), _rec("a2", "rebn", 2, 0.1, 0.2),
            _rec("g0", "grpo", 0, 0.0, 0.0), _rec("g1", "grpo", 1, 0.0, 0.05),
            _rec("other-lr", "rebn", 3, 0.0, 0.9, lr=1e-3)]  # another protocol: not in this comparison
    [c] = method_comparison(recs)
    assert c["env"] == "game:X-easy" and c["metric"] == "success_rate"
    rows = {r["algo"]: r for r in c["rows"]}
    assert rows["rebn"]["seeds"] == [0, 1, 2]
    assert rows["rebn"]["diffs"] == pytest.approx([0.3, 0.2, 0.1])
    assert rows["rebn"]["mean"] == pytest.approx(0.2)
    assert rows["rebn"]["se"] == pytest.approx(0.1 / math.sqrt(3))  # stdev 0.1 over 3 seeds
    assert rows["grpo"]["mean"] == pytest.approx(0.025)
    assert rows["rebn"]["clear"] == 2 and rows["grpo"]["clear"] == 0  # 0.1 -> 0.2 on 100 is z = 2


def test_one_method_alone_is_no_comparison_and_a_rerun_counts_once():
    assert method_comparison([_rec("a0", "rebn", 0, 0.0, 0.3), _rec("a1", "rebn", 1, 0.0, 0.2)]) == []
    recs = [_rec("a0", "rebn", 0, 0.0, 0.3), _rec("a0-again", "rebn", 0, 0.0, 0.9), _rec("g0", "grpo", 0, 0, 0)]
    [c] = method_comparison(recs)
    rebn = next(r for r in c["rows"] if r["algo"] == "rebn")
    assert rebn["names"] == ["a0"] and rebn["se"] is None
    assert c["reruns"] == ["a0-again"]
    text = render_comparison([c])
    assert "n/a (one seed)" in text and "`a0-again`" in text
    assert "learning/methods-game-X-easy.png" in text


def test_update_doc_writes_the_block_and_the_figure(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [_rec("a0", "rebn", 0, 0.0, 0.3), _rec("a1", "rebn", 1, 0.0, 0.2), _rec("g0", "grpo", 0, 0, 0)]
    rec_dir = tmp_path / "learning"
    rec_dir.mkdir()
    for r in recs:
        (rec_dir / f"{r['name']}.json").write_text(json.dumps(r))
    doc = tmp_path / "rl.md"
    doc.write_text("<!-- learning-records:begin -->\n<!-- learning-records:end -->\n"
                   "<!-- method-comparison:begin -->\nold\n<!-- method-comparison:end -->\n")
    assert update_doc(doc, rec_dir)
    assert "old" not in doc.read_text() and "| `game:X-easy` | rebn | 0, 1 |" in doc.read_text()
    png = rec_dir / comparison_figure_name(method_comparison(recs)[0])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_comparison(method_comparison(recs)[0], tmp_path / "x.png").stat().st_size > 1000


def test_docs_show_the_method_comparison_exactly():
    """docs/rl.md's comparison is generated from docs/learning/*.json, and its figures exist."""
    records = [json.loads(p.read_text()) for p in sorted((ROOT / "docs" / "learning").glob("*.json"))]
    text = (ROOT / "docs" / "rl.md").read_text()
    m = re.search(r"<!-- method-comparison:begin -->\n(.*?)<!-- method-comparison:end -->", text, re.S)
    assert m, "docs/rl.md lacks the method-comparison block"
    comparisons = method_comparison(records)
    assert m.group(1) == render_comparison(comparisons)
    assert comparisons, "the records hold a comparison of methods"
    for c in comparisons:
        assert (ROOT / "docs" / "learning" / comparison_figure_name(c)).is_file()
        assert all(len(r["seeds"]) >= 3 for r in c["rows"])
