"""The prober catches each class of hole: planted envs, each with one hole, and clean twins.

Each hole must be reported by exactly the strategy (or positive control) that exploits it, and the
clean envs must pass. Programs run in the project's sandbox (see ``planted``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gem
from gem.checks import CONTROLS, STRATEGY_NAMES, Report, validate
from tests.checks import planted

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]


def found(report: Report) -> set[str]:
    assert not report.errors, report.errors
    return {f.strategy for f in report.findings}


@pytest.mark.parametrize(
    "env_cls, expected",
    [
        (planted.ArithmeticEnv, set()),
        (planted.HedgePaysEnv, {"hedge"}),
        # (the echoed and quoted question ends with an empty \boxed{}: paid without the gold, so echo and
        # quote report the same hole)
        (planted.EmptyBoxPaysEnv, {"degenerate", "format-fill", "echo", "quote"}),
        (planted.EchoPaysEnv, {"echo"}),
        (planted.GoldInInfoEnv, {"gold-leak"}),
        (planted.GoldInObservationEnv, {"gold-leak"}),
        (planted.UnseededEnv, {"replay"}),
    ],
)
def test_each_text_hole_is_reported_by_its_strategy(env_cls, expected):
    report = validate(env_cls())
    assert report.kind == "answer"
    assert found(report) == expected, [str(f) for f in report.findings]
    assert report.ok is (not expected)
    assert {"reference", "noop", "wrong-answer", "replay", "gold-leak"} <= set(report.checked)


@pytest.mark.parametrize(
    "env_cls, expected",
    [
        (planted.CodeEnvBase, set()),
        # (an object equal to anything, returned while the comparisons are patched, passes too)
        (planted.AlwaysEqualFoolsEnv, {"always-equal", "patch-harness"}),
        # (an OK line anywhere in stdout: a spray of verdict words holds one)
        (planted.ForgedLineEnv, {"forge-verdict", "print-spray"}),
        (planted.TimeoutPaysEnv, {"timeout"}),
    ],
)
def test_each_code_hole_is_reported_by_its_strategy(env_cls, expected):
    report = validate(env_cls(), seeds=[0])
    assert report.kind == "code"
    assert found(report) == expected, [str(f) for f in report.findings]
    assert "reference" in report.checked  # the reference solution passes the clean harness


def test_a_finding_names_the_strategy_reward_actions_and_why():
    report = validate(planted.HedgePaysEnv())
    (finding,) = report.findings
    assert finding.strategy == "hedge" and finding.kind == "exploit"
    assert finding.reward == 1.0 and finding.floor == 0.0 and finding.seed == 0
    assert finding.actions and "42" in finding.actions[0] and " or " in finding.actions[0]
    assert "success level" in finding.reason
    assert json.loads(json.dumps(report.to_dict()))["findings"][0]["strategy"] == "hedge"


def test_a_hedge_without_the_gold_earns_nothing_on_a_clean_env():
    env = planted.ArithmeticEnv()
    env.reset(seed=0)
    for reply in ("\\boxed{41 \\text{ or } 42}", "\\boxed{42, 43}", "\\boxed{42} \\boxed{43}"):
        env.reset(seed=0)
        assert env.step(reply)[1] == 0.0


def test_a_reference_that_fails_is_a_control_finding():
    class Broken(planted.ArithmeticEnv):
        def grade(self, action):
            return False  # nothing is ever right

    report = validate(Broken())
    assert found(report) == {"reference"}
    assert report.findings[0].kind == "control"


def test_doing_nothing_that_pays_is_the_noop_finding():
    class PaysForNothing(planted.ArithmeticEnv):
        def step(self, action):
            return "ok", 0.5 if not action.strip() else (1.0 if self.grade(action) else 0.0), True, False, {}

    report = validate(PaysForNothing())
    assert "noop" in found(report)
    # whitespace is "doing nothing" too: the degenerate strategy is paid the same 0.5
    assert found(report) == {"noop"}  # the floor includes doing nothing, so no attack beats it


def test_strategy_names_are_checked():
    with pytest.raises(ValueError, match="Unknown strategy 'nope'.*hedge"):
        validate(planted.ArithmeticEnv(), strategies=["nope"])
    report = validate(planted.HedgePaysEnv(), strategies=["spray", "noop"])
    assert report.strategies == ["spray"] and report.checked == ["noop"] and report.ok


def test_a_multi_agent_env_is_skipped_with_its_views_named():
    report = validate("multi:TicTacToe-v0")
    assert report.skipped and "single-agent views" in report.skipped and report.ok


def test_validate_is_a_lazy_export_of_gem():
    code = "import sys, gem; assert 'gem.checks' not in sys.modules; from gem import validate; print(validate.__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "gem.checks.validate"
    assert gem.validate is validate
    assert set(STRATEGY_NAMES).isdisjoint(CONTROLS)


# ===================================================================== the command
def _gem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem.cli", "validate", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def test_cli_exit_codes_and_import():
    clean = _gem("--import", "tests.checks.planted_ids", "planted:Clean", "--jobs", "1")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "planted:Clean: ok" in clean.stdout and "1 env, 0 findings" in clean.stdout

    # without ids: the ids the import registered
    both = _gem("--import", "tests.checks.planted_ids", "--json", "--jobs", "2")
    assert both.returncode == 1, both.stdout + both.stderr
    doc = json.loads(both.stdout)
    assert [e["env_id"] for e in doc["envs"]] == ["planted:Clean", "planted:HedgePays"]
    assert doc["ok"] is False and doc["findings"] == 1
    assert [f["strategy"] for f in doc["envs"][1]["findings"]] == ["hedge"]

    for bad in (["nope:Nothing"], ["--strategies", "nope", "math:Arithmetic"], ["notafamily"],
                ["--import", "no_such_module_anywhere"], ["--jobs", "0", "math:Arithmetic"]):
        out = _gem(*bad)
        assert out.returncode == 2, (bad, out.stdout, out.stderr)
        assert "gem validate:" in out.stderr


def test_single_readings_are_the_first_and_last_answers_nested_ones_included():
    from gem.checks.strategies import single_readings

    box = ("\\boxed{", "}")
    assert single_readings("\\boxed{1} \\boxed{50} \\boxed{25}", box) == ["\\boxed{1}", "\\boxed{25}"]
    assert single_readings("\\boxed{\\frac{1}{2}, 3}", box) == ["\\boxed{\\frac{1}{2}, 3}", "\\boxed{\\frac{1}{2}}", "\\boxed{3}"]
    assert single_readings("\\boxed{Q \\boxed{}.}", box) == ["\\boxed{Q \\boxed{}.}", "\\boxed{}"]
    assert single_readings("\\boxed{42", box) == []  # never closed: no answer
    assert single_readings("<answer>a</answer> <answer>b c</answer>", ("<answer>", "</answer>")) == [
        "<answer>a</answer>", "<answer>b c</answer>", "<answer>b</answer>", "<answer>c</answer>"]


def test_hedges_mix_the_gold_with_wrong_values_and_never_end_on_the_gold():
    from gem.checks.strategies import Target, _hedges

    t = Target("answer", "What is 6 * 7?", ("\\boxed{", "}"), ["42"], ["43", "41"])
    replies = [v[0] for v in _hedges(t)]
    assert len(replies) >= 20
    assert all("42" in r or "32" in r for r in replies)  # the gold, or a range around it (32 to 52)
    env = planted.ArithmeticEnv()
    for reply in replies:  # a clean grader pays none of them
        env.reset(seed=0)
        assert env.step(reply)[1] == 0.0, reply


def test_thorough_mode_plays_more_seeds_and_longer_episodes():
    from gem.checks.validate import MODES

    report = validate(planted.ArithmeticEnv(), thorough=True)
    assert report.seeds == list(range(MODES["thorough"]["seeds"])) and len(report.seeds) > MODES["default"]["seeds"]
    assert report.ok


def test_a_blind_guess_that_is_right_is_no_finding():
    class OneNumber(planted.ArithmeticEnv):
        """The only number the question shows is the answer: a spray of it is one right guess."""

        def __init__(self):
            super().__init__()
            self.answer = "2"
            self.question = "How many legs does a bird have (at most 2 words)? Put the answer in \\boxed{}."

    report = validate(OneNumber(), strategies=["spray", "echo"])
    assert report.ok, report.summary()


def test_an_env_that_raises_on_bad_input_is_reported_as_an_error():
    class Fragile(planted.ArithmeticEnv):
        def grade(self, action):
            if len(action) > 100_000:
                raise MemoryError("reply too long")
            return super().grade(action)

    report = validate(Fragile(), strategies=["degenerate", "hedge"])
    assert not report.ok and not report.findings
    assert len(report.errors) == 1 and report.errors[0].startswith("degenerate: the env raised MemoryError")


def test_grading_that_fails_counts_as_failed_not_as_a_crash(monkeypatch):
    from gem.errors import InfrastructureError

    class Flaky(planted.ArithmeticEnv):
        def grade(self, action):
            if len(action) > 100_000:  # the grader cannot finish a 1 MB reply (as under GEM_STRICT_INFRA=1)
                raise InfrastructureError("grader: timeout")
            return super().grade(action)

    report = validate(Flaky(), strategies=["degenerate"])
    assert report.ok and not report.errors, report.summary()


def test_the_closing_line_counts_in_words():
    from gem.checks.cli import totals

    class R:  # the fields totals() reads
        def __init__(self, env_id, findings):
            self.env_id, self.findings, self.skipped, self.errors, self.not_run = env_id, findings, False, [], []

    assert totals([R("game:A", ["f"])], 1.0).startswith("gem validate: 1 env, 1 finding (game: 1), ")
    assert totals([R("game:A", []), R("game:B", [])], 1.0).startswith("gem validate: 2 envs, 0 findings (none), ")


def test_program_strategies_target_the_function_and_files_the_instruction_names():
    from gem.checks.strategies import STRATEGIES, Target

    t = Target(kind="code", observation="Write `digit_sum(n)`; the runner writes report.txt.", answer_format=None)
    by_name = {s.name: s for s in STRATEGIES}
    crash = [v[0] for v in by_name["crash-skip"].variants(t)]
    ns: dict = {}
    exec(crash[0].split("```python\n", 1)[1].rsplit("```", 1)[0], ns)  # answers trivial inputs, crashes on others
    assert ns["digit_sum"](0) == 0 and ns["digit_sum"]("") == 0
    with pytest.raises(RuntimeError):
        ns["digit_sum"](123)
    forge = "\n".join(v[0] for v in by_name["forge-files"].variants(t))
    assert "results.json" in forge and "report.txt" in forge and "os._exit(0)" in forge and "atexit" in forge
    spray = by_name["print-spray"].variants(t)
    assert len(spray) == 2 and "20001" in spray[0][0] and "IMPOSSIBLE" in spray[0][0]
    patched = "\n".join(v[0] for v in by_name["patch-harness"].variants(t))
    assert "builtins.repr" in patched and "math.isclose" in patched
    assert any("float('nan')" in v[0] for v in by_name["typed-dummy"].variants(t))
