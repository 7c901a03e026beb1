"""The first connect of the asyncio face: what a failure raises (the engine's
code, and the builtin exception asyncio would have raised), the Tcl face's
codes for the same failures, and retry_on_failed_connect with a server that
starts after connect() was called."""

import asyncio
import socket
import threading
import tkinter

import pytest

import tclnats_py
from tclnats_py.testing.server import NatsServer, free_port

UNRESOLVED = "no-such-host.invalid"  # RFC 6761: never resolves


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_refused_connection_is_also_connection_refused_error():
    port = free_port()

    async def go():
        errors = []
        with pytest.raises(ConnectionRefusedError) as e:
            await tclnats_py.connect(f"nats://127.0.0.1:{port}", error_cb=errors.append)
        err = e.value
        assert type(err) is tclnats_py.ErrConnectionRefused and err.code == "ErrConnectionRefused"
        assert isinstance(err, OSError) and isinstance(err, tclnats_py.ConnectionFailure)
        assert not isinstance(err, socket.gaierror)
        assert str(err).startswith(f"Failed to connect to 127.0.0.1:{port}: ")
        assert [x.code for x in errors] == ["ErrConnectionRefused"]
    run(go())


def test_unresolved_host_is_its_own_error_and_a_gaierror():
    async def go():
        errors = []
        with pytest.raises(socket.gaierror) as e:
            await tclnats_py.connect(f"nats://{UNRESOLVED}:4222", error_cb=errors.append)
        err = e.value
        assert type(err) is tclnats_py.ErrHostNotResolved and err.code == "ErrHostNotResolved"
        assert isinstance(err, OSError) and isinstance(err, tclnats_py.ConnectionFailure)
        assert not isinstance(err, ConnectionRefusedError) and "refused" not in str(err)
        assert f"the host name {UNRESOLVED} did not resolve" in str(err)
        assert str(err).startswith(f"Failed to connect to {UNRESOLVED}:4222: ")
        assert [x.code for x in errors] == ["ErrHostNotResolved"]
        # in a pool, the last error names it; connect() says ErrNoServers
        port = free_port()
        nc = tclnats_py.Client([f"nats://{UNRESOLVED}:4222", f"nats://127.0.0.1:{port}"], randomize=False)
        with pytest.raises(tclnats_py.ErrNoServers):
            await nc.connect()
    run(go())


@pytest.mark.tcl
def test_tcl_face_codes_for_the_same_failures_are_unchanged():
    """nats-tcl cannot tell a name that does not resolve from a refusal:
    both stay {NATS ErrConnectionRefused} on the Tcl face."""
    from tclnats_py.tclface.bridge import install
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval("package require nats")
    for url in (f"nats://{UNRESOLVED}:4222", f"nats://127.0.0.1:{free_port()}"):
        out = tk.eval(f"""
            set c [nats::connection new t -log_chan stderr -log_level error]
            $c configure -servers {url}
            catch {{$c connect}} err opts
            set out [list [dict get $opts -errorcode] [dict get [set [info object namespace $c]::last_error] code]]
            $c destroy
            set out
        """)
        assert tk.splitlist(out) == ("NATS ErrConnectionRefused", "NATS ErrConnectionRefused"), (url, out)


def test_retry_on_failed_connect_waits_for_a_server_started_later():
    port = free_port()
    srv = NatsServer(port=port)
    started = threading.Event()

    async def go():
        errors = []
        loop = asyncio.get_running_loop()

        def on_error(e):
            errors.append(e.code)
            if len(errors) == 3 and not started.is_set():
                started.set()
                loop.run_in_executor(None, srv.start)  # after three refused attempts

        statuses = []
        nc = await tclnats_py.connect(f"nats://127.0.0.1:{port}", retry_on_failed_connect=True,
                                      reconnect_time_wait=0.05, max_reconnect_attempts=-1, error_cb=on_error,
                                      status_cb=statuses.append)
        try:
            assert nc.is_connected and started.is_set()
            assert errors[:3] == ["ErrConnectionRefused"] * 3
            assert "reconnecting" not in statuses and statuses[-1] == "connected"
            sub = await nc.subscribe("retry.ok")
            await nc.publish("retry.ok", b"up")
            assert (await sub.next_msg(5)).data == b"up"
        finally:
            await nc.close()
    try:
        run(go())
    finally:
        srv.stop()


def test_retry_on_failed_connect_gives_up_after_max_reconnect_attempts():
    port = free_port()

    async def go():
        errors = []
        with pytest.raises(tclnats_py.ErrConnectionRefused):
            await tclnats_py.connect(f"nats://127.0.0.1:{port}", retry_on_failed_connect=True,
                                     reconnect_time_wait=0.01, max_reconnect_attempts=3, error_cb=errors.append)
        assert errors.count("ErrConnectionRefused") == 0  # error_cb gets the errors, not their codes
        assert [e.code for e in errors if e.code == "ErrConnectionRefused"] == ["ErrConnectionRefused"] * 3
        # without the option, one attempt per server
        errors.clear()
        with pytest.raises(tclnats_py.ErrConnectionRefused):
            await tclnats_py.connect(f"nats://127.0.0.1:{port}", reconnect_time_wait=0.01,
                                     max_reconnect_attempts=3, error_cb=errors.append)
        assert [e.code for e in errors if e.code == "ErrConnectionRefused"] == ["ErrConnectionRefused"]
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await tclnats_py.connect(f"nats://127.0.0.1:{port}", retry_on_failed_connect="yes")
    run(go())
