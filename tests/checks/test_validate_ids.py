"""``gem validate`` over registered ids: one per family in the default suite, every offline id in
the slow suite (the same run as ``gem validate`` with no ids)."""

from __future__ import annotations

import pytest

import gem
from gem.checks import validate
from gem.checks.cli import offline_ids, run_ids
from tests.conftest import needs_extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# One id per family (kind): (id, kind, options). code:Bundled leaves out the timeout strategy here
# (each of its variants waits for the run's wall-clock limit); the slow test plays it.
REPRESENTATIVE = [
    ("math:Arithmetic", "answer", {}),
    ("logic:RuleReasoning-d1", "answer", {}),
    ("qa:FictionalSearch", "answer", {}),
    ("rg:basic_arithmetic", "answer", {}),
    ("game:GuessTheNumber-v0-easy", "game", {}),
    ("game:Sudoku-v0-easy", "game", {}),
    ("multi:KuhnPoker-v0-vs-random", "game", {}),
    ("game:WikiGame-v0-easy", "game", {}),
    ("webshop:train-text", "game", {}),
    ("code:Bundled", "code", {"seeds": [0], "strategies": ["degenerate", "always-equal", "forge-verdict", "patch-harness",
                                                           "plant-files", "reference", "noop", "replay"]}),
    ("terminal:CountLines", "shell", {}),
    ("swe:Slugify", "shell", {}),
]

# Offline ids that expose no answer, reference solution or solver: their answer attacks and
# reference control cannot run, so `gem validate --strict` fails on them. (rg:rush_hour and
# rg:boxnet, which reasoning-gym scores by simulation, get reference answers from solvers.)
KNOWN_GAPS: set[str] = set()


def _needs(env_id: str) -> None:
    extra = gem.spec(env_id).extra
    if extra:
        needs_extra(extra)


@pytest.mark.parametrize("env_id, kind, options", REPRESENTATIVE, ids=[r[0] for r in REPRESENTATIVE])
def test_one_id_per_family_has_no_finding(env_id, kind, options):
    _needs(env_id)
    report = validate(env_id, **options)
    assert report.kind == kind
    assert report.ok, report.summary()
    assert report.strategies and "noop" in report.checked and "replay" in report.checked
    assert "reference" in report.checked  # every family here has a solver, a reference or a gold answer
    # doing nothing never earns more than 0
    assert all(v <= 0 for v in report.floors["noop"].values()), report.floors


def test_offline_ids_leave_out_the_hub_backed_ones():
    ids = offline_ids()
    assert "math:Arithmetic" in ids and "terminal:CountLines" in ids
    assert "math:GSM8K" not in ids and "code:PrimeIntellect15k" not in ids
    # the 32 hub-backed ids (tests/envs/test_all_envs.py); the 4 multi-agent games play through their views
    assert len(ids) == len(gem.list_envs()) - 32 - 4


@pytest.mark.slow
@pytest.mark.timeout(3600)  # about 10 minutes on 2 cores (docs/validate.md)
def test_every_offline_id_has_no_finding_and_every_gap_is_known():
    reports = run_ids(offline_ids(), {}, [], jobs=2)
    findings = {r.env_id: sorted({f.strategy for f in r.findings}) for r in reports if r.findings}
    errors = {r.env_id: r.errors for r in reports if r.errors}
    assert not findings and not errors, (findings, errors)
    skipped = {r.env_id: r.skipped for r in reports if r.skipped}
    assert all("extra" in why for why in skipped.values()), skipped
    gaps = {r.env_id for r in reports if r.not_run and not r.skipped}
    installed = {r.env_id for r in reports if not r.skipped}
    assert gaps == KNOWN_GAPS & installed, {r.env_id: r.not_run for r in reports if r.not_run}
