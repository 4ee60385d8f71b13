"""GEM and OpenEnv 0.10 (the ``openenv`` package, huggingface/OpenEnv): ``gem export openenv`` writes a
package that ``openenv validate`` accepts and whose runtime checks pass on the package installed as its
Dockerfile installs it; OpenEnv's ``GenericEnvClient`` and the exported typed client play GEM's server.

The lock and the install need ``uv`` and the package index (PyPI); where either is missing those
tests skip, saying so. Run in an environment with ``openenv`` 0.10 (see docs/interop.md).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")
pytest.importorskip("openenv.validation", reason="needs openenv>=0.10 (pip install 'openenv>=0.10')")
from openenv.cli._validation import validate_multi_mode_deployment  # noqa: E402
from openenv.core import GenericEnvClient  # noqa: E402
from openenv.validation import run_validation  # noqa: E402
from openenv.validation.providers import ExecResult  # noqa: E402
from openenv.validation.types import CheckStatus, ProviderCapability, Verdict  # noqa: E402

import gem  # noqa: E402
from gem.cli import main  # noqa: E402
from gem.interop.openenv.export import package_name  # noqa: E402
from tests.interop.families import record  # noqa: E402
from tests.interop.wire import http  # noqa: E402

GAME = "game:GuessTheNumber-v0"
OPENENV = Path(sys.executable).with_name("openenv")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """``gem export openenv GAME`` (with ``uv lock``), once for the module; the folder is named after
    the package so that the typed client imports from it."""
    out = tmp_path_factory.mktemp("export") / package_name(GAME)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])  # this venv's uv
    try:
        assert main(["export", "openenv", GAME, str(out)]) == 0
    finally:
        os.environ["PATH"] = path
    return out


def _needs_lock(out: Path) -> None:
    if not (out / "uv.lock").exists():
        pytest.skip("uv lock needs uv (pip install uv) and the package index (PyPI)")


def test_the_package_has_openenvs_layout_and_installs_gem_from_its_own_wheel(exported):
    files = {p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file()}
    assert {"openenv.yaml", "pyproject.toml", "README.md", "__init__.py", "models.py", "client.py",
            "server/__init__.py", "server/app.py", "server/Dockerfile", "validation/runtime.json",
            f"vendor/gem_llm-{gem.__version__}-py3-none-any.whl"} <= files
    project = tomllib.loads((exported / "pyproject.toml").read_text())
    assert f"gem-llm[server]=={gem.__version__}" in project["project"]["dependencies"]
    assert project["tool"]["uv"]["sources"]["gem-llm"]["path"] == f"vendor/gem_llm-{gem.__version__}-py3-none-any.whl"
    plan = json.loads((exported / "validation" / "runtime.json").read_text())
    local = gem.make(GAME)
    local.reset(seed=plan["reset"]["seed"])
    rewards = [local.step(a["text"])[1] for a in plan["actions"]]
    assert sum(rewards) == local.success_reward  # the plan is the solver's episode: a win


def test_openenv_validate_passes_on_the_exported_folder(exported):
    """`openenv validate DIR` as a user runs it (a subprocess). Without Docker the image cannot be
    built here, so --skip-build: the manifest passes and the runtime checks are skipped (WARN, exit 0)."""
    done = subprocess.run([str(OPENENV), "validate", str(exported), "--skip-build", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    results = {r["check_id"]: r["status"] for r in report["results"]}
    assert results["static.manifest"] == "pass"
    assert report["verdict"] in ("pass", "warn") and "fail" not in results.values()
    static = subprocess.run([str(OPENENV), "validate", str(exported), "--level", "static"],
                            capture_output=True, text=True, timeout=300)
    assert static.returncode == 0 and "Verdict: PASS" in static.stdout, static.stdout + static.stderr


def test_openenvs_deployment_check_finds_nothing_missing(exported):
    _needs_lock(exported)
    assert validate_multi_mode_deployment(exported) == (True, [])


def test_a_broken_manifest_fails_openenv_validate(exported, tmp_path):
    """The validate test can fail: the same folder declaring an oracle tolerance over the policy's bound fails."""
    broken = tmp_path / "broken"
    shutil.copytree(exported, broken, ignore=shutil.ignore_patterns("uv.lock", "vendor"))
    yaml = (broken / "openenv.yaml").read_text()
    (broken / "openenv.yaml").write_text(yaml.replace("oracle_tolerance: 0.0", "oracle_tolerance: 5.0"))
    done = subprocess.run([str(OPENENV), "validate", str(broken), "--skip-build"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "FAIL  static.manifest" in done.stdout


class _LocalProvider:
    """OpenEnv's validation provider protocol, with the Dockerfile's steps run on this machine:
    `build` installs the package as the image does (`uv sync --frozen --no-dev --no-editable` in a copy
    of it), `start` runs its CMD (`python -m server.app`) on a free loopback port."""

    name = "local-uv"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
    supported_network_modes = frozenset({"public"})

    def __init__(self, workdir: Path, uv: str) -> None:
        self.workdir, self.uv = workdir, uv

    def build(self, root: Path, execution: Any) -> str:
        shutil.copytree(root, self.workdir, ignore=shutil.ignore_patterns(".venv"))
        done = subprocess.run([self.uv, "sync", "--frozen", "--no-dev", "--no-editable", "--python", sys.executable],
                              cwd=self.workdir, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return "sha256:" + hashlib.sha256((self.workdir / "uv.lock").read_bytes()).hexdigest()

    def start(self, spec: Any) -> "_Running":
        return _Running(self.workdir)


class _Running:
    def __init__(self, package: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(package), "HOME": str(package)}
        self.proc = subprocess.Popen([str(package / ".venv" / "bin" / "python"), "-m", "server.app", "--port", str(port)],
                                     cwd=package, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.base_url = f"http://127.0.0.1:{port}"
        _wait_healthy(self.base_url, self.proc)

    def inspect(self) -> dict:
        return {"pid": self.proc.pid}

    def logs(self, max_bytes: int = 65536) -> str:
        return ""

    def exec(self, argv: list[str], timeout_s: float) -> ExecResult:
        raise NotImplementedError("the local provider does not declare the exec capability")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def _wait_healthy(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while True:
        try:
            if http(url + "/health")[0] == 200:
                return
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
        time.sleep(0.2)


def test_openenvs_runtime_checks_pass_on_the_package_installed_as_its_dockerfile_does(exported, tmp_path):
    """OpenEnv's own runner and graders (reward range, observation schema, state contract) on the
    package installed from its lock and its vendored GEM wheel, in a fresh environment, with the
    runtime plan (the solver's episode) played over OpenEnv's WebSocket."""
    _needs_lock(exported)
    uv = shutil.which("uv", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    provider = _LocalProvider(tmp_path / "image", uv)
    report = run_validation(exported, provider=provider)
    results = {r.check_id: r for r in report.results}
    for check in ("runtime.startup", "runtime.reward_well_formed", "runtime.observation_schema", "runtime.state_contract"):
        assert results[check].status is CheckStatus.PASS, (check, results[check].evidence)
    assert report.verdict is not Verdict.FAIL
    installed = list((tmp_path / "image" / ".venv").glob("lib/python*/site-packages/gem/interop/openenv/export.py"))
    assert installed, "GEM was installed from the vendored wheel"


def test_generic_env_client_and_the_typed_client_play_gems_server(serve, exported, monkeypatch):
    url = serve([GAME]).url
    trace = record(GAME, 7)
    with GenericEnvClient(base_url=url).sync() as client:
        first = client.reset(seed=7)
        assert first.observation["text"] == trace.first and first.done is False
        results = [client.step({"text": a}) for a in trace.actions]
    assert [r.reward for r in results] == [s[1] for s in trace.steps] and sum(s[1] for s in trace.steps) == 1.0
    assert [r.done for r in results] == [t or tr for _, _, t, tr in trace.steps]

    monkeypatch.syspath_prepend(str(exported.parent))
    package = importlib.import_module(package_name(GAME))
    try:
        with package.GemEnv(base_url=url).sync() as env:
            first = env.reset(seed=7, episode_id="typed-7")
            assert isinstance(first.observation, package.GemObservation) and first.observation.text == trace.first
            for action, (obs, reward, terminated, truncated) in zip(trace.actions, trace.steps):
                result = env.step(package.GemAction(text=action))
                assert (result.observation.text, result.reward, result.done) == (obs, reward, terminated or truncated)
                assert result.observation.metadata["terminated"] == terminated
            state = env.state()
            assert isinstance(state, package.GemState)
            assert (state.episode_id, state.step_count, state.env_id) == ("typed-7", len(trace.actions), GAME)
    finally:
        for name in [m for m in sys.modules if m == package.__name__ or m.startswith(package.__name__ + ".")]:
            del sys.modules[name]
