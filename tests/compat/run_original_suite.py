"""Run the original GEM's own test suite, unchanged, against this repository.

The original's tests (repository axon-rl/gem, folder ``tests/``) are not part of this repository.
Point this script at a copy of that repository (a checkout, or a bare git directory whose
``HEAD`` is read); it copies the original's ``tests/`` into a temporary folder and runs every unit
that needs no GPU, no hub download, no API key and no outside server, with this repository first
on ``PYTHONPATH``. Units that need one of those are listed with the reason and not run.

    python tests/compat/run_original_suite.py /path/to/axon-rl-gem
    python tests/compat/run_original_suite.py /path/to/axon-rl-gem --json results.json

``tests/test_env/test_fifteen.py`` puts backslashes inside f-string expressions, which Python
accepts from 3.12 on: its units run under ``--python312`` (an interpreter of 3.12 or later with
this repository's core dependencies, numpy and rich, and ``fire``), found on ``PATH`` when not
given; without one they are reported as not run. The original's tests import ``fire``
(``pip install fire``).

Exit status: 0 when every offline unit that ran passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]

# Units run with pytest (node ids relative to the original's repository root).
PYTEST_UNITS = [
    "tests/test_env/test_code.py::test_reward_code_contests",
    "tests/test_env/test_game.py::test",
    "tests/test_env/test_reasoning_gym.py::test",
    "tests/test_multiagent/test_multiagent.py",
    "tests/test_tool/test_python_code_tool.py::test_single_action",
    "tests/test_tool/test_time_mcp.py",
]
# Units that are functions run by ``fire`` from the command line (``python -m tests... NAME``).
FIFTEEN = "tests.test_env.test_fifteen"
CALL_UNITS = [
    (FIFTEEN, "transitions_work_properly"),
    (FIFTEEN, "solvability_checks_work_properly"),
    (FIFTEEN, "generated_boards_are_valid_and_solvable"),
    (FIFTEEN, "other_environment_checks"),
    (FIFTEEN, "test_all"),
]
NEEDS_312 = {FIFTEEN}

# Units that cannot run offline here, and why.
NOT_OFFLINE = {
    "tests/test_env/test_code.py::test_llm_episode": "vLLM on a GPU with a hub model",
    "tests/test_env/test_math.py::test_llm_episode": "vLLM on a GPU with a hub model",
    "tests/test_env/test_qa.py::test_e2e_llm_episode": "vLLM on a GPU with a hub model",
    "tests/test_env/test_qa.py::test_action_sequence": "hub dataset (google-research-datasets/nq_open)",
    "tests/test_env/test_qa.py::test_transitions": "hub datasets (search-QA evaluation sets)",
    "tests/test_env/test_terminal.py::test_hello_world": "Docker (gem.envs.terminal.docker_env)",
    "tests/test_env/test_terminal.py::test_llm_inference": "Docker and vLLM on a GPU",
    "tests/test_env/test_terminal.py::test_openai": "Docker and an OpenAI API key",
    "tests/test_env/test_webshop.py::test": "a person at the keyboard (input()) and a hub tokenizer",
    "tests/test_env/test_wikigame.py::test_transition_correctness": "a Kiwix server with a Wikipedia dump",
    "tests/test_env/test_wikigame.py::test_oneback": "a Kiwix server with a Wikipedia dump",
    "tests/test_env/test_wikigame.py::test_freenav": "a Kiwix server with a Wikipedia dump",
    "tests/test_env/test_wikigame.py::test": "a Kiwix server with a Wikipedia dump",
    "tests/test_tool/test_mcp_tool.py::test_single_action": "an MCP server URL (--mcp_url)",
    "tests/test_tool/test_mcp_tool.py::test_episode": "an MCP server, a hub dataset and a hub tokenizer",
    "tests/test_tool/test_mcp_tool.py::test_llm_episode": "vLLM on a GPU with a hub model",
    "tests/test_tool/test_mcp_tool.py::test_multi_server": "two MCP servers, one on the internet (it catches the failure and passes vacuously)",
    "tests/test_tool/test_mcp_tool.py::test_mcpmark_openai": "an OpenAI API key and MCPMark tasks",
    "tests/test_tool/test_python_code_tool.py::test_episode": "a hub tokenizer (Qwen/Qwen3-0.6B-Base)",
    "tests/test_tool/test_python_code_tool.py::test_llm_episode": "vLLM on a GPU with a hub model",
    "tests/test_tool/test_search_tool.py::test_single_action": "a search server URL (--search_url)",
    "tests/test_tool/test_search_tool.py::test_episode": "a search server, a hub dataset and a hub tokenizer",
    "tests/test_tool/test_search_tool.py::test_llm_episode": "vLLM on a GPU with a hub model",
}


@dataclass
class Result:
    unit: str
    outcome: str  # "passed", "failed", "not run"
    detail: str = ""


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out


def copy_tests(original: Path, dest: Path) -> Path:
    """Copy the original's ``tests/`` into ``dest`` (from a checkout, or a git dir's HEAD)."""
    if (original / "tests").is_dir():
        shutil.copytree(original / "tests", dest / "tests")
    else:
        archive = subprocess.run(["git", "--git-dir", str(original), "archive", "HEAD", "tests"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)
    if not (dest / "tests").is_dir():
        raise SystemExit(f"{original} holds no tests/ folder (a checkout or a git dir of axon-rl/gem).")
    return dest


def child_env(repo: Path, root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(repo), str(root)])
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def run_pytest_units(repo: Path, root: Path, timeout: int) -> list[Result]:
    """Each entry of PYTEST_UNITS in its own pytest run, so one file's import error stays its own."""
    results = []
    for i, target in enumerate(PYTEST_UNITS):
        xml = root / f"results-{i}.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root),
               f"--junitxml={xml}", target]
        try:
            proc = subprocess.run(cmd, cwd=root, env=child_env(repo, root), timeout=timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            results.append(Result(target, "failed", f"timed out after {timeout} s"))
            continue
        cases = list(ET.parse(xml).getroot().iter("testcase")) if xml.exists() else []
        for case in cases:
            name = case.get("name") or ""
            unit = f"{target.split('::')[0]}::{name}" if name else target
            failure = case.find("failure") if case.find("failure") is not None else case.find("error")
            if failure is not None:
                message = failure.get("message") or ""
                if "collection failure" in message or not name:  # the file did not import
                    message, unit = _last_error_line(failure.text or message), target
                results.append(Result(unit, "failed", message[:300]))
            elif case.find("skipped") is not None:
                results.append(Result(unit, "not run", (case.find("skipped").get("message") or "")[:300]))
            else:
                results.append(Result(unit, "passed"))
        if not cases:
            results.append(Result(target, "failed", _last_error_line(proc.stdout + proc.stderr)[:300]))
    return results


def _last_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.lstrip().startswith("E ") or "Error" in line]
    return (errors or lines or [""])[-1].strip()


def find_python312(given: Optional[str]) -> Optional[str]:
    candidates = [given] if given else []
    if sys.version_info >= (3, 12):
        candidates.insert(0, sys.executable)
    candidates += [shutil.which(name) for name in ("python3.13", "python3.12")]
    for python in filter(None, candidates):
        probe = subprocess.run([python, "-c", "import sys, numpy, rich, fire; assert sys.version_info >= (3, 12)"],
                               capture_output=True)
        if probe.returncode == 0:
            return python
    return None


def run_call_units(repo: Path, root: Path, python312: Optional[str], timeout: int) -> list[Result]:
    results = []
    for module, name in CALL_UNITS:
        unit = f"{module.replace('.', '/')}.py::{name}"
        python = python312 if module in NEEDS_312 else sys.executable
        if python is None:
            results.append(Result(unit, "not run", "needs Python 3.12+ with numpy, rich and fire (--python312)"))
            continue
        try:
            proc = subprocess.run([python, "-c", f"from {module} import {name}; {name}()"], cwd=root,
                                  env=child_env(repo, root), timeout=timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            results.append(Result(unit, "failed", f"timed out after {timeout} s"))
            continue
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        results.append(Result(unit, "passed" if proc.returncode == 0 else "failed", "" if proc.returncode == 0 else tail[:300]))
    return results


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("original", type=Path, help="a checkout of axon-rl/gem, or its git directory")
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository to test (default: this one)")
    parser.add_argument("--python312", help="a Python 3.12+ interpreter for test_fifteen.py")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run (default 900)")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    args = parser.parse_args(argv)
    report = Report()
    with tempfile.TemporaryDirectory(prefix="gem-original-tests-") as tmp:
        root = copy_tests(args.original.resolve(), Path(tmp))
        report.results += run_pytest_units(args.repo.resolve(), root, args.timeout)
        report.results += run_call_units(args.repo.resolve(), root, find_python312(args.python312), args.timeout)
    width = max(len(r.unit) for r in report.results)
    for r in report.results:
        print(f"{r.outcome.upper():8} {r.unit:{width}} {r.detail}")
    for unit, why in NOT_OFFLINE.items():
        print(f"{'OFFLINE?':8} {unit:{width}} not run: needs {why}")
    counts = report.counts()
    print(f"\noffline units: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
          f"{counts.get('not run', 0)} not run; {len(NOT_OFFLINE)} units need a GPU, the hub, a key or a server")
    if args.json:
        args.json.write_text(json.dumps({"results": [r.__dict__ for r in report.results],
                                         "not_offline": NOT_OFFLINE, "counts": counts}, indent=2))
    return 0 if counts.get("failed", 0) == 0 and counts.get("passed", 0) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
