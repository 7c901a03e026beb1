"""The Tcl face's counters, batch direct gets and atomic batches against nats-server 2.10
(no JetStream API level): ErrServerTooOld before any request of theirs;
KV get_many reads key by key there.
(tests/tcl runs its tcltest files against 2.15.1 only, so this one runs a
script of its own in a tclnats-tclsh process.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.tcl

SCRIPT = r"""
package require nats
set conn [nats::connection new old -log_chan stdout -log_level error]
$conn configure -servers [lindex $argv 0]
$conn connect
set js [$conn jet_stream -timeout 2000]
$js add_stream OLDT -subjects [list oldt.*] -allow_direct true
$js publish oldt.a x
proc code {script} {
    try { uplevel 1 $script } trap NATS {msg opts} { return "[lindex [dict get $opts -errorcode] 1]: $msg" }
    return ok
}
puts "RESULT add [code {$js counter_add OLDT oldt.a 1}]"
puts "RESULT get [code {$js counter_get OLDT oldt.a}]"
puts "RESULT batch [code {$js stream_direct_get OLDT -batch 2}]"
puts "RESULT multi [code {$js stream_direct_get OLDT -multi_last oldt.a}]"
puts "RESULT atomic [code {$js publish_batch {{oldt.a x} {oldt.b y}}}]"
puts "RESULT count [dict get [$js stream_info OLDT] state messages]"
puts "RESULT single [dict get [$js stream_direct_get OLDT -last_by_subj oldt.a] seq]"
set kv [$js create_kv_bucket OLDKV]
$kv put a 1
puts "RESULT kv [dict keys [$kv get_many {a b}]] [dict get [$kv get_many {a b}] a value]"
$js delete_kv_bucket OLDKV
$js delete_stream OLDT
$conn destroy
"""


@pytest.mark.feature("counters", "direct_batch", "atomic_batch", "api_level")
def test_counters_and_batch_gets_refused_by_a_2_10_server(old_js_server, tmp_path):
    exe = shutil.which("tclnats-tclsh")
    cmd = [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]
    path = tmp_path / "old.tcl"
    path.write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    p = subprocess.run(cmd + [str(path), old_js_server.url], capture_output=True, text=True, timeout=120,
                       check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = dict(line.split(" ", 2)[1:] for line in p.stdout.splitlines() if line.startswith("RESULT "))
    for key, version in (("add", "2.12"), ("get", "2.12"), ("batch", "2.11"), ("multi", "2.11"), ("atomic", "2.12")):
        assert out[key].startswith("ErrServerTooOld: ") and version in out[key], out
    assert out["count"] == "1"  # nothing of the atomic batch was sent
    assert out["single"] == "1"
    assert out["kv"] == "a 1"  # KV get_many falls back to one get per key
