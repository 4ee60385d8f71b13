"""The README of ``gem export verifiers`` works as written: its commands, against the real verifiers.

- Fast: the eval line, verbatim but for its placeholders, is a command line verifiers' ``vf-eval``
  accepts (``--dry-run``: resolved and validated, nothing played).
- Slow (and the package index): every line, verbatim, in a fresh virtual environment: the install
  line, then vf-eval against GEM's mock OpenAI server, then the check line; and the same run with the
  install line's ``uv`` off PATH, whose failed rollouts vf-eval exits 0 on and the check reports.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="needs the verifiers extra (pip install -e '.[verifiers]' in the GEM checkout)")

from gem.interop.verifiers.export import export_verifiers, taskset_id  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"


def readme_commands(out: Path) -> list[str]:
    """The README's command lines (its indented block), comments dropped."""
    lines = (out / "README.md").read_text().splitlines()
    return [line.strip().split("   #")[0].strip() for line in lines if line.startswith("    ") and line.strip()]


def fill(command: str, model: str, base_url: str) -> str:
    return command.replace("<model>", model).replace("http://127.0.0.1:8000/v1", base_url).replace("<key>", "unused")


def test_the_readme_has_an_install_an_eval_and_a_check_line(tmp_path):
    out = export_verifiers(GAME, tmp_path / "gem-guess")
    install, key, evaluate, check = readme_commands(out)
    assert install == "pip install uv --find-links vendor ."
    assert key == "export OPENAI_API_KEY=<key>"
    assert evaluate.startswith(f"vf-eval {taskset_id(GAME)} ") and " -n 10 " in evaluate
    assert check == "python -m gem_game_guessthenumber_v0.check outputs"


def test_the_readme_eval_line_is_one_vf_eval_accepts(tmp_path):
    if shutil.which("vf-eval") is None:
        pytest.skip("needs verifiers' vf-eval on PATH")
    out = export_verifiers(GAME, tmp_path / "gem-guess")
    evaluate = fill(readme_commands(out)[2], "my-model", "http://127.0.0.1:9/v1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OPENAI_API_KEY": "unused"}
    done = subprocess.run([*evaluate.split(), "--dry-run", "-o", str(tmp_path / "runs")], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (config,) = (tmp_path / "runs").glob("*/configs/resolved/eval.json")
    resolved = json.loads(config.read_text())
    assert resolved["model"] == "my-model" and resolved["client"]["base_url"] == "http://127.0.0.1:9/v1"
    assert resolved["client"]["api_key_var"] == "OPENAI_API_KEY" and resolved["select"]["limit"] == 10
    wrong = subprocess.run(["vf-eval", taskset_id(GAME), "--num-tasks", "10", "--dry-run", "-o", str(tmp_path / "x")],
                           capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert wrong.returncode != 0  # the line the README used to carry: verifiers refuses it


@pytest.mark.slow  # a fresh environment (verifiers from the index) and two vf-eval runs: minutes
@pytest.mark.network  # pip and uv fetch verifiers and the null harness's packages
@pytest.mark.timeout(2400)
def test_every_readme_line_works_verbatim_in_a_fresh_environment(tmp_path):
    from gem.eval.mock_server import MockServer
    from tests.interop.sse_proxy import SSEProxy

    out = export_verifiers(GAME, tmp_path / "gem-guess")
    install, _key, evaluate, check = readme_commands(out)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    bin_dir = venv / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]), VIRTUAL_ENV=str(venv), OPENAI_API_KEY="unused")
    done = subprocess.run(install, shell=True, cwd=out, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]

    def run(line: str, run_env: dict, cwd: Path) -> subprocess.CompletedProcess:
        return subprocess.run(line, shell=True, cwd=cwd, env=run_env, capture_output=True, text=True, timeout=900)

    with MockServer(env_ids=[GAME]) as mock, SSEProxy(mock.base_url) as proxy:
        good = tmp_path / "good"
        good.mkdir()
        played = run(fill(evaluate, "solver", proxy.base_url) + " --no-rich", env, good)
        assert played.returncode == 0, played.stdout[-3000:] + played.stderr[-3000:]
        checked = run(check, env, good)
        assert checked.returncode == 0 and "0 of 10 rollouts failed" in checked.stdout, checked.stdout + checked.stderr
        scores = [json.loads(line)["traces"][0]["rewards"]["gem_reward"]["score"]
                  for line in next(good.glob("outputs/*/traces.jsonl")).read_text().splitlines()]
        assert scores == [1.0] * 10  # the solver wins every task: GEM's reward came through

        no_uv = tmp_path / "no-uv"
        no_uv.mkdir()
        (no_uv / "bin").mkdir()
        for name in ("python", "vf-eval"):  # the environment's commands without its uv
            wrapper = no_uv / "bin" / name
            wrapper.write_text(f'#!/bin/sh\nexec "{bin_dir / name}" "$@"\n')
            wrapper.chmod(0o755)
        env_without_uv = {**env, "PATH": os.pathsep.join([str(no_uv / "bin"), "/usr/bin", "/bin"])}
        played = run(fill(evaluate, "solver", proxy.base_url) + " --no-rich", env_without_uv, no_uv)
        assert played.returncode == 0  # vf-eval keeps failed rollouts as data and exits 0 ...
        checked = run(check, env_without_uv, no_uv)
        assert checked.returncode == 1 and "10 of 10 rollouts failed" in checked.stdout  # ... the check does not
