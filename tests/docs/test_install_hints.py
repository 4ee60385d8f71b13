"""Every install hint (docs, error messages, examples) installs this project, from its checkout.

On PyPI, ``gem-llm`` is the original GEM 0.1.0, which has none of these extras: a hint that says
to pip-install ``gem-llm[EXTRA]`` would install another project.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from gem.errors import install_hint, missing_extra

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("README.md", "docs", "gem", "examples", "benchmarks", "scripts", "tests", ".ci")
SUFFIXES = {".md", ".py", ".txt", ".toml", ".sh", ".html", ".js", ".cfg", ".yml", ".yaml", ""}
# pip install [options] 'gem-llm[...]' (quoted or not): the PyPI project, not this checkout
PYPI_HINT = re.compile(r"pip3?\s+install\s+(?:-\S+\s+)*['\"]?gem-llm\s*\[")
CHECKOUT_HINT = re.compile(r"pip install -e ['\"]\.\[([a-z0-9_,-]+)\]['\"]")


def _files() -> list[Path]:
    found = []
    for name in SCANNED:
        path = REPO / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return found


def _extras() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def test_no_hint_installs_the_pypi_project() -> None:
    bad = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in PYPI_HINT.finditer(text):
            bad.append(f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    assert not bad, "hints that install PyPI's gem-llm 0.1.0 instead of this checkout:\n" + "\n".join(bad)


def test_the_pattern_catches_the_old_hint() -> None:
    old = "pip install " + "'gem-llm" + "[search]'"
    assert PYPI_HINT.search(old) and PYPI_HINT.search(old.replace("'", '"'))
    assert PYPI_HINT.search("pip install -U gem-llm" + "[rl]") and not PYPI_HINT.search('pip install -e ".[rl]"')


def test_every_checkout_hint_names_real_extras() -> None:
    extras, seen = _extras(), 0
    for path in _files():
        for m in CHECKOUT_HINT.finditer(path.read_text(encoding="utf-8", errors="replace")):
            seen += 1
            assert set(m.group(1).split(",")) <= extras, f"{path.relative_to(REPO)}: {m.group(0)}"
    assert seen >= 15


def test_error_messages_say_how_to_install_from_the_checkout() -> None:
    assert install_hint("rl") == 'pip install -e ".[rl]" in the GEM checkout'
    assert str(missing_extra("gem train", "rl", "torch")).endswith(install_hint("rl"))


def test_the_install_page_says_how_hints_install_and_the_readme_points_there() -> None:
    install = (REPO / "docs" / "install.md").read_text()
    assert install.count("gem-llm 0.1.0") >= 1 and 'pip install -e ".[EXTRA]"' in install
    readme = (REPO / "README.md").read_text()
    assert "gem-llm 0.1.0" in readme and "(docs/install.md)" in readme


def test_the_word_games_hint_reads_as_a_sentence(monkeypatch) -> None:
    import pytest

    from gem.envs.game_env import words
    from gem.errors import DependencyNotInstalled

    monkeypatch.setitem(__import__("sys").modules, "wordfreq", None)  # the `games` extra is not installed
    with pytest.raises(DependencyNotInstalled) as exc:
        words._import_sources()
    assert str(exc.value) == (
        "Each word game needs wordfreq and english-words, from the 'games' extra: " + install_hint("games")
    )
