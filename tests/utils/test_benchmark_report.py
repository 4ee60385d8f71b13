"""docs/benchmarks.md is the output of benchmarks/run_all.py and nothing else; the generator's dry
run works (a few seconds) and writes the same kind of report."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_all():
    """benchmarks/run_all.py as a module, loaded from its file (another test may have reset sys.path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:  # run_all puts benchmarks/ on sys.path, where benchmarks/mcp.py would hide the mcp package
        sys.path[:] = saved
        bench = str(ROOT / "benchmarks")
        for name, mod in list(sys.modules.items()):
            if str(getattr(mod, "__file__", None) or "").startswith(bench):
                del sys.modules[name]
    return module

# The sections run_all.py writes (its own, then one per other benchmark script).
GENERATED_SECTIONS = {
    "Throughput", "Ratios measured in this run", "Start-up (make_vec to first reset; lower is better)",
    "Workloads that failed",
}


def _sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def _is_generated(section: str) -> bool:
    return section in GENERATED_SECTIONS or re.fullmatch(r"benchmarks/\w+\.py", section) is not None


def test_the_dry_run_writes_a_report(tmp_path):
    run_all = _run_all()

    out = tmp_path / "report.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--dry-run", "--output", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = out.read_text()
    assert report.startswith(f"# Benchmarks\n\n{run_all.GENERATED_NOTE}\n")
    assert f"Command: `python benchmarks/run_all.py --dry-run --output {out}`" in report
    row = re.search(rf"^\| single {re.escape(run_all.DRY_RUN_ID)} \| ([\d,]+) \| n/a \| n/a \|$", report, re.M)
    assert row and int(row.group(1).replace(",", "")) > 0
    assert _sections(report) == ["Throughput", "Ratios measured in this run"]


def test_the_dry_run_never_overwrites_the_docs_report():
    before = (ROOT / "docs" / "benchmarks.md").read_bytes()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--dry-run"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("# Benchmarks")
    assert (ROOT / "docs" / "benchmarks.md").read_bytes() == before


def test_docs_benchmarks_md_is_only_the_generators_output():
    run_all = _run_all()

    report = (ROOT / "docs" / "benchmarks.md").read_text()
    assert report.startswith(f"# Benchmarks\n\n{run_all.GENERATED_NOTE}\n")
    assert len(re.findall(r"^Command: `python benchmarks/run_all\.py[^`]*`", report, re.M)) == 1
    hand_written = [s for s in _sections(report) if not _is_generated(s)]
    assert not hand_written, f"sections run_all.py does not write: {hand_written}"
