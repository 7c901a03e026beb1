"""What the server says reaches the Tcl caller whole.

1. The same JetStream management script runs under the original nats-tcl
   3.2.1 (stock tclsh, the package exported from the v3.2.1 tag of the git
   repository of nats-tcl that TCLNATS_NATS_TCL names) and under tclnats-tclsh,
   each against a fresh JetStream server of its own; every result (dicts
   built from the JetStream API's JSON: stream and consumer infos, publish
   acks, stored messages, account info, KV status and entries ...) is
   compared key for key and value for value.  Only values that legitimately
   differ between two runs are left out: times (ISO timestamps anywhere,
   ``created`` in ms, a mirror's ``active``), server ids.  Skipped, saying
   why, when TCLNATS_NATS_TCL is not set, or git or the Debian Tcl packages
   the original needs are absent.
2. update_stream with stream_info's config, unchanged, succeeds on the Tcl
   and the Python face and keeps the fields our tables do not list
   (consumer_limits, allow_msg_ttl, subject_delete_marker_ttl, allow_atomic
   ...); a mirror's and an aggregate's configs (nested objects) round-trip
   as well.  Needs no original.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tkinter

import pytest

from tclnats_py.testing.server import NatsServer

#: a git repository of nats-tcl (clone or bare mirror) with the v3.2.1 tag
SNAPSHOT = os.environ.get("TCLNATS_NATS_TCL", "")
TAG = "v3.2.1"
TIMEOUT = 120



def tclnats_tclsh() -> list[str]:
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


# Every management call nats-tcl's suite makes (jet_stream_mgmt.test,
# jet_stream.test, key_value*.test), each result recorded under a label.
# Errors are recorded as {ERROR errorcode message}.
SCRIPT = r'''
package require nats
set out [lindex $argv 0]
set ::results {}
proc call {label script} {
    if {[catch {uplevel 1 $script} r opts]} {
        set r [list ERROR [dict get $opts -errorcode] $r]
    }
    lappend ::results $label $r
    return $r
}
set conn [nats::connection new PARITY]
$conn configure -servers $::env(NATS_URL)
$conn connect
set js [$conn jet_stream -timeout 5000]

set stream_config [dict create \
    description "My test stream" subjects [list test.*] max_msg_size 1000000 storage memory \
    num_replicas 1 duplicate_window 120000 discard new max_consumers 100 max_msgs 10000 \
    max_msgs_per_subject 1000 retention workqueue allow_direct true max_bytes 10000000 \
    max_age 3600000 allow_rollup_hdrs true deny_delete false metadata {owner parity}]
call add_stream {$js add_stream PARITY_ONE {*}$stream_config}
call add_stream_2 {$js add_stream PARITY_TWO -subjects [list foo.*] -deny_purge true -compression s2}
call add_stream_same_name {$js add_stream PARITY_ONE -subjects [list foo.*] -deny_purge true}
call add_stream_overlap {$js add_stream BAD -subjects [list test.1 bla.*]}
call stream_info {$js stream_info PARITY_ONE}
# a config read back from the server, changed and given back whole
set cfg_back [dict get [$js stream_info PARITY_ONE] config]
dict set cfg_back max_msgs_per_subject 250
dict set cfg_back duplicate_window 45000
call update_stream_from_info {$js update_stream PARITY_ONE {*}$cfg_back}
# the storage type cannot change: the server's error must reach Tcl alike
set cfg_storage [dict get [$js stream_info PARITY_ONE] config]
dict set cfg_storage storage file
call update_stream_non_editable {$js update_stream PARITY_ONE {*}$cfg_storage}
call update_stream_2 {$js update_stream PARITY_TWO -subjects [list foo.*] -deny_purge true -compression s2 \
    -metadata {NATS-version 2.10 artist Eivor} \
    -subject_transform [nats::make_subject_transform -src foo.* -dest "bar.{{wildcard(1)}}"]}
call stream_info_2 {$js stream_info PARITY_TWO}
call stream_info_missing {$js stream_info NOSUCH}
call publish_1 {$js publish test.1 "test msg 1"}
call publish_2 {$js publish test.2 "test msg 2" -stream PARITY_ONE}
call publish_3 {$js publish foo.1 "foo msg 1"}
set h [nats::msg create test.3 -data "with header"]
nats::header set h h1 v1 h2 v2
call publish_msg {$js publish_msg $h}
call stream_info_after_publish {$js stream_info PARITY_ONE}
call stream_names {lsort [$js stream_names]}
call stream_names_subject {$js stream_names -subject bar.1}
call stream_names_none {$js stream_names -subject bla}

call add_consumer {$js add_consumer PARITY_ONE -name PULL_CONSUMER -ack_wait 10000 -max_deliver 5 \
    -filter_subject test.1 -max_ack_pending 20 -description "pull consumer"}
call add_pull_consumer {$js add_pull_consumer PARITY_ONE PULL_CONSUMER_2 -filter_subject test.2 \
    -inactive_threshold 60000 -max_waiting 8}
call add_push_consumer {$js add_push_consumer PARITY_ONE PUSH_CONSUMER PUSH_CONSUMER_SUBJECT \
    -filter_subject test.3 -idle_heartbeat 5000 -flow_control true}
call add_consumer_bad {$js add_consumer PARITY_ONE -name BAD_CONSUMER -filter_subject nothing.here}
call update_consumer {$js update_consumer PARITY_ONE -name PULL_CONSUMER -ack_wait 10000 -max_deliver 5 \
    -filter_subject test.1 -max_ack_pending 30 -description "pull consumer v2"}
call consumer_info {$js consumer_info PARITY_ONE PULL_CONSUMER}
call consumer_info_missing {$js consumer_info PARITY_ONE NOSUCH}
call consumer_names {lsort [$js consumer_names PARITY_ONE]}
call fetch {lmap m [$js fetch PARITY_ONE PULL_CONSUMER -batch_size 1 -timeout 1000] {nats::msg data $m}}
call consumer_info_after_fetch {$js consumer_info PARITY_ONE PULL_CONSUMER}
call delete_consumer {$js delete_consumer PARITY_ONE PUSH_CONSUMER}
call delete_consumer_missing {$js delete_consumer PARITY_ONE BLA}
call consumer_names_after_delete {lsort [$js consumer_names PARITY_ONE]}

call stream_msg_get {$js stream_msg_get PARITY_ONE -last_by_subj test.3}
call stream_msg_get_seq {$js stream_msg_get PARITY_ONE -seq 2}
call stream_msg_get_missing {$js stream_msg_get PARITY_ONE -last_by_subj test.9}
call stream_direct_get {$js stream_direct_get PARITY_ONE -last_by_subj test.3}
call stream_direct_get_seq {$js stream_direct_get PARITY_ONE -seq 2}
call stream_msg_delete {$js stream_msg_delete PARITY_ONE -seq 2}

$js add_stream SRC -subjects [list src.*] -storage memory
$js publish src.1 a
$js publish src.2 b
call add_mirror {$js add_stream MIRROR -storage memory -mirror [nats::make_stream_source -name SRC -filter_subject src.1]}
call add_aggregate {$js add_stream AGG -storage memory -sources [list \
    [nats::make_stream_source -name SRC -subject_transforms [list [nats::make_subject_transform -src src.* -dest agg.{{wildcard(1)}}]]]]}
after 500
call stream_info_mirror {$js stream_info MIRROR}
call stream_info_aggregate {$js stream_info AGG}

call add_stream_from_json {$js add_stream_from_json {{"name":"FROM_JSON","subjects":["fj.*"],"storage":"memory","max_age":60000000000}}}
call add_consumer_from_json {$js add_consumer_from_json FROM_JSON FJC {{"durable_name":"FJC","ack_policy":"explicit","ack_wait":5000000000}}}

call purge_filter {$js purge_stream PARITY_ONE -filter test.1}
call purge_all {$js purge_stream PARITY_ONE}
call purge_denied {$js purge_stream PARITY_TWO}

set kv [$js create_kv_bucket BUCKET -history 5 -ttl 3600000 -description "parity bucket" -max_value_size 1024]
call kv_put {$kv put key1 value1}
call kv_put_2 {$kv put key1 value2}
call kv_put_3 {$kv put key2 other}
call kv_get {$kv get key1}
call kv_get_revision {$kv get key1 -revision 1}
call kv_get_value {$kv get_value key2}
call kv_history {$kv history key1}
call kv_keys {lsort [$kv keys]}
call kv_status {$kv status}
call kv_delete {$kv delete key2}
call kv_get_deleted {$kv get key2}
set kv2 [$js bind_kv_bucket BUCKET]
call kv_status_bound {$kv2 status}
call kv_buckets {$js kv_buckets}
call kv_stream_info {$js stream_info KV_BUCKET}
call empty_kv_bucket {$js empty_kv_bucket BUCKET}
call bind_missing {$js bind_kv_bucket NOSUCH}

call delete_stream {$js delete_stream PARITY_TWO}
call delete_stream_missing {$js delete_stream PARITY_TWO}
call delete_kv_bucket {$js delete_kv_bucket BUCKET}
call account_info {$js account_info}

set f [open $out w]
fconfigure $f -encoding utf-8
puts -nonewline $f $::results
close $f
$conn destroy
'''

# ISO 8601 times the server writes (created, ts, first_ts, last_ts, last_active, Nats-Time-Stamp ...)
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
# server ids / names (cluster leader, ...)
SERVER_ID = re.compile(r"\bN[A-Z2-7]{55}\b")
# values that are times in another form, by key: KV entries' created (ms), a mirror/source's active (ns)
TIME_KEYS = {"created", "active"}


def _normalise(text: str) -> str:
    return SERVER_ID.sub("<server>", ISO_TIME.sub("<time>", text))


class Comparer:
    """Compares two Tcl values, descending into dicts and lists."""

    def __init__(self):
        self.tcl = tkinter.Tcl()

    def split(self, value):
        try:
            return self.tcl.splitlist(value)
        except tkinter.TclError:
            return None

    def as_dict(self, value):
        items = self.split(value)
        if items is None or len(items) < 2 or len(items) % 2:
            return None
        keys = [str(k) for k in items[0::2]]
        if len(set(keys)) != len(keys):
            return None
        return dict(zip(keys, (str(v) for v in items[1::2])))

    def diff(self, a: str, b: str, path: str, out: list) -> None:
        if _normalise(a) == _normalise(b):
            return
        la, lb = self.split(a), self.split(b)
        # a list of dicts (sources, KV history ...): element by element
        if la and lb and len(la) == len(lb) and all(self.as_dict(x) is not None for x in (*la, *lb)):
            for i, (x, y) in enumerate(zip(la, lb)):
                self.diff(str(x), str(y), f"{path}[{i}]", out)
            return
        da, db = self.as_dict(a), self.as_dict(b)
        if da is not None and db is not None:
            only_a, only_b = sorted(set(da) - set(db)), sorted(set(db) - set(da))
            if only_a or only_b:
                out.append(f"{path}: keys only in the original: {only_a}, only in ours: {only_b}")
            for k in da:
                if k in db and k not in TIME_KEYS:
                    self.diff(da[k], db[k], f"{path}.{k}", out)
            return
        if la is not None and lb is not None and len(la) == len(lb) > 1:
            for i, (x, y) in enumerate(zip(la, lb)):
                self.diff(str(x), str(y), f"{path}[{i}]", out)
            return
        out.append(f"{path}: original {a!r} != ours {b!r}")


def _run_script(cmd: list[str], env_extra: dict, tmp_path, side: str) -> dict:
    script = tmp_path / f"{side}.tcl"
    script.write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / f"{side}.out"
    with NatsServer(jetstream=True) as srv:
        env = dict(os.environ)
        env.pop("TCLLIBPATH", None)
        env.update(env_extra, NATS_URL=srv.url)
        p = subprocess.run(cmd + [str(script), str(out)], env=env, capture_output=True, timeout=TIMEOUT,
                           cwd=str(tmp_path))
    assert p.returncode == 0 and out.exists(), \
        f"{side} side failed ({p.returncode}):\n{p.stdout.decode(errors='replace')}\n{p.stderr.decode(errors='replace')}"
    items = tkinter.Tcl().splitlist(out.read_text(encoding="utf-8"))
    assert len(items) % 2 == 0
    return {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}


@pytest.fixture(scope="module")
def original_checkout(tmp_path_factory):
    """A checkout of nats-tcl v3.2.1 made from the read-only snapshot, and the tclsh to run it."""
    if not SNAPSHOT:
        pytest.skip("TCLNATS_NATS_TCL is not set: it names a git repository of nats-tcl with the v3.2.1 tag "
                    "(the original is needed for this comparison)")
    if not os.path.isdir(SNAPSHOT):
        pytest.skip(f"TCLNATS_NATS_TCL={SNAPSHOT} is not a folder")
    git, tclsh = shutil.which("git"), shutil.which("tclsh") or ("/usr/bin/tclsh" if os.path.exists("/usr/bin/tclsh")
                                                                else None)
    if not git or not tclsh:
        pytest.skip("git and a stock tclsh are needed to run the original nats-tcl")
    dest = tmp_path_factory.mktemp("nats-tcl-v3.2.1")
    archive = subprocess.run([git, "-C", SNAPSHOT, "archive", TAG], capture_output=True, timeout=60)
    if archive.returncode != 0:
        pytest.skip(f"the snapshot has no tag {TAG}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True, timeout=60)
    probe = subprocess.run([tclsh], input=b"package require json; package require json::write; package require lambda;"
                           b" package require nats; puts ok", capture_output=True, timeout=30,
                           env=dict(os.environ, TCLLIBPATH=str(dest)))
    if b"ok" not in probe.stdout:
        pytest.skip("the original nats-tcl does not load under tclsh (Debian tcllib, tcl-thread, tcl-tls needed): "
                    + probe.stderr.decode(errors="replace").strip())
    return tclsh, str(dest)


@pytest.mark.tcl
def test_management_dicts_match_the_original_key_for_key(original_checkout, tmp_path):
    tclsh, checkout = original_checkout
    orig = _run_script([tclsh], {"TCLLIBPATH": checkout}, tmp_path, "original")
    ours = _run_script(tclnats_tclsh(), {}, tmp_path, "tclnats")
    assert list(orig) == list(ours), "the two runs recorded different calls"
    # the script really exercised the server: results, not errors, where the suite expects results
    for label in ("add_stream", "stream_info", "update_stream_from_info", "add_consumer", "consumer_info",
                  "stream_msg_get", "kv_status", "account_info", "stream_info_mirror", "add_stream_from_json",
                  "add_consumer_from_json", "kv_history", "stream_direct_get", "stream_info_aggregate"):
        assert not orig[label].startswith("ERROR"), (label, orig[label])
    cmp = Comparer()
    diffs: list[str] = []
    for label in orig:
        cmp.diff(orig[label], ours[label], label, diffs)
    assert not diffs, "dicts differ from nats-tcl 3.2.1's:\n" + "\n".join(diffs)
    # unknown fields the server sends reach the caller (consumer_limits, allow_msg_ttl, _nats metadata ...)
    cfg = cmp.as_dict(cmp.as_dict(ours["stream_info"])["config"])
    assert "consumer_limits" in cfg and "allow_msg_ttl" in cfg and "_nats.ver" in cmp.as_dict(cfg["metadata"])


# ---------------------------------------------------------------- round trip, no original needed
ROUND_TRIP = r'''
package require nats
set out [lindex $argv 0]
set conn [nats::connection new RT]
$conn configure -servers $::env(NATS_URL)
$conn connect
set js [$conn jet_stream -timeout 5000]
# fields no nats-tcl table lists, set through the raw API
$js add_stream_from_json {{"name":"RT","subjects":["rt.>"],"storage":"memory","allow_msg_ttl":true,
    "subject_delete_marker_ttl":2000000000,"consumer_limits":{"max_ack_pending":50,"inactive_threshold":3000000000},
    "allow_atomic":true,"metadata":{"k":"v"}}}
set res {}
set before [dict get [$js stream_info RT] config]
set after [dict get [$js update_stream RT {*}$before] config]
lappend res plain [list $before $after]
# changed, the rest unchanged
dict set before max_msgs_per_subject 3
dict set before consumer_limits max_ack_pending 40
lappend res changed [dict get [$js update_stream RT {*}$before] config]
# nested objects as stream_info shows them: a mirror, an aggregate with a subject transform
$js add_stream MIR -storage memory -mirror [nats::make_stream_source -name RT -filter_subject rt.1]
set m [dict get [$js stream_info MIR] config]
lappend res mirror [list $m [dict get [$js update_stream MIR {*}$m] config]]
$js add_stream AGG -storage memory -subjects agg.own -subject_transform [nats::make_subject_transform -src agg.own -dest agg.mine] \
    -sources [list [nats::make_stream_source -name RT -subject_transforms [list [nats::make_subject_transform -src rt.* -dest agg.{{wildcard(1)}}]]]]
set a [dict get [$js stream_info AGG] config]
lappend res aggregate [list $a [dict get [$js update_stream AGG {*}$a] config]]
# what is not a config stays bad input
foreach {label bad} {unknown {-bogus 1} nested {consumer_limits {bogus 1}} type {consumer_limits {max_ack_pending x}}
                     bool {allow_msg_ttl maybe} bad_mirror {-mirror {a b}}} {
    set c [catch {$js update_stream RT {*}$before {*}$bad} r opts]
    lappend res $label [list $c [lindex [dict get $opts -errorcode] 1]]
}
set f [open $out w]
puts -nonewline $f $res
close $f
$conn destroy
'''


@pytest.mark.tcl
def test_update_stream_with_stream_info_config_tcl(tmp_path):
    script = tmp_path / "rt.tcl"
    script.write_text(ROUND_TRIP, encoding="utf-8")
    out = tmp_path / "rt.out"
    with NatsServer(jetstream=True) as srv:
        p = subprocess.run(tclnats_tclsh() + [str(script), str(out)], env=dict(os.environ, NATS_URL=srv.url),
                           capture_output=True, timeout=TIMEOUT)
    assert p.returncode == 0 and out.exists(), p.stderr.decode(errors="replace")
    cmp = Comparer()
    items = cmp.split(out.read_text())
    res = {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}
    plain = cmp.split(res["plain"])
    before, after = cmp.as_dict(plain[0]), cmp.as_dict(plain[1])
    assert after == before  # the server took the config back as it gave it
    assert before["allow_msg_ttl"] == "true" and before["allow_atomic"] == "true"
    assert before["subject_delete_marker_ttl"] == "2000"  # ms, as the Tcl face's -subject_delete_marker_ttl takes it
    assert cmp.as_dict(before["consumer_limits"]) == {"inactive_threshold": "3000000000", "max_ack_pending": "50"}
    changed = cmp.as_dict(res["changed"])
    assert changed["max_msgs_per_subject"] == "3"
    assert cmp.as_dict(changed["consumer_limits"])["max_ack_pending"] == "40"
    assert changed["allow_msg_ttl"] == "true" and changed["subject_delete_marker_ttl"] == "2000"
    for label in ("mirror", "aggregate"):
        before, after = (cmp.as_dict(x) for x in cmp.split(res[label]))
        assert after == before, label
    assert cmp.as_dict(cmp.as_dict(cmp.split(res["mirror"])[1])["mirror"]) == {"name": "RT", "filter_subject": "rt.1"}
    for label in ("unknown", "nested", "type", "bool", "bad_mirror"):
        assert cmp.split(res[label]) == ("1", "ErrInvalidArg"), (label, res[label])


def test_update_stream_with_stream_info_config_python(fresh_server):
    import tclnats_py

    async def scenario():
        client = await tclnats_py.connect(fresh_server.url)
        try:
            js = client.jetstream()
            await js.api("STREAM.CREATE.RTPY", {
                "name": "RTPY", "subjects": ["rtpy.>"], "storage": "memory", "allow_msg_ttl": True,
                "subject_delete_marker_ttl": 2_000_000_000, "allow_atomic": True,
                "consumer_limits": {"max_ack_pending": 50, "inactive_threshold": 3_000_000_000}})
            info = await js.stream_info("RTPY")
            wire = dict(info["config"])
            assert info.config.allow_atomic is True and info.config.subject_delete_marker_ttl == 2  # typed, seconds
            # the typed config, unchanged
            s1 = await js.update_stream("RTPY", info.config)
            # the wire dict, unchanged
            s2 = await js.update_stream("RTPY", wire)
            for s in (s1, s2):
                got = (await s.refresh())["config"]
                assert got == wire
            # a change keeps the rest
            s3 = await js.update_stream("RTPY", info.config.replace(max_msgs_per_subject=4))
            got = (await s3.refresh())["config"]
            assert got["max_msgs_per_subject"] == 4
            assert {k: v for k, v in got.items() if k != "max_msgs_per_subject"} == \
                {k: v for k, v in wire.items() if k != "max_msgs_per_subject"}
        finally:
            await client.close()
    asyncio.run(scenario())


def test_field_shapes_learnt_from_replies():
    """A field only a newer server knows: its JSON type comes from the reply
    (_js.config.learn_stream_fields), so its Tcl value converts back to the
    same JSON (no server needed: this is the conversion alone)."""
    from tclnats_py.tclface import js as tcljs
    from tclnats_py.engine.js import config
    tk = tkinter.Tcl()
    args = tcljs.TclArgs(tk)
    name = "future_field_for_test"
    assert name not in config.STREAM_FIELD_TYPES
    value = {"limits": {"n": 5, "on": True, "ratio": 1.5e-3}, "tags": ["a b", "c"], "mode": "fast", "none": None}
    try:
        config.learn_stream_fields({name: value, "max_age": 2_000_000})
        tcl_text = tk.call("list", *tcljs.tcl_value({name: value}))  # as the Tcl caller holds it
        back = tk.splitlist(tcl_text)[1]
        assert args.from_tcl(name, back, config.STREAM_FIELD_TYPES[name]) == value
        with pytest.raises(Exception) as e:
            args.from_tcl(name, "limits {n x}", config.STREAM_FIELD_TYPES[name])
        assert getattr(e.value, "code", None) == "ErrInvalidArg"
    finally:
        config.STREAM_FIELD_TYPES.pop(name, None)
