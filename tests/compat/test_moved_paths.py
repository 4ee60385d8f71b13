"""Modules that moved keep their former import paths: the same objects, and the servers still run
with ``python -m`` under their former names."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import gem
from gem.compat.aliases import ALIASES, new_path

MOVED_MODULES = [
    ("gem.envs._math_qa_base", "gem.envs.single_turn"),
    ("gem.tools.search_engine.corpus", "gem.services.search.corpus"),
    ("gem.tools.search_engine.launch", "gem.services.search.launch"),
    ("gem.tools.search_engine.service", "gem.services.search.service"),
]


@pytest.mark.parametrize("old, new", MOVED_MODULES)
def test_a_former_module_path_is_the_same_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


# Targets that import an optional extra at module level.
NEEDS = {"gem.services.search": None, "gem.services.mcp": "mcp"}


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_every_row_of_the_alias_table_imports_its_new_module_and_has_no_file(old):
    new = ALIASES[old]
    extra = NEEDS.get(new)
    if extra:
        pytest.importorskip(extra, reason=f"{new} needs the {extra} extra")
    module = importlib.import_module(old)
    assert module is importlib.import_module(new) and module.__name__ == new
    assert module.__spec__.name == new  # the module keeps its own spec
    assert importlib.util.find_spec(new).name == new
    # the table replaces the files: nothing is left at the old path
    rel = Path(gem.__file__).parent.parent.joinpath(*old.split("."))
    assert not rel.with_suffix(".py").exists() and not (rel / "__init__.py").exists(), rel


def test_submodules_of_an_aliased_package_and_from_imports():
    from gem.tools.search_engine import corpus
    from gem.utils import math_grading_pool, qa_em

    import gem.services.search.corpus
    import gem.grading.math_pool
    import gem.grading.qa

    assert corpus is gem.services.search.corpus and qa_em is gem.grading.qa
    assert math_grading_pool is gem.grading.math_pool
    assert new_path("gem.tools.search_engine.retrievers") == "gem.services.search.retrievers"
    assert new_path("gem.utils.parsing") is None and new_path("gem.tools.search_engineering") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gem.tools.search_engine.no_such_module")


def test_no_row_shadows_a_module_that_exists():
    for old, new in ALIASES.items():
        assert old != new and new_path(new) is None, (old, new)


def test_single_turn_base_and_rl_collection_keep_their_names():
    from gem.envs._math_qa_base import SingleTurnEnv, rows_from
    from gem.envs.single_turn import SingleTurnEnv as Base, rows_from as rows
    from gem.rl import collect, rollout

    assert SingleTurnEnv is Base and rows_from is rows
    assert rollout.Episode is collect.Trajectory and rollout.collect_episodes is collect.collect_episodes
    assert not hasattr(collect, "Episode")  # the one Episode class is the episode loop's
    from gem.rollout import Episode

    assert Episode is not collect.Trajectory


def test_mcp_package_keeps_its_former_path():
    pytest.importorskip("mcp", reason="the MCP server needs the mcp extra")
    from gem.services import mcp
    from gem.tools import mcp_server

    assert mcp_server.main is mcp.main and mcp_server.build_server is mcp.build_server


@pytest.mark.parametrize(
    "module, needs",
    [
        ("gem.tools.search_engine.build_index", None),
        ("gem.tools.search_engine.retrieval_server", None),
        ("gem.tools.mcp_server.time_mcp", "mcp"),
        ("gem.tools.mcp_server", "mcp"),
        ("gem.utils.sandbox", None),
    ],
)
def test_a_server_runs_under_its_former_name(module, needs):
    if needs:
        pytest.importorskip(needs, reason=f"{module} needs {needs} (its extra is not installed)")
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout
