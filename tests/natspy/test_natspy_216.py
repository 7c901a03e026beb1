"""What nats-py 2.16.0 has beyond 2.15 in nats.js (counters, atomic batch
acks, schedule headers, consumer reset, sourcing through a consumer), on
tclnats_py's surface against a real nats-server 2.15; and the name
comparison with the installed nats-py (compat/natspy_names.py)."""

import asyncio
import datetime
import ssl
import subprocess
import sys

import pytest

from tclnats_py import natspy as nats
from tclnats_py.compat import natspy_names
from tclnats_py.natspy import errors
from tclnats_py.natspy.aio.client import ServerVersion
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors
from tclnats_py.natspy.js.client import JetStreamContext
from tclnats_py.natspy.js.kv import KeyValue, StopIterSentinel
from tclnats_py.natspy.micro.service import EndpointManager, Group, GroupManager, ServicePing, ServiceIdentity
from tclnats_py.natspy.nuid import NUID


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


# ---------------------------------------------------------------- server-free
@pytest.mark.unit
def test_pub_ack_reads_batch_and_counter_fields():
    ack = api.PubAck.from_response({"stream": "S", "seq": 9, "batch": "b1", "count": 3, "val": "12", "other": 1})
    assert (ack.batch_id, ack.batch_size, ack.val) == ("b1", 3, "12")
    assert ack.as_dict() == {"stream": "S", "seq": 9, "val": "12", "batch": "b1", "count": 3}
    plain = api.PubAck.from_response({"stream": "S", "seq": 1, "duplicate": True})
    assert (plain.duplicate, plain.batch_id, plain.batch_size, plain.val) == (True, None, None, None)


@pytest.mark.unit
@pytest.mark.feature("config_fields")
def test_header_names_schedules_and_new_config_fields():
    assert api.Header.INCR == "Nats-Incr" and api.Header.BATCH_COMMIT == "Nats-Batch-Commit"
    assert api.Header.SCHEDULE_TARGET == "Nats-Schedule-Target" and api.Header.SCHEDULER == "Nats-Scheduler"
    assert (api.SCHEDULE_HOURLY, api.SCHEDULE_YEARLY) == ("@hourly", "@yearly")
    assert api.AckPolicy("flow_control") is api.AckPolicy.FLOW_CONTROL
    cfg = api.StreamConfig(name="C", allow_msg_counter=True,
                           sources=[api.StreamSource(name="O", consumer=api.StreamConsumerSource("D", "d.x"))])
    d = cfg.as_dict()
    assert d["allow_msg_counter"] is True
    assert d["sources"] == [{"name": "O", "consumer": {"name": "D", "deliver_subject": "d.x"}}]
    back = api.StreamConfig.from_response(d)
    assert back.sources[0].consumer == api.StreamConsumerSource(name="D", deliver_subject="d.x")
    reset = api.ConsumerReset.from_response({"reset_seq": 4, "name": "D", "stream_name": "S",
                                             "created": "2026-01-02T03:04:05Z", "config": {"durable_name": "D"}})
    assert reset.reset_seq == 4 and reset.info.name == "D" and reset.info.config.durable_name == "D"


@pytest.mark.unit
def test_small_names_of_2_16():
    nuid = NUID()
    first = bytes(nuid.next())
    nuid.reset_sequential()
    again = bytes(nuid.next())
    assert again[:12] == first[:12] and again != first
    assert ServerVersion(server_version="2.14.1").minor == 14
    assert isinstance(KeyValue.KeyWatcher.STOP_ITER, StopIterSentinel)
    assert GroupManager in Group.__mro__ and EndpointManager in Group.__mro__  # (Protocols: no issubclass)
    assert ServiceIdentity in ServicePing.__mro__
    assert JetStreamContext.is_status_msg(None) is None
    status = nats.aio.msg.Msg(None, subject="x", headers={"Status": "408", "Description": "Request Timeout"})
    assert JetStreamContext.is_status_msg(status) == "408"
    assert JetStreamContext.is_status_msg(nats.aio.msg.Msg(None, subject="x", headers={"K": "v"})) is None
    assert str(errors.BadHeaderError("a b")) == "nats: invalid header: 'a b'"


@pytest.mark.unit
def test_name_comparison_reports_what_is_lacking():
    theirs = {"nats.x": {
        "f": {"kind": "function", "params": ["a", "b", "**"]},
        "C": {"kind": "class", "init": ["self", "a"], "fields": ["a", "b"], "enum": ["E1"], "origin": "nats.x.C",
              "members": {"m": {"kind": "function", "params": ["p"]}, "k": {"kind": "value"}}},
        "gone": {"kind": "value"}}, "nats.y": {}}
    ours = {"nats.x": {
        "f": {"kind": "function", "params": ["a"]},
        "C": {"kind": "class", "init": ["self"], "fields": ["a"], "enum": [], "members": {"m": {
            "kind": "function", "params": []}}}}}
    assert natspy_names.compare(theirs, ours) == [
        "nats.x.C(): parameter a", "nats.x.C: field b", "nats.x.C: member E1", "nats.x.C.k: value missing",
        "nats.x.C.m(): parameter p", "nats.x.f(): parameter b, **kwargs", "nats.x.gone: value missing",
        "nats.y: module missing"]
    assert natspy_names.compare(theirs, theirs) == []


def _need_nats_py_216():
    """Skip unless the nats-py installed beside us is the version this surface serves."""
    pytest.importorskip("nats", reason="nats-py is not installed")
    from importlib.metadata import version
    if version("nats-py") != natspy_names.VERSION:
        pytest.skip(f"nats-py {version('nats-py')} installed, not {natspy_names.VERSION}")


@pytest.mark.unit
def test_stream_metadata_check_as_nats_py():
    """StreamConfig.as_dict refuses a metadata that is set and not a dict with
    nats-py 2.16.0's ValueError and text; an empty one of another type passes."""
    _need_nats_py_216()
    import nats.js.api as theirs_api

    def outcome(module, metadata):
        try:
            return module.StreamConfig(name="M", metadata=metadata).as_dict().get("metadata")
        except ValueError as e:
            return f"ValueError: {e}"
    for metadata in (["hello", "world"], "text", [], "", None, {"foo": "bar"}):
        assert outcome(api, metadata) == outcome(theirs_api, metadata), metadata
    assert outcome(api, ["a"]) == "ValueError: nats: invalid metadata format"


# ---------------------------------------------------------------- against nats-server
def test_subject_validation_and_header_names(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        assert nc.options["skip_subject_validation"] is False
        for bad in ("a b", "a\r\nPUB x 1", "a\tb"):
            with pytest.raises(errors.BadSubjectError):
                await nc.publish(bad, b"x")
            with pytest.raises(errors.BadSubjectError):
                await nc.request(bad, b"x")
        for bad in ("a..b", "a.>.b", "a.b*", "a b", ".a"):
            with pytest.raises(errors.BadSubjectError):
                await nc.subscribe(bad)
        with pytest.raises(errors.BadSubjectError):
            await nc.subscribe("a.*", queue="q q")
        with pytest.raises(errors.BadSubjectError):
            await nc.publish("ok", b"x", reply="r r")
        sub = await nc.subscribe("hdr.*")
        with pytest.raises(errors.BadHeaderError) as err:
            await nc.publish("hdr.a", b"x", headers={"Bad Key": "v"})
        assert err.value.key == "Bad Key"
        with pytest.raises(errors.BadHeaderError):
            await nc.publish("hdr.a", b"x", headers={"K\r\nPUB": "v"})
        await nc.publish("hdr.a", b"x", headers={" K ": " two\r\nlines ", "": "skipped"})
        msg = await sub.next_msg(timeout=2)
        assert msg.headers == {"K": "two  lines"}
        js = nc.jetstream()
        with pytest.raises(errors.BadHeaderError):
            await js.publish("hdr.a", b"x", headers={"a:b": "v"})
        with pytest.raises(errors.Error, match="^nats: no ssl context provided$"):
            nc.options["tls"] = None
            nc.ssl_context
        del nc.options["tls"]
        assert isinstance(nc.ssl_context, ssl.SSLContext)
        ctx = ssl.create_default_context()
        nc.options["tls"] = ctx
        assert nc.ssl_context is ctx
        await nc.close()

        loose = await nats.connect(js_server.url, skip_subject_validation=True)
        assert loose.options["skip_subject_validation"] is True
        sub = await loose.subscribe("a..b")  # left to the server
        await loose.publish("plain", b"x")
        with pytest.raises(errors.BadSubjectError):
            await loose.publish("", b"x")
        with pytest.raises(errors.BadSubjectError):
            await loose.subscribe("")
        await sub.unsubscribe()
        await loose.close()
    run(go())



@pytest.mark.feature("counters")
def test_counter_stream_pub_ack_val(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        si = await js.add_stream(name="NP216CNT", subjects=["cnt.>"], allow_msg_counter=True, allow_direct=True)
        assert si.config.allow_msg_counter is True
        assert (await js.publish("cnt.a", b"", headers={api.Header.INCR: "5"})).val == "5"
        ack = await js.publish("cnt.a", b"", headers={api.Header.INCR: "-2"})
        assert ack.val == "3" and ack.seq == 2
        big = 10 ** 30
        assert (await js.publish("cnt.b", b"", headers={api.Header.INCR: str(big)})).val == str(big)
        plain = await js.publish("cnt.a", b"", headers={api.Header.INCR: "0"})
        assert plain.val == "3" and plain.batch_id is None
        await js.delete_stream("NP216CNT")
        await nc.close()
    run(go())


@pytest.mark.feature("atomic_batch")
def test_atomic_batch_commit_ack(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NP216BATCH", subjects=["bat.>"], allow_atomic=True)
        batch = "np216-b1"
        for i in (1, 2):
            await nc.publish(f"bat.{i}", b"x", headers={api.Header.BATCH_ID: batch,
                                                      api.Header.BATCH_SEQUENCE: str(i)})
        ack = await js.publish("bat.3", b"x", headers={api.Header.BATCH_ID: batch, api.Header.BATCH_SEQUENCE: "3",
                                                       api.Header.BATCH_COMMIT: "1"})
        assert (ack.stream, ack.seq, ack.batch_id, ack.batch_size) == ("NP216BATCH", 3, batch, 3)
        assert (await js.stream_info("NP216BATCH")).state.messages == 3
        await js.delete_stream("NP216BATCH")
        await nc.close()
    run(go())


@pytest.mark.feature("schedules")
def test_schedule_headers_fire_on_target(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NP216SCHED", subjects=["sched.>"], allow_msg_schedules=True)
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
        await js.publish("sched.s1", b"later", headers={
            api.Header.SCHEDULE: "@at " + at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            api.Header.SCHEDULE_TARGET: "sched.fired"})
        sub = await js.subscribe("sched.fired", ordered_consumer=True)
        msg = await sub.next_msg(timeout=10)
        assert msg.data == b"later"
        assert msg.headers[api.Header.SCHEDULER] == "sched.s1"
        await js.delete_stream("NP216SCHED")
        await nc.close()
    run(go())


@pytest.mark.feature("consumer_reset")
def test_reset_consumer(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NP216RST", subjects=["rst.>"])
        for i in range(4):
            await js.publish("rst.a", str(i).encode())
        psub = await js.pull_subscribe("rst.a", durable="R", stream="NP216RST")
        for m in await psub.fetch(4, timeout=5):
            await m.ack_sync()
        reset = await js.reset_consumer("NP216RST", "R", seq=2)
        assert isinstance(reset, api.ConsumerReset) and reset.reset_seq == 2
        assert reset.info.name == "R" and reset.info.num_ack_pending == 0
        again = await psub.fetch(1, timeout=5)
        assert (again[0].data, again[0].metadata.sequence.stream) == (b"1", 2)
        assert again[0].metadata.sequence.consumer == 1
        await again[0].ack_sync()
        floor = await js.reset_consumer("NP216RST", "R")
        assert floor.reset_seq == 3  # one above the ack floor
        await js.add_consumer("NP216RST", durable_name="B", deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                              opt_start_seq=3)
        with pytest.raises(js_errors.ConsumerInvalidResetError) as err:
            await js.reset_consumer("NP216RST", "B", seq=1)
        assert err.value.err_code == 10204 and err.value.code == 400
        with pytest.raises(ValueError, match="consumer name"):
            await js.reset_consumer("NP216RST", "")
        await js.delete_stream("NP216RST")
        await nc.close()
    run(go())


def test_source_a_workqueue_through_a_flow_control_consumer(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NP216WQ", subjects=["wq.>"], retention=api.RetentionPolicy.WORK_QUEUE)
        await js.add_consumer("NP216WQ", durable_name="SRC", deliver_subject="np216.src",
                              ack_policy=api.AckPolicy.FLOW_CONTROL, flow_control=True, idle_heartbeat=1)
        source = api.StreamSource(name="NP216WQ", consumer=api.StreamConsumerSource("SRC", "np216.src"))
        si = await js.add_stream(name="NP216AGG", sources=[source])
        assert si.config.sources[0].consumer == api.StreamConsumerSource(name="SRC", deliver_subject="np216.src")
        await js.publish("wq.a", b"moved")
        for _ in range(100):
            if (await js.stream_info("NP216AGG")).state.messages == 1:
                break
            await asyncio.sleep(0.1)
        assert (await js.get_msg("NP216AGG", 1)).data == b"moved"
        for _ in range(100):
            if (await js.stream_info("NP216WQ")).state.messages == 0:
                break
            await asyncio.sleep(0.1)
        assert (await js.stream_info("NP216WQ")).state.messages == 0  # acknowledged by the sourcing stream
        await js.delete_stream("NP216AGG")
        await js.delete_stream("NP216WQ")
        await nc.close()
    run(go())


# the same checks, each printing what happened, run by nats-py itself and by this surface
_SUBJECTS_AND_HEADERS = """
import asyncio, sys
import nats

async def main(url):
    nc = await nats.connect(url)
    async def attempt(what, coro):
        try:
            r = await coro
            if r is not None:
                await r.unsubscribe()
            print(what, "ok")
        except Exception as e:
            print(what, type(e).__name__)
    for subj in ("foo.", "a..b", "a b", "a.>.b", "a.b*", "ok.*", "ok.>"):
        await attempt("subscribe " + repr(subj), nc.subscribe(subj))
    await attempt("subscribe queue", nc.subscribe("ok", queue="q q"))
    for subj in ("a b", "a\\r\\nb", "a\\tb", "foo.", "a..b", "*"):
        await attempt("publish " + repr(subj), nc.publish(subj, b"x"))
    await attempt("publish reply", nc.publish("ok", b"x", reply="r r"))
    for h in ({"  AAA AAA  ": "v"}, {" K ": " v\\r\\nw "}, {"": "x"}, {"a:b": "v"}, {"K\\u00e9": "v"}):
        await attempt("headers " + repr(h), nc.publish("hh", b"x", headers=h))
    # which check comes first: the subject's, then the payload's size, the header names last
    big = b"x" * (nc.max_payload + 1)
    await attempt("big, bad header", nc.publish("hh", big, headers={"a b": "v"}))
    await attempt("big, bad subject", nc.publish("a b", big))
    await attempt("request big, bad header", nc.request("hh", big, headers={"a b": "v"}))
    await nc.close()
    await attempt("closed: publish bad subject", nc.publish("a b", b"x"))
    await attempt("closed: request bad subject", nc.request("a b", b"x"))
    await attempt("closed: subscribe bad subject", nc.subscribe("a..b"))
    await attempt("closed: bad header", nc.publish("hh", b"x", headers={"a b": "v"}))
    await attempt("closed: request bad header", nc.request("hh", b"x", headers={"a b": "v"}))

    loose = await nats.connect(url, skip_subject_validation=True)
    await attempt("unchecked publish ''", loose.publish("", b"x"))
    await attempt("unchecked publish 'a b'", loose.publish("a b", b"x"))
    await attempt("unchecked subscribe ''", loose.subscribe(""))
    await attempt("unchecked subscribe 'a.b*'", loose.subscribe("a.b*"))
    await attempt("unchecked request ''", loose.request("", b"x"))
    await attempt("unchecked big ''", loose.publish("", big))
    await attempt("unchecked big, bad header", loose.publish("hh", big, headers={"a b": "v"}))
    await attempt("unchecked bad header", loose.publish("hh", b"x", headers={"a b": "v"}))
    await loose.close()
    await attempt("unchecked closed: publish ''", loose.publish("", b"x"))
    await attempt("unchecked closed: publish 'a b'", loose.publish("a b", b"x"))

asyncio.run(main(sys.argv[1]))
"""


def test_subject_and_header_checks_as_nats_py(nats_server, tmp_path):
    """What nats-py 2.16.0 refuses (subjects, queues, replies, header names),
    ours refuses with the same class, checked in the same order (before or
    after the connection's state and the payload's size), with and without
    skip_subject_validation; and what it sends, ours sends."""
    _need_nats_py_216()
    prog = tmp_path / "checks.py"
    prog.write_text(_SUBJECTS_AND_HEADERS)
    theirs = subprocess.run([sys.executable, str(prog), nats_server.url], capture_output=True, text=True, timeout=60)
    ours = subprocess.run([sys.executable, "-m", "tclnats_py.natspy", str(prog), nats_server.url],
                          capture_output=True, text=True, timeout=60)
    assert theirs.returncode == 0 and ours.returncode == 0, theirs.stderr + ours.stderr
    assert "BadHeaderError" in theirs.stdout and "BadSubjectError" in theirs.stdout
    assert ours.stdout == theirs.stdout


# ---------------------------------------------------------------- the name comparison
def test_no_nats_py_name_missing():
    pytest.importorskip("nats", reason="nats-py is not installed")
    proc = subprocess.run([sys.executable, "-m", "tclnats_py.compat.natspy_names"], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode == 2 and "not nats-py" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing missing" in proc.stdout
