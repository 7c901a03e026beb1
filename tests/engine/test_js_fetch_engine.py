"""engine/js/fetch.py: the steps of one Fetch, as both Python faces drive them
(server-free: the driver's waits are answered by hand, times in seconds)."""

import pytest

from tclnats_py.engine.js.api import Publish, advance
from tclnats_py.engine.js.fetch import ENDED, fetch_steps
from tclnats_py.engine.js.inbox_fetch import NextMsg
from tclnats_py.engine.js.pull import Fetch

from tests.engine.test_js_engine import hb, js_msg, status

pytestmark = pytest.mark.unit


def start(f, now=100.0):
    op = fetch_steps(f, "$JS.API.CONSUMER.MSG.NEXT.S.C", "_INBOX.f", now)
    kind, step = advance(op)
    assert kind == "step" and isinstance(step, Publish) and step.reply == "_INBOX.f" and step.payload == f.body
    return op


def test_a_full_batch_ends_it():
    f = Fetch(2, timeout_ms=1200, expires_ms=1000)
    op = start(f)
    kind, step = advance(op)
    assert isinstance(step, NextMsg) and step.deadline == pytest.approx(101.2)
    kind, step = advance(op, (js_msg(1, 1), 100.1))
    assert isinstance(step, NextMsg)
    assert advance(op, (js_msg(2, 2), 100.2)) == ("done", None)
    assert [m.data for m in f.result(raise_status=True)] == [b"x", b"x"]


def test_the_deadline_ends_it_with_what_came():
    f = Fetch(5, timeout_ms=1200, expires_ms=1000)
    op = start(f)
    advance(op)
    advance(op, (js_msg(1, 1), 100.1))
    assert advance(op, (None, 101.3)) == ("done", None)
    assert f.outcome == "timeout" and len(f.result()) == 1


def test_nothing_by_the_deadline_is_a_timeout_and_an_ended_inbox_too():
    for answer in (None, ENDED):
        f = Fetch(1, timeout_ms=500, expires_ms=400)
        op = start(f)
        advance(op)
        assert advance(op, (answer, 100.5)) == ("done", None)
        assert f.outcome == "timeout"
        with pytest.raises(Exception) as e:
            f.result()
        assert e.value.code == "ErrTimeout"


def test_heartbeats_wait_less_than_the_deadline_and_their_silence_ends_it():
    f = Fetch(3, timeout_ms=33_000, expires_ms=30_000, idle_heartbeat_ms=1000)
    op = start(f)
    kind, step = advance(op)
    hb_wait = f.heartbeat_timeout_ms / 1000
    assert hb_wait < 30 and step.deadline == pytest.approx(100 + hb_wait)
    kind, step = advance(op, (hb(), 101.0))  # a heartbeat: the wait starts again from now
    assert step.deadline == pytest.approx(101 + hb_wait)
    assert advance(op, (None, 101 + hb_wait)) == ("done", None)
    assert f.outcome == "no_heartbeat"
    # near the deadline the deadline's wait comes first: its silence is a timeout
    f = Fetch(3, timeout_ms=1500, expires_ms=1000, idle_heartbeat_ms=1000)
    op = start(f)
    kind, step = advance(op)
    assert step.deadline == pytest.approx(101.5)
    advance(op, (None, 101.5))
    assert f.outcome == "timeout"


def test_a_status_that_ends_the_request_ends_it():
    f = Fetch(3, timeout_ms=1200, expires_ms=1000)
    op = start(f)
    advance(op)
    advance(op, (js_msg(1, 1), 100.1))
    assert advance(op, (status(408, "Request Timeout"), 100.9)) == ("done", None)
    assert len(f.result(raise_status=True)) == 1
