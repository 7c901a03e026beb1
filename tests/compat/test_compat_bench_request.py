"""The request rows of compat/bench_raw.py, bench_py.py and bench_sync.py:
every requester talks to one echo responder running in a process of its
own (bench_raw.EchoResponder), and a reply that differs from its request
fails the row.  Tiny counts against a real server; no timing is asserted."""

import asyncio
import os
import sys

import pytest

from tclnats_py import sync
from tclnats_py.compat import bench_py, bench_raw, bench_sync


@pytest.fixture
def echo(nats_server):
    responder = bench_raw.EchoResponder(nats_server.url)
    with responder as subject:
        yield subject, responder.proc


@pytest.fixture
def liar(nats_server):
    """A responder that answers every request with other bytes."""
    nc = sync.connect(nats_server.url)
    nc.subscribe("bench.liar", cb=lambda m: m.respond(b"not what was asked"))
    nc.flush()
    yield "bench.liar"
    nc.close()


def test_the_echo_responder_is_another_process_and_echoes(nats_server, echo):
    subject, proc = echo
    assert proc.pid != os.getpid() and proc.poll() is None
    with sync.connect(nats_server.url) as nc:
        for payload in (b"", b"one", bytes(range(256)) * 100):
            assert nc.request(subject, payload, timeout=5).data == payload


def test_the_echo_responder_ends_with_its_block(nats_server):
    responder = bench_raw.EchoResponder(nats_server.url)
    with responder as subject:
        proc = responder.proc
    assert proc.poll() is not None
    with sync.connect(nats_server.url) as nc, pytest.raises(Exception, match="[Nn]o responders"):
        nc.request(subject, b"x", timeout=2)


def test_the_raw_requester_talks_to_the_shared_responder(nats_server, echo):
    subject, _ = echo
    assert bench_raw.request(nats_server.url, 50, "t1", echo=subject) > 0
    assert bench_raw.request(nats_server.url, 50, "t2", wait="spin", echo=subject) > 0
    assert bench_raw.request_async(nats_server.url, 300, "t3", inflight=32, echo=subject) > 0


def test_the_raw_requester_starts_a_responder_of_its_own_without_one(nats_server):
    assert bench_raw.request(nats_server.url, 20, "own") > 0
    best, each = bench_raw.ceiling(nats_server.url, 100, ["request", "request_async"], tag="own")
    assert best["request"] > 0 and set(each["request_async"]) == {"block", "spin"}


def test_a_reply_that_differs_fails_every_requester(nats_server, liar):
    with pytest.raises(RuntimeError, match="differs from the request"):
        bench_raw.request(nats_server.url, 5, "liar", echo=liar)
    with pytest.raises(RuntimeError, match="differs from the request"):
        bench_raw.request_async(nats_server.url, 5, "liar", echo=liar)
    with sync.connect(nats_server.url) as a, pytest.raises(RuntimeError, match="replies differ"):
        bench_sync._request_figure(a, liar, 5, {})

    async def asyncio_side():
        side = bench_py.Side("tclnats_py")
        a = await side.connect(nats_server.url)
        try:
            await bench_py._request_figures(side, a, liar, 5, 10, {})
        finally:
            await a.close()
    with pytest.raises(RuntimeError, match="replies differ"):
        asyncio.run(asyncio_side())


def test_the_blocking_face_measures_against_the_responder(nats_server, echo):
    subject, _ = echo
    out = bench_sync.workload(nats_server.url, 100, ["request"], echo=subject)
    assert set(out) == {"request"} and out["request"][0] > 0


@pytest.mark.parametrize("name", ["tclnats_py", "natspy", "nats-py"])
def test_each_asyncio_side_measures_against_the_responder(nats_server, echo, name, monkeypatch):
    if name == "nats-py":
        pytest.importorskip("nats.aio.client")
    subject, _ = echo
    monkeypatch.setattr(bench_py, "_ROWS", ["request", "request_async"])
    out = asyncio.run(bench_py.workload(bench_py.Side(name), nats_server.url, 100, echo=subject))
    assert set(out) == {"request", "request_async"}
    assert all(rate > 0 for rate, _cpu in out.values())


@pytest.fixture
def started(monkeypatch):
    """The subjects of the echo responders bench_py starts, in order."""
    subjects: list = []
    real = bench_raw.EchoResponder

    class Counted(real):
        def __enter__(self):
            subjects.append(self.subject)
            return super().__enter__()
    monkeypatch.setattr(bench_py, "EchoResponder", Counted)
    return subjects


def test_a_round_starts_one_responder_for_every_side(nats_server, started, monkeypatch):
    monkeypatch.setattr(bench_py, "_ROWS", ["request"])
    runs = bench_py._rounds(["tclnats_py", "sync"], nats_server.url, 100, 2, True)
    assert len(started) == 2 and len(set(started)) == 2
    for side in ("tclnats_py", "sync", "raw socket"):
        assert len(runs[side]) == 2 and all(r["request"][0] > 0 for r in runs[side])


def test_a_subprocess_side_talks_to_its_parents_responder(nats_server, echo, liar, started, monkeypatch):
    subject, proc = echo
    monkeypatch.setattr(bench_py, "_ROWS", ["request"])
    runs = bench_py._rounds(["tclnats_py"], nats_server.url, 100, 2, False, echo=subject)
    assert not started and [r["request"][0] > 0 for r in runs["tclnats_py"]] == [True, True]
    # the child process of a run (nats-core's, no accel's): --echo reaches its rounds
    out = bench_py._child(sys.executable, ["--child-sides", "tclnats_py", "--url", nats_server.url, "--count", "100",
                                           "--rounds", "1", "--rows", "request", "--echo", subject])
    assert out["tclnats_py"][0]["request"][0] > 0
    assert proc.poll() is None
    with pytest.raises(RuntimeError, match="replies differ from the request"):
        bench_py._child(sys.executable, ["--child-sides", "tclnats_py", "--url", nats_server.url, "--count", "100",
                                         "--rounds", "1", "--rows", "request", "--echo", liar])
