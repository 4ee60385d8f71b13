"""The env contract, run over every registered id (a new env is tested the moment it is registered).

Hub-backed ids are checked offline: the loader reads a tiny stand-in in each dataset's schema
(``tests/envs/hub_fixtures.py``) instead of the hub, so no id is ever skipped for a network outage,
and a missing bundled file is a failure (``DatasetNotFound``), never a skip. The only skip is for an
optional extra that is truly not installed.
"""

import pytest

import gem
from gem.errors import DependencyNotInstalled, install_hint
from gem.utils.env_checker import check_env
from tests.conftest import extra_installed
from tests.envs.hub_fixtures import serve_hub

ALL_IDS = gem.list_envs()


def _hub_source(env_id: str):
    """The hub dataset an id reads by default (``owner/name``), or ``None``."""
    source = gem.spec(env_id).kwargs.get("dataset_name")
    return source if isinstance(source, str) and "/" in source and not source.startswith((".", "/")) else None


HUB_IDS = [i for i in ALL_IDS if _hub_source(i)]


def _make(env_id: str):
    try:
        env = gem.make(env_id)
        env.reset(seed=0)
        return env
    except DependencyNotInstalled:
        extra = gem.spec(env_id).extra
        if extra and not extra_installed(extra):
            pytest.skip(f"{env_id} needs the {extra} extra ({install_hint(extra)})")
        raise


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_env_contract(env_id, monkeypatch):
    served = serve_hub(monkeypatch)
    env = _make(env_id)
    try:
        if _hub_source(env_id):
            assert served == [_hub_source(env_id)], f"{env_id} did not read its hub stand-in: {served}"
        else:
            assert served == [], f"{env_id} is not hub-backed but asked the hub for {served}"
        if isinstance(env.unwrapped, gem.MultiAgentEnv):  # multi-agent ids have their own contract
            from gem.envs.multiagent.checker import check_multiagent_env

            check_multiagent_env(env.unwrapped)
        else:
            check_env(env)
    finally:
        env.close()


def test_every_hub_backed_id_is_covered_offline():
    # GEM's hub ids: 6 math, Geometry3K, 5 math eval sets, 6 RuleTaker, 2 QA, NQ-open, 7 search-QA
    # eval sets, 3 code sets and the CodeContest eval split.
    assert len(HUB_IDS) == 32, HUB_IDS
    assert {"math:GSM8K", "logic:RuleTaker-d4", "eval:QaOpen", "code:PrimeIntellect15k", "math:Geometry3K"} <= set(HUB_IDS)


def test_the_env_table_lists_every_id():
    from pathlib import Path

    table = (Path(__file__).resolve().parents[2] / "docs" / "envs.md").read_text()
    missing = [i for i in ALL_IDS if f"`{i}`" not in table]
    assert not missing, f"docs/envs.md misses {missing[:10]}; regenerate it with python scripts/update_env_table.py."


def test_a_missing_bundled_file_fails_the_contract_test_instead_of_skipping(monkeypatch, tmp_path):
    from gem.data import loading
    from gem.errors import DatasetNotFound, ResourceUnavailable

    loading.clear_cache()
    monkeypatch.setattr(loading, "BUNDLED_DIR", tmp_path)  # the package lost its bundled files
    try:
        with pytest.raises(DatasetNotFound, match=r"'arithmetic' is not a bundled dataset \(bundled: none\)") as info:
            _make("math:Arithmetic")
        assert not isinstance(info.value, (ResourceUnavailable, DependencyNotInstalled))  # never a skip
    finally:
        loading.clear_cache()
