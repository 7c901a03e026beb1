"""The sans-IO engine (``tclnats_py.engine.connection``) driven by byte feeds and a fake
clock: no sockets, no event loop.

A small fake driver carries out the effects the way the asyncio and Tcl
drivers do (timers by due time, writes collected as bytes), so each test
reads like a conversation with a server.  Behaviour follows nats-tcl's
CoreAPI.md ("Connection Status and the Reconnection Process", "Requests
Error Handling", the async error table).
"""

import base64
import json
import os

import nkeys
import pytest

from tclnats_py import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, Msg, NatsError, Options
from tclnats_py.engine.effects import (Deliver, Flush, InfoReceived, Log, Open, PingDone, RequestDone, RequestReply,
                                 StartTimer, StartTls, StatusChanged, SubGone, SubsCleared)

from tests.fake_driver import INFO, FakeDriver, connected, info_line, make  # noqa: F401


# ====================================================================== handshake

def test_handshake_step_by_step():
    e, d = make(connect_timeout=500)
    assert e.status == CLOSED
    e.connect()
    d.pump()
    assert e.status == CONNECTING and d.statuses() == [CONNECTING]
    assert [(s.host, s.port) for s in d.opened] == [("h1", 4222)]
    assert d.timers["connect"] == d.now + 500
    assert d.take_wire() == b""  # nothing before INFO
    e.socket_connected()
    d.feed(info_line())
    assert d.kinds(InfoReceived)[-1].info["server_id"] == "S1"
    assert e.server_info["version"] == "2.15.1"  # suffix cut, as nats-tcl does
    out = d.take_wire()
    assert out.startswith(b"CONNECT {") and out.endswith(b"}\r\nPING\r\n")
    assert e.status == CONNECTING
    d.feed(b"PONG\r\n")
    assert e.status == CONNECTED and d.statuses() == [CONNECTING, CONNECTED]
    assert "connect" not in d.timers
    assert d.timers["ping"] == d.now + e.options.ping_interval
    assert e.last_error is None


def test_connect_twice_is_a_no_op():
    e, d = connected()
    e.connect()
    d.pump()
    assert len(d.opened) == 1 and e.status == CONNECTED


def test_connect_with_empty_pool_is_err_no_servers():
    e = Engine(Options())
    with pytest.raises(NatsError) as err:
        e.connect()
    assert err.value.code == "ErrNoServers"


def test_configure_servers_while_connected_is_refused():
    e, d = connected()
    with pytest.raises(NatsError) as err:
        e.configure_servers(["nats://other"])
    assert err.value.code == "ErrInvalidArg"


def test_connect_fields():
    e, d = make(name="svc-1", verbose=True, pedantic=True, echo=False)
    e.connect()
    d.pump()
    p = d.accept()
    assert p == {"verbose": True, "pedantic": True, "tls_required": False, "name": "svc-1", "lang": "python",
                 "version": "9.9", "protocol": 1, "echo": False, "headers": True, "no_responders": True}


def test_no_headers_flags_when_the_server_has_no_headers():
    e, d = make()
    e.connect()
    d.pump()
    info = dict(INFO)
    del info["headers"]
    p = d.accept(b"INFO " + json.dumps(info).encode() + b"\r\n")
    assert "headers" not in p and "no_responders" not in p
    with pytest.raises(NatsError) as err:
        e.publish("s", b"x", headers={"K": "v"})
    assert err.value.code == "ErrHeadersNotSupported"
    e.publish("s", b"x")  # without headers it is fine


def test_no_credentials_sent_unless_the_server_asks():
    e, d = make(user="u", password="p", token="t")
    e.connect()
    d.pump()
    p = d.accept()
    assert not {"user", "pass", "auth_token", "jwt", "nkey", "sig"} & set(p)


@pytest.mark.parametrize("url,opts,want", [
    ("nats://h1", {"user": "u", "password": "p"}, {"user": "u", "pass": "p"}),
    ("nats://h1", {"token": "tok"}, {"auth_token": "tok"}),
    ("nats://uu:pp@h1", {"user": "u", "password": "p"}, {"user": "uu", "pass": "pp"}),
    ("nats://urltok@h1", {"user": "u", "password": "p"}, {"auth_token": "urltok"}),
])
def test_credentials_in_connect(url, opts, want):
    e, d = make([url], **opts)
    e.connect()
    d.pump()
    p = d.accept(info_line(auth_required=True))
    assert {k: p[k] for k in want} == want


def test_auth_required_without_credentials_fails_with_err_authorization():
    e, d = make()
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(auth_required=True))
    assert d.errors() == ["ErrAuthorization"]
    assert e.status == CLOSED and d.closes == 1  # the only server, first round: give up


def _verify(seed: bytes, nonce: str, sig: str) -> bool:
    kp = nkeys.from_seed(bytearray(seed))
    return kp.verify(nonce.encode(), base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))


def test_nkey_seed_signs_the_nonce(tmp_path):
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    pub = nkeys.from_seed(bytearray(seed)).public_key.decode()
    for value in (seed.decode(), str(tmp_path / "user.nk")):
        (tmp_path / "user.nk").write_bytes(seed + b"\n")
        e, d = make(nkey_seed=value)
        e.connect()
        d.pump()
        p = d.accept(info_line(auth_required=True, nonce="n0nce-123"))
        assert p["nkey"] == pub and _verify(seed, "n0nce-123", p["sig"])
        assert seed.decode() not in repr(d.fx)  # never logged


def test_creds_file_sends_jwt_and_signature(tmp_path):
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    jwt = "eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiJVIn0.c2ln"
    creds = tmp_path / "u.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
                     "************************* IMPORTANT *************************\n\n"
                     "-----BEGIN USER NKEY SEED-----\n" + seed.decode() + "\n------END USER NKEY SEED------\n")
    e, d = make(creds=str(creds))
    e.connect()
    d.pump()
    p = d.accept(info_line(auth_required=True, nonce="abc"))
    assert p["jwt"] == jwt and _verify(seed, "abc", p["sig"])
    assert "nkey" not in p and seed.decode() not in repr(d.fx)


def test_unreadable_creds_is_err_authorization(tmp_path):
    e, d = make(creds=str(tmp_path / "missing.creds"))
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(auth_required=True, nonce="abc"))
    assert d.errors() == ["ErrAuthorization"] and e.status == CLOSED


def test_server_ping_during_handshake_and_after_is_answered():
    e, d = make()
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(b"PING\r\n" + info_line())  # a PING before INFO too
    out = d.take_wire()
    assert out.startswith(b"PONG\r\nCONNECT ")
    d.feed(b"PONG\r\n")
    d.take_wire()
    d.feed(b"PING\r\n")
    assert d.take_wire() == b"PONG\r\n"


def test_connect_timeout():
    e, d = make(connect_timeout=300)
    e.connect()
    d.pump()
    e.socket_connected()
    d.advance(299)
    assert e.status == CONNECTING
    d.advance(1)
    assert d.errors() == ["ErrConnectionTimeout"] and e.status == CLOSED


def test_first_round_tries_every_server_once_then_closes():
    e, d = make(["nats://a:1", "nats://b:2"])
    e.connect()
    d.pump()
    d.refuse()
    d.refuse()
    assert [s.host for s in d.opened] == ["a", "b"]
    assert d.errors() == ["ErrConnectionRefused", "ErrConnectionRefused"]
    assert e.status == CLOSED and e.last_error.code == "ErrConnectionRefused"


def test_first_round_second_server_succeeds():
    e, d = make(["nats://a:1", "nats://b:2"])
    e.connect()
    d.pump()
    d.refuse()
    d.accept()
    assert e.status == CONNECTED and e.pool.current.host == "b"
    assert e.last_error is None  # cleared once connected


def _eof_before_pong(handshake_eof_connects, reason=None, after_connect=True):
    """Two servers; the first closes the socket during the handshake."""
    e, d = make(["nats://a:1", "nats://b:2"])
    e.handshake_eof_connects = handshake_eof_connects
    e.connect()
    d.pump()
    if after_connect:
        d.accept(pong=False)  # INFO read, CONNECT + PING written
    else:
        e.socket_connected()
    e.connection_lost(reason)
    d.pump()
    return e, d


def test_eof_before_pong_is_a_failed_attempt_by_default():
    e, d = _eof_before_pong(False)
    assert d.statuses() == [CONNECTING] and e.stats["reconnects"] == 0
    assert [s.host for s in d.opened] == ["a", "b"] and d.errors() == ["ErrBrokenSocket"]
    assert {s.host: s.reconnects for s in e.pool.servers}["a"] == 1  # a failed attempt


def test_handshake_eof_connects_makes_then_loses_the_connection():
    """nats-py's connect: EOF after CONNECT, before PONG, is a connection
    made and lost (CONNECTED then RECONNECTING), not a failed attempt."""
    e, d = _eof_before_pong(True)
    assert d.statuses() == [CONNECTING, CONNECTED, RECONNECTING] and e.stats["reconnects"] == 1
    assert d.errors() == ["ErrBrokenSocket"] and e.last_error.code == "ErrBrokenSocket"
    assert [s.host for s in d.opened] == ["a", "b"]  # reconnecting goes on
    d.accept()
    assert e.status == CONNECTED and e.pool.current.host == "b"
    # a reset (an error, not EOF) and an EOF before INFO stay failed attempts
    for reason, after_connect in (("Connection reset by peer", True), (None, False)):
        e, d = _eof_before_pong(True, reason, after_connect)
        assert d.statuses() == [CONNECTING] and e.stats["reconnects"] == 0


# ====================================================================== TLS

def test_tls_required_by_the_server_upgrades_before_connect():
    e, d = make()
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(tls_required=True))
    assert [f.server.host for f in d.kinds(StartTls)] == ["h1"]
    assert d.take_wire() == b""  # no CONNECT before the TLS handshake
    e.tls_done()
    out = d.take_wire()
    assert json.loads(out.split(b"\r\n")[0][8:])["tls_required"] is True
    d.feed(b"PONG\r\n")
    assert e.status == CONNECTED


@pytest.mark.parametrize("url,opts", [("tls://h1", {}), ("nats://h1", {"secure": True})])
def test_client_wanted_tls_uses_tls_available(url, opts):
    e, d = make([url], **opts)
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(tls_available=True))
    assert len(d.kinds(StartTls)) == 1


@pytest.mark.parametrize("url,opts", [("tls://h1", {}), ("nats://h1", {"secure": True})])
def test_client_wants_tls_server_has_none(url, opts):
    e, d = make([url], **opts)
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line())
    assert d.errors() == ["ErrSecureConnWanted"] and e.status == CLOSED


def test_tls_failure_is_err_tls():
    e, d = make()
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(tls_required=True))
    e.tls_failed("certificate verify failed")
    d.pump()
    assert d.errors() == ["ErrTLS"] and "certificate verify failed" in str(e.last_error)
    assert e.status == CLOSED


def test_tls_reports_outside_the_tls_phase_are_ignored():
    e, d = connected()
    e.tls_done()
    e.tls_failed("late")
    d.pump()
    assert e.status == CONNECTED and d.errors() == []


# ====================================================================== publish / subscribe

def test_buffered_while_connecting_then_subs_first_then_publishes_in_order():
    e, d = make()
    e.connect()
    d.pump()
    e.publish("p.1", b"one")
    s1 = e.subscribe("s.a")
    e.publish("p.2", b"two", reply="r")
    s2 = e.subscribe("s.b", queue="q", max_msgs=5)
    e.publish("p.3", b"three", headers={"K": ["1", "2"]})
    assert d.take_wire() == b""  # nothing leaves before the handshake
    d.accept()
    out = d.take_wire()
    hdr = b"NATS/1.0\r\nK: 1\r\nK: 2\r\n\r\n"
    assert out == (f"SUB s.a  {s1.sid}\r\nSUB s.b q {s2.sid}\r\nUNSUB {s2.sid} 5\r\n".encode()
                   + b"PUB p.1  3\r\none\r\nPUB p.2 r 3\r\ntwo\r\n"
                   + b"HPUB p.3  %d %d\r\n" % (len(hdr), len(hdr) + 5) + hdr + b"three\r\n")


def test_flush_effect_once_per_batch_of_writes():
    e, d = connected()
    for i in range(100):
        e.publish("x", b"%d" % i)
    assert e.take() == [Flush()]
    out = e.data_to_send()
    assert out.count(b"PUB x ") == 100
    e.publish("x", b"again")
    assert e.take() == [Flush()]  # a new batch, a new signal
    assert e.pending_chunks == 1 and e.pending_bytes == len(b"PUB x  5\r\nagain\r\n")


def test_max_payload():
    e, d = connected()
    e.publish("x", b"a" * 1024)  # exactly max_payload
    with pytest.raises(NatsError) as err:
        e.publish("x", b"a" * 1025)
    assert err.value.code == "ErrMaxPayload"


def test_calls_when_closed_raise_err_connection_closed():
    e, d = make()
    for call in (lambda: e.publish("x", b""), lambda: e.subscribe("x"), lambda: e.unsubscribe(1),
                 lambda: e.request("x", b"", 100), lambda: e.ping()):
        with pytest.raises(NatsError) as err:
            call()
        assert err.value.code == "ErrConnectionClosed"


def test_ping_while_connecting_is_err_connection_closed():
    e, d = make()
    e.connect()
    with pytest.raises(NatsError) as err:
        e.ping()
    assert err.value.code == "ErrConnectionClosed"  # CoreAPI.md: ping needs "connected"


def test_msg_delivery_and_stats():
    e, d = connected()
    sub = e.subscribe("a.*", handler="H")
    d.take_wire()
    d.feed(b"MSG a.b %d r.1 5\r\nhello\r\nHMSG a.c %d 18 20\r\nNATS/1.0\r\nK: v\r\n\r\nhi\r\n"
           % (sub.sid, sub.sid))
    msgs = d.kinds(Deliver)
    assert [(f.sub is sub, f.msg.subject, f.msg.reply, f.msg.data, f.msg.headers) for f in msgs] == [
        (True, "a.b", "r.1", b"hello", None), (True, "a.c", None, b"hi", {"K": ["v"]})]
    assert msgs[0].msg.sid == sub.sid and sub.handler == "H"
    assert e.stats["in_msgs"] == 2 and sub.received == 2
    e.publish("o", b"123")
    d.take_wire()
    assert e.stats["out_msgs"] == 1 and e.stats["out_bytes"] > 0 and e.stats["in_bytes"] > 0


def test_msg_class_is_the_drivers_choice():
    class MyMsg(Msg):
        __slots__ = ()
    e, d = connected()
    e.msg_class = MyMsg
    sub = e.subscribe("a")
    d.feed(b"MSG a %d 1\r\nx\r\n" % sub.sid)
    assert type(d.kinds(Deliver)[0].msg) is MyMsg


def test_message_for_an_unknown_sid_is_dropped():
    e, d = connected()
    d.feed(b"MSG a 99 1\r\nx\r\n")
    assert d.kinds(Deliver) == [] and e.status == CONNECTED


def test_bad_header_block_reports_err_bad_header_msg_and_delivers_the_body():
    e, d = connected()
    sub = e.subscribe("a")
    d.feed(b"HMSG a %d 10 14\r\nHTTP/1.1\r\nbody\r\n" % sub.sid)
    assert d.errors() == ["ErrBadHeaderMsg"] and e.status == CONNECTED
    m = d.kinds(Deliver)[0].msg
    assert m.data == b"body" and m.headers is None


def test_max_msgs_auto_unsubscribes():
    e, d = connected()
    sub = e.subscribe("a", max_msgs=2)
    assert d.take_wire() == b"SUB a  %d\r\nUNSUB %d 2\r\n" % (sub.sid, sub.sid)
    d.feed(b"MSG a %d 1\r\n1\r\n" % sub.sid * 3)
    assert len(d.kinds(Deliver)) == 2
    assert d.kinds(SubGone) == [SubGone(sub.sid)]
    assert sub.closed and sub.sid not in e.subs


def test_unsubscribe_now_and_later():
    e, d = connected()
    sub = e.subscribe("a")
    d.take_wire()
    d.feed(b"MSG a %d 1\r\n1\r\n" % sub.sid * 3)
    assert e.unsubscribe(sub.sid, max_msgs=5) is False
    assert d.take_wire() == b"UNSUB %d 5\r\n" % sub.sid
    assert e.unsubscribe(sub.sid, max_msgs=2) is True  # 3 already received: gone now (nats-tcl)
    assert d.take_wire() == b"UNSUB %d\r\n" % sub.sid
    with pytest.raises(NatsError) as err:
        e.unsubscribe(sub.sid)
    assert err.value.code == "ErrBadSubscription"
    with pytest.raises(NatsError) as err:
        e.unsubscribe(e.subscribe("b").sid, max_msgs=-1)
    assert err.value.code == "ErrInvalidArg"


def test_drain_unsubs_but_keeps_delivering_until_unsubscribed():
    e, d = connected()
    sub = e.subscribe("a")
    d.take_wire()
    e.drain(sub.sid)
    assert d.take_wire() == b"UNSUB %d\r\n" % sub.sid
    d.feed(b"MSG a %d 1\r\nx\r\n" % sub.sid)  # was already on its way
    assert len(d.kinds(Deliver)) == 1
    assert e.unsubscribe(sub.sid) is True
    assert d.take_wire() == b""  # the UNSUB went out already
    d.feed(b"MSG a %d 1\r\ny\r\n" % sub.sid)
    assert len(d.kinds(Deliver)) == 1


def test_draining_subscription_is_not_restored_after_reconnect():
    e, d = connected()
    keep, gone = e.subscribe("keep"), e.subscribe("gone")
    e.drain(gone.sid)
    d.take_wire()
    e.connection_lost("reset")
    d.pump()
    d.accept()
    assert d.take_wire() == b"SUB keep  %d\r\n" % keep.sid


# ====================================================================== reconnect

def test_reconnect_restores_subs_with_remaining_counts_then_buffered_publishes():
    e, d = connected(reconnect_time_wait=1000)
    a = e.subscribe("a")
    b = e.subscribe("b", queue="q", max_msgs=5)
    d.take_wire()
    d.feed(b"MSG b %d 1\r\nx\r\n" % b.sid * 2)
    e.connection_lost("Connection reset by peer")
    d.pump()
    assert e.status == RECONNECTING and d.errors() == ["ErrBrokenSocket"]
    assert "reset by peer" in str(e.last_error)
    assert len(d.opened) == 2  # the same server again, at once: it had not failed before
    e.publish("p", b"1")
    e.publish("p", b"2")
    c = e.subscribe("c")
    assert d.take_wire() == b""
    d.accept()
    assert e.status == CONNECTED and e.last_error is None
    assert d.take_wire() == (b"SUB a  %d\r\nSUB b q %d\r\nUNSUB %d 3\r\nSUB c  %d\r\n"
                             % (a.sid, b.sid, b.sid, c.sid) + b"PUB p  1\r\n1\r\nPUB p  1\r\n2\r\n")
    assert d.statuses() == [RECONNECTING, CONNECTED]
    assert e.stats["reconnects"] == 1


def test_reconnect_time_wait_between_attempts_to_the_same_server():
    e, d = connected(reconnect_time_wait=2000, max_reconnect_attempts=-1)
    e.connection_lost(None)
    d.pump()
    assert len(d.opened) == 2
    d.refuse()  # first failure: now it waits
    assert len(d.opened) == 2 and d.timers["reconnect"] == d.now + 2000
    d.advance(1999)
    assert len(d.opened) == 2
    d.advance(1)
    assert len(d.opened) == 3
    d.accept()
    assert e.status == CONNECTED


def test_custom_reconnect_delay_callback():
    e, d = connected(max_reconnect_attempts=-1)
    seen = []
    e.reconnect_delay = lambda server: seen.append(server) or 123
    e.connection_lost(None)
    d.pump()
    d.refuse()
    assert d.timers["reconnect"] == d.now + 123
    assert seen[-1]["host"] == "h1" and seen[-1]["reconnects"] == 1


def test_max_reconnect_attempts_then_closed_and_requests_lost():
    e, d = connected(reconnect_time_wait=100, max_reconnect_attempts=3)
    req = e.request("svc", b"q", timeout=60_000)
    e.connection_lost(None)
    d.pump()
    for _ in range(3):
        d.refuse()
        d.advance(100)
    assert e.status == CLOSED
    assert len(d.opened) == 4  # the first connection + 3 attempts
    assert e.last_error.code == "ErrConnectionRefused"
    assert d.kinds(RequestDone)[-1] == RequestDone(req, "lost")  # nats-tcl: ErrTimeout for a sync request
    assert SubsCleared() in d.fx and e.subs == {}


def test_max_reconnect_attempts_minus_one_keeps_trying():
    e, d = connected(reconnect_time_wait=10, max_reconnect_attempts=-1)
    e.connection_lost(None)
    d.pump()
    for _ in range(200):
        d.refuse()
        d.advance(10)
    assert e.status == RECONNECTING and len(d.opened) == 202
    d.accept()
    assert e.status == CONNECTED


def test_discovered_servers_join_the_pool_and_are_used():
    e, d = connected(["nats://a:1"], max_reconnect_attempts=-1, reconnect_time_wait=5000)
    d.feed(info_line(connect_urls=["b:2", "a:1", "c:3"]))
    assert [(s.host, s.discovered) for s in e.pool.servers] == [("c", True), ("b", True), ("a", False)]
    e.connection_lost(None)
    d.pump()
    assert d.opened[-1].host == "c"  # discovered servers come first
    d.refuse()
    assert d.opened[-1].host == "b"
    d.accept()
    assert e.status == CONNECTED and e.pool.current.host == "b"


def test_ill_typed_info_fields_are_ignored():
    e, d = connected()
    d.feed(b'INFO {"connect_urls": 5, "max_payload": "big"}\r\n')
    assert e.status == CONNECTED and len(e.pool.servers) == 1
    e.publish("x", b"a" * 1024)
    d.feed(b'INFO {"connect_urls": [7, "d:4"]}\r\n')
    assert [s.host for s in e.pool.servers] == ["d", "h1"]


def test_lame_duck_mode_is_logged():
    e, d = connected()
    d.feed(info_line(ldm=True))
    assert any("lame duck" in f.text for f in d.kinds(Log))
    assert e.status == CONNECTED


def test_disconnect_flushes_cancels_and_closes():
    e, d = connected()
    sub = e.subscribe("a")
    req = e.request("svc", b"", timeout=5000)
    ping = e.ping(timeout=5000)
    e.publish("last", b"words")
    e.disconnect()
    out = d.take_wire()
    assert out.endswith(b"PUB last  5\r\nwords\r\n")  # written before the close
    assert d.closes == 1 and e.status == CLOSED and e.last_error is None
    assert RequestDone(req, "closed") in d.fx and PingDone(ping, None) in d.fx
    assert sub.closed and SubsCleared() in d.fx
    assert not d.timers
    e.disconnect()  # no-op when closed
    assert d.closes == 1


def test_disconnect_while_waiting_to_reconnect():
    e, d = connected(reconnect_time_wait=5000, max_reconnect_attempts=-1)
    e.publish("x", b"lost")
    e.connection_lost(None)
    d.pump()
    d.refuse()
    assert "reconnect" in d.timers
    e.disconnect()
    d.pump()
    assert e.status == CLOSED and not d.timers


def test_reconnect_after_closed_needs_connect_again():
    e, d = connected(max_reconnect_attempts=1, reconnect_time_wait=0)
    e.connection_lost(None)
    d.pump()
    d.refuse()
    d.advance(1)
    assert e.status == CLOSED
    e.configure_servers(["nats://h2"])
    e.connect()
    d.pump()
    d.accept()
    assert e.status == CONNECTED and e.pool.current.host == "h2"


# ====================================================================== requests

def mux_reply(e, req, data=b"ok"):
    return b"MSG %s %d %d\r\n%s\r\n" % (req.reply.encode(), e.request_inbox[0].sid, len(data), data)


def test_new_style_request_shares_one_inbox_subscription():
    e, d = connected()
    r1 = e.request("svc", b"a", timeout=1000)
    r2 = e.request("svc", b"b", timeout=1000)
    out = d.take_wire()
    prefix = r1.reply.rpartition(".")[0]
    assert r2.reply.startswith(prefix + ".") and r1.reply != r2.reply
    assert out.count(b"SUB ") == 1 and out.startswith(b"SUB %s.*  " % prefix.encode())
    assert b"PUB svc %s 1\r\na\r\n" % r1.reply.encode() in out
    d.feed(mux_reply(e, r2, b"B") + mux_reply(e, r1, b"A"))
    assert [(f.req, f.outcome, f.req.msg.data) for f in d.kinds(RequestDone)] == [(r2, "msg", b"B"), (r1, "msg", b"A")]
    assert "r1" not in d.timers and r1 not in d.timers and not e.requests


def test_request_timeout_then_late_reply_is_ignored():
    e, d = connected()
    req = e.request("svc", b"", timeout=500)
    d.advance(500)
    assert d.kinds(RequestDone) == [RequestDone(req, "timeout")]
    d.feed(mux_reply(e, req))
    assert len(d.kinds(RequestDone)) == 1


def test_request_without_timeout_waits():
    e, d = connected(ping_interval=10**8)
    req = e.request("svc", b"", timeout=0)
    d.advance(10**7)
    assert d.kinds(RequestDone) == [] and req.id in e.requests


def test_request_no_responders():
    e, d = connected()
    req = e.request("nobody", b"", timeout=1000)
    d.feed(b"HMSG %s %d 16 16\r\nNATS/1.0 503\r\n\r\n\r\n" % (req.reply.encode(), e.request_inbox[0].sid))
    (r, outcome), = d.kinds(RequestDone)
    assert r is req and outcome == "no_responders" and req.msg.no_responders


def test_request_continues_across_a_reconnect():
    e, d = connected(reconnect_time_wait=0)
    req = e.request("svc", b"", timeout=10_000)
    d.take_wire()
    e.connection_lost(None)
    d.pump()
    d.accept()
    out = d.take_wire()
    assert b"SUB %s.*" % req.reply.rpartition(".")[0].encode() in out  # the inbox is restored
    d.feed(mux_reply(e, req))
    assert d.kinds(RequestDone) == [RequestDone(req, "msg")]


def test_request_closed_by_disconnect():
    e, d = connected()
    req = e.request("svc", b"", timeout=10_000)
    e.disconnect()
    d.pump()
    assert d.kinds(RequestDone) == [RequestDone(req, "closed")]


def test_request_bad_input():
    e, d = connected()
    with pytest.raises(NatsError) as err:
        e.request("svc", b"", timeout=-1)
    assert err.value.code == "ErrBadTimeout"
    with pytest.raises(NatsError) as err:
        e.request("svc", b"x" * 2000, timeout=100)
    assert err.value.code == "ErrMaxPayload"
    assert not e.requests


def test_cancel_request():
    e, d = connected()
    req = e.request("svc", b"", timeout=1000, max_msgs=3)
    d.take_wire()
    e.cancel_request(req.id)
    assert d.take_wire() == b"UNSUB %d\r\n" % req.sub.sid
    d.advance(2000)
    assert d.kinds(RequestDone) == []
    with pytest.raises(NatsError) as err:
        e.cancel_request(req.id)
    assert err.value.code == "ErrInvalidArg"


def gather_reply(req, data):
    return b"MSG %s %d %d\r\n%s\r\n" % (req.reply.encode(), req.sub.sid, len(data), data)


def test_gathering_request_collects_max_msgs_replies():
    e, d = connected()
    req = e.request("svc", b"q", timeout=1000, max_msgs=3)
    out = d.take_wire()
    assert out.startswith(b"SUB %s  %d\r\nUNSUB %d 3\r\nPUB svc %s 1\r\nq\r\n"
                          % (req.reply.encode(), req.sub.sid, req.sub.sid, req.reply.encode()))
    d.feed(gather_reply(req, b"1") + gather_reply(req, b"2") + gather_reply(req, b"3"))
    assert [f.msg.data for f in d.kinds(RequestReply)] == [b"1", b"2", b"3"]
    assert d.kinds(RequestDone) == [RequestDone(req, "msg")]
    assert [m.data for m in req.msgs] == [b"1", b"2", b"3"] and req.sub.closed


def test_gathering_request_timeout_keeps_what_came():
    e, d = connected()
    req = e.request("svc", b"q", timeout=1000, max_msgs=5)
    d.take_wire()
    d.feed(gather_reply(req, b"only"))
    d.advance(1000)
    assert d.kinds(RequestDone) == [RequestDone(req, "timeout")] and [m.data for m in req.msgs] == [b"only"]
    assert d.take_wire() == b"UNSUB %d\r\n" % req.sub.sid


def test_gathering_request_no_responders():
    e, d = connected()
    req = e.request("svc", b"q", timeout=1000, max_msgs=5)
    d.take_wire()
    d.feed(b"HMSG %s %d 16 16\r\nNATS/1.0 503\r\n\r\n\r\n" % (req.reply.encode(), req.sub.sid))
    assert d.kinds(RequestDone) == [RequestDone(req, "no_responders")]


def test_gathering_request_lost_when_the_connection_is_gone():
    e, d = connected(max_reconnect_attempts=1)
    req = e.request("svc", b"q", timeout=1000, max_msgs=5)
    e.connection_lost(None)
    d.pump()
    d.refuse()
    assert e.status == CLOSED and d.kinds(RequestDone) == [RequestDone(req, "lost")]


# ====================================================================== pings

def test_keepalive_pings_and_stale_connection():
    e, d = connected(ping_interval=1000, max_outstanding_pings=2, reconnect_time_wait=0)
    d.advance(1000)
    assert d.take_wire() == b"PING\r\n"
    d.feed(b"PONG\r\n")  # answered: the count goes back to 0
    d.advance(1000)
    assert d.take_wire() == b"PING\r\n"
    d.advance(1000)
    assert d.take_wire() == b"PING\r\n"
    assert e.status == CONNECTED
    d.advance(1000)  # two unanswered: stale
    assert d.errors() == ["ErrStaleConnection"] and e.status == RECONNECTING


def test_user_ping_pong_timeout_and_close():
    e, d = connected()
    p1 = e.ping(timeout=1000)
    assert d.take_wire() == b"PING\r\n"
    d.feed(b"PONG\r\n")
    assert d.kinds(PingDone) == [PingDone(p1, True)]
    p2 = e.ping(timeout=1000)
    d.advance(1000)
    assert d.kinds(PingDone)[-1] == PingDone(p2, False)
    p3 = e.ping(timeout=1000)
    e.disconnect()
    d.pump()
    assert d.kinds(PingDone)[-1] == PingDone(p3, None)
    with pytest.raises(NatsError) as err:
        e.ping(timeout=-1)
    assert err.value.code == "ErrConnectionClosed"


def test_pongs_answer_pings_in_order_keepalive_included():
    e, d = connected(ping_interval=1000)
    p1 = e.ping(timeout=0)
    d.advance(1000)  # keep-alive PING after p1
    p2 = e.ping(timeout=0)
    d.feed(b"PONG\r\n")
    assert [f.ping for f in d.kinds(PingDone)] == [p1]
    d.feed(b"PONG\r\n")  # the keep-alive's
    assert [f.ping for f in d.kinds(PingDone)] == [p1]
    d.feed(b"PONG\r\n")
    assert [f.ping for f in d.kinds(PingDone)] == [p1, p2]


def test_ping_in_flight_is_answered_by_the_next_server():
    e, d = connected(reconnect_time_wait=0)
    p = e.ping(timeout=0)
    e.connection_lost(None)
    d.pump()
    d.accept()
    assert d.kinds(PingDone) == [PingDone(p, True)]


# ====================================================================== -ERR and bad input

@pytest.mark.parametrize("text,code,fatal", [
    ("'Stale Connection'", "ErrStaleConnection", True),
    ("'Authorization Violation'", "ErrAuthorization", True),
    ("'User Authentication Expired'", "ErrAuthExpired", True),
    ("'User Authentication Revoked'", "ErrAuthRevoked", True),
    ("'Account Authentication Expired'", "ErrAccountAuthExpired", True),
    ("'Permissions Violation for Publish to \"secret.x\"'", "ErrPermissions", False),
    ("'Permissions Violation for Subscription to \"secret.>\"'", "ErrPermissions", False),
    ("'Invalid Publish Subject'", "ErrBadSubject", False),
    ("'Unknown Protocol Operation'", "ErrServer", True),
    ("'Maximum Payload Violation'", "ErrServer", True),
])
def test_err_mapping(text, code, fatal):
    e, d = connected(reconnect_time_wait=0)
    d.feed(b"-ERR " + text.encode() + b"\r\n")
    assert d.errors() == [code] and e.last_error.code == code
    if fatal:
        assert e.status == RECONNECTING and d.closes == 1
    else:
        assert e.status == CONNECTED and d.closes == 0


def test_authorization_violation_during_handshake():
    e, d = make()
    e.connect()
    d.pump()
    d.accept(pong=False)
    d.feed(b"-ERR 'Authorization Violation'\r\n")
    assert d.errors() == ["ErrAuthorization"] and e.status == CLOSED


def test_garbage_is_err_protocol_after_handling_what_came_before():
    e, d = connected(reconnect_time_wait=0)
    sub = e.subscribe("a")
    d.feed(b"MSG a %d 1\r\nx\r\nNONSENSE\r\nMSG a %d 1\r\ny\r\n" % (sub.sid, sub.sid))
    assert [f.msg.data for f in d.kinds(Deliver)] == [b"x"]
    assert d.errors() == ["ErrProtocol"] and e.status == RECONNECTING


def test_control_line_too_long_is_err_server():
    e, d = connected(reconnect_time_wait=0)
    d.feed(b"MSG " + b"x" * 5000)
    assert d.errors() == ["ErrServer"] and e.status == RECONNECTING


def test_input_after_the_socket_is_dropped_is_ignored():
    e, d = connected(max_reconnect_attempts=1)
    e.connection_lost(None)
    d.pump()
    d.refuse()
    assert e.status == CLOSED
    e.receive_data(b"PING\r\n")
    e.connection_lost("again")
    e.socket_failed("again")
    d.pump()
    assert d.errors() == ["ErrBrokenSocket", "ErrConnectionRefused"]


def test_write_failed_is_err_broken_socket():
    e, d = connected(reconnect_time_wait=0)
    e.write_failed("EPIPE")
    d.pump()
    assert d.errors() == ["ErrBrokenSocket"] and "EPIPE" in str(e.last_error)
    assert e.status == RECONNECTING


# ====================================================================== the engine alone
# (no driver: effects taken with e.take(), the clock a counter)

FLOW_INFO = b'INFO {"server_id":"s","version":"2.15.1-binary","max_payload":64,"headers":true,"proto":1}\r\n'


class Clock:
    def __init__(self):
        self.t = 1000

    def __call__(self):
        return self.t


def connected_engine(**opts):
    clock = Clock()
    e = Engine(Options(**opts), clock=clock, lang="test")
    e.configure_servers(["nats://a:4222"])
    e.connect()
    fx = e.take()
    assert StatusChanged(CONNECTING) in fx and any(f.__class__ is Open for f in fx)
    e.socket_connected()
    e.receive_data(FLOW_INFO)
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
    e.receive_data(FLOW_INFO.replace(b'"proto":1', b'"proto":1,"auth_required":true'))
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
    e.receive_data(FLOW_INFO)
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
    assert StatusChanged(RECONNECTING) in fx and e.last_error.code == "ErrBrokenSocket"
    e.socket_connected()
    e.receive_data(FLOW_INFO)
    e.data_to_send()
    e.receive_data(b"PONG\r\n")
    assert e.data_to_send() == b"SUB s  1\r\nUNSUB 1 2\r\n"
    e.receive_data(b"MSG s 1 1\r\nb\r\nMSG s 1 1\r\nc\r\n")
    assert 1 not in e.subs
    assert SubGone(1) in e.take()


def test_request_outcomes():
    e, _ = connected_engine()
    r1 = e.request("svc", b"q", timeout=500)
    out = e.data_to_send()
    assert out.startswith(b"SUB _INBOX.") and b"PUB svc _INBOX." in out
    prefix = e.request_inbox[1]
    e.receive_data(f"MSG {prefix}.{r1.id} 1 2\r\nok\r\n".encode())
    assert RequestDone(r1, "msg") in e.take() and r1.msg.data == b"ok"
    r2 = e.request("nobody", b"", timeout=500)
    e.receive_data(f"HMSG {prefix}.{r2.id} 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n".encode())
    assert RequestDone(r2, "no_responders") in e.take()
    r3 = e.request("slow", b"", timeout=500)
    e.timer_fired(r3)
    assert RequestDone(r3, "timeout") in e.take()
    r4 = e.request("x", b"", timeout=0)
    e.disconnect()
    assert RequestDone(r4, "closed") in e.take() and e.status == CLOSED


def test_gather_request():
    e, _ = connected_engine()
    r = e.request("many", b"", timeout=1000, max_msgs=2)
    inbox = r.reply
    e.receive_data(f"MSG {inbox} {r.sub.sid} 1\r\na\r\nMSG {inbox} {r.sub.sid} 1\r\nb\r\n".encode())
    fx = e.take()
    assert [f.__class__ for f in fx if f.__class__ in (RequestReply, RequestDone)] == [
        RequestReply, RequestReply, RequestDone]
    assert [m.data for m in r.msgs] == [b"a", b"b"]


def test_lost_connection_fails_requests_as_lost():
    e, clock = connected_engine(max_reconnect_attempts=1)
    r = e.request("x", b"", timeout=0)
    e.connection_lost(None)  # one more try of the same server...
    e.socket_failed("refused")  # ...fails, and it leaves the pool
    fx = e.take()
    assert RequestDone(r, "lost") in fx and e.status == CLOSED


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
    assert [f for f in e.take() if f.__class__ is Open]  # first retry at once
    e.socket_failed("refused")
    fx = e.take()
    assert StartTimer("reconnect", 2000) in fx
    clock.t += 2000
    e.timer_fired("reconnect")
    e.socket_failed("refused")
    fx = e.take()
    assert e.status == CLOSED and StatusChanged(CLOSED) in fx


def test_err_mapping_alone():
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
    msgs = [f for f in fx if f.__class__ is Deliver]
    assert msgs and msgs[0].msg.data == b"hi"
    assert e.last_error.code == "ErrBadHeaderMsg" and e.status == CONNECTED


def test_engine_reads_no_credential_file(tmp_path, monkeypatch):
    """The creds file is the driver's to read (before each socket); an engine
    left without it says so, and never opens the file itself."""
    import builtins
    creds = tmp_path / "u.creds"
    creds.write_text("not read")
    e = Engine(Options(creds=str(creds), randomize=False), lang="python", version="9.9")
    e.configure_servers(["nats://h1:4222"])
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    e.connect()
    e.take()
    e.socket_connected()
    e.receive_data(info_line(auth_required=True, nonce="abc"))
    assert opened == [] and e.last_error.code == "ErrAuthorization"
    assert "set_credentials" in str(e.last_error)


def test_creds_file_is_read_again_at_each_connection(tmp_path):
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    creds = tmp_path / "u.creds"

    def write(jwt):
        creds.write_text("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
                         "-----BEGIN USER NKEY SEED-----\n" + seed.decode() + "\n------END USER NKEY SEED------\n")
    write("first.jwt.x")
    e, d = make(creds=str(creds), reconnect_time_wait=0)
    e.connect()
    d.pump()
    assert d.accept(info_line(auth_required=True, nonce="a"))["jwt"] == "first.jwt.x"
    write("rotated.jwt.y")
    e.connection_lost("reset")
    d.pump()
    assert d.accept(info_line(auth_required=True, nonce="b"))["jwt"] == "rotated.jwt.y"


# ====================================================================== driver hooks of the Python face

def test_tls_first_starts_tls_before_info_then_connects_on_info():
    e, d = make()
    e.tls_first = True
    e.connect()
    d.pump()
    e.socket_connected()
    d.pump()
    assert len(d.kinds(StartTls)) == 1 and d.take_wire() == b""  # TLS first, nothing written
    e.tls_done()
    d.pump()
    assert d.take_wire() == b""  # now the server's INFO, over TLS
    d.feed(info_line(tls_required=True))
    assert len(d.kinds(StartTls)) == 1  # no second handshake
    out = d.take_wire()
    assert out.startswith(b"CONNECT {") and b'"tls_required":true' in out.replace(b" ", b"")
    d.feed(b"PONG\r\n")
    assert e.status == CONNECTED


def test_inbox_prefix_and_auth_cb():
    e, d = make()
    e.inbox_prefix = "_APP.r"
    assert e.new_inbox().startswith("_APP.r.")
    e.auth_cb = lambda nonce: {"jwt": "J", "sig": "S:" + nonce}
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(nonce="N1", auth_required=True))
    out = d.take_wire()
    params = json.loads(out[len(b"CONNECT "):out.index(b"\r\n")])
    assert params["jwt"] == "J" and params["sig"] == "S:N1"


def test_token_beside_signature_only_when_sending_auth_always():
    for always in (False, True):
        e, d = make(token="T")
        e.send_auth_always = always
        e.auth_cb = lambda nonce: {"jwt": "J", "sig": "S:" + nonce}
        e.connect()
        d.pump()
        params = d.accept(info_line(nonce="N1", auth_required=True))
        assert params["sig"] == "S:N1" and params.get("auth_token") == ("T" if always else None)


def test_connect_line_hook_is_what_goes_out_once_per_handshake():
    e, d = make(name="n1")
    asked = []

    def line():
        asked.append(e.connect_fields())
        return b'CONNECT {"verbose":false,"name":"hooked"}\r\n'
    e.connect_line = line
    e.connect()
    d.pump()
    assert d.accept() == {"verbose": False, "name": "hooked"}
    assert len(asked) == 1 and asked[0]["name"] == "n1" and e.status == CONNECTED


def test_a_failing_auth_cb_is_err_authorization():
    e, d = make()
    e.auth_cb = lambda nonce: 1 / 0
    e.connect()
    d.pump()
    e.socket_connected()
    d.feed(info_line(nonce="N1", auth_required=True))
    assert "ErrAuthorization" in d.errors()


# -- what nats-py's surface (tclnats_py.natspy) needs of the engine ------------------------------

def test_handshake_connect_urls_join_the_pool():
    e, d = make()
    e.connect()
    d.pump()
    d.accept(info_line(connect_urls=["h2:4222", "h3:4222"]))
    assert sorted((s.host, s.discovered) for s in e.pool.servers) == [("h1", False), ("h2", True), ("h3", True)]
    assert e.pool.current.host == "h1"


def test_credentials_sent_unasked_only_when_told():
    e, d = make(["nats://u:p@h1:4222"])
    e.connect()
    d.pump()
    assert "user" not in d.accept()  # nats-tcl's rule: only when the server asks
    e2, d2 = make(["nats://u:p@h1:4222"])
    e2.send_auth_always = True       # nats-py's and nats.go's
    e2.connect()
    d2.pump()
    params = d2.accept()
    assert (params["user"], params["pass"]) == ("u", "p")


def test_replace_servers_keeps_counters_and_the_current_server():
    e, d = connected(["nats://h1:4222", "nats://h2:4222"])
    h2 = [s for s in e.pool.servers if s.host == "h2"][0]
    h2.reconnects = 5
    e.replace_servers(["nats://h2:4222", "nats://h1:4222", "nats://h3:4222"])
    by = {s.host: s for s in e.pool.servers}
    assert by["h2"].reconnects == 5 and by["h3"].reconnects == 0
    assert e.pool.current.host == "h1"
    with pytest.raises(NatsError) as ei:
        e.replace_servers(["nats://h1:bad"])
    assert ei.value.code == "ErrInvalidArg" and len(e.pool.servers) == 3  # all or nothing
    e.disconnect()
    d.pump()
    with pytest.raises(NatsError) as ei:
        e.replace_servers(["nats://h1:4222"])
    assert ei.value.code == "ErrConnectionClosed"


def test_force_reconnect_goes_to_the_next_server_without_an_error():
    e, d = connected(["nats://h1:4222", "nats://h2:4222"])
    e.force_reconnect()
    d.pump()
    assert e.status == RECONNECTING and d.closes == 1 and d.opened[-1].host == "h2"
    assert d.errors() == []
    d.accept()
    assert e.status == CONNECTED and e.stats["reconnects"] == 1
    e2, d2 = make()
    e2.force_reconnect()  # not connected: nothing
    assert e2.status == CLOSED


def test_choose_server_picks_the_next_server_and_its_wait():
    e, d = connected(["nats://h1:4222", "nats://h2:4222", "nats://h3:4222"], max_reconnect_attempts=-1)
    seen = []

    def choose(servers, info):
        seen.append(([s.host for s in servers], info.get("server_id")))
        pick = [s for s in servers if s.host == "h3"]
        return (pick[0], 250) if len(seen) == 1 else (None, 0)
    e.choose_server = choose
    e.connection_lost(None)
    d.pump()
    assert seen[0][1] == "S1" and sorted(seen[0][0]) == ["h1", "h2", "h3"]
    assert d.timers["reconnect"] == d.now + 250 and len(d.opened) == 1
    d.advance(250)
    assert d.opened[-1].host == "h3"
    d.refuse()  # declined this time (None): the pool's own order
    assert len(seen) == 2 and d.opened[-1].host != "h3"
    e.choose_server = lambda servers, info: (object(), 0)  # not a server of the pool: declined too
    d.refuse()
    assert e.status == RECONNECTING


def test_retry_on_failed_connect_retries_the_first_connect_as_a_reconnect():
    """Engine.retry_on_failed_connect (nats.go's RetryOnFailedConnect, nats-py's
    connect): failed first attempts wait reconnect_time_wait and try again,
    up to max_reconnect_attempts, staying "connecting"; off, one round closes."""
    e, d = make(reconnect_time_wait=500, max_reconnect_attempts=3)
    e.retry_on_failed_connect = True
    e.connect()
    d.pump()
    d.refuse()
    assert e.status == CONNECTING and d.timers["reconnect"] == d.now + 500 and len(d.opened) == 1
    d.advance(500)
    assert len(d.opened) == 2
    d.refuse()
    d.advance(500)
    d.accept()
    assert e.status == CONNECTED and d.statuses() == [CONNECTING, CONNECTED] and len(d.opened) == 3
    # giving up after max_reconnect_attempts
    e, d = make(reconnect_time_wait=100, max_reconnect_attempts=3)
    e.retry_on_failed_connect = True
    e.connect()
    d.pump()
    for _ in range(3):
        d.refuse()
        d.advance(100)
    assert e.status == CLOSED and len(d.opened) == 3 and d.errors() == ["ErrConnectionRefused"] * 3
    # off (the default): one round of the pool
    e, d = make(reconnect_time_wait=100, max_reconnect_attempts=3)
    e.connect()
    d.pump()
    d.refuse()
    assert e.status == CLOSED and len(d.opened) == 1


def test_unresolved_host_is_err_host_not_resolved():
    e, d = make(("nats://nowhere.invalid:4222",))
    e.connect()
    d.pump()
    e.socket_failed("Name or service not known", unresolved=True)
    d.pump()
    assert d.errors() == ["ErrHostNotResolved"]
    assert str(e.last_error) == ("Failed to connect to nowhere.invalid:4222: the host name nowhere.invalid did "
                                 "not resolve (Name or service not known)")
    e, d = make()
    e.connect()
    d.pump()
    d.refuse("couldn't open socket: Name or service not known")  # the Tcl face cannot tell
    assert d.errors() == ["ErrConnectionRefused"]


def test_nuid_reply_tokens():
    import re
    e, _ = connected_engine()
    e.nuid_reply_tokens = True
    reqs = [e.request("svc", b"q", timeout=500) for _ in range(2)]
    prefix = e.request_inbox[1]
    for r in reqs:
        assert re.fullmatch(re.escape(prefix) + r"\.[0-9A-Za-z]{22}[0-9a-f]{4}", r.reply), r.reply
        assert int(r.reply[len(prefix) + 1 + 22:], 16) == r.id
    e.take()
    e.receive_data(f"MSG {reqs[1].reply} 1 2\r\nok\r\n".encode())
    assert RequestDone(reqs[1], "msg") in e.take() and reqs[1].msg.data == b"ok"
    e.receive_data(f"MSG {prefix}.short 1 2\r\nno\r\n".encode())  # not a token of ours: ignored
    assert not [f for f in e.take() if f.__class__ is RequestDone]
