"""The README is a newcomer's five minutes: the idea, the two commands, one example, the families and
links. What it leaves out lives in docs/, where the doc tests keep running it."""

from __future__ import annotations

import re

import gem
from tests.docs.doc_blocks import REPO, extract

README = (REPO / "README.md").read_text(encoding="utf-8")
TEST_COMMAND = 'python -m pytest -q -m "not slow"'


def test_the_readme_gives_the_two_commands_first():
    blocks = [b for b in extract(README, "README.md") if b.lang == "bash"]
    first = "\n".join(b.code for b in blocks[:2])
    assert "pip install -e ." in first and "gem run game:GuessTheNumber-v0-hard --agent solver" in first
    tests = "\n".join(b.code for b in blocks[2:4])
    assert 'pip install -e ".[test]"' in tests and TEST_COMMAND in tests


def test_ci_runs_the_readmes_test_command():
    assert TEST_COMMAND in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    testing = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    assert 'pip install -e ".[dev]"' in testing and TEST_COMMAND in testing


def test_the_families_table_has_every_family():
    table = re.findall(r"^\| `([a-z]+)` \|", README, flags=re.M)
    assert set(table) == {i.split(":", 1)[0] for i in gem.list_envs()}
    assert len(table) == len(set(table))


def test_every_section_the_readme_had_lives_in_docs():
    """The sections that moved out of the README, at their new homes (each runs under the doc tests)."""
    homes = {
        "install.md": ["## llama.cpp", "## torch", "## What each install costs", "gem-llm 0.1.0"],
        "testing.md": ["## The docs are tested", TEST_COMMAND],
        "api.md": ["## Registry", "## Vector envs", "env.sample_random_action()", "gem.register("],
        "cli.md": ["gem list [FAMILY] [--markdown]", "gem play ID", "## `gem play`"],
        "envs.md": ["<!-- env-table:start -->", "| `game:GuessTheNumber-v0` |"],
        "architecture.md": ["layer"],
    }
    for page, needles in homes.items():
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        missing = [n for n in needles if n not in text]
        assert not missing, f"docs/{page} lacks {missing}"
        assert f"(docs/{page}" in README, f"the README does not link docs/{page}"
