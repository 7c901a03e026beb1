"""tclnats_py.natspy, the nats-py 2.x surface over the engine (core half):
the ``python -m tclnats_py.natspy`` runner and its ``import nats`` alias,
nats-py's error classes and their translation, and the client against a real
nats-server (publish/subscribe, headers, requests old and new style, slow
consumers, connect failures, callbacks, drain)."""

import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from tclnats_py import errors as our_errors
from tclnats_py import natspy
from tclnats_py.natspy import errors as nerr
from tclnats_py.natspy.aio.client import Client as NATS
from tclnats_py.natspy.aio.msg import Msg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _run(*args, cwd=None, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


# ---------------------------------------------------------------- the runner and the alias
PROGRAM = textwrap.dedent("""
    import sys
    import nats, nats.errors, nats.aio.client, nats.aio.msg, nats.nuid
    from nats.aio.errors import ErrTimeout
    print("argv", sys.argv[1:])
    print("nats", nats.__name__)
    print("client", nats.aio.client.Client.__module__)
    print("timeout", issubclass(ErrTimeout, nats.errors.TimeoutError))
    print("same", nats.errors is sys.modules["tclnats_py.natspy.errors"])
    try:
        import nats.no_such_module
    except ModuleNotFoundError as e:
        print("missing", e.name)
""")


def test_runner_program_sees_the_surface(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    r = _run("-m", "tclnats_py.natspy", str(prog), "a", "--b")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert "argv ['a', '--b']" in out
    assert "nats tclnats_py.natspy" in out
    assert "client tclnats_py.natspy.aio.client" in out
    assert "timeout True" in out and "same True" in out
    assert "missing nats.no_such_module" in out


def test_runner_module_mode(tmp_path):
    (tmp_path / "natsprog_mod.py").write_text(PROGRAM)
    r = _run("-m", "tclnats_py.natspy", "-m", "natsprog_mod", "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "argv ['x']" in r.stdout.splitlines()
    assert "nats tclnats_py.natspy" in r.stdout.splitlines()


def test_runner_usage_errors(tmp_path):
    assert _run("-m", "tclnats_py.natspy").returncode == 2
    r = _run("-m", "tclnats_py.natspy", str(tmp_path / "absent.py"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_a_process_without_the_runner_is_unaffected(tmp_path):
    """Importing tclnats_py.natspy installs no hook: ``import nats`` is
    whatever is installed (nats-py here, a test dependency)."""
    prog = tmp_path / "plain.py"
    prog.write_text("import tclnats_py.natspy, nats\nprint(nats.__name__, nats.__file__)\n")
    r = _run(str(prog))
    assert r.returncode == 0, r.stderr
    name, path = r.stdout.split()
    assert name == "nats" and "tclnats_py" not in path


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("code,cls", [
    ("ErrTimeout", nerr.TimeoutError), ("ErrNoResponders", nerr.NoRespondersError),
    ("ErrConnectionClosed", nerr.ConnectionClosedError), ("ErrNoServers", nerr.NoServersError),
    ("ErrBadSubject", nerr.BadSubjectError), ("ErrMaxPayload", nerr.MaxPayloadError),
    ("ErrAuthorization", nerr.AuthorizationError), ("ErrStaleConnection", nerr.StaleConnectionError),
    ("ErrBrokenSocket", nerr.UnexpectedEOF), ("ErrReconnectBufExceeded", nerr.OutboundBufferLimitError),
])
def test_translate_core_codes(code, cls):
    ours = our_errors.make_error(code, "engine text")
    theirs = nerr.translate(ours)
    assert type(theirs) is cls
    assert theirs.__cause__ is ours and theirs.description == "engine text" and theirs.code == code
    assert str(theirs).startswith("nats: ")


def test_translate_native_exceptions_and_pass_through():
    import ssl
    assert type(nerr.translate(our_errors.make_error("ErrConnectionRefused", "x"))) is ConnectionRefusedError
    unresolved = nerr.translate(our_errors.make_error("ErrHostNotResolved", "did not resolve"))
    assert type(unresolved) is socket.gaierror and unresolved.errno == socket.EAI_NONAME
    assert isinstance(nerr.translate(our_errors.make_error("ErrTLS", "x")), ssl.SSLError)
    assert type(nerr.translate(our_errors.make_error("ErrConnectionTimeout", "x"))) is asyncio.TimeoutError
    e = ValueError("not ours")
    assert nerr.translate(e) is e
    assert issubclass(nerr.TimeoutError, asyncio.TimeoutError)
    assert issubclass(nerr.FlushTimeoutError, nerr.TimeoutError)


def test_server_version_and_nuid():
    from tclnats_py.natspy.aio.client import ServerVersion
    from tclnats_py.natspy.nuid import NUID
    v = ServerVersion("2.11.1-RC.1+syn1")
    assert (v.major, v.minor, v.patch, v.prerelease, v.build, v.dev) == (2, 11, 1, "RC.1", "syn1", "RC.1+syn1")
    with pytest.raises(ValueError):
        ServerVersion("nope").major
    n = NUID()
    a, b = n.next(), n.next()
    assert len(a) == 22 and a != b and isinstance(a, bytearray)


# ---------------------------------------------------------------- against a server
def test_pub_sub_headers_and_requests(nats_server):
    async def main():
        nc = await natspy.connect(nats_server.url, name="natspy-core")
        got = []

        async def cb(msg):
            got.append(msg)
            if msg.reply:
                await msg.respond(b"re:" + msg.data)
        sub = await nc.subscribe("np.svc", cb=cb)
        await nc.flush()
        reply = await nc.request("np.svc", b"one", timeout=2)
        assert reply.data == b"re:one" and reply.reply == "" and reply.headers is None
        old = await nc.request("np.svc", b"two", timeout=2, old_style=True)
        assert old.data == b"re:two"
        # headers: a plain dict of str; blank names skipped; "" kept
        await nc.request("np.svc", b"h", headers={"A": "1", " ": "x", "Empty": ""}, timeout=2)
        assert got[-1].headers == {"A": "1", "Empty": ""}
        with pytest.raises(nerr.NoRespondersError):
            await nc.request("np.nobody", b"", timeout=2)
        with pytest.raises(nerr.NoRespondersError):
            await nc.request("np.nobody", b"", timeout=2, old_style=True)
        await nc.subscribe("np.silent")  # interest, no answer
        with pytest.raises(nerr.TimeoutError):
            await nc.request("np.silent", b"", timeout=0.2, old_style=True)
        with pytest.raises(nerr.TimeoutError):
            await nc.request("np.silent", b"", timeout=0.2)
        with pytest.raises(nerr.BadSubjectError):
            await nc.publish("", b"x")
        inbox = nc.new_inbox()
        assert inbox.startswith("_INBOX.")
        s2 = await nc.subscribe(inbox)
        await nc.publish(inbox, b"to me")
        m = await s2.next_msg(timeout=2)
        assert m.data == b"to me" and m.sid == s2._id
        with pytest.raises(nerr.TimeoutError):
            await s2.next_msg(timeout=0.1)
        assert nc.stats["out_msgs"] >= 4 and nc.stats["in_bytes"] > 0
        assert nc.connected_url.port == nats_server.port and nc.max_payload > 0
        await sub.unsubscribe()
        with pytest.raises(nerr.BadSubscriptionError):
            await sub.unsubscribe()
        await nc.close()
        assert nc.is_closed and nc.client_id is None
        with pytest.raises(nerr.ConnectionClosedError):
            await nc.publish("np.x", b"")
    asyncio.run(main())


def test_rtt_under_uvloop_is_a_positive_time(nats_server):
    """uvloop's loop.time() counts whole milliseconds: a loopback round trip
    read with it is 0.0 (nats-py 2.16.0 returns that); ours is the time taken."""
    uvloop = pytest.importorskip("uvloop")

    async def main():
        nc = await natspy.connect(nats_server.url)
        rtts = [await nc.rtt() for _ in range(20)]
        await nc.close()
        with pytest.raises(nerr.ConnectionClosedError):
            await nc.rtt()
        return rtts
    loop = uvloop.new_event_loop()
    try:
        rtts = loop.run_until_complete(main())
    finally:
        loop.close()
    assert all(0 < t < 2 for t in rtts), rtts


def test_iterator_with_a_message_limit(nats_server):
    async def main():
        nc = await natspy.connect(nats_server.url)
        sub = await nc.subscribe("np.it.>")
        await sub.unsubscribe(limit=2)
        for i in range(4):
            await nc.publish(f"np.it.{i}", b"x")
        got = [m.subject async for m in sub.messages]
        assert got == ["np.it.0", "np.it.1"]
        await sub.unsubscribe()  # ended at its limit: still allowed, as nats-py
        await nc.drain()
        assert nc.is_closed
    asyncio.run(main())


def test_delivered_msg_is_the_dataclass_with_every_field(nats_server):
    """A delivered Msg (built by Msg._from_impl) holds every field of the
    dataclass, in its order, with what Msg(...) would hold; a subclass's
    _from_impl makes an instance of the subclass through its __init__."""
    class Tagged(Msg):
        def __init__(self, *args):
            super().__init__(*args)
            self.tag = "made"

    async def main():
        nc = await natspy.connect(nats_server.url)
        sub = await nc.subscribe("np.fields")
        await nc.publish("np.fields", b"body", reply="np.back", headers={"K": "v"})
        await nc.publish("np.fields", b"")
        got = [await sub.next_msg(timeout=2) for _ in range(2)]
        assert [m.headers for m in got] == [{"K": "v"}, None]
        for m in got:
            assert list(vars(m)) == [f.name for f in dataclasses.fields(Msg)]
            assert vars(m) == vars(Msg(nc, m.subject, m.reply, m.data, m.headers, None, False, m.sid))
        assert (got[0].reply, got[1].reply, got[0].data) == ("np.back", "", b"body")
        assert nc.stats["in_bytes"] == 4
        sub2 = await nc.subscribe("np.tagged", cb=None)
        await nc.publish("np.tagged", b"t")
        impl_msg = await sub2._impl.next_msg(2)
        tagged = Tagged._from_impl(nc, impl_msg)
        assert type(tagged) is Tagged and tagged.tag == "made" and tagged.data == b"t"
        await nc.close()
    asyncio.run(main())


def test_publish_before_connect_while_drain_flushes_and_after(nats_server):
    """nats-py's refusals of a publish: ConnectionClosedError before connect,
    ConnectionDrainingError while drain() flushes the publications (held
    here by a slower flush), ConnectionClosedError once drained; a bad
    subject is BadSubjectError first in every state."""
    async def main():
        idle = NATS()
        with pytest.raises(nerr.ConnectionClosedError):
            await idle.publish("np.dr", b"x")
        with pytest.raises(nerr.BadSubjectError):
            await idle.publish("np dr", b"x")
        nc = await natspy.connect(nats_server.url)
        flush = nc._impl.flush

        async def held_flush(*args):
            await asyncio.sleep(0.3)
            await flush(*args)
        nc._impl.flush = held_flush
        draining = asyncio.ensure_future(nc.drain())
        await asyncio.sleep(0.1)
        assert nc.is_draining_pubs
        for reply in ("", "np.reply"):
            with pytest.raises(nerr.ConnectionDrainingError):
                await nc.publish("np.dr", b"x", reply=reply)
        with pytest.raises(nerr.ConnectionDrainingError):
            await nc.publish("np.dr", b"x", headers={"k": "v"})
        with pytest.raises(nerr.BadSubjectError):
            await nc.publish("np.dr", b"x", reply="np reply")
        await draining
        assert nc.is_closed
        with pytest.raises(nerr.ConnectionClosedError):
            await nc.publish("np.dr", b"x")
    asyncio.run(main())


def test_unsubscribe_inside_the_iterator_still_yields_what_arrived(nats_server):
    """nats-py's iterator takes what is queued before it looks at the end:
    ``await sub.unsubscribe()`` inside ``async for msg in sub.messages``
    still yields the messages already received (nats-py's examples/basic.py),
    and next_msg still returns them; a callback subscription's queue is
    dropped, as nats-py cancels its task."""
    async def main():
        nc = await natspy.connect(nats_server.url)
        sub = await nc.subscribe("np.unsub.it")
        for word in (b"First", b"Second", b"Third"):
            await nc.publish("np.unsub.it", word)
        await nc.flush()  # the messages arrive before the PONG
        assert sub.pending_msgs == 3
        got = []
        async for msg in sub.messages:
            got.append(msg.data)
            if len(got) == 1:
                await sub.unsubscribe()
        assert got == [b"First", b"Second", b"Third"]
        await nc.publish("np.unsub.it", b"late")  # no interest left: never comes
        await nc.flush()
        assert [m async for m in sub.messages] == []

        sub2 = await nc.subscribe("np.unsub.next")
        await nc.publish("np.unsub.next", b"a")
        await nc.publish("np.unsub.next", b"b")
        await nc.flush()
        await sub2.unsubscribe()
        assert (await sub2.next_msg(timeout=1)).data == b"a"
        assert (await sub2.next_msg(timeout=1)).data == b"b"
        with pytest.raises(nerr.TimeoutError):
            await sub2.next_msg(timeout=0.1)

        release = asyncio.Event()
        seen = []

        async def slow(msg):
            seen.append(msg.data)
            await release.wait()
        sub3 = await nc.subscribe("np.unsub.cb", cb=slow)
        for i in range(3):
            await nc.publish("np.unsub.cb", b"%d" % i)
        await nc.flush()
        await sub3.unsubscribe()
        release.set()
        await asyncio.sleep(0.05)
        assert seen == [b"0"] and sub3.pending_msgs == 0
        await nc.close()
    asyncio.run(main())


def test_request_reply_subjects_are_nats_py_shaped(nats_server):
    """nats-py's new-style requests reply to _INBOX.<NUID>.<NUID><4 hex>
    (what its examples/basic.py prints); the asyncio face keeps nats-tcl's
    <inbox>.<n> (the engine's nuid_reply_tokens switch is the drop-in's)."""
    import re
    import tclnats_py

    async def main():
        nc = await natspy.connect(nats_server.url)
        replies = []

        async def cb(msg):
            replies.append(msg.reply)
            await msg.respond(b"ok")
        await nc.subscribe("np.shape", cb=cb)
        for _ in range(3):
            assert (await nc.request("np.shape", b"", timeout=2)).data == b"ok"
        assert all(re.fullmatch(r"_INBOX\.[0-9A-Za-z]{22}\.[0-9A-Za-z]{22}[0-9a-f]{4}", r) for r in replies), replies
        assert len(set(replies)) == 3
        ours = await tclnats_py.connect(nats_server.url)
        assert (await ours.request("np.shape", b"", timeout=2)).data == b"ok"
        assert re.fullmatch(r"_INBOX\.[0-9A-Za-z]{22}\.\d+", replies[-1]), replies[-1]
        await ours.close()
        await nc.close()
    asyncio.run(main())


def test_slow_consumer_reports_each_dropped_message(nats_server):
    async def main():
        errs = []

        async def error_cb(e):
            errs.append(e)
        nc = await natspy.connect(nats_server.url, error_cb=error_cb)
        release = asyncio.Event()

        async def slow(msg):
            await release.wait()
        sub = await nc.subscribe("np.slow", cb=slow, pending_msgs_limit=3)
        for _ in range(10):
            await nc.publish("np.slow", b"x")
        await nc.flush()
        await asyncio.sleep(0.2)
        release.set()
        slow_errs = [e for e in errs if isinstance(e, nerr.SlowConsumerError)]
        # at most one taken by the callback, three queued, the rest dropped: one error each
        assert len(slow_errs) == sub._impl.dropped >= 6
        assert all(e.sub is sub and e.subject == "np.slow" for e in slow_errs)
        await nc.close()
    asyncio.run(main())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_first_connect_failures():
    port = _closed_port()

    async def main():
        errs = []

        async def error_cb(e):
            errs.append(e)
        with pytest.raises(ConnectionRefusedError):
            await NATS().connect(f"nats://127.0.0.1:{port}", allow_reconnect=False)
        nc = NATS()
        with pytest.raises(nerr.NoServersError):
            await nc.connect(f"nats://127.0.0.1:{port}", max_reconnect_attempts=2, reconnect_time_wait=0.05,
                             error_cb=error_cb)
        assert len(errs) >= 2 and all(isinstance(e, ConnectionRefusedError) for e in errs)
        with pytest.raises(nerr.InvalidCallbackTypeError):
            await NATS().connect(f"nats://127.0.0.1:{port}", error_cb=lambda e: None)
    asyncio.run(main())


async def _closes_before_pong(reader, writer):
    """A misbehaving server: INFO without fields, reads CONNECT and PING,
    closes the connection without answering."""
    writer.write(b"INFO {}\r\n")
    await writer.drain()
    lines = []
    while not lines or not lines[-1].startswith(b"PING"):
        line = await reader.readline()
        if not line:
            break
        lines.append(line)
    writer.close()


def test_server_closing_before_pong_accepted_the_connection(nats_server):
    """nats-py's connect: a server that reads CONNECT and closes before its
    PONG has accepted the connection; connect returns (max_payload nats-py's
    default when INFO has none), the loss is reported once, and the client
    reconnects as configured (here to the real server next in the pool)."""
    async def main():
        bad = await asyncio.start_server(_closes_before_pong, "127.0.0.1", 0)
        bad_url = "nats://127.0.0.1:%d" % bad.sockets[0].getsockname()[1]
        calls = []
        reconnected = asyncio.Event()

        async def disconnected_cb():
            calls.append("disconnected")

        async def reconnected_cb():
            calls.append("reconnected")
            reconnected.set()

        async def closed_cb():
            calls.append("closed")
        # the bad server alone, closed at once: disconnected once in all
        # (without the rule: NoServersError after two failed rounds)
        nc = NATS()
        await nc.connect(bad_url, max_reconnect_attempts=1, reconnect_time_wait=0.05,
                         disconnected_cb=disconnected_cb, closed_cb=closed_cb)
        assert nc.max_payload == 1048576
        await nc.close()
        await asyncio.sleep(0.05)
        assert sorted(calls) == ["closed", "disconnected"]
        # then a real server: reconnecting goes on to it
        calls.clear()
        nc = NATS()
        await nc.connect([bad_url, nats_server.url], dont_randomize=True, reconnect_time_wait=0.05,
                         disconnected_cb=disconnected_cb, reconnected_cb=reconnected_cb, closed_cb=closed_cb)
        await asyncio.wait_for(reconnected.wait(), 10)
        assert calls == ["disconnected", "reconnected"] and nc.is_connected
        assert nc.connected_url.port == nats_server.port
        sub = await nc.subscribe("np.after.eof")
        await nc.publish("np.after.eof", b"x")
        assert (await sub.next_msg(timeout=5)).data == b"x"
        await nc.close()
        await asyncio.sleep(0.05)
        assert calls == ["disconnected", "reconnected", "disconnected", "closed"]
        bad.close()
        await bad.wait_closed()
    asyncio.run(main())


def test_close_callbacks_run_once(nats_server):
    async def main():
        calls = []

        async def disconnected_cb():
            calls.append("disconnected")

        async def closed_cb():
            calls.append("closed")
        nc = await natspy.connect(nats_server.url, disconnected_cb=disconnected_cb, closed_cb=closed_cb)
        await nc.close()
        await nc.close()
        await asyncio.sleep(0.1)
        assert calls == ["disconnected", "closed"]
    asyncio.run(main())


def test_server_error_closes_as_nats_py_does(nats_server):
    """A -ERR of the server (here an invalid subject) becomes
    nats.errors.Error('nats: ...') and closes the connection."""
    async def main():
        done = asyncio.get_running_loop().create_future()

        async def closed_cb():
            if not done.done():
                done.set_result(nc.last_error)
        # (nats-py 2.16 refuses that subject itself unless told to skip its check)
        nc = await natspy.connect(nats_server.url, closed_cb=closed_cb, skip_subject_validation=True)
        await nc.subscribe("np.bad.")
        err = await asyncio.wait_for(done, 5)
        assert type(err) is nerr.Error and str(err) == "nats: invalid subject"
    asyncio.run(main())


def test_private_attributes_served(nats_server):
    """The nats-py private attributes PROVIDED_PRIVATE names work with
    nats-py's meaning (its suite reads them)."""
    async def main():
        nc = await natspy.connect(nats_server.url)
        assert nc._server_info["max_payload"] == nc._max_payload
        sub = await nc.subscribe("np.priv")
        await nc.publish("np.priv", b"12345")
        await sub.next_msg(timeout=2)
        assert sub._received == 1 and nc._subs[sub._id] is sub
        assert [s.uri.port for s in nc._server_pool] == [nats_server.port]
        assert await nc._process_headers(b"NATS/1.0 503\r\n\r\n") == {"Status": "503"}
        assert not sub._message_iterator._unsubscribed_future.done()
        await sub.unsubscribe()
        assert sub._id not in nc._subs
        assert sub._message_iterator._unsubscribed_future.done()
        assert nc._reading_task is None  # the face has no reading task
        await nc.close()
    asyncio.run(main())
