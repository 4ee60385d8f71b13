"""A newcomer's first commands: `gem list` is light and complete in every install; errors say what failed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import gem
from gem.envs import _reasoning_gym_registry as rg_ids
from gem.errors import DependencyNotInstalled

# Run the CLI in a fresh interpreter; ``block`` names modules made unimportable first (as in an
# install without that extra), and the run prints which of ``watch`` got imported, as JSON, on stderr.
RUNNER = textwrap.dedent(
    """
    import json, sys
    block, watch, argv = json.loads(sys.argv[1])
    for name in block:
        sys.modules[name] = None
    import gem.cli
    code = gem.cli.main(argv)
    sys.stdout.flush()
    print(json.dumps({"code": code, "imported": [m for m in watch if sys.modules.get(m)]}), file=sys.stderr)
    """
)


def run_cli(argv: list[str], block: tuple[str, ...] = (), watch: tuple[str, ...] = ("reasoning_gym",)):
    out = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps([list(block), list(watch), argv])],
        capture_output=True, text=True, timeout=120,
    )
    report = json.loads(out.stderr.strip().splitlines()[-1])
    return out.stdout, report


@pytest.mark.parametrize("argv", [["list", "game"], ["list"], ["list", "rg"], ["list", "--markdown"]])
def test_gem_list_never_imports_reasoning_gym(argv):
    stdout, report = run_cli(argv, watch=("reasoning_gym", "sympy", "matplotlib"))
    assert report == {"code": 0, "imported": []}
    assert "game:GuessTheNumber-v0" in stdout or argv == ["list", "rg"]


def test_rg_ids_have_reasoning_gyms_descriptions():
    ids = gem.list_envs("rg")
    assert len(ids) == len(rg_ids.cached_tasks()) + len(rg_ids.PRESETS) and len(ids) > 100
    assert gem.spec("rg:basic_arithmetic").description == rg_ids.cached_tasks()["basic_arithmetic"]
    assert "arithmetic" in gem.spec("rg:basic_arithmetic").description
    assert all(gem.spec(i).description for i in ids)


def test_every_family_listed_without_its_extras():
    # reasoning-gym missing (the core install): rg ids are still listed, with the extra they need
    stdout, report = run_cli(["list", "rg"], block=("reasoning_gym",))
    assert report["code"] == 0
    assert "rg:basic_arithmetic" in stdout and 'pip install -e ".[rg]" in the GEM checkout' in stdout
    families = {i.split(":", 1)[0] for i in gem.list_envs()}
    assert {"game", "math", "code", "qa", "logic", "rg", "eval", "multi", "webshop", "terminal", "swe"} <= families


def test_making_an_rg_env_without_reasoning_gym_names_the_extra():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["reasoning_gym"] = None
        import gem
        from gem.errors import DependencyNotInstalled
        assert "rg:chain_sum" in gem.list_envs("rg")
        try:
            gem.make("rg:chain_sum")
        except DependencyNotInstalled as exc:
            print(exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == (
        "rg:chain_sum needs reasoning_gym, from the 'rg' extra: pip install -e \".[rg]\" in the GEM checkout"
    )


def test_unknown_rg_task_is_an_unknown_id():
    with pytest.raises(KeyError, match="rg:not_a_task"):
        gem.spec("rg:not_a_task")


def test_shipped_task_list_matches_reasoning_gym():
    pytest.importorskip("reasoning_gym")
    assert rg_ids.cached_tasks() == rg_ids.tasks_from_reasoning_gym(), (
        "gem/envs/reasoning_gym_tasks.json is stale: run python -m gem.envs._reasoning_gym_registry"
    )


def test_a_users_module_that_fails_to_import_says_so(tmp_path, monkeypatch):
    (tmp_path / "my_broken_envs.py").write_text("import a_dependency_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    gem.register("mine:Broken-v0", "my_broken_envs:BrokenEnv", override=True)
    gem.register("mine:Absent-v0", "my_absent_pkg.envs:CounterEnv", override=True)
    try:
        with pytest.raises(ImportError) as broken:
            gem.make("mine:Broken-v0")
        message = str(broken.value)
        assert "'my_broken_envs' failed to import" in message
        assert "No module named 'a_dependency_nobody_has'" in message
        assert "pip install" not in message and not isinstance(broken.value, DependencyNotInstalled)
        with pytest.raises(ImportError, match=r"'my_absent_pkg.envs' failed to import: .*'my_absent_pkg'"):
            gem.make("mine:Absent-v0")
    finally:
        from gem.envs.registration import registry

        dict.pop(registry, "mine:Broken-v0", None)
        dict.pop(registry, "mine:Absent-v0", None)


def _build_index_cli(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    pytest.importorskip("bm25s")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(
        json.dumps({"id": str(i), "title": f"Doc {i}", "text": f"word{i} common text number {i}"}) + "\n"
        for i in range(50)
    ))
    argv = [sys.executable, "-m", "gem.tools.search_engine.build_index", "--corpus_path", str(corpus),
            "--index_path", str(tmp_path / f"idx{len(extra)}"), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


def test_index_build_shows_progress_unless_quiet(tmp_path):
    shown = _build_index_cli(tmp_path)
    assert "/50 [" in shown.stderr and "%|" in shown.stderr  # a tqdm bar over the 50 documents
    assert json.loads(shown.stdout)["num_docs"] == 50
    quiet = _build_index_cli(tmp_path, "--quiet")
    assert "%|" not in quiet.stderr and json.loads(quiet.stdout)["num_docs"] == 50


def test_faiss_loader_info_lines_are_hidden_unless_asked_for():
    import logging

    from gem.tools.search_engine.retrievers import quiet_faiss_loader

    loader = logging.getLogger("faiss.loader")
    saved = loader.level
    try:
        loader.setLevel(logging.NOTSET)
        quiet_faiss_loader()
        assert loader.level == logging.WARNING
        loader.setLevel(logging.DEBUG)  # a user who wants them keeps them
        quiet_faiss_loader()
        assert loader.level == logging.DEBUG
    finally:
        loader.setLevel(saved)
