"""tclnats_py.compat.bench is a hard gate: a side that fails, or a figure
whose count comes back short, makes the run exit non-zero; the raw-socket
ceiling runs both ways of waiting."""

import os
import shutil
import stat
import subprocess
import sys

import pytest

from tclnats_py.compat import bench_raw

pytestmark = [pytest.mark.tcl]

TCLSH = shutil.which("tclsh")


def _fake_tclsh(tmp_path, body: str) -> str:
    """A tclsh wrapper: runs ``body`` (shell) before handing over to tclsh."""
    path = tmp_path / "tclsh"
    path.write_text(f"#!/bin/sh\n{body}\nexec {TCLSH} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _bench(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "tclnats_py.compat.bench", "--short", "--no-raw", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(TCLSH is None, reason="no tclsh on PATH")
def test_a_side_whose_workload_dies_fails_the_run(tmp_path):
    # package require nats works (the provider check passes); the workload exits 3
    tclsh = _fake_tclsh(tmp_path, 'case "$1" in *bench_workload.tcl) exit 3;; esac')
    r = _bench("--tclsh", tclsh, "request")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "exited with status 3" in r.stderr
    assert "FAILED request: no figure printed" in r.stderr


@pytest.mark.skipif(TCLSH is None, reason="no tclsh on PATH")
def test_a_publish_count_short_at_the_server_fails_the_run(tmp_path):
    # every tenth publish is dropped before it reaches the client: the
    # workload cannot see it, the server's count of the connection does
    inject = tmp_path / "lossy.tcl"
    inject.write_text(
        "set script [lindex $argv 0]\n"
        "set argv [lrange $argv 1 end]\n"
        "set argc [llength $argv]\n"
        "set argv0 $script\n"
        "package require nats\n"
        "oo::class create ::lossy {\n"
        "    method publish {args} {\n"
        "        if {[incr ::lossy_n] % 10 == 0} { return }\n"
        "        next {*}$args\n"
        "    }\n"
        "}\n"
        "oo::define ::nats::connection mixin ::lossy\n"
        "source $script\n")
    tclsh = _fake_tclsh(tmp_path, f'case "$1" in *bench_workload.tcl) exec {TCLSH} {inject} "$@";; esac')
    r = _bench("--tclsh", tclsh, "publish")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED publish: the server received 4500 of 5000 messages" in r.stderr


@pytest.mark.skipif(TCLSH is None, reason="no tclsh on PATH")
def test_an_intact_side_passes_and_checks_its_counts(tmp_path):
    r = _bench("publish", "request", "kv_put", "kv_get")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAILED" not in r.stdout + r.stderr
    for fig in ("publish", "request", "kv_put", "kv_get"):
        assert any(line.startswith(fig + " ") for line in r.stdout.splitlines()), r.stdout


def test_the_ceiling_takes_the_faster_way_of_waiting(js_server):
    best, each = bench_raw.ceiling(js_server.url, 1000, ["request", "kv_get"], tag="ceil")
    for fig in ("request", "kv_get"):
        assert set(each[fig]) == {"block", "spin"}
        assert best[fig] == max(each[fig].values()) > 0


def test_a_wrong_way_of_waiting_is_refused(nats_server):
    with pytest.raises(ValueError, match="wait must be one of"):
        bench_raw.run(nats_server.url, 100, ["request"], wait="sleep")
