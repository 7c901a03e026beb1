"""tclnats_py.compat.conformance: counts, verdict and report from the runner's JSON."""

import pytest

from tclnats_py.compat import conformance

pytestmark = pytest.mark.unit


def _report(ours_fail=(), missing=()):
    def side(fails):
        tests = {"t-1": "PASSED", "t-2": "PASSED", "t-3": "SKIPPED"}
        for t in fails:
            tests[t] = "FAILED"
        return {"available": True, "files": {"a.test": {"tests": tests}},
                "provider": "tclnats_py /x/tcl/pkgIndex.tcl (nats 3.2.1)"}
    sides = {"original": dict(side(()), provider="other apply {{dir} {source x}} /w/original (nats 3.2.1)"),
             "tclnats": side(ours_fail), "extension": side(())}
    for name in missing:
        sides[name] = {"available": False, "reason": "tclnats-tclsh not found"}
    not_kept = {"tclnats": [f"a.test {t}" for t in ours_fail], "extension": []}
    return {"sides": sides, "problems": [f"{n}: unavailable (x)" for n in missing], "not_kept": not_kept,
            "differ": [], "nats_server": "/bin/nats-server", "netns": True}


def test_counts_leave_skipped_tests_out():
    assert conformance.counts(_report()) == {"original": (2, 2), "tclnats": (2, 2), "extension": (2, 2)}


def test_a_test_the_original_passes_and_ours_fails_is_a_verdict():
    assert conformance.verdict(_report()) == []
    assert conformance.verdict(_report(ours_fail=["t-2"])) == ["tclnats: a.test t-2 passes on the original only"]


def test_a_side_that_did_not_run_is_a_verdict():
    assert conformance.verdict(_report(missing=["extension"])) == ["extension: unavailable (x)"]


def test_the_report_names_the_packages_and_the_verdict():
    md = conformance.markdown("2026-01-02", {"v3.2.1": _report(ours_fail=["t-2"])}, "a machine")
    assert "# nats-tcl conformance, 2026-01-02" in md
    assert "| original | 2 | 2 | `original: /w/original (nats 3.2.1)` |" in md
    assert "| tclnats | 1 | 2 |" in md
    assert "NOT conforming: tclnats: a.test t-2 passes on the original only" in md


def test_without_a_repository_it_says_how_to_get_one(monkeypatch, capsys):
    monkeypatch.delenv(conformance.ENV, raising=False)
    assert conformance.main([]) == 2
    assert "TCLNATS_NATS_TCL" in capsys.readouterr().err
