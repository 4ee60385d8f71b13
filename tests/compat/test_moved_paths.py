"""Modules that moved keep their former import paths: the same objects, and the servers still run
with ``python -m`` under their former names."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

MOVED_MODULES = [
    ("gem.envs._math_qa_base", "gem.envs.single_turn"),
    ("gem.tools.search_engine.corpus", "gem.services.search.corpus"),
    ("gem.tools.search_engine.launch", "gem.services.search.launch"),
    ("gem.tools.search_engine.service", "gem.services.search.service"),
]


@pytest.mark.parametrize("old, new", MOVED_MODULES)
def test_a_former_module_path_is_the_same_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


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
    ],
)
def test_a_server_runs_under_its_former_name(module, needs):
    if needs:
        pytest.importorskip(needs, reason=f"{module} needs {needs} (its extra is not installed)")
    out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "usage:" in out.stdout
