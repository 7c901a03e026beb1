"""No silent failures: a callback's exception reaches
error_cb (awaited when it is a coroutine function) or, without one, the
"tclnats_py" logger at ERROR with its traceback, which prints on stderr even
when the program configured no logging (logging.lastResort, as asyncio's
unretrieved task exceptions do)."""

import asyncio
import logging
import os
import subprocess
import sys
import textwrap

import pytest

import tclnats_py
from tests.aio_helpers import settle


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))



def _errors(caplog):
    return [r for r in caplog.records if r.name == "tclnats_py" and r.levelno == logging.ERROR]


def test_the_logger_has_no_null_handler():
    assert not any(isinstance(h, logging.NullHandler) for h in logging.getLogger("tclnats_py").handlers)


def test_callback_exception_without_error_cb_reaches_stderr_with_no_logging_setup(nats_server):
    """A program that configures no logging still sees the traceback."""
    script = textwrap.dedent(f"""
        import asyncio, tclnats_py
        def handler(msg):
            raise ZeroDivisionError("boom in handler")
        async def main():
            nc = await tclnats_py.connect({nats_server.url!r})
            await nc.subscribe("rep.x", cb=handler)
            await nc.publish("rep.x", b"1")
            await nc.flush()
            await asyncio.sleep(0.3)
            await nc.close()
        asyncio.run(main())
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert r.returncode == 0, r.stderr
    assert "Traceback" in r.stderr and "ZeroDivisionError: boom in handler" in r.stderr, r.stderr
    assert "handler" in r.stderr and "rep.x" in r.stderr


def test_subscription_callbacks_report(nats_server, caplog):
    caplog.set_level(logging.ERROR, logger="tclnats_py")

    async def go():
        nc = await tclnats_py.connect(nats_server.url)

        def bad(msg):
            raise ValueError("sync cb failed")

        async def bad_async(msg):
            await asyncio.sleep(0)
            raise KeyError("async cb failed")
        await nc.subscribe("rep.a", cb=bad)
        await nc.subscribe("rep.b", cb=bad_async)
        await nc.publish("rep.a", b"")
        await nc.publish("rep.b", b"")
        await settle(lambda: len(_errors(caplog)) >= 2)
        recs = _errors(caplog)
        kinds = {r.exc_info[0] for r in recs if r.exc_info}
        assert kinds == {ValueError, KeyError}
        assert any("rep.a" in r.getMessage() for r in recs)
        await nc.close()

        # with a coroutine error_cb: it gets the exception and is awaited
        got = []

        async def error_cb(e):
            await asyncio.sleep(0.01)
            got.append(e)
        nc = await tclnats_py.connect(nats_server.url, error_cb=error_cb)
        await nc.subscribe("rep.c", cb=bad)
        await nc.publish("rep.c", b"")
        await settle(lambda: got)
        assert isinstance(got[0], ValueError)

        # an error_cb that fails is logged with its traceback (not dropped)
        caplog.clear()

        def failing_error_cb(e):
            raise RuntimeError("error_cb failed")
        nc._error_cb = failing_error_cb
        await nc.publish("rep.c", b"")
        await settle(lambda: _errors(caplog))
        assert _errors(caplog)[0].exc_info[0] is RuntimeError

        # a coroutine disconnected_cb that fails: the same
        caplog.clear()
        nc._error_cb = None

        async def bad_closed():
            raise LookupError("closed_cb failed")
        nc._closed_cb = bad_closed
        await nc.close()
        await settle(lambda: _errors(caplog))
        assert _errors(caplog)[0].exc_info[0] is LookupError
    run(go())


def test_consume_reports_callback_errors(js_server, caplog):
    caplog.set_level(logging.ERROR, logger="tclnats_py")

    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("REPC", subjects=["repc.>"])
        try:
            cons = await js.create_consumer("REPC", durable_name="C1", ack_policy="explicit")
            await js.publish("repc.1", b"x")

            def bad(msg):
                raise ValueError("consume cb failed")
            ctx = cons.consume(bad)
            await settle(lambda: _errors(caplog))
            assert _errors(caplog)[0].exc_info[0] is ValueError
            await ctx.stop()

            got = []

            async def error_cb(e):
                await asyncio.sleep(0.01)
                got.append(e)
            await js.publish("repc.2", b"y")  # the first one waits for its ack_wait
            ctx = cons.consume(bad, error_cb=error_cb)
            await settle(lambda: got)
            assert isinstance(got[0], ValueError)
            await ctx.stop()
        finally:
            await js.delete_stream("REPC")
            await nc.close()
    run(go())


def test_ordered_consume_awaits_a_coroutine_error_cb(js_server, caplog):
    caplog.set_level(logging.ERROR, logger="tclnats_py")

    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("REPO", subjects=["repo.>"])
        try:
            await js.publish("repo.1", b"x")
            got = []

            async def error_cb(e):
                await asyncio.sleep(0.01)  # a coroutine that was never awaited would not get here
                got.append(e)

            def bad(msg):
                raise ValueError("ordered cb failed")
            oc = js.ordered_consumer("REPO").consume(bad, error_cb=error_cb)
            await settle(lambda: got)
            assert isinstance(got[0], ValueError)
            await oc.stop()

            # without error_cb: the logger, with the traceback
            oc = js.ordered_consumer("REPO").consume(bad)
            await settle(lambda: _errors(caplog))
            assert _errors(caplog)[0].exc_info[0] is ValueError
            await oc.stop()
        finally:
            await js.delete_stream("REPO")
            await nc.close()
    run(go())


def test_a_watcher_ended_by_its_bucket_going_away_is_reported(js_server):
    async def go():
        errors = []
        nc = await tclnats_py.connect(js_server.url, error_cb=errors.append)
        js = nc.jetstream()
        kv = await js.create_key_value("REPW")
        await kv.put("a", b"1")
        w = kv.watch(idle_heartbeat=0.2)
        seen = []

        async def read():
            async for e in w:
                seen.append(e)
        t = asyncio.get_running_loop().create_task(read())
        await settle(lambda: None in seen)
        await js.delete_key_value("REPW")
        await asyncio.wait_for(t, 20)  # the iteration ends ...
        assert errors, "the watcher ended without a word"  # ... and says why:
        # its consumer cannot be made again, the bucket's stream is gone
        assert errors[-1].code == "ErrStreamNotFound", [(type(e).__name__, str(e)) for e in errors]
        assert isinstance(errors[-1], tclnats_py.NatsError)
        await nc.close()
    run(go())
