"""The conformance runner and the 2.x API: ``--tag`` (a tag exported from a
git checkout, or the checkout's own tag or version), TCLNATS_API=2 for our
sides of a 2.x suite, the check that they load tclnats_py's 2.0.4, and the
list of tests the original passes that a side does not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import pytest

from tclnats_py.compat import runner

needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="tclsh not installed")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

# a stand-in for a nats-tcl 2.x checkout (our own few lines): an "original"
# package providing 2.0.4, and a suite that checks which API each side gets
FAKE_INDEX = """\
package ifneeded nats {version} [list apply {{{{}} {{
    namespace eval ::nats {{ proc implementation {{}} {{ return fake-original }} }}
    package provide nats {version}
}}}}]
"""
ALL_TCL = """\
package require tcltest 2.5
set thisDir [file dirname [file normalize [info script]]]
tcltest::workingDirectory $thisDir
tcltest::configure -testdir $thisDir -tmpdir [file join $thisDir temp] -verbose pe {*}$argv
exit [tcltest::runAllTests]
"""
V2_TEST = """\
package require tcltest 2.5
namespace import ::tcltest::test
package require nats
set ours [expr {$::env(TCLNATS_COMPAT_SIDE) ne "original"}]
test gen-1 "every side gets the 2.x API" -body { package present nats } -result 2.0.4
test gen-2 "our sides run with TCLNATS_API=2, the original without" -body {
    expr {[info exists ::env(TCLNATS_API)] ? $::env(TCLNATS_API) : "unset"}
} -result [expr {$ours ? 2 : "unset"}]
test gen-3 "ours is tclnats_py's 2.x face" -body {
    expr {$ours ? [llength [info commands ::nats::kv_store]] : [llength [info commands ::nats::implementation]]}
} -result 1
tcltest::cleanupTests
"""


def _checkout(path, version="2.0.4"):
    (path / "tests").mkdir(parents=True)
    (path / "pkgIndex.tcl").write_text(FAKE_INDEX.format(version=version))
    (path / "tests" / "all.tcl").write_text(ALL_TCL)
    (path / "tests" / "gen.test").write_text(V2_TEST)
    return path


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_api_generation_and_loaded_version():
    assert [runner.api_generation(v) for v in ("2.0.4", "2.1", "3.2.1", "3.0", None, "x.y")] == [2, 2, 3, 3, 3, 3]
    assert runner.loaded_version("tclnats_py /x/pkgIndex.tcl (nats 2.0.4)") == "2.0.4"
    assert runner.loaded_version("other apply {{dir} {...}} /x (nats 3.2.1)") == "3.2.1"
    assert runner.loaded_version("tclnats_py /x/pkgIndex.tcl") is None


def test_side_env_sets_tclnats_api_for_our_sides_of_a_2x_suite_only():
    base = {"PATH": "/usr/bin", "TCLNATS_API": "2"}
    two = {"bin": "/ws/bin", "original": "/ws/original", "nats_tcl_version": "2.0.4"}
    three = dict(two, nats_tcl_version="3.2.1")
    assert "TCLNATS_API" not in runner.side_env("original", two, base=base)
    for side in ("tclnats", "extension"):
        assert runner.side_env(side, two, base=base)["TCLNATS_API"] == "2"
        assert "TCLNATS_API" not in runner.side_env(side, three, base=base)


def test_not_kept_lists_what_the_original_passes_and_a_side_does_not():
    def side(tests):
        return {"available": True, "files": {"a.test": {"tests": tests}}}
    sides = {"original": side({"t1": "PASSED", "t2": "FAILED", "t3": "PASSED"}),
             "tclnats": side({"t1": "PASSED", "t2": "PASSED", "t3": "PASSED"}),
             "extension": side({"t1": "PASSED", "t2": "FAILED", "t3": "FAILED"})}
    assert runner.not_kept(sides) == {"tclnats": [], "extension": ["a.test t3"]}
    assert runner.not_kept({"tclnats": sides["tclnats"]}) == {}


@needs_git
def test_tag_is_exported_from_a_git_checkout_or_detected(tmp_path):
    repo = _checkout(tmp_path / "repo")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "2.0.4")
    _git(repo, "tag", "v2.0.4")
    (repo / "pkgIndex.tcl").write_text(FAKE_INDEX.format(version="3.0.0"))
    _git(repo, "commit", "-q", "-am", "3.0.0")
    ws = tmp_path / "ws"
    ws.mkdir()
    folder, tag = runner.resolve_checkout(str(repo), "v2.0.4", str(ws))
    assert tag == "v2.0.4" and folder.startswith(str(ws))
    assert runner._nats_version(folder) == "2.0.4"          # the tag's files, not HEAD's
    assert runner.resolve_checkout(str(repo), None, str(ws)) == (str(repo), "v3.0.0")   # HEAD has no tag
    _git(repo, "tag", "v3.0.0")
    assert runner.resolve_checkout(str(repo), None, str(ws)) == (str(repo), "v3.0.0")
    with pytest.raises(runner.PrepareError):
        runner.resolve_checkout(str(repo), "v9.9.9", str(ws))
    plain = _checkout(tmp_path / "plain")
    assert runner.resolve_checkout(str(plain), "v2.0.4", str(ws)) == (str(plain), "v2.0.4")
    with pytest.raises(runner.PrepareError):
        runner.resolve_checkout(str(plain), "v3.2.1", str(ws))   # not a repository: its version must match


def _has_tclnats_tclsh() -> bool:
    cmd = runner.find_tclnats_tclsh()
    return os.path.isfile(cmd) or shutil.which(cmd) is not None


@needs_tclsh
@pytest.mark.tcl
@pytest.mark.skipif(not _has_tclnats_tclsh(), reason="tclnats-tclsh is not installed")
def test_a_2x_suite_runs_our_sides_with_the_2x_api(tmp_path, capsys):
    checkout = _checkout(tmp_path / "nats-tcl")
    out = tmp_path / "r.json"
    code = runner.main([str(checkout), "--tag", "v2.0.4", "--side", "all", "--json", str(out), "--no-netns"])
    report = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert report["tag"] == "v2.0.4" and report["nats_tcl_version"] == "2.0.4"
    assert "(TCLNATS_API=2)" in printed
    for side in ("tclnats", "extension"):
        s = report["sides"][side]
        assert s["available"], s
        assert s["provider"].startswith("tclnats_py ") and s["provider"].endswith("(nats 2.0.4)")
        assert s["totals"]["passed"] == 3 and s["totals"]["failed"] == 0, s
    assert report["sides"]["original"]["totals"]["passed"] == 3
    assert report["not_kept"] == {"tclnats": [], "extension": []}
    assert "tests the original passes that extension does not: 0" in printed


@needs_tclsh
@pytest.mark.tcl
def test_a_side_serving_the_wrong_generation_is_refused(tmp_path):
    """A 3.2.1 package on our side of a 2.x suite is not measured."""
    checkout = _checkout(tmp_path / "nats-tcl")
    lib = tmp_path / "three"
    lib.mkdir()
    (lib / "pkgIndex.tcl").write_text(textwrap.dedent("""\
        package ifneeded nats 3.2.1 [list apply {{dir} {
            namespace eval ::tclnats {}
            set ::tclnats::provider [list tclnats_py [file join $dir pkgIndex.tcl] 3.2.1]
            package provide nats 3.2.1
        }} $dir]
    """))
    wrapper = tmp_path / "three-tclsh"
    wrapper.write_text(f'#!/bin/sh\nTCLLIBPATH="{lib}" exec tclsh "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "r.json"
    code = runner.main([str(checkout), "--side", "tclnats", "--tclnats-tclsh", str(wrapper),
                        "--json", str(out), "--no-netns"])
    side = json.loads(out.read_text())["sides"]["tclnats"]
    assert code == 1 and side["available"] is False
    assert "loaded the wrong package" in side["reason"] and "(nats 3.2.1)" in side["reason"]
