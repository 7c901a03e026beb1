"""The blocking face's JetStream publish and KV put with the accelerator and
without it (TCLNATS_PY_ACCEL=0): the same series of publishes and puts
against a real nats-server (plain acks, duplicates, expectations that
fail, no stream, checked and unchecked keys, values of every accepted
type, a bucket gone) gives the same results and errors, their types and
details included."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tclnats_py.engine import protocol

SERIES = textwrap.dedent("""
    import json, sys
    import tclnats_py
    from tclnats_py import sync
    from tclnats_py.engine import protocol
    from tclnats_py.jsface.info import PubAck

    tag, url = sys.argv[1], sys.argv[2]
    out = {"accelerated": protocol.ACCELERATED}
    steps = out["steps"] = []

    def step(name, fn):
        try:
            r = fn()
        except tclnats_py.NatsError as e:
            steps.append([name, "error", type(e).__name__, e.code, e.details.get("err_code"), str(e)])
            return None
        kind = type(r).__name__
        if isinstance(r, PubAck):
            r = [dict(r), r.stream, r.seq, r.duplicate, r.domain]
        steps.append([name, kind, r])
        return r

    nc = sync.connect(url)
    js = nc.jetstream()
    stream, subject = "PA_" + tag, "pa." + tag
    js.create_stream(stream, subjects=[subject + ".>"], storage="memory")
    step("plain", lambda: js.publish(subject + ".a", b"1"))
    step("again", lambda: js.publish(subject + ".a", b"2"))
    step("str data", lambda: js.publish(subject + ".b", "text"))
    step("msg id", lambda: js.publish(subject + ".a", b"3", msg_id="m1"))
    step("duplicate", lambda: js.publish(subject + ".a", b"3", msg_id="m1"))
    step("expected stream", lambda: js.publish(subject + ".a", b"4", expected_stream=stream))
    step("wrong stream", lambda: js.publish(subject + ".a", b"4", expected_stream="OTHER"))
    step("wrong last seq", lambda: js.publish(subject + ".a", b"5", expected_last_seq=1))
    step("last subject seq", lambda: js.publish(subject + ".b", b"6", expected_last_subject_seq=3))
    step("headers", lambda: js.publish(subject + ".c", b"7", headers={"X": "y"}))
    step("timeout", lambda: js.publish(subject + ".c", b"8", timeout=2.5))
    step("kw None", lambda: js.publish(subject + ".c", b"9", msg_id=None))
    step("no stream", lambda: js.publish("pa.nobody." + tag, b""))
    step("bad subject", lambda: js.publish("pa bad", b""))

    kv = js.create_key_value("PK_" + tag, storage="memory", history=3)
    step("put", lambda: kv.put("k1", b"v1"))
    step("put again", lambda: kv.put("k1", b"v2"))
    step("put str", lambda: kv.put("k1", "v3"))
    step("put bytearray", lambda: kv.put("k2", bytearray(b"v")))
    step("put memoryview", lambda: kv.put("k2", memoryview(b"vv")))
    step("put None", lambda: kv.put("k3", None))
    step("put bad value", lambda: kv.put("k1", 5))
    step("put bad key", lambda: kv.put("bad key", b""))
    step("put dotted key", lambda: kv.put(".k", b""))
    step("put non-str key", lambda: kv.put(7, b""))
    step("get", lambda: kv.get("k1").value.decode())
    step("create existing", lambda: kv.create("k1", b"x"))
    step("create new", lambda: kv.create("k4", b"x"))
    step("update wrong", lambda: kv.update("k1", b"x", last=1))
    step("update right", lambda: kv.update("k4", b"y", last=kv.get("k4").revision))
    js.delete_key_value("PK_" + tag)
    step("put after delete", lambda: kv.put("k1", b"v"))
    js.delete_stream(stream)
    nc.close()
    print(json.dumps(out))
""")


def _series(url, tag, accel):
    env = dict(os.environ, TCLNATS_PY_ACCEL=accel)
    r = subprocess.run([sys.executable, "-c", SERIES, tag, url], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(not protocol.ACCELERATED, reason="the accelerator is not built")
def test_with_and_without_the_accelerator(js_server):
    fast, plain = _series(js_server.url, "C", "1"), _series(js_server.url, "P", "0")
    assert fast["accelerated"] and not plain["accelerated"]
    assert len(fast["steps"]) == len(plain["steps"]) == 30

    def same(steps, tag):  # the names of the stream, its subjects and the bucket hold the tag
        text = json.dumps(steps)
        for name in ("PA_", "PK_", "pa.", "pa.nobody."):
            text = text.replace(name + tag, name + "T")
        return json.loads(text)
    assert same(fast["steps"], "C") == same(plain["steps"], "P")
    by_name = {s[0]: s[1:] for s in fast["steps"]}
    assert by_name["plain"][0] == "PubAck" and by_name["plain"][1][1:4] == ["PA_C", 1, False]
    assert by_name["duplicate"][1][3] is True
    assert by_name["wrong last seq"][2] == "ErrWrongLastSequence"
    assert by_name["no stream"][2] == "ErrNoResponders"
    assert by_name["put"] == ["int", 1] and by_name["put str"] == ["int", 3]
    assert by_name["put bad key"][2] == "ErrInvalidArg" and by_name["put bad value"][2] == "ErrInvalidArg"
    assert by_name["create existing"][1] == "ErrKeyExists"
    assert by_name["put after delete"][2] == "ErrBucketNotFound"
