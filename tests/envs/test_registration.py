import io
import subprocess
import sys

import pytest

import gem
from gem.envs.registration import registry
from gem.errors import UnknownEnvError
from tests.conftest import CountEnv


def test_unknown_id_suggests_closest():
    with pytest.raises(KeyError) as info:
        gem.make("game:GuessTheNumbr-v0-easy")
    assert isinstance(info.value, UnknownEnvError)
    assert "Did you mean 'game:GuessTheNumber-v0-easy'" in str(info.value)


def test_non_string_id_is_a_clear_error():
    with pytest.raises(UnknownEnvError, match="Unknown env id 42"):
        gem.make(42)


def test_unknown_kwarg_names_accepted_ones():
    with pytest.raises(ValueError, match="unknown argument.*'max_turn'.*accepts: min_number, max_number, max_turns"):
        gem.make("game:GuessTheNumber-v0", max_turn=3)


def test_bad_values_raise_value_error():
    with pytest.raises(ValueError, match="below max_number"):
        gem.make("game:GuessTheNumber-v0", min_number=10, max_number=5)
    with pytest.raises(ValueError, match="max_turns"):
        gem.make("game:GuessTheNumber-v0", max_turns=0)


def test_register_make_and_spec():
    spec = gem.register("test:Count-v0", CountEnv, description="counts", target=2)
    try:
        assert spec.family == "test" and gem.spec("test:Count-v0") is spec
        env = gem.make("test:Count-v0", target=4)
        assert env.target == 4 and env.spec.kwargs == {"target": 4} and spec.kwargs == {"target": 2}
        with pytest.raises(ValueError, match="already registered"):
            gem.register("test:Count-v0", CountEnv)
        out = io.StringIO()
        gem.print_envs("test", file=out)
        assert "test:Count-v0" in out.getvalue() and "counts" in out.getvalue()
        assert "game:" not in out.getvalue()
    finally:
        del registry["test:Count-v0"]


class _ConfigEnv(CountEnv):
    """An outside author's env that edits the config it is given, as plenty of code does."""

    def __init__(self, config: dict, marker: object = None) -> None:
        super().__init__()
        config.setdefault("seen", []).append(len(config.get("seen", [])))
        config["levels"]["hard"] = True
        self.config, self.marker = config, marker


def test_nested_default_kwargs_are_each_envs_own():
    marker = object()  # not a container: shared as it is
    spec = gem.register("test:Config-v0", _ConfigEnv, config={"levels": {"hard": False}}, marker=marker)
    try:
        first, second = gem.make("test:Config-v0"), gem.make("test:Config-v0")
        assert spec.kwargs == {"config": {"levels": {"hard": False}}, "marker": marker}
        assert first.config == second.config == {"levels": {"hard": True}, "seen": [0]}
        assert first.config is not second.config and first.marker is second.marker is marker
        first.spec.kwargs["config"]["levels"]["extra"] = 1  # an env's record of its kwargs is its own too
        assert "extra" not in gem.make("test:Config-v0").config["levels"]
    finally:
        del registry["test:Config-v0"]


def test_a_preset_config_survives_an_env_editing_it():
    pytest.importorskip("reasoning_gym")
    env = gem.make("rg:basic_arithmetic-easy")
    before = repr(gem.spec("rg:basic_arithmetic-easy").kwargs)
    env.spec.kwargs["config"]["max_terms"] = 99
    env.config["max_terms"] = 99
    assert repr(gem.spec("rg:basic_arithmetic-easy").kwargs) == before
    assert gem.make("rg:basic_arithmetic-easy").config.get("max_terms") != 99


def test_make_seed_kwarg_makes_first_reset_reproducible():
    a = gem.make("game:GuessTheNumber-v0-hard", seed=9)
    b = gem.make("game:GuessTheNumber-v0-hard", seed=9)
    a.reset(), b.reset()
    assert a.target == b.target


def test_print_envs_unknown_family():
    with pytest.raises(ValueError, match="choose one of: .*game"):
        gem.print_envs("gaem")


def test_import_is_light():
    code = (
        "import sys, time; t = time.perf_counter(); import gem; dt = time.perf_counter() - t;"
        "heavy = [m for m in ('numpy', 'reasoning_gym', 'datasets', 'torch', 'transformers') if m in sys.modules];"
        "print(dt, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    seconds, heavy = out.split(" ", 1)
    assert heavy.strip() == "[]"
    assert float(seconds) < 0.5  # the 0.15 s target is measured in benchmarks/import_time.py


def test_entry_point_plugins_register_without_import(tmp_path, monkeypatch):
    pkg = tmp_path / "gem_plugin_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import gem\n"
        "from tests.conftest import CountEnv\n"
        "def register_envs():\n"
        "    gem.register('plugin:Count-v0', CountEnv, target=1)\n"
    )
    dist = tmp_path / "gem_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gem-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[gem.envs]\ndemo = gem_plugin_demo:register_envs\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from gem.envs import registration

    monkeypatch.setattr(registration, "_plugins_loaded", False)
    try:
        env = gem.make("plugin:Count-v0")
        assert env.target == 1
    finally:
        registry.pop("plugin:Count-v0", None)
