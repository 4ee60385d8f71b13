"""Env versions: a content hash of code, data files and default kwargs; gem.make(version=...)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gem
from gem.envs import registration
from gem.records import versions

ROOT = Path(__file__).resolve().parents[2]
VERSION = re.compile(r"^[0-9a-f]{12}$")

PLUGIN = textwrap.dedent(
    '''
    from gem.core import Env

    from verpkg.helper import TARGET


    class GuessEnv(Env):
        def __init__(self, target: int = TARGET) -> None:
            super().__init__()
            self.target = target

        def reset(self, seed=None):
            super().reset(seed)
            return "guess", {}

        def step(self, action):
            ok = action.strip() == str(self.target)
            return "done", float(ok), True, False, {"success": ok}
    '''
)


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin package outside gem: verpkg/env.py imports verpkg/helper.py and ships data.json."""
    pkg = tmp_path / "verpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "env.py").write_text(PLUGIN)
    (pkg / "helper.py").write_text("TARGET = 7\n")
    (pkg / "data.json").write_text('{"words": ["a", "b"]}\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    ids = []

    def register(env_id: str, **kwargs) -> str:
        registration.register(env_id, "verpkg.env:GuessEnv", override=True, **kwargs)
        ids.append(env_id)
        return env_id

    versions.clear_cache()
    yield pkg, register
    for env_id in ids:
        dict.pop(registration.registry, env_id, None)
    versions.clear_cache()


def test_a_version_covers_code_imported_modules_data_and_kwargs(plugin) -> None:
    pkg, register = plugin
    env_id = register("test:Versioned-v0")
    first = gem.env_version(env_id)
    assert VERSION.match(first)
    manifest = registration.version_manifest(env_id)
    assert set(manifest["files"]) == {"verpkg/env.py", "verpkg/helper.py", "verpkg/data.json"}
    assert gem.env_version(env_id) == first  # cached, and stable

    # A default kwarg changes it; the same kwargs give the same version under another id.
    assert gem.env_version(register("test:Versioned-v1", target=3)) != first
    assert gem.env_version(register("test:Versioned-v2")) == first

    # One byte of an imported module, and of a data file, each change it.
    (pkg / "helper.py").write_text("TARGET = 8\n")
    versions.clear_cache()
    after_code = gem.env_version(env_id)
    assert after_code != first
    (pkg / "data.json").write_text('{"words": ["a", "c"]}\n')
    versions.clear_cache()
    after_data = gem.env_version(env_id)
    assert after_data not in (first, after_code)

    # Line endings do not: the same text checked out on Windows has the same version.
    for name in ("env.py", "helper.py", "data.json"):
        path = pkg / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    versions.clear_cache()
    assert gem.env_version(env_id) == after_data


def test_bundled_versions_follow_the_family_code_graders_and_data() -> None:
    math_files = registration.version_manifest("math:GSM8K")["files"]
    # The grader, its worker (started by module name) and the family's base are the env's code.
    for rel in ("gem/envs/math_env.py", "gem/envs/single_turn.py", "gem/grading/math_pool.py",
                "gem/grading/_math_worker.py", "gem/core.py"):
        assert rel in math_files
    assert "gem/envs/registration.py" not in math_files and "gem/eval/runner.py" not in math_files
    assert "gem/envs/game_env/wordle.py" not in math_files
    assert registration.version_manifest("math:GSM8K")["libraries"].keys() == {"math_verify", "datasets"}
    wiki = registration.version_manifest("game:WikiGame-v0-easy")["files"]
    assert "gem/envs/game_env/wikigame/data/wiki.json.gz" in wiki
    assert "gem/envs/webshop/data/catalog.json.gz" not in wiki
    arithmetic = registration.version_manifest("math:Arithmetic")["files"]
    assert "gem/data/bundled/arithmetic.jsonl.gz" in arithmetic
    # Ids of one class differ by their kwargs.
    assert gem.env_version("game:Wordle-v0-easy") != gem.env_version("game:Wordle-v0-hard")


def test_the_same_tree_gives_the_same_versions_in_another_process() -> None:
    ids = ["game:Wordle-v0-easy", "math:GSM8K", "code:CodeContest", "qa:HotpotQA", "game:WikiGame-v0-hard"]
    here = [gem.env_version(i) for i in ids]
    code = f"import gem; print(' '.join(gem.env_version(i) for i in {ids!r}))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "123"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == here


def test_make_refuses_another_version_and_names_the_current_one() -> None:
    current = gem.env_version("game:GuessTheNumber-v0-easy")
    env = gem.make("game:GuessTheNumber-v0-easy", version=current, max_turns=5)
    assert env.reset(seed=1)[0]
    stale = "0123456789ab" if current != "0123456789ab" else "ba9876543210"
    with pytest.raises(ValueError) as err:
        gem.make("game:GuessTheNumber-v0-easy", version=stale)
    assert current in str(err.value) and stale in str(err.value) and "gem replay" in str(err.value)
    with pytest.raises(ValueError, match="version string"):
        gem.make("game:GuessTheNumber-v0-easy", version=12)
    with pytest.raises(KeyError):
        gem.make("game:NoSuchGame-v0", version=current)


def test_import_gem_and_gem_list_compute_no_version() -> None:
    code = (
        "import io, sys, gem; gem.print_envs(file=io.StringIO()); "
        "from gem.cli import main; main(['list', 'game']); "
        "print('LOADED' if any(m.startswith('gem.records') for m in sys.modules) else 'LAZY')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("LAZY")


def test_gem_list_versions_prints_each_id_with_its_version(capsys) -> None:
    from gem.cli import main

    assert main(["list", "game", "--versions"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert [r[0] for r in rows] == gem.list_envs("game")
    assert all(VERSION.match(r[1]) and r[1] == gem.env_version(r[0]) for r in rows)


def test_a_former_module_path_is_hashed_as_its_new_module():
    """An env importing a former path (kept by gem/compat/aliases.py, no file of its own) still has
    the moved module's code in its version."""
    from gem.records.versions import _module_file

    assert _module_file("gem.utils.qa_em") == _module_file("gem.grading.qa") is not None
    assert _module_file("gem.server.limits") == _module_file("gem.http.limits") is not None
    assert _module_file("gem.tools.search_engine.corpus") == _module_file("gem.services.search.corpus") is not None
    assert _module_file("gem.no_such_module") is None
