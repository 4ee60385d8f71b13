"""The prober against planted holes it was never tuned on: each env of ``corpus`` has one hole that a
policy would find; its twin (``fixed=True``) has none. Each hole must be caught by its class of
attack, no twin may be flagged, and docs/validate.md shows the recall this file computes."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from gem.checks import validate
from tests.checks import corpus, corpus_blind, corpus_blind2

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
DOC = Path(__file__).resolve().parents[2] / "docs" / "validate.md"
# Holes the prober does not catch by their class yet (each listed in docs/validate.md's table).
MISSED = {"HelpDeskChat"}


@pytest.fixture(scope="module")
def reports():
    warnings.simplefilter("ignore")
    return {cls.__name__: (validate(cls(), **corpus.options(cls)), validate(cls(fixed=True), **corpus.options(cls)))
            for cls, _ in corpus.CORPUS}


def test_the_corpus_is_large_and_written_without_gems_names():
    assert len(corpus.CORPUS) >= 40
    per_class = {}
    for cls, klass in corpus.CORPUS:
        per_class[klass] = per_class.get(klass, 0) + 1
    assert set(per_class) == set(corpus.CLASSES) and min(per_class.values()) >= 4, per_class
    for cls, _ in corpus.CORPUS:  # the gold is never kept where GEM keeps it
        env = cls()
        env.reset(seed=0)
        assert getattr(env, "answer", None) is None and not callable(getattr(env, "reference_solution", None))


@pytest.mark.parametrize("cls, klass", corpus.CORPUS, ids=[c.__name__ for c, _ in corpus.CORPUS])
def test_each_hole_is_caught_by_its_class_and_its_twin_is_clean(reports, cls, klass):
    hole, twin = reports[cls.__name__]
    assert not hole.errors and not twin.errors, (hole.errors, twin.errors)
    assert twin.ok, twin.summary()  # the false-positive control
    if cls.__name__ in MISSED:
        assert not corpus.caught_by(hole, klass), f"{cls.__name__} is caught now: take it out of MISSED"
        return
    assert corpus.caught_by(hole, klass), hole.summary()
    finding = next(f for f in hole.findings if f.strategy in corpus.CLASSES[klass])
    if finding.kind == "exploit":  # an attack: its actions, and more than the floor (or the success level)
        assert finding.actions and (finding.reward > finding.floor or "success level" in finding.reason), finding


def test_the_doc_shows_the_recall_computed_here(reports):
    counts: dict[str, tuple[int, int]] = {}
    for cls, klass in corpus.CORPUS:
        hit, total = counts.get(klass, (0, 0))
        counts[klass] = (hit + corpus.caught_by(reports[cls.__name__][0], klass), total + 1)
    table = corpus.recall_table(counts)
    assert table in DOC.read_text(), f"docs/validate.md's recall table is out of date; it is now:\n{table}"


def test_gold_kept_anywhere_is_found_by_playing_it(reports):
    sources = {name: r[0].gold_source or "" for name, r in reports.items()}
    assert "env._secret" in sources["SumAnywhere"]
    assert "env.facts['capital']" in sources["CapitalAnyPart"]
    assert "closure" in sources["ClosureTokens"] and "partial" in sources["PartialTolerance"]
    assert sources["MirrorPrefix"] == "the solver's one reply"
    assert reports["SumAnywhere"][0].kind == "answer"


def test_a_single_turn_env_without_gold_is_not_reported_fully_ok(reports):
    essay = reports["EssayWords"][1]  # the twin: no finding, but no gold either
    assert essay.ok and not essay.complete and "answer attacks" in essay.not_run
    assert "NOT fully checked" in essay.summary() and re.search(r"no gold answer found", essay.summary())


@pytest.mark.parametrize("cls", [c for c, _ in corpus_blind.HOLES], ids=[c.__name__ for c, _ in corpus_blind.HOLES])
def test_each_blind_hole_is_real_and_its_twin_is_honest(cls):
    """The exploit pays the holed env and not its twin; the right answer pays 1 and a wrong one 0 in both."""
    for seed in range(12):
        for fixed in (False, True):
            right = corpus_blind._bisect_policy() if cls is corpus_blind.HiLoGame else corpus_blind.RIGHT[cls]
            assert corpus_blind._episode(cls, fixed, seed, right) == 1.0
            assert corpus_blind._episode(cls, fixed, seed, corpus_blind.WRONG[cls]) <= 0.0
            exploit = corpus_blind._episode(cls, fixed, seed, lambda e, o: corpus_blind.EXPLOITS[cls])
            assert (exploit <= 0.0) if fixed else (exploit > 0.0), (seed, fixed, exploit)
    assert len({cls().reset(seed=s)[0] for s in range(40)}) >= 4


@pytest.mark.parametrize("cls", [c for c, _ in corpus_blind2.HOLES], ids=[c.__name__ for c, _ in corpus_blind2.HOLES])
def test_each_hole_of_the_second_blind_set_is_real(cls):
    """Right play wins and wrong play earns at most 0 in both versions; the exploit pays the hole, not the twin."""
    assert corpus_blind2._check(cls, list(range(12))) == 12
