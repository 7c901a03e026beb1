"""compat/natspy_runner.py, run on a stand-in nats-py checkout
(tests/natspy/natspy_fixture: a tiny ``nats`` package and one test file): both
sides run, outcomes are compared, private attributes are found and sorted
into served (counted) and not served (left out)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tclnats_py.compat import natspy_runner as R

FIXTURE = Path(__file__).parent / "natspy_fixture"
ROOT = Path(__file__).parent.parent.parent


def test_private_names_and_uses():
    names = R.nats_private_names(FIXTURE / "nats" / "src" / "nats")
    assert {"_server_pool", "_hidden_state", "_Errors"} <= names
    uses = R.private_uses(FIXTURE / "nats" / "tests" / "sample_suite.py", names)
    assert uses == {"test_served_private_attribute": ["_server_pool"],
                    "test_unserved_private_attribute": ["_hidden_state"]}


def test_runner_on_the_fixture(tmp_path):
    report = tmp_path / "report.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "tclnats_py.compat.natspy_runner", str(FIXTURE), "--no-netns",
                        "--file", "sample_suite.py", "--json", str(report)],
                       capture_output=True, text=True, env=env, timeout=300)
    out = r.stdout
    # a counted test passes on the original and fails on ours: exit 1, and it is listed
    assert r.returncode == 1, out + r.stderr
    rep = json.loads(report.read_text())
    res = rep["results"]
    assert res["natspy"]["sample_suite.py"] == {
        "test_timeout_is_asyncio_timeout": "passed", "test_served_private_attribute": "passed",
        "test_unserved_private_attribute": "passed", "test_only_on_the_original": "passed",
        "test_a_file_named_from_the_repository_root": "passed", "test_skipped": "skipped"}
    ours = res["tclnats"]["sample_suite.py"]
    assert ours["test_timeout_is_asyncio_timeout"] == "passed"
    assert ours["test_a_file_named_from_the_repository_root"] == "passed"
    assert ours["test_only_on_the_original"] == "failed"
    assert ours["test_skipped"] == "skipped"
    assert rep["must_pass_failed"] == ["sample_suite.py::test_only_on_the_original"]
    # the unserved private attribute is left out; _server_pool is served, so counted
    assert rep["private"] == {"sample_suite.py": {"test_unserved_private_attribute": ["_hidden_state"]}}
    assert rep["served_private"] == {"sample_suite.py": {"test_served_private_attribute": ["_server_pool"]}}
    assert "sample_suite.py::test_only_on_the_original: passed -> failed" in out
    assert "private-attribute tests: 1 of 6" in out
    # each side names the package it loaded: the stand-in's nats, this tree's tclnats_py
    ours_pkg = str(ROOT / "tclnats_py" / "__init__.py")
    assert rep["imports"] == {"natspy": str(FIXTURE / "nats" / "src" / "nats" / "__init__.py"), "tclnats": ours_pkg}
    assert f"side tclnats imports {ours_pkg}" in out


def test_the_suite_runs_where_nats_py_ci_runs_it(tmp_path):
    """From the folder holding the ``nats/`` checkout, where the suite's server
    configurations find ./nats/tests/certs/...; a checkout named otherwise
    runs in itself."""
    assert R.suite_cwd(FIXTURE / "nats") == FIXTURE
    other = tmp_path / "natspy-suite"
    assert R.suite_cwd(other) == other


def test_natspy_side_on_the_installed_nats_py(tmp_path):
    """--natspy-installed: the natspy side imports the nats-py installed for
    this Python, not the checkout's src/ (none installed: the import fails)."""
    root = FIXTURE / "nats"
    theirs = subprocess.run([sys.executable, "-c", "import nats; print(nats.__file__)"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    installed = theirs.stdout.strip() if theirs.returncode == 0 else None
    got = R.imported_from("natspy", root, tmp_path, installed=True)
    assert got == installed if installed else got.startswith("import failed: ")
    assert R.imported_from("natspy", root, tmp_path) == str(root / "src" / "nats" / "__init__.py")
