"""The shared JetStream logic (tclnats_py.engine.js) fed with Msg objects: no server."""

import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import (Batch, JsApi, Publish, Request, ack, advance, api, config, meta, ordered, publish, pull,
                            run_sync)
from tclnats_py.engine.js.events import (HEARTBEAT, Delivered, Ended, FlowReply, Pull, Reset, Retry, Stop, Warn)


def jmsg(obj, subject="_INBOX.x"):
    return Msg(subject, json.dumps(obj).encode())


def status(code, desc="", headers=None, subject="_INBOX.x", reply=None):
    h = {"Status": [str(code)]}
    if desc:
        h["Description"] = [desc]
    h.update(headers or {})
    return Msg(subject, b"", reply, h)


def js_msg(sseq, cseq, pending=0, data=b"x", subject="s.a", delivered=1, stream="S", consumer="C",
           ts=1700000000123456789, headers=None):
    return Msg(subject, data, f"$JS.ACK.{stream}.{consumer}.{delivered}.{sseq}.{cseq}.{ts}.{pending}", headers)


def api_error(code, err_code, desc="boom"):
    return jmsg({"type": "io.nats.jetstream.api.v1.x", "error": {"code": code, "err_code": err_code,
                                                                 "description": desc}})


class Server:
    """A scripted JetStream: subject -> reply (Msg, NatsError, or a function)."""

    def __init__(self, routes=None):
        self.routes = dict(routes or {})
        self.seen = []

    def __call__(self, step):
        self.seen.append(step)
        if isinstance(step, Publish):
            return None
        r = self.routes.get(step.subject)
        if r is None:
            for k, v in self.routes.items():
                if k.endswith("*") and step.subject.startswith(k[:-1]):
                    r = v
                    break
        if callable(r) and not isinstance(r, Msg):
            r = r(step)
        if isinstance(r, NatsError):
            raise r
        if r is None:
            raise NatsError("no route")
        return r


def err(code, text="x"):
    from tclnats_py.errors import make_error
    return make_error(code, text)


# ------------------------------------------------------------------ api
def test_api_prefixes_and_subjects():
    assert JsApi().prefix == "$JS.API" and JsApi().is_default
    assert JsApi("hub").prefix == "$JS.hub.API" and JsApi("hub").domain == "hub"
    assert JsApi(None, "imported.").prefix == "imported"
    assert JsApi("hub").subject("STREAM.INFO", "S") == "$JS.hub.API.STREAM.INFO.S"
    with pytest.raises(NatsError) as e:
        JsApi("hub", "x")
    assert e.value.code == "ErrInvalidArg"
    assert JsApi("d").next_subject("S", "C") == "$JS.d.API.CONSUMER.MSG.NEXT.S.C"


@pytest.mark.parametrize("code,err_code,name", [
    (404, 10059, "ErrStreamNotFound"), (404, 10014, "ErrConsumerNotFound"), (404, 10037, "ErrMsgNotFound"),
    (400, 10071, "ErrWrongLastSequence"), (503, 10039, "ErrJetStreamNotEnabledForAccount"),
    (400, 10060, "ErrJSResponse"), (500, 10058, "ErrJSResponse")])
def test_api_errors_map_to_nats_tcl_codes(code, err_code, name):
    with pytest.raises(NatsError) as e:
        run_sync(JsApi().stream_info("S"), Server({"$JS.API.STREAM.INFO.S": api_error(code, err_code, "said so")}))
    assert e.value.code == name and str(e.value) == "said so"
    assert e.value.details["code"] == code and e.value.details["err_code"] == err_code
    if name == "ErrJSResponse":
        assert e.value.details["errorcode"] == ("NATS", "ErrJSResponse", code, err_code)


def test_api_reply_checks():
    a = JsApi()
    info = run_sync(a.stream_info("S"), Server({"$JS.API.STREAM.INFO.S": jmsg(
        {"type": "t", "config": {"name": "S"}, "total": 0, "offset": 0, "limit": 0})}))
    assert info == {"config": {"name": "S"}}  # type and paging fields dropped
    # no responders: nobody serves this API prefix
    for srv in (Server({"$JS.API.INFO": err("ErrNoResponders")}), Server({"$JS.API.INFO": status(503)})):
        with pytest.raises(NatsError) as e:
            run_sync(a.account_info(), srv)
        assert e.value.code == "ErrJetStreamNotEnabled"
    with pytest.raises(NatsError) as e:
        run_sync(a.account_info(), Server({"$JS.API.INFO": Msg("x", b"not json")}))
    assert e.value.code == "ErrJSResponse"
    with pytest.raises(NatsError) as e:
        run_sync(a.account_info(), Server({"$JS.API.INFO": err("ErrTimeout")}))
    assert e.value.code == "ErrTimeout"


def test_names_are_filename_safe():
    a = JsApi()
    for bad in ("a.b", "a b", "a*", "a>", "a/b", "", "a\\b", 'a"b'):
        with pytest.raises(NatsError) as e:
            next(a.stream_info(bad))
        assert e.value.code == "ErrInvalidArg"
    assert api.filename_safe("ORDERS-1_x!#$%&()+,:;<=?@^`|~") and api.filename_safe("Ünïcode")
    with pytest.raises(NatsError):
        next(a.consumer_info("S", "c.d"))


def test_stream_operations_build_requests():
    a = JsApi()
    srv = Server({"$JS.API.STREAM.PURGE.S": jmsg({"success": True, "purged": 7}),
                  "$JS.API.STREAM.DELETE.S": jmsg({"success": True}),
                  "$JS.API.STREAM.CREATE.S": jmsg({"config": {"name": "S"}}),
                  "$JS.API.STREAM.MSG.DELETE.S": jmsg({"success": True})})
    assert run_sync(a.stream_purge("S", filter="s.x", keep=2), srv) == 7
    assert json.loads(srv.seen[-1].payload) == {"filter": "s.x", "keep": 2}
    assert run_sync(a.stream_purge("S"), srv) == 7 and srv.seen[-1].payload == b""
    with pytest.raises(NatsError):
        run_sync(a.stream_purge("S", keep=1, seq=3), srv)
    assert run_sync(a.stream_delete("S"), srv) is True
    run_sync(a.stream_create({"name": "S", "subjects": ["s.*"]}), srv)
    assert json.loads(srv.seen[-1].payload)["subjects"] == ["s.*"]
    assert run_sync(a.msg_delete("S", 3), srv) is True
    assert json.loads(srv.seen[-1].payload) == {"seq": 3, "no_erase": True}


def test_names_are_paged():
    pages = [{"total": 5, "offset": 0, "limit": 2, "streams": ["a", "b"]},
             {"total": 5, "offset": 2, "limit": 2, "streams": ["c", "d"]},
             {"total": 5, "offset": 4, "limit": 2, "streams": ["e"]}]

    def names(step):
        body = json.loads(step.payload) if step.payload else {}
        return jmsg(pages[body.get("offset", 0) // 2])
    srv = Server({"$JS.API.STREAM.NAMES": names})
    assert run_sync(JsApi().stream_names(), srv) == ["a", "b", "c", "d", "e"]
    assert run_sync(JsApi().stream_names(), Server({"$JS.API.STREAM.NAMES": jmsg(
        {"total": 0, "streams": None})})) == []
    srv = Server({"$JS.API.STREAM.NAMES": jmsg({"total": 1, "streams": ["x"]})})
    run_sync(JsApi().stream_names("x.>"), srv)
    assert json.loads(srv.seen[0].payload) == {"subject": "x.>"}


def test_msg_get_and_direct_get():
    import base64
    a = JsApi()
    hdrs = b"NATS/1.0\r\nK: v\r\n\r\n"
    srv = Server({"$JS.API.STREAM.MSG.GET.S": jmsg({"message": {
        "subject": "s.a", "seq": 4, "time": "2024-01-02T03:04:05.678Z",
        "data": base64.b64encode(b"hi").decode(), "hdrs": base64.b64encode(hdrs).decode()}})})
    m = run_sync(a.msg_get("S", seq=4), srv)
    assert (m.subject, m.data, m.seq, m.headers, m.timestamp) == ("s.a", b"hi", 4, {"K": ["v"]}, 1704164645678)
    assert json.loads(srv.seen[0].payload) == {"seq": 4}
    with pytest.raises(NatsError):
        next(a.msg_get("S"))
    with pytest.raises(NatsError):
        next(a.msg_get("S", seq=1, last_by_subj="x"))
    # direct get: last_by_subj rides in the subject, the rest in JSON
    assert a.direct_get_request("S", last_by_subj="s.a").subject == "$JS.API.DIRECT.GET.S.s.a"
    r = a.direct_get_request("S", seq=2, next_by_subj="s.*")
    assert r.subject == "$JS.API.DIRECT.GET.S" and json.loads(r.payload) == {"seq": 2, "next_by_subj": "s.*"}
    reply = Msg("_INBOX.r", b"v", None, {"Nats-Stream": ["S"], "Nats-Subject": ["s.b"], "Nats-Sequence": ["9"],
                                          "Nats-Time-Stamp": ["2024-01-02T03:04:05.5Z"], "X": ["y"]})
    m = run_sync(a.direct_get("S", last_by_subj="s.b"), Server({"$JS.API.DIRECT.GET.S.s.b": reply}))
    assert (m.subject, m.seq, m.headers, m.stream, m.timestamp) == ("s.b", 9, {"X": ["y"]}, "S", 1704164645500)
    for st, code in ((404, "ErrMsgNotFound"), (408, "ErrInvalidArg"), (503, "ErrNoResponders")):
        with pytest.raises(NatsError) as e:
            run_sync(a.direct_get("S", seq=1), Server({"$JS.API.DIRECT.GET.S": status(st)}))
        assert e.value.code == code


def test_consumer_create_subjects():
    a = JsApi()
    cases = [
        ({"durable_name": "D"}, {}, "$JS.API.CONSUMER.CREATE.S.D", True),
        ({"durable_name": "D"}, {"legacy_durable": True}, "$JS.API.CONSUMER.DURABLE.CREATE.S.D", True),
        ({"name": "N", "filter_subject": "s.a"}, {}, "$JS.API.CONSUMER.CREATE.S.N.s.a", True),
        ({"name": "N", "filter_subject": "s.*"}, {}, "$JS.API.CONSUMER.CREATE.S.N.s.*", False),
        ({"name": "N", "filter_subject": "s.*"}, {"wildcard_filter_token": False}, "$JS.API.CONSUMER.CREATE.S.N", True),
        ({"name": "N", "filter_subject": ">"}, {}, "$JS.API.CONSUMER.CREATE.S.N", True),
        ({"ack_policy": "none"}, {}, "$JS.API.CONSUMER.CREATE.S", True),
        ({"name": "N"}, {"server_version": "2.8.4"}, "$JS.API.CONSUMER.CREATE.S", True),
        ({"durable_name": "D"}, {"server_version": "2.8.4"}, "$JS.API.CONSUMER.DURABLE.CREATE.S.D", True),
    ]
    for cfg, kw, subject, check in cases:
        r = a.consumer_create_request("S", cfg, "create", **kw)
        assert (r.subject, r.check_subject) == (subject, check), cfg
    body = json.loads(a.consumer_create_request("S", {"name": "N"}, "update").payload)
    assert body == {"stream_name": "S", "config": {"name": "N"}, "action": "update"}
    assert "action" not in json.loads(a.consumer_create_request("S", {}, "create", server_version="2.9.0").payload)
    assert "action" not in json.loads(a.consumer_create_request("S", {}, None).payload)
    with pytest.raises(NatsError):
        a.consumer_create_request("S", {"name": "a", "durable_name": "b"})
    with pytest.raises(NatsError):
        a.consumer_create_request("S", {"name": "a.b"})


def test_advance_and_batch():
    def op():
        got = yield Batch([Request("a"), Request("b")])
        more = yield Publish("p", b"x")
        return got, more
    o = op()
    kind, step = advance(o)
    assert kind == "step" and isinstance(step, Batch)
    kind, step = advance(o, ["A", err("ErrTimeout")])
    assert isinstance(step, Publish)
    kind, result = advance(o, None)
    assert kind == "done" and result[0][0] == "A" and result[0][1].code == "ErrTimeout"
    res = run_sync(op(), Server({"a": Msg("a", b"1"), "b": err("ErrNoResponders")}))
    assert res[0][0].data == b"1" and res[0][1].code == "ErrNoResponders"


def test_units():
    d = {"max_age": 5_000_000_000, "duplicate_window": 0, "x": -1, "backoff": [1_000_000, 2_000_000]}
    api.ns2ms(d, "max_age", "duplicate_window", "x", "backoff")
    assert d == {"max_age": 5000, "duplicate_window": 0, "x": -1, "backoff": [1, 2]}
    assert api.iso_to_ms("2022-11-22T13:31:35.4514983Z") == 1669123895451
    assert api.iso_to_ms("2022-11-22T13:31:35Z") == 1669123895000
    assert api.iso_to_ms("2022-11-22T14:31:35.5+01:00") == 1669123895500
    assert api.ms_to_iso(1669123895451) == "2022-11-22T13:31:35.451Z"
    with pytest.raises(NatsError):
        api.iso_to_ms("yesterday")


def test_iso_times_of_a_known_second_give_what_the_parse_gives():
    """iso_to_ms's Python path keeps the whole seconds of the server's form
    (UTC, a fraction); a time of a second seen before gives what parsing it
    gives, and what the parse refuses stays refused (the compiled iso_ms:
    test_iso_ms.py)."""
    import datetime
    import random

    def parsed(ts):
        api._WHOLE_SECONDS.clear()
        try:
            return api._iso_to_ms(ts)
        except NatsError as e:
            return e.code

    rnd = random.Random(20)
    cases = ["2022-11-22T13:31:35.4514983Z", "2022-11-22T13:31:35.9996Z", "2022-11-22T13:31:35.0005Z",
             "2022-11-22T13:31:35Z", "2022-11-22T13:31:35.Z", "2022-11-22T13:31:35.12aZ",
             "2022-11-22T13:31:35.\u0663Z", "2022-11-22T14:31:35.5+01:00", "2016-12-31T23:59:60.5Z",
             "2022-13-22T13:31:35.1Z", "2022-11-22T24:31:35.1Z", "1970-01-01T00:00:00.000000001Z"]
    for _ in range(500):
        when = datetime.datetime.fromtimestamp(rnd.randint(0, 2 ** 33), datetime.timezone.utc)
        cases.append(when.strftime("%Y-%m-%dT%H:%M:%S.") + str(rnd.randint(0, 10 ** 9))[:rnd.randint(1, 9)] + "Z")
    for ts in cases:
        ts = ts.encode().decode("unicode_escape")
        want = parsed(ts)
        try:
            api._iso_to_ms(ts[:19] + ".1Z")  # the same second seen first
        except NatsError:
            pass
        try:
            got = api._iso_to_ms(ts)
        except NatsError as e:
            got = e.code
        assert got == want, ts
    assert api._WHOLE_SECONDS  # the cache served


# ------------------------------------------------------------------ config
def test_stream_config_table():
    cfg = config.stream_config("S", {"-subjects": ["s.*"], "-max_age": 1500, "-duplicate_window": 100,
                                     "discard": "old", "deny_delete": "yes", "max_msgs": "10",
                                     "metadata": {"owner": 1}})
    assert cfg == {"name": "S", "subjects": ["s.*"], "retention": "limits", "max_msgs": 10, "discard": "old",
                   "max_age": 1_500_000_000, "storage": "file", "duplicate_window": 100_000_000,
                   "deny_delete": True, "metadata": {"owner": "1"}}
    assert config.stream_config("S", {"max_age": 1.5}, unit="s")["max_age"] == 1_500_000_000
    for opts, msg in (({"retention": "forever"}, "Invalid value for the enum retention : forever; allowed values: "
                                                  "limits interest workqueue"),
                      ({"max_msgs": "ten"}, "Invalid value for the int option max_msgs : ten"),
                      ({"sealed": "maybe"}, "Invalid value for the bool option sealed : maybe"),
                      ({"subjects": []}, "Invalid value for the list option subjects : []"),
                      ({"description": ""}, "Invalid value for the valid_str option description : "),
                      ({"metadata": {}}, "Invalid value for the metadata option metadata : {}"),
                      ({"mirror": "{bad"}, "Invalid value for the json option mirror : {bad"),
                      ({"colour": "red"}, "Unknown option colour")):
        with pytest.raises(NatsError) as e:
            config.stream_config("S", opts)
        assert e.value.code == "ErrInvalidArg" and str(e.value) == msg
    with pytest.raises(NatsError):
        config.stream_config("bad.name", {})
    # fields newer than the table pass through when not strict
    assert config.stream_config("S", {"allow_msg_ttl": True}, strict=False)["allow_msg_ttl"] is True
    assert config.stream_config("S", {"subject_delete_marker_ttl": 2}, unit="s", extended=True)[
        "subject_delete_marker_ttl"] == 2_000_000_000


def test_consumer_config_table():
    cfg = config.consumer_config({"durable_name": "D", "ack_wait": 2000, "max_deliver": 3})
    assert cfg == {"durable_name": "D", "deliver_policy": "all", "ack_policy": "explicit", "ack_wait": 2_000_000_000,
                   "max_deliver": 3, "replay_policy": "instant"}
    with pytest.raises(NatsError) as e:
        config.consumer_config({"name": "a", "durable_name": "b"})
    assert str(e.value) == "-name conflicts with -durable_name"
    with pytest.raises(NatsError):
        config.consumer_config({"deliver_policy": "sometimes"})
    with pytest.raises(NatsError):
        config.consumer_config({"name": "x.y"})
    ext = config.consumer_config({"backoff": [1, 2.5], "filter_subjects": ["a", "b"]}, unit="s", extended=True)
    assert ext["backoff"] == [1_000_000_000, 2_500_000_000] and ext["filter_subjects"] == ["a", "b"]
    reply = {"config": {"ack_wait": 30_000_000_000, "idle_heartbeat": 0, "inactive_threshold": 5_000_000_000}}
    assert config.consumer_reply_to_ms(reply)["config"] == {"ack_wait": 30000, "idle_heartbeat": 0,
                                                            "inactive_threshold": 5000}
    assert config.stream_reply_to_ms({"config": {"max_age": 0, "duplicate_window": 120_000_000_000}})[
        "config"] == {"max_age": 0, "duplicate_window": 120000}


def test_sources_transforms_republish():
    t = config.make_subject_transform("foo.*", "foo2.{{wildcard(1)}}")
    assert t == {"src": "foo.*", "dest": "foo2.{{wildcard(1)}}"}
    src = config.make_stream_source("ORIGIN", opt_start_seq=5, filter_subject="a.>", subject_transforms=[t],
                                    api="$JS.hub.API", deliver="deliver.hub")
    assert src == {"name": "ORIGIN", "opt_start_seq": 5, "filter_subject": "a.>", "subject_transforms": [t],
                   "external": {"api": "$JS.hub.API", "deliver": "deliver.hub"}}
    assert config.make_stream_source("O", domain="leaf")["external"] == {"api": "$JS.leaf.API"}
    assert config.make_republish("a.>", "b.>") == {"src": "a.>", "dest": "b.>", "headers_only": False}
    for bad in (lambda: config.make_stream_source(""), lambda: config.make_subject_transform("a", ""),
                lambda: config.make_republish("", "b"),
                lambda: config.make_stream_source("O", domain="x", api="y")):
        with pytest.raises(NatsError):
            bad()
    cfg = config.stream_config("AGG", {"sources": [src, json.dumps({"name": "OTHER"})], "mirror_direct": 1})
    assert cfg["sources"][1] == {"name": "OTHER"} and cfg["mirror_direct"] is True
    cfg = config.stream_config("M", {"mirror": src, "subject_transform": t, "republish": json.dumps(
        config.make_republish("a", "b", True))})
    assert cfg["mirror"]["name"] == "ORIGIN" and cfg["republish"]["headers_only"] is True


# ------------------------------------------------------------------ publish
def test_publish_headers_and_acks():
    h = publish.publish_headers({"A": "1", "B": ["x", "y"]}, msg_id="m1", expected_stream="S", expected_last_seq=0,
                                expected_last_subject_seq=5, expected_last_msg_id="m0", ttl="10s")
    assert h == {"A": ["1"], "B": ["x", "y"], "Nats-Msg-Id": ["m1"], "Nats-Expected-Stream": ["S"],
                 "Nats-Expected-Last-Sequence": ["0"], "Nats-Expected-Last-Subject-Sequence": ["5"],
                 "Nats-Expected-Last-Msg-Id": ["m0"], "Nats-TTL": ["10s"]}
    assert publish.publish_headers() is None
    with pytest.raises(NatsError):
        publish.publish_headers(msg_id="")
    ack_ = run_sync(publish.publish("s.a", b"x"), Server({"s.a": jmsg({"stream": "S", "seq": 3, "duplicate": True})}))
    assert ack_ == {"stream": "S", "seq": 3, "duplicate": True}
    for reply, code in ((status(503), "ErrNoResponders"), (api_error(400, 10071), "ErrWrongLastSequence"),
                        (api_error(400, 10060, "expected stream does not match"), "ErrJSResponse"),
                        (Msg("x", b""), "ErrJSResponse"), (Msg("x", b"{}"), "ErrJSResponse")):
        with pytest.raises(NatsError) as e:
            publish.parse_ack(reply)
        assert e.value.code == code
    e = publish.ack_error_dict(api.error_from_api({"code": 400, "err_code": 10060, "description": "nope"}))
    assert e == {"code": 400, "err_code": 10060, "errorMessage": "nope"}


def test_async_publisher_bounds_what_is_in_flight_and_times_out():
    ap = publish.AsyncPublisher("_INBOX.P", max_pending=2)
    assert ap.subscription_subject == "_INBOX.P.*"
    r1 = ap.add("s.a", b"1", None, "h1", 5, now=100)
    r2 = ap.add("s.a", b"2", None, "h2", 3, now=100)
    assert (r1, r2) == ("_INBOX.P.1", "_INBOX.P.2") and ap.pending == 2 and ap.full
    with pytest.raises(NatsError) as ei:                                     # the driver waited in vain
        ap.add("s.a", b"3", {"K": ["v"]}, "h3", 5, now=100, stall_ms=200)
    assert ei.value.code == "ErrTooManyStalledMsgs" and "200 ms" in str(ei.value) and ap.pending == 2
    assert ap.next_deadline() == 103
    assert ap.on_reply(jmsg({"stream": "S", "seq": 1}, r1)) == ("h1", {"stream": "S", "seq": 1}, None)
    assert not ap.full
    r3 = ap.add("s.a", b"3", {"K": ["v"]}, "h3", 5, now=101)
    assert r3 == "_INBOX.P.3"
    assert ap.expire(now=102) == []
    (h, e), = ap.expire(now=103)
    assert h == "h2" and e.code == "ErrTimeout"
    assert ap.on_reply(jmsg({"stream": "S", "seq": 2}, r2)) is None           # late
    h, ack_, e = ap.on_reply(status(503, subject="_INBOX.P.3"))
    assert h == "h3" and ack_ is None and e.code == "ErrNoResponders" and ap.pending == 0
    assert ap.next_deadline() is None
    r5 = ap.add("s", b"", None, "h5", 5, now=200)
    assert ap.forget(r5) == "h5" and ap.forget(r5) is None                    # a send that failed
    ap.add("s", b"", None, "h6", 5, now=200)
    ap.add("s", b"", None, "h7", 5, now=200)
    assert ap.fail_all(err("ErrConnectionClosed")) == ["h6", "h7"] and ap.pending == 0
    with pytest.raises(NatsError):
        publish.AsyncPublisher("_INBOX.Q", max_pending=0)


# ------------------------------------------------------------------ ack, meta
def test_ack_payloads():
    assert (ack.ACK, ack.NAK, ack.WPI, ack.TERM) == (b"+ACK", b"-NAK", b"+WPI", b"+TERM")
    assert ack.nak_payload() == b"-NAK"
    assert ack.nak_payload(1500) == b'-NAK {"delay":1500000000}'
    assert ack.term_payload("bad data") == b"+TERM bad data"
    with pytest.raises(NatsError) as e:
        ack.nak_payload(-1)
    assert e.value.code == "ErrBadTimeout"
    m = js_msg(1, 1)
    assert ack.ack_subject(m) == m.reply
    with pytest.raises(NatsError) as e:
        ack.ack_subject(Msg("x", b"", "_INBOX.y"))
    assert e.value.code == "ErrNotJSMessage"
    st = ack.AckState()
    st.check(ack.WPI)
    st.done(ack.WPI)
    st.check(ack.ACK)
    st.done(ack.nak_payload(10))
    assert st.final == b"-NAK"
    with pytest.raises(NatsError):
        st.check(ack.TERM)


def test_metadata_v1_and_v2():
    m = meta.parse_metadata("$JS.ACK.S.C.2.15.7.1700000000123456789.3", "s.a")
    assert m == {"stream": "S", "consumer": "C", "num_delivered": 2, "stream_seq": 15, "consumer_seq": 7,
                 "timestamp": 1700000000123, "num_pending": 3}
    v2 = meta.parse_metadata("$JS.ACK.hub.ACCHASH.S.C.2.15.7.1700000000123456789.3.rnd", "s.a")
    assert v2 == dict(m, domain="hub")
    assert "domain" not in meta.parse_metadata("$JS.ACK._.ACCHASH.S.C.2.15.7.1700000000123456789.3", "s")
    assert meta.metadata_from_reply("$JS.ACK.hub.H.S.C.2.15.7.1700000000123456789.3.r") == m
    for bad in ("_INBOX.x", "$JS.ACK.S.C.1.2", "", None, "$JS.ACK.S.C.x.2.3.4.5"):
        with pytest.raises(NatsError) as e:
            meta.parse_metadata(bad, "subj")
        assert e.value.code == "ErrNotJSMessage"
    assert str(e.value) == "Message with subject subj is not a JetStream message"


# ------------------------------------------------------------------ pull: fetch
def test_classify_statuses():
    assert pull.classify(js_msg(1, 1)) == "msg"
    assert pull.classify(status(100, "Idle Heartbeat")) == "heartbeat"
    assert pull.classify(status(100, "FlowControl Request")) == "flow_control"
    assert [pull.classify(status(c)) for c in (404, 408, 409, 400, 423, 503, 418)] == [
        "no_messages", "timeout", "conflict", "bad_request", "pin_mismatch", "no_responders", "status"]
    for desc, code, terminal in (("Consumer Deleted", "ErrConsumerDeleted", True),
                                 ("Consumer is push based", "ErrNotPullConsumer", True),
                                 ("Exceeded MaxWaiting", "ErrPullRequestLimit", False),
                                 ("Exceeded MaxRequestBatch of 5", "ErrPullRequestLimit", False),
                                 ("Leadership Change", "ErrConsumerLeadershipChanged", False)):
        e, t = pull.status_error(status(409, desc))
        assert (e.code, t) == (code, terminal)
    assert pull.status_error(status(409, "Message Size Exceeds MaxBytes")) == (None, False)
    assert pull.status_error(status(408, "Request Timeout")) == (None, False)
    assert pull.status_error(status(400, "Bad Request"))[1] is True
    assert pull.pending_of(status(408, headers={"Nats-Pending-Messages": ["3"], "Nats-Pending-Bytes": ["40"]})) == (3, 40)
    assert pull.pending_of(status(404)) is None


def test_fetch_no_wait_and_timeouts_like_nats_tcl():
    f = pull.Fetch(10, js_timeout_ms=3000)
    assert f.no_wait and f.timeout_ms == 3000 and json.loads(f.body) == {"batch": 10, "no_wait": True}
    f = pull.Fetch(10, timeout_ms=1000)
    assert not f.no_wait and f.expires_ms == 990 and json.loads(f.body) == {"expires": 990_000_000, "batch": 10}
    assert pull.Fetch(1, timeout_ms=15).expires_ms == 15
    f = pull.Fetch(5, timeout_ms=1000, expires_ms=500, max_bytes=100, idle_heartbeat_ms=100)
    assert json.loads(f.body) == {"expires": 500_000_000, "batch": 5, "max_bytes": 100,
                                  "idle_heartbeat": 100_000_000}
    assert f.heartbeat_timeout_ms == 200
    with pytest.raises(NatsError) as e:
        pull.Fetch(1, expires_ms=100)
    assert str(e.value) == "-expires requires -timeout"
    with pytest.raises(NatsError) as e:
        pull.Fetch(0)
    assert e.value.code == "ErrInvalidArg"
    with pytest.raises(NatsError) as e:
        pull.Fetch(1, timeout_ms=-5)
    assert e.value.code == "ErrBadTimeout"


def test_fetch_ends():
    # all messages: done without a status
    f = pull.Fetch(2, timeout_ms=1000)
    assert f.on_msg(js_msg(1, 1)) == [Delivered(f.messages[0], None)] and not f.done
    assert f.on_msg(status(100, "Idle Heartbeat")) == [HEARTBEAT]
    f.on_msg(js_msg(2, 2))
    assert f.done and f.outcome == "complete" and len(f.result()) == 2
    assert f.on_msg(js_msg(3, 3)) == []  # anything later is not ours
    # some, then 408: the async callback gets (1, status)
    f = pull.Fetch(10, timeout_ms=1000)
    f.on_msg(js_msg(1, 1))
    end = status(408, "Request Timeout")
    assert f.on_msg(end) == [Ended(end)] and f.outcome == "status" and len(f.result()) == 1
    # none, 404: an empty list
    f = pull.Fetch(10)
    f.on_msg(status(404, "No Messages"))
    assert f.result() == [] and not f.probe
    # client-side timeout: ErrTimeout without messages (after a probe), the messages with some
    f = pull.Fetch(10, timeout_ms=500, expires_ms=1000)
    assert f.on_timeout() == [Ended(None)] and f.probe
    with pytest.raises(NatsError) as e:
        f.result()
    assert e.value.code == "ErrTimeout"
    f = pull.Fetch(10, timeout_ms=500)
    f.on_msg(js_msg(1, 1))
    f.on_timeout()
    assert len(f.result()) == 1 and not f.probe
    # connection lost / closed (CoreAPI.md table)
    with pytest.raises(NatsError) as e:
        f.result(lost=True)
    assert (e.value.code, str(e.value)) == ("ErrTimeout", "Connection lost")
    with pytest.raises(NatsError) as e:
        f.result(closed=True)
    assert e.value.code == "ErrConnectionClosed"
    # no responders: like a timeout, to be probed
    f = pull.Fetch(1, timeout_ms=500)
    assert f.on_msg(status(503)) == [Ended(None)] and f.probe
    # consumer deleted: the Python face raises it when nothing came
    f = pull.Fetch(3, timeout_ms=500)
    f.on_msg(status(409, "Consumer Deleted"))
    assert f.result() == []
    with pytest.raises(NatsError) as e:
        f.result(raise_status=True)
    assert e.value.code == "ErrConsumerDeleted"
    # the server stops: its 409 Server Shutdown ends the pull; an empty list
    # for the Tcl face (nats-tcl), ErrServerShutdown for the Python faces
    # (nats.go's Fetch) when nothing came, the messages when some did
    f = pull.Fetch(3, timeout_ms=500)
    f.on_msg(status(409, "Server Shutdown"))
    assert f.outcome == "status" and f.result() == [] and not f.probe
    with pytest.raises(NatsError) as e:
        f.result(raise_status=True)
    assert e.value.code == "ErrServerShutdown"
    f = pull.Fetch(3, timeout_ms=500)
    f.on_msg(js_msg(1, 1))
    f.on_msg(status(409, "Server Shutdown"))
    assert len(f.result(raise_status=True)) == 1
    # max_bytes fills it; missed heartbeats end it
    f = pull.Fetch(100, timeout_ms=1000, max_bytes=50)
    f.on_msg(js_msg(1, 1, data=b"x" * 60))
    assert f.outcome == "complete"
    f = pull.Fetch(5, timeout_ms=1000, idle_heartbeat_ms=100)
    f.on_heartbeat_missed()
    with pytest.raises(NatsError) as e:
        f.result()
    assert e.value.code == "ErrNoHeartbeat"


def test_connection_gone_is_the_sync_fetch_rule_for_a_closed_connection():
    # checked when a fetch's wait ends (the Tcl face: $Js fetch_gone)
    pull.connection_gone(False, False)  # the connection lives: no error
    with pytest.raises(NatsError) as e:
        pull.connection_gone(False, True)
    assert (e.value.code, str(e.value)) == ("ErrTimeout", "Connection lost")
    with pytest.raises(NatsError) as e:
        pull.connection_gone(True, False)
    assert (e.value.code, str(e.value)) == ("ErrConnectionClosed", "Connection closed")


# ------------------------------------------------------------------ pull: consume
def bodies(events):
    return [json.loads(e.body) for e in events if e.__class__ is Pull]


def test_consume_refills_at_threshold():
    c = pull.Consume(10, expires_ms=2000)
    assert c.idle_heartbeat_ms == 1000 and c.heartbeat_timeout_ms == 2000 and c.threshold_messages == 5
    assert bodies(c.start()) == [{"expires": 2_000_000_000, "batch": 10, "idle_heartbeat": 1_000_000_000}]
    for i in range(1, 5):
        ev = c.on_msg(js_msg(i, i))
        assert ev == [Delivered(ev[0].msg, None)] and ev[0].msg.reply.split(".")[5] == str(i)
    assert c.pending_msgs == 6
    ev = c.on_msg(js_msg(5, 5))
    assert bodies(ev) == [{"expires": 2_000_000_000, "batch": 5, "idle_heartbeat": 1_000_000_000}]
    assert c.pending_msgs == 10 and c.delivered == 5
    assert c.on_msg(status(100, "Idle Heartbeat")) == []
    # an expired pull says what it still owed
    ev = c.on_msg(status(408, "Request Timeout", {"Nats-Pending-Messages": ["5"], "Nats-Pending-Bytes": ["0"]}))
    assert bodies(ev) == [{"expires": 2_000_000_000, "batch": 5, "idle_heartbeat": 1_000_000_000}]
    # max_messages 1 does not get stuck
    c = pull.Consume(1)
    c.start()
    assert bodies(c.on_msg(js_msg(1, 1)))[0]["batch"] == 1


def test_consume_warnings_stops_heartbeats_reconnects():
    c = pull.Consume(4, expires_ms=1000, idle_heartbeat_ms=200)
    c.start()
    ev = c.on_msg(status(409, "Exceeded MaxWaiting", {"Nats-Pending-Messages": ["4"], "Nats-Pending-Bytes": ["0"]}))
    assert type(ev[0]) is Warn and ev[0].error.code == "ErrPullRequestLimit" and bodies(ev)[0]["batch"] == 4
    ev = c.on_heartbeat_missed()
    assert type(ev[0]) is Warn and ev[0].error.code == "ErrNoHeartbeat" and bodies(ev)[0]["batch"] == 4
    c.on_disconnect()
    assert c.on_heartbeat_missed() == [] and c._pull([]) is None
    assert bodies(c.on_reconnect())[0]["batch"] == 4
    # no responders (no such consumer): the next pull waits for the heartbeat clock
    ev = c.on_msg(status(503))
    assert [type(e) for e in ev] == [Warn] and ev[0].error.code == "ErrNoResponders" and c.backoff
    ev = c.on_heartbeat_missed()
    assert [type(e) for e in ev] == [Pull] and not c.backoff
    ev = c.on_msg(status(409, "Consumer Deleted"))
    assert ev == [Stop(c.stopped)] and ev[0].error.code == "ErrConsumerDeleted"
    assert c.on_msg(js_msg(1, 1)) == [] and c.on_heartbeat_missed() == []


def test_consume_by_bytes_and_limits():
    c = pull.Consume(max_bytes=1000, expires_ms=5000)
    b = bodies(c.start())[0]
    assert b["max_bytes"] == 1000 and b["batch"] == 1_000_000 and c.threshold_bytes == 500
    size = pull.msg_size(js_msg(1, 1, data=b"x" * 100))
    pulls = []
    for i in range(1, 6):
        before = c.pending_bytes - size
        pulls += [(before, b) for b in bodies(c.on_msg(js_msg(i, i, data=b"x" * 100)))]
    before, b = pulls[0]
    assert before <= 500 and b["max_bytes"] == 1000 - before
    for bad in (dict(max_messages=1, max_bytes=1), dict(expires_ms=500), dict(max_messages=10, threshold_messages=11),
                dict(expires_ms=2000, idle_heartbeat_ms=1500)):
        with pytest.raises(NatsError):
            pull.Consume(**bad)
    assert pull.Consume(expires_ms=120000).idle_heartbeat_ms == 30000
    assert pull.Consume(expires_ms=1000).idle_heartbeat_ms == 500


# ------------------------------------------------------------------ ordered consumers
def hb(last=None, stalled=None):
    h = {}
    if last is not None:
        h["Nats-Last-Consumer"] = [str(last)]
    if stalled:
        h["Nats-Consumer-Stalled"] = [stalled]
    return status(100, "Idle Heartbeat", h)


def test_ordered_consumer_config_and_creation():
    oc = ordered.OrderedConsumer("S", filter_subject="s.>", deliver_policy="last_per_subject", headers_only=True,
                                 idle_heartbeat_ms=1000, description="KV watcher")
    cfg = oc.config("_INBOX.1")
    assert cfg == {"deliver_subject": "_INBOX.1", "ack_policy": "none", "max_deliver": 1, "flow_control": True,
                   "idle_heartbeat": 1_000_000_000, "mem_storage": True, "num_replicas": 1,
                   "inactive_threshold": 2_000_000_000, "ack_wait": 22 * 3600 * 10**9, "description": "KV watcher",
                   "headers_only": True, "filter_subject": "s.>", "deliver_policy": "last_per_subject"}
    req = oc.create_request(JsApi("hub"), "_INBOX.1")
    assert req.subject == "$JS.hub.API.CONSUMER.CREATE.S" and json.loads(req.payload)["action"] == "create"
    oc.on_created({"name": "abc", "delivered": {"stream_seq": 0, "consumer_seq": 0}, "num_pending": 2})
    assert oc.name == "abc" and oc.heartbeat_timeout_ms == 3000
    with pytest.raises(NatsError):
        ordered.OrderedConsumer("S", deliver_policy="whenever")
    with pytest.raises(NatsError):
        ordered.OrderedConsumer("S.x")


def test_ordered_consumer_tracks_and_resets():
    oc = ordered.OrderedConsumer("S", idle_heartbeat_ms=100)
    oc.on_created({"name": "c1", "delivered": {"stream_seq": 0, "consumer_seq": 0}})
    ev = oc.on_msg(js_msg(5, 1))
    assert type(ev[0]) is Delivered and ev[0].meta["stream_seq"] == 5
    assert type(oc.on_msg(js_msg(6, 2))[0]) is Delivered
    assert oc.on_msg(hb(last=2)) == []
    # flow control and a stalled heartbeat are answered
    fc = status(100, "FlowControl Request", reply="$JS.FC.S.x")
    assert oc.on_msg(fc) == [FlowReply("$JS.FC.S.x")]
    assert oc.on_msg(hb(last=2, stalled="$JS.FC.S.y")) == [FlowReply("$JS.FC.S.y")]
    # a gap: reset from the next stream sequence
    ev = oc.on_msg(js_msg(9, 4))
    assert ev == [Reset(oc.last_error)] and ev[0].error.code == "ErrConsumerSequenceMismatch" and oc.name == ""
    assert oc.on_msg(js_msg(10, 5)) == []  # leftovers of the old consumer
    cfg = oc.config("_INBOX.2")
    assert cfg["deliver_policy"] == "by_start_sequence" and cfg["opt_start_seq"] == 7
    assert oc.on_create_failed(err("ErrTimeout")) == [Retry(10000, oc.last_error)]
    oc.on_created({"name": "c2", "delivered": {"stream_seq": 6, "consumer_seq": 0}})
    assert type(oc.on_msg(js_msg(7, 1))[0]) is Delivered and oc.resets == 1
    # a heartbeat naming another last sequence, then silence
    assert type(oc.on_msg(hb(last=5))[0]) is Reset
    oc.on_created({"name": "c3", "delivered": {"stream_seq": 7, "consumer_seq": 0}})
    ev = oc.on_heartbeat_missed()
    assert ev == [Reset(oc.last_error)] and ev[0].error.code == "ErrConsumerNotActive" and oc.resets == 3
    assert oc.on_heartbeat_missed() == []  # already resetting
    ev = oc.on_create_failed(err("ErrStreamNotFound"))
    assert ev == [Stop(oc.stopped)] and oc.stopped.code == "ErrStreamNotFound"


def test_ordered_consumer_reset_before_any_message_keeps_start():
    oc = ordered.OrderedConsumer("S", deliver_policy="new")
    oc.on_created({"name": "c", "delivered": {"stream_seq": 0, "consumer_seq": 0}})
    oc.on_heartbeat_missed()
    assert oc.config("_INBOX.3")["deliver_policy"] == "new"


def test_a_per_call_timeout_reaches_every_request_of_an_operation():
    base = JsApi()
    quick = base.with_timeout(250)
    assert base.with_timeout(None) is base
    assert quick.prefix == base.prefix and base.default_timeout is None
    assert quick.request("INFO").timeout == 250
    assert quick.request("INFO", timeout=900).timeout == 900  # a timeout named by the call wins
    assert base.request("INFO").timeout is None  # the original is untouched
    op = quick.stream_delete("ORDERS")
    step = next(op)
    assert isinstance(step, Request) and step.subject == "$JS.API.STREAM.DELETE.ORDERS" and step.timeout == 250
    paged = quick.stream_names()
    assert next(paged).timeout == 250


def test_fetch_wait_failed_ends_on_timeouts_and_a_closed_inbox_only():
    for code, hb, outcome in (("ErrTimeout", True, "no_heartbeat"), ("ErrTimeout", False, "timeout"),
                              ("ErrBadSubscription", True, "timeout")):
        f = pull.Fetch(5, timeout_ms=1000, expires_ms=500, idle_heartbeat_ms=100)
        assert f.on_wait_failed(code, hb) is True and f.done and f.outcome == outcome
    f = pull.Fetch(5, timeout_ms=1000)
    assert f.on_wait_failed("ErrConnectionClosed", False) is False and not f.done
