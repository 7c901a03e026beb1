"""The engine's state machine driven by byte feeds and a fake clock."""

import json

import pytest

from tclnats_py import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, NatsError, Options

INFO = b'INFO {"server_id":"s","version":"2.15.1-binary","max_payload":64,"headers":true,"proto":1}\r\n'


class Clock:
    def __init__(self):
        self.t = 1000

    def __call__(self):
        return self.t


def kinds(fx):
    return [f[0] for f in fx]


def connected_engine(**opts):
    clock = Clock()
    e = Engine(Options(**opts), clock=clock, lang="test")
    e.configure_servers(["nats://a:4222"])
    e.connect()
    fx = e.take()
    assert ("status", CONNECTING) in fx and any(f[0] == "open" for f in fx)
    e.socket_connected()
    e.receive_data(INFO)
    out = e.data_to_send()
    assert out.startswith(b"CONNECT ") and out.endswith(b"PING\r\n")
    e.receive_data(b"PONG\r\n")
    assert e.status == CONNECTED
    e.take()
    return e, clock


def test_handshake_connect_fields_and_version_suffix():
    e = Engine(Options(name="n1", user="u", password="p"), lang="Tcl", version="3.2.1")
    e.configure_servers(["nats://h"])
    e.connect()
    e.socket_connected()
    e.receive_data(INFO.replace(b'"proto":1', b'"proto":1,"auth_required":true'))
    line = e.data_to_send().split(b"\r\n")[0]
    params = json.loads(line[len(b"CONNECT "):])
    assert list(params)[:8] == ["verbose", "pedantic", "tls_required", "name", "lang", "version",
                                "protocol", "echo"]
    assert params["name"] == "n1" and params["lang"] == "Tcl" and params["headers"] is True
    assert params["user"] == "u" and params["pass"] == "p"
    assert e.server_info["version"] == "2.15.1"


def test_publish_checks():
    e, _ = connected_engine()
    with pytest.raises(NatsError) as err:
        e.publish("a b", b"")
    assert err.value.code == "ErrBadSubject"
    with pytest.raises(NatsError) as err:
        e.publish("big", b"x" * 65)
    assert err.value.code == "ErrMaxPayload"
    with pytest.raises(NatsError) as err:
        e.subscribe("q.*", queue="bad.queue")
    assert err.value.code == "ErrBadQueueName"
    with pytest.raises(NatsError) as err:
        e.unsubscribe(99)
    assert err.value.code == "ErrBadSubscription"
    # nothing of the failed calls reached the wire
    assert e.data_to_send() == b""


def test_buffered_while_connecting_then_subs_first():
    e = Engine(Options(), clock=Clock())
    e.configure_servers(["nats://a"])
    e.connect()
    e.publish("x", b"1")
    e.subscribe("y", max_msgs=3)
    e.socket_connected()
    e.receive_data(INFO)
    assert b"PUB" not in e.data_to_send()  # only the handshake before PONG
    e.receive_data(b"PONG\r\n")
    assert e.data_to_send() == b"SUB y  1\r\nUNSUB 1 3\r\nPUB x  1\r\n1\r\n"


def test_max_msgs_and_restore_with_remaining_count():
    e, clock = connected_engine(reconnect_time_wait=100)
    sub = e.subscribe("s", max_msgs=3)
    e.data_to_send()
    e.receive_data(b"MSG s 1 1\r\na\r\n")
    assert sub.received == 1
    e.connection_lost("reset")
    fx = e.take()
    assert ("status", RECONNECTING) in fx and e.last_error.code == "ErrBrokenSocket"
    e.socket_connected()
    e.receive_data(INFO)
    e.data_to_send()
    e.receive_data(b"PONG\r\n")
    assert e.data_to_send() == b"SUB s  1\r\nUNSUB 1 2\r\n"
    e.receive_data(b"MSG s 1 1\r\nb\r\nMSG s 1 1\r\nc\r\n")
    assert 1 not in e.subs
    assert ("sub_gone", 1) in e.take()


def test_request_outcomes():
    e, _ = connected_engine()
    r1 = e.request("svc", b"q", timeout=500)
    out = e.data_to_send()
    assert out.startswith(b"SUB _INBOX.") and b"PUB svc _INBOX." in out
    prefix = e._mux_prefix
    e.receive_data(f"MSG {prefix}.{r1.id} 1 2\r\nok\r\n".encode())
    assert ("req", r1, "msg") in e.take() and r1.msg.data == b"ok"
    r2 = e.request("nobody", b"", timeout=500)
    e.receive_data(f"HMSG {prefix}.{r2.id} 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n".encode())
    assert ("req", r2, "no_responders") in e.take()
    r3 = e.request("slow", b"", timeout=500)
    e.timer_fired(r3)
    assert ("req", r3, "timeout") in e.take()
    r4 = e.request("x", b"", timeout=0)
    e.disconnect()
    assert ("req", r4, "closed") in e.take() and e.status == CLOSED


def test_gather_request():
    e, _ = connected_engine()
    r = e.request("many", b"", timeout=1000, max_msgs=2)
    inbox = r.reply
    e.receive_data(f"MSG {inbox} {r.sub.sid} 1\r\na\r\nMSG {inbox} {r.sub.sid} 1\r\nb\r\n".encode())
    fx = e.take()
    assert [f[0] for f in fx if f[0] in ("req_msg", "req")] == ["req_msg", "req_msg", "req"]
    assert [m.data for m in r.msgs] == [b"a", b"b"]


def test_lost_connection_fails_requests_as_lost():
    e, clock = connected_engine(max_reconnect_attempts=1)
    r = e.request("x", b"", timeout=0)
    e.connection_lost(None)  # one more try of the same server...
    e.socket_failed("refused")  # ...fails, and it leaves the pool
    fx = e.take()
    assert ("req", r, "lost") in fx and e.status == CLOSED


def test_stale_connection_after_unanswered_pings():
    e, _ = connected_engine(max_outstanding_pings=2)
    e.timer_fired("ping")
    e.timer_fired("ping")
    assert e.data_to_send() == b"PING\r\nPING\r\n"
    e.timer_fired("ping")
    assert e.last_error.code == "ErrStaleConnection" and e.status == RECONNECTING


def test_reconnect_wait_and_attempts():
    e, clock = connected_engine(reconnect_time_wait=2000, max_reconnect_attempts=2)
    e.connection_lost(None)
    assert [f for f in e.take() if f[0] == "open"]  # first retry at once
    e.socket_failed("refused")
    fx = e.take()
    assert ("timer", "reconnect", 2000) in fx
    clock.t += 2000
    e.timer_fired("reconnect")
    e.socket_failed("refused")
    fx = e.take()
    assert e.status == CLOSED and ("status", CLOSED) in fx


def test_err_mapping():
    e, _ = connected_engine()
    e.receive_data(b"-ERR 'Permissions Violation for Subscription to \"a\"'\r\n")
    assert e.last_error.code == "ErrPermissions" and e.status == CONNECTED
    e.receive_data(b"-ERR 'Authorization Violation'\r\n")
    assert e.last_error.code == "ErrAuthorization" and e.status == RECONNECTING


def test_discovered_servers_from_info():
    e, _ = connected_engine()
    e.receive_data(b'INFO {"connect_urls":["10.0.0.2:4222","10.0.0.3:5222"]}\r\n')
    hosts = [(s.host, s.port, s.discovered) for s in e.pool.servers]
    assert ("10.0.0.2", 4222, True) in hosts and ("10.0.0.3", 5222, True) in hosts


def test_bad_header_still_delivers_body():
    e, _ = connected_engine()
    e.subscribe("h")
    e.take()
    e.receive_data(b"HMSG h 1 12 14\r\nNATS/2.0\r\n\r\nhi\r\n")
    fx = e.take()
    msgs = [f for f in fx if f[0] == "msg"]
    assert msgs and msgs[0][2].data == b"hi"
    assert e.last_error.code == "ErrBadHeaderMsg" and e.status == CONNECTED
