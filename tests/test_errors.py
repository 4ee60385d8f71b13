import pytest

from gem.errors import DependencyNotInstalled, InfrastructureError, missing_extra, report_infra_failure


def test_missing_extra_names_feature_package_and_extra():
    err = missing_extra("SearchTool", "search", "requests")
    assert isinstance(err, DependencyNotInstalled) and isinstance(err, ImportError)
    assert str(err) == (
        "SearchTool needs requests, from the 'search' extra: pip install -e \".[search]\" in the GEM checkout"
    )


def test_infra_failure_recorded_or_raised(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA", raising=False)
    info = {}
    record = report_infra_failure(info, "grader", TimeoutError("took 10 s"))
    assert info["infra_error"] == record == {"component": "grader", "type": "TimeoutError", "message": "took 10 s"}
    monkeypatch.setenv("GEM_STRICT_INFRA", "1")
    with pytest.raises(InfrastructureError, match="grader failed: TimeoutError: took 10 s"):
        report_infra_failure({}, "grader", TimeoutError("took 10 s"))
