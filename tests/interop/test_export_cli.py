"""``gem export FORMAT ID DIR``: the command writes each package (their behaviour is tested with
openenv-core and verifiers in test_openenv_core.py and test_verifiers.py)."""

from __future__ import annotations

import ast
import tomllib

import pytest

from gem.cli import main


def test_export_openenv_writes_the_package(tmp_path, capsys):
    out = tmp_path / "guess"
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(out)]) == 0
    assert "Wrote openenv package" in capsys.readouterr().out
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == {
        "openenv.yaml", "pyproject.toml", "README.md", "__init__.py", "server/__init__.py", "server/app.py",
        "server/Dockerfile",
    }
    assert "app: server.app:app" in (out / "openenv.yaml").read_text()
    project = tomllib.loads((out / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["server"] == "gem_game_guessthenumber_v0.server.app:main"
    import gem

    extra = gem.spec("game:GuessTheNumber-v0").extra
    extras = "server" + (f",{extra}" if extra else "")
    assert project["dependencies"] == [f"gem-llm[{extras}]>={gem.__version__}", "openenv-core>=0.2.0"]
    app = ast.parse((out / "server" / "app.py").read_text())
    assert {"main"} <= {n.name for n in app.body if isinstance(n, ast.FunctionDef)}
    assert "ENV_ID = 'game:GuessTheNumber-v0'" in (out / "server" / "app.py").read_text()


def test_export_verifiers_writes_the_package(tmp_path):
    out = tmp_path / "guess"
    assert main(["export", "verifiers", "game:Mastermind-v0-easy", str(out)]) == 0
    module = out / "gem_game_mastermind_v0_easy"
    assert sorted(p.name for p in module.iterdir()) == ["__init__.py", "taskset.py"]
    assert '__all__ = ["GemEnv", "GemTaskset"]' in (module / "__init__.py").read_text()
    source = (module / "taskset.py").read_text()
    ast.parse(source)
    imported = {n.names[0].name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import)}
    imported |= {n.module.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "itertools", "collections", "verifiers", "gem"}  # verifiers + gem core only
    project = tomllib.loads((out / "pyproject.toml").read_text())["project"]
    assert project["name"] == "gem-game-mastermind-v0-easy" and "verifiers>=0.4" in project["dependencies"]


def test_export_refuses_a_non_empty_directory_without_force(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["export", "openenv", "game:GuessTheNumber-v0", str(tmp_path), "--force"]) == 0
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
    assert main(["export", "openenv", "game:Mastermind-v0-easy", str(out)]) == 0
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
