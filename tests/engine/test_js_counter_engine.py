"""engine/js/counter.py (ADR-49) fed with scripted replies: no server."""

import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import Batch, JsApi, Request, counter, run_sync


def jmsg(obj):
    return Msg("_INBOX.x", json.dumps(obj).encode())


class Server:
    """API level 5 on $JS.API.INFO, then ``route(step)`` for the rest."""

    def __init__(self, route, level=5):
        self.route = route
        self.level = level
        self.seen = []

    def __call__(self, step):
        self.seen.append(step)
        if step.subject.endswith(".INFO") and "STREAM" not in step.subject:
            return jmsg({"api": {"level": self.level}, "memory": 0})
        r = self.route(step)
        if isinstance(r, NatsError):
            raise r
        return r


def steps(server):
    return [s for s in server.seen if not (s.subject.endswith(".INFO") and "STREAM" not in s.subject)]


@pytest.mark.parametrize("delta, text", [(5, "5"), (-2, "-2"), (0, "0"), ("+7", "7"), (" 12 ", "12"),
                                         (10 ** 30, str(10 ** 30)), ("-" + "9" * 40, "-" + "9" * 40)])
def test_delta_text_takes_ints_and_their_decimal_text(delta, text):
    assert counter.delta_text(delta) == text


@pytest.mark.parametrize("delta", ["abc", "1.5", 1.5, True, None, "", "0x10", b"1", "1e3"])
def test_a_delta_that_is_not_an_integer_is_err_invalid_arg(delta):
    with pytest.raises(NatsError) as e:
        counter.delta_text(delta)
    assert e.value.code == "ErrInvalidArg"
    srv = Server(lambda s: jmsg({"stream": "C", "seq": 1, "val": "1"}))
    with pytest.raises(NatsError) as e:
        run_sync(counter.add(JsApi(), "c.a", delta), srv)
    assert e.value.code == "ErrInvalidArg" and srv.seen == []  # refused before anything is sent


def test_add_publishes_the_incr_header_and_returns_the_new_value_as_an_int():
    big = "123456789012345678901234567890"
    srv = Server(lambda s: jmsg({"stream": "C", "seq": 3, "val": big}))
    assert run_sync(counter.add(JsApi(), "c.a", -4), srv) == int(big)
    (req,) = steps(srv)
    assert isinstance(req, Request) and req.subject == "c.a" and req.payload == b""
    assert req.headers == {"Nats-Incr": ["-4"]}


@pytest.mark.parametrize("err_code, desc", [(10168, "message counters is disabled"),
                                            (10171, "message counter increment is invalid")])
def test_the_servers_refusal_is_err_js_response_with_its_err_code(err_code, desc):
    srv = Server(lambda s: jmsg({"error": {"code": 400, "err_code": err_code, "description": desc},
                                 "stream": "P", "seq": 0}))
    with pytest.raises(NatsError) as e:
        run_sync(counter.add(JsApi(), "p.a", 1), srv)
    assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == err_code
    assert desc in str(e.value)


def test_an_ack_without_a_value_is_an_error():
    srv = Server(lambda s: jmsg({"stream": "C", "seq": 3}))
    with pytest.raises(NatsError) as e:
        run_sync(counter.add(JsApi(), "c.a", 1), srv)
    assert e.value.code == "ErrJSResponse"


def test_get_reads_the_last_message_of_the_subject():
    import base64
    body = base64.b64encode(b'{"val":"-17"}').decode()

    def route(s):
        assert s.subject == "$JS.API.STREAM.MSG.GET.C" and json.loads(s.payload) == {"last_by_subj": "c.a"}
        return jmsg({"message": {"subject": "c.a", "seq": 9, "data": body, "time": "2025-01-01T00:00:00Z"}})
    assert run_sync(counter.get(JsApi(), "C", "c.a"), Server(route)) == -17


def test_get_direct_and_get_many_skip_the_subjects_without_a_counter():
    def route(s):
        if s.subject.endswith("c.none"):
            return Msg("_INBOX.x", b"", None, {"Status": ["404"], "Description": ["Message Not Found"]})
        return Msg("_INBOX.x", b'{"val":"%s"}' % s.subject[-1].encode(), None,
                   {"Nats-Sequence": ["1"], "Nats-Subject": [s.subject[len("$JS.API.DIRECT.GET.C."):]]})
    srv = Server(route)
    assert run_sync(counter.get(JsApi(), "C", "c.5", direct=True), srv) == 5
    srv.seen.clear()
    got = run_sync(counter.get_many(JsApi(), "C", ["c.1", "c.none", "c.2"], direct=True), srv)
    assert got == {"c.1": 1, "c.2": 2}
    with pytest.raises(NatsError) as e:
        run_sync(counter.get(JsApi(), "C", "c.none", direct=True), srv)
    assert e.value.code == "ErrMsgNotFound"


def test_get_many_sends_its_gets_as_one_batch_and_raises_other_errors():
    api = JsApi()
    op = counter.get_many(api, "C", ["c.1", "c.2"])
    step = next(op)
    while not isinstance(step, Batch):  # the API level check first
        step = op.send(jmsg({"api": {"level": 5}}))
    assert [s.subject for s in step.steps] == ["$JS.API.STREAM.MSG.GET.C"] * 2
    with pytest.raises(NatsError) as e:
        op.send([NatsError("boom"), jmsg({"message": {"data": ""}})])
    assert str(e.value) == "boom"


def test_bad_values_and_names():
    with pytest.raises(NatsError) as e:
        counter.counter_value(b'{"val":"x"}')
    assert e.value.code == "ErrJSResponse"
    assert counter.counter_value(b'{"val":"42"}') == 42
    for op in (counter.get(JsApi(), "C", "bad subject"), counter.add(JsApi(), "c.*", 1)):
        with pytest.raises(NatsError) as e:
            run_sync(op, Server(lambda s: None))
        assert e.value.code == "ErrBadSubject"
    with pytest.raises(NatsError) as e:
        run_sync(counter.get(JsApi(), "a.b", "c.a"), Server(lambda s: None))
    assert e.value.code == "ErrInvalidArg"


def test_a_server_below_the_counters_level_is_refused_before_any_request():
    srv = Server(lambda s: jmsg({"stream": "C", "seq": 1, "val": "1"}), level=1)
    with pytest.raises(NatsError) as e:
        run_sync(counter.add(JsApi(), "c.a", 1), srv)
    assert "2.12" in str(e.value)
    assert steps(srv) == []
