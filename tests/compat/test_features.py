"""compat/features.py: the feature x face page, and the check that it claims
only what a run passed."""

import glob
import os
import re

import pytest

from tclnats_py.compat import features as F

pytestmark = pytest.mark.unit

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*rows):
    return {"tests": [{"nodeid": n, "features": f, "outcome": o} for n, f, o in rows]}


def test_face_of_a_node_is_its_folder():
    assert F.face_of("tests/aio/test_js_ttl.py::test_x") == "asyncio"
    assert F.face_of("/src/tests/tclface/test_tcl_suite.py::test_tcl[js_ttl.test::ttl-kv]") == "tcl"
    assert F.face_of("tests/natspy/test_natspy_216.py::t") == "natspy"
    assert F.face_of("tests/engine/test_js_priority.py::t") is None


def test_cells_count_outcomes_and_render_says_them():
    run = _run(("tests/aio/a.py::t1", ["msg_ttl"], "passed"),
               ("tests/aio/a.py::t2", ["msg_ttl", "api_level"], "passed"),
               ("tests/tclface/test_tcl_suite.py::x", ["msg_ttl"], "failed"),
               ("tests/natspy/b.py::t", ["counters"], "skipped"))
    c = F.cells(run)
    assert c[("msg_ttl", "asyncio")] == {"passed": 2, "failed": 0, "skipped": 0}
    assert c[("msg_ttl", "tcl")]["failed"] == 1
    page = F.render(run)
    ttl = next(line for line in page.splitlines() if line.startswith("| Per-message TTL"))
    cols = [p.strip() for p in ttl.strip("|").split("|")]
    assert cols[3] == "yes (2 tests)" and cols[5] == "FAILED (1 of 1)"
    counters = next(line for line in page.splitlines() if line.startswith("| Counters"))
    assert [p.strip() for p in counters.strip("|").split("|")][6] == ""   # natspy: skipped only


def test_check_refuses_claims_the_run_does_not_back():
    good = _run(("tests/aio/a.py::t1", ["msg_ttl"], "passed"), ("tests/aio/a.py::t2", ["msg_ttl"], "passed"))
    page = F.render(good)
    assert F.check(good, page) == []
    fewer = _run(("tests/aio/a.py::t1", ["msg_ttl"], "passed"))
    assert "counts 2 tests, 1 passed" in F.check(fewer, page)[0]
    failed = _run(("tests/aio/a.py::t1", ["msg_ttl"], "passed"), ("tests/aio/a.py::t2", ["msg_ttl"], "failed"))
    assert F.check(failed, page)
    assert F.check(_run(), page)
    # more passing than the page says is fine: the page is a floor
    more = _run(*[(f"tests/aio/a.py::t{i}", ["msg_ttl"], "passed") for i in range(3)])
    assert F.check(more, page) == []


def test_every_claimed_feature_is_known():
    known = {f.id for f in F.FEATURES}
    claimed = set()
    for path in glob.glob(os.path.join(TESTS, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            for args in re.findall(r"pytest\.mark\.feature\(([^)]*)\)", f.read()):
                claimed.update(re.findall(r"\"(\w+)\"", args))
    for path in glob.glob(os.path.join(TESTS, "tcl", "*.test")):
        with open(path, encoding="utf-8") as f:
            for line in re.findall(r"^# feature:(.*)$", f.read(), re.M):
                claimed.update(line.split())
    assert claimed, "no test claims a feature"
    assert claimed <= known, sorted(claimed - known)


def test_the_docs_page_names_every_feature():
    with open(os.path.join(os.path.dirname(TESTS), "docs", "features.md"), encoding="utf-8") as f:
        page = f.read()
    for feat in F.FEATURES:
        assert f"| {feat.title} |" in page, feat.id
