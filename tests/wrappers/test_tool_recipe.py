"""The recipe for a new tool in docs/architecture.md runs as written, including an entry named ``bash``."""

from __future__ import annotations

from tests.docs.doc_blocks import REPO, extract, groups, run_group

DOC = "docs/architecture.md"


def recipe_block():
    text = (REPO / DOC).read_text(encoding="utf-8")
    start = text.index("**A new tool**")
    end = text.index("\n**", start + 1)
    first_line = text[:start].count("\n") + 1
    found = [g for g in groups(extract(text, DOC)) if first_line <= g.blocks[0].line <= first_line + text[start:end].count("\n")]
    assert len(found) == 1, f"the tool recipe of {DOC} should have one runnable Python block, found {len(found)}"
    return found[0]


def test_the_tool_recipe_adds_a_bash_preset_and_runs(tmp_path):
    group = recipe_block()
    assert group.lang == "python" and 'TOOLS["bash"]' in group.code and "get_wrapper_fns(\"bash" in group.code
    result = run_group(group, tmp_path)
    assert result.returncode == 0, f"{group.name} failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
