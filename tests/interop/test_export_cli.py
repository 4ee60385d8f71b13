"""``gem export FORMAT ID DIR``: the command writes each package (their behaviour is tested with
OpenEnv and verifiers in test_openenv010.py, test_openenv_core.py, test_verifiers.py and
test_export_verifiers_readme.py). ``--no-lock`` keeps these offline: ``uv lock`` needs the index."""

from __future__ import annotations

import ast
import tomllib

import pytest

from gem.cli import main


def test_export_openenv_writes_the_package(tmp_path, capsys):
    out = tmp_path / "guess"
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(out), "--no-lock"]) == 0
    captured = capsys.readouterr()
    assert "Wrote openenv package" in captured.out and "No uv.lock" in captured.err
    import gem

    wheel = f"vendor/gem_llm-{gem.__version__}-py3-none-any.whl"
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == {
        "openenv.yaml", "pyproject.toml", "README.md", "__init__.py", "models.py", "client.py", "server/__init__.py",
        "server/app.py", "server/Dockerfile", "validation/runtime.json", wheel,
    }
    assert "app: server.app:app" in (out / "openenv.yaml").read_text()
    pyproject = tomllib.loads((out / "pyproject.toml").read_text())
    project = pyproject["project"]
    assert project["scripts"]["server"] == "gem_game_guessthenumber_v0.server.app:main"
    extra = gem.spec("game:GuessTheNumber-v0").extra
    extras = "server" + (f",{extra}" if extra else "")
    assert project["dependencies"] == [f"gem-llm[{extras}]=={gem.__version__}", "openenv>=0.10"]
    assert pyproject["tool"]["uv"]["sources"]["gem-llm"] == {"path": wheel}
    dockerfile = (out / "server" / "Dockerfile").read_text()
    assert "uv sync --frozen" in dockerfile and "COPY . /app/env" in dockerfile
    models = ast.parse((out / "models.py").read_text())
    assert {"GemAction", "GemObservation", "GemState"} <= {n.name for n in models.body if isinstance(n, ast.ClassDef)}
    client = ast.parse((out / "client.py").read_text())
    (env_client,) = [n for n in client.body if isinstance(n, ast.ClassDef)]
    assert env_client.name == "GemEnv" and ast.unparse(env_client.bases[0]).startswith("EnvClient[GemAction")
    app = ast.parse((out / "server" / "app.py").read_text())
    assert {"main"} <= {n.name for n in app.body if isinstance(n, ast.FunctionDef)}
    assert "ENV_ID = 'game:GuessTheNumber-v0'" in (out / "server" / "app.py").read_text()


def test_export_verifiers_writes_the_package(tmp_path):
    out = tmp_path / "guess"
    assert main(["export", "verifiers", "game:Mastermind-v0-easy", str(out)]) == 0
    module = out / "gem_game_mastermind_v0_easy"
    assert sorted(p.name for p in module.iterdir()) == ["__init__.py", "check.py", "taskset.py"]
    assert '__all__ = ["GemEnv", "GemTaskset"]' in (module / "__init__.py").read_text()
    source = (module / "taskset.py").read_text()
    ast.parse(source)
    imported = {n.names[0].name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import)}
    imported |= {n.module.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "itertools", "collections", "verifiers", "gem"}  # verifiers + gem core only
    project = tomllib.loads((out / "pyproject.toml").read_text())["project"]
    assert project["name"] == "gem-game-mastermind-v0-easy" and "verifiers>=0.4" in project["dependencies"]
    import gem

    assert "uv" in project["dependencies"] and (out / "vendor" / f"gem_llm-{gem.__version__}-py3-none-any.whl").is_file()
    readme = (out / "README.md").read_text()
    assert "pip install uv --find-links vendor ." in readme and "vf-eval gem-game-mastermind-v0-easy " in readme
    assert "eval gem-game-mastermind-v0-easy --num-tasks" not in readme and "-n 10" in readme


def test_the_gem_wheel_installs_gem_with_its_metadata(tmp_path):
    """The vendored wheel: the running gem package, gem-llm's dependencies and extras, the same bytes twice."""
    import hashlib
    import importlib.metadata
    import zipfile

    import gem
    from gem.interop.wheel import build_gem_wheel

    first = build_gem_wheel(tmp_path / "a")
    second = build_gem_wheel(tmp_path / "b")
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()
    names = zipfile.ZipFile(first).namelist()
    info = f"gem_llm-{gem.__version__}.dist-info"
    assert {"gem/__init__.py", "gem/interop/wheel.py", f"{info}/METADATA", f"{info}/RECORD", f"{info}/WHEEL"} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    metadata = zipfile.ZipFile(first).read(f"{info}/METADATA").decode()
    assert f"Version: {gem.__version__}" in metadata
    installed = importlib.metadata.distribution("gem-llm").metadata.get_all("Requires-Dist") or []
    assert installed and all(f"Requires-Dist: {r}" in metadata for r in installed)
    record = zipfile.ZipFile(first).read(f"{info}/RECORD").decode().splitlines()
    assert len(record) == len(names)  # every file is hashed in RECORD (RECORD itself without a hash)


def test_the_exported_check_lists_failed_rollouts(tmp_path):
    """The exported `python -m <module>.check` reads vf-eval's traces.jsonl: exit 1 and each failure
    listed when a rollout failed, 0 when none did, 2 when there is no run."""
    import json
    import subprocess
    import sys

    out = tmp_path / "pkg"
    assert main(["export", "verifiers", "game:GuessTheNumber-v0", str(out)]) == 0
    module = "gem_game_guessthenumber_v0"
    run = tmp_path / "outputs" / "run-1"
    run.mkdir(parents=True)
    good = {"ok": True, "errors": [], "traces": [{"errors": [], "rewards": {"gem_reward": {"score": 1.0}}}]}
    bad = {"ok": False, "errors": [], "traces": [{"errors": [{"type": "HarnessError", "message": "uv: not found"}]}]}

    def check() -> subprocess.CompletedProcess:
        # the file itself: `python -m` would import the package, and so verifiers (the README's form
        # is run where verifiers is installed, in test_export_verifiers_readme.py)
        return subprocess.run([sys.executable, str(out / module / "check.py"), str(tmp_path / "outputs")],
                              capture_output=True, text=True, timeout=60)

    assert check().returncode == 2
    (run / "traces.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    assert check().returncode == 0 and "0 of 2 rollouts failed" in check().stdout
    (run / "traces.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    failed = check()
    assert failed.returncode == 1 and "HarnessError: uv: not found" in failed.stdout and "1 of 2" in failed.stdout


def test_export_refuses_a_non_empty_directory_without_force(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(tmp_path), "--no-lock"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(tmp_path), "--force", "--no-lock"]) == 0
    assert (tmp_path / "keep.txt").read_text() == "mine" and (tmp_path / "openenv.yaml").exists()


def test_export_of_an_unknown_id_names_the_closest(tmp_path, capsys):
    assert main(["export", "verifiers", "game:GuessTheNumbr-v0", str(tmp_path / "x")]) == 2
    assert "game:GuessTheNumber-v0" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_export_format_is_checked():
    with pytest.raises(SystemExit):
        main(["export", "harbor", "game:GuessTheNumber-v0", "out"])


def test_the_exported_openenv_app_serves_the_id_with_uvicorn(tmp_path):
    """The package's own entry point (``python -m server.app``), spoken to as an OpenEnv client does."""
    pytest.importorskip("uvicorn", reason="needs the server extra")
    import os
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    import gem
    from tests.interop.families import record
    from tests.interop.wire import http, ws_exchange

    out = tmp_path / "pkg"
    assert main(["export", "openenv", "game:Mastermind-v0-easy", str(out), "--no-lock"]) == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), str(repo), os.environ.get("PYTHONPATH", "")])}
    env.pop("GEM_SERVER_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "server.app", "--port", str(port)], cwd=out, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if http(url + "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        trace = record("game:Mastermind-v0-easy", 4)
        replies = ws_exchange(url, {"type": "reset", "data": {"seed": 4}},
                              *({"type": "step", "data": {"text": a}} for a in trace.actions))
        assert replies[0]["data"]["observation"]["text"] == trace.first
        assert [r["data"]["reward"] for r in replies[1:]] == [s[1] for s in trace.steps]
        assert sum(s[1] for s in trace.steps) == gem.make("game:Mastermind-v0-easy").success_reward
        assert http(url + "/metadata")[1]["name"] == "game:Mastermind-v0-easy"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_id_that_cannot_be_made_here_still_exports_with_a_minimal_plan(tmp_path, monkeypatch, caplog):
    """Where the id's extra is missing, the package is still written (it installs the extra itself);
    its runtime plan is one empty reply, and a warning says what to edit."""
    import json
    import logging

    import gem.envs.registration

    def missing(*args, **kwargs):
        raise ImportError("No module named 'wordfreq'")

    monkeypatch.setattr(gem.envs.registration, "make", missing)
    out = tmp_path / "pkg"
    with caplog.at_level(logging.WARNING, logger="gem.interop.openenv.export"):
        assert main(["export", "openenv", "game:GuessTheNumber-v0", str(out), "--no-lock"]) == 0
    plan = json.loads((out / "validation" / "runtime.json").read_text())
    assert plan["actions"] == [{"text": ""}] and plan["reset"]["seed"] == 0
    assert "range: [-1.0, 1.0]" in (out / "openenv.yaml").read_text()
    assert "Cannot make game:GuessTheNumber-v0" in caplog.text and "wordfreq" in caplog.text
