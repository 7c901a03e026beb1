"""The asyncio face's busy poll while a reply is awaited (tclnats_py.aio.spin):
the selector wrapper on its own (a socket pair, no server), then clients on a
real server: installed on asyncio's selector loop, off with spin_time=0, the
option checked, replies caught while spinning, and a loop shared by a
client that waits and one that does not."""

import asyncio
import selectors
import socket
import threading
import time

import pytest

import tclnats_py
from tclnats_py.aio import spin
from tclnats_py.aio.spin import SpinningSelector


class _Waiting:
    """A stand-in client for the selector's unit tests: awaiting or not."""

    def __init__(self, awaiting=True):
        self.awaiting = awaiting

    def _awaiting_reply(self):
        return self.awaiting


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    inner = selectors.DefaultSelector()
    inner.register(a, selectors.EVENT_READ)
    yield a, b, inner
    inner.close()
    a.close()
    b.close()


def _wrapped(inner, spin_s=0.0003, awaiting=True):
    sel = SpinningSelector(inner)
    client = _Waiting(awaiting)
    sel.add(client, spin_s)
    return sel, client


# ---------------------------------------------------------------- the selector alone
@pytest.mark.unit
def test_data_arriving_within_the_spin_is_caught_without_sleeping(pair):
    a, b, inner = pair
    sel, client = _wrapped(inner, spin_s=0.5)
    threading.Timer(0.02, b.send, (b"x",)).start()
    t0 = time.perf_counter()
    ready = sel.select(5.0)
    assert time.perf_counter() - t0 < 4.0  # the data ended the wait, not select's 5 s
    assert [key.fileobj for key, _ in ready] == [a]
    assert (sel.caught, sel.missed, sel.skipped) == (1, 0, 0)


@pytest.mark.unit
def test_one_late_reply_keeps_spinning_two_in_a_row_skip_ten_then_twenty(pair):
    a, b, inner = pair
    sel, client = _wrapped(inner, spin_s=0.0002)
    # nothing comes: each select spins 200 us, then sleeps the rest (10 ms)
    assert sel.select(0.01) == []
    assert (sel.missed, sel.skip) == (1, 0)      # the first miss costs nothing
    assert sel.select(0.01) == []
    assert (sel.missed, sel.skip) == (2, 10)     # the second: 10 waits sleep at once
    for _ in range(10):
        assert sel.select(0.001) == []
    assert (sel.skipped, sel.skip, sel.missed) == (10, 0, 2)
    assert sel.select(0.01) == []
    assert (sel.missed, sel.skip) == (3, 20)     # a third in a row: 20
    # a caught reply starts over
    sel.skip = 0
    b.send(b"x")
    assert len(sel.select(1.0)) == 1
    assert (sel.misses, sel.caught) == (0, 1)


@pytest.mark.unit
def test_no_spin_unless_a_client_awaits_a_reply_or_the_loop_has_work(pair):
    a, b, inner = pair
    sel, client = _wrapped(inner, spin_s=5.0, awaiting=False)
    assert sel.select(0.001) == []
    assert (sel.caught, sel.missed, sel.skipped) == (0, 0, 0)
    client.awaiting = True
    assert sel.select(0) == []                 # the loop has ready callbacks: never a spin
    assert sel.select(-1) == []
    assert (sel.caught, sel.missed, sel.skipped) == (0, 0, 0)
    # a timer due sooner than the spin: the spin ends with it (2 ms, not 5 s;
    # the bound leaves room for a loaded machine)
    t0 = time.perf_counter()
    assert sel.select(0.002) == []
    assert time.perf_counter() - t0 < 2.5
    assert sel.missed == 1


@pytest.mark.unit
def test_every_other_attribute_is_the_wrapped_selectors(pair):
    a, b, inner = pair
    sel, _ = _wrapped(inner)
    assert sel.get_key(a).fileobj is a
    sel.unregister(a)
    assert sel.get_map() == {} or len(sel.get_map()) == 0
    sel.register(a, selectors.EVENT_READ)
    assert sel.get_key(a).events == selectors.EVENT_READ


@pytest.mark.unit
def test_the_environment_sets_the_default(monkeypatch):
    monkeypatch.setenv("TCLNATS_SPIN_US", "120")
    assert spin.default() == 0.00012
    assert tclnats_py.Client("nats://h")._spin_time == 0.00012
    assert tclnats_py.Client("nats://h", spin_time=0.001)._spin_time == 0.001   # the option wins
    monkeypatch.setenv("TCLNATS_SPIN_US", "0")
    assert spin.default() == 0
    monkeypatch.delenv("TCLNATS_SPIN_US")
    assert spin.default() == 0.0003
    monkeypatch.setenv("TCLNATS_SPIN_US", "fast")
    for make in (spin.default, lambda: tclnats_py.Client("nats://h")):
        with pytest.raises(tclnats_py.NatsError, match="TCLNATS_SPIN_US") as e:
            make()
        assert e.value.code == "ErrInvalidArg"


@pytest.mark.unit
def test_spin_time_is_checked_like_every_time_option():
    assert tclnats_py.Client("nats://h", spin_time=0.001)._spin_time == 0.001
    assert tclnats_py.Client("nats://h", spin_time_ms=0.5)._spin_time == 0.0005
    assert tclnats_py.Client("nats://h", spin_time=0)._spin_time == 0
    for bad in (-1, float("nan"), "fast", 5):
        with pytest.raises(tclnats_py.NatsError) as e:
            tclnats_py.Client("nats://h", spin_time=bad)
        assert e.value.code == "ErrInvalidArg"


# ---------------------------------------------------------------- clients on a server
def test_requests_on_the_selector_loop_are_caught_while_spinning(nats_server):
    async def go():
        loop = asyncio.get_running_loop()
        a = await tclnats_py.connect(nats_server.url, spin_time=0.05)
        b = await tclnats_py.connect(nats_server.url, spin_time=0)  # does not spin itself
        sel = loop._selector
        assert isinstance(sel, SpinningSelector)
        assert a in sel.clients() and b not in sel.clients()

        async def echo(msg):
            await msg.respond(b"re:" + msg.data)
        await b.subscribe("spin.echo", cb=echo)
        await b.flush()
        before = sel.caught
        answers = [(await a.request("spin.echo", b"%d" % i, timeout=5)).data for i in range(20)]
        assert answers == [b"re:%d" % i for i in range(20)]
        # the request's reply (and the responder's message, in this one loop)
        # came while the loop polled: at least one caught per request
        assert sel.caught - before >= 20
        await a.close()
        assert a not in sel.clients()
        await b.close()
    asyncio.run(asyncio.wait_for(go(), 60))


def test_spin_time_zero_leaves_the_loop_alone(nats_server):
    async def go():
        loop = asyncio.get_running_loop()
        inner = loop._selector
        c = await tclnats_py.connect(nats_server.url, spin_time=0)
        assert loop._selector is inner
        assert await c.ping()
        await c.close()
    asyncio.run(asyncio.wait_for(go(), 60))


def test_a_loop_without_a_selector_is_left_alone(nats_server):
    uvloop = pytest.importorskip("uvloop")

    async def go():
        c = await tclnats_py.connect(nats_server.url)
        assert c._spin_sel is None
        assert await c.ping()
        await c.close()
    uvloop.run(asyncio.wait_for(go(), 60))


def test_a_timer_of_another_task_fires_while_a_request_waits(nats_server):
    """A task's sleep ends while a request waits for a slow responder (the
    loop is not held by the wait).  That a spin ends exactly at the loop's
    next timer is checked on the selector itself, with a 5 s spin and a 2 ms
    timer, in test_no_spin_unless_a_client_awaits_a_reply_or_the_loop_has_work:
    here spin_time's cap (0.1 s) and the back-off leave too small a margin for
    a loaded machine."""
    async def go():
        a = await tclnats_py.connect(nats_server.url, spin_time=0.1)
        b = await tclnats_py.connect(nats_server.url, spin_time=0)

        # the reply comes after 3 s; the other task's 20 ms sleep ends long before
        async def slow(msg):
            await asyncio.sleep(3.0)
            await msg.respond(b"late")
        await b.subscribe("spin.slow", cb=slow)
        await b.flush()

        async def sleeper():
            t0 = time.perf_counter()
            await asyncio.sleep(0.02)
            return time.perf_counter() - t0
        task = asyncio.ensure_future(sleeper())
        reply = await a.request("spin.slow", b"", timeout=5)
        assert reply.data == b"late"
        assert await task < 1.5
        await a.close()
        await b.close()
    asyncio.run(asyncio.wait_for(go(), 60))


@pytest.mark.unit
def test_a_client_collected_without_close_is_dropped(pair):
    import gc
    a, b, inner = pair
    sel, client = _wrapped(inner, spin_s=0.0002)
    other = _Waiting(awaiting=False)
    sel.add(other, 0.001)
    assert sel.clients() == [client, other]
    del client
    gc.collect()
    assert sel.select(0.001) == []          # only `other`, which awaits nothing: no spin
    assert (sel.caught, sel.missed) == (0, 0)
    assert sel.clients() == [other]
    sel.remove(other)
    assert sel.clients() == []
