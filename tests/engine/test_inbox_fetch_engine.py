"""engine/js/inbox_fetch.py (nats-py's fetch on a long-lived inbox), server-free:
the operation is stepped by hand with messages and a clock of the test's own."""

import json

import pytest

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js.api import Publish, advance
from tclnats_py.engine.js.inbox_fetch import NextMsg, TakeQueued, inbox_fetch
from tclnats_py.errors import NatsError

pytestmark = pytest.mark.unit

NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.C"
INBOX = "_INBOX.x"


def msg(data=b"d", seq=1):
    return Msg("s", data, f"$JS.ACK.S.C.1.{seq}.{seq}.1700000000000000000.0")


def status(code, desc=""):
    return Msg(INBOX, b"", None, {"Status": [str(code)], "Description": [desc]})


class Driver:
    """Steps the operation: a queue of left-over messages, then scripted
    arrivals ``(time, msg)``; records the pull requests."""

    def __init__(self, queued=(), arrivals=()):
        self.queued = list(queued)
        self.arrivals = list(arrivals)
        self.requests = []
        self.now = 0.0

    def run(self, batch, timeout, heartbeat=None):
        op = inbox_fetch(NEXT, INBOX, batch, timeout, heartbeat, self.now)
        kind, step = advance(op)
        while kind == "step":
            if isinstance(step, TakeQueued):
                kind, step = advance(op, self.queued.pop(0) if self.queued else None)
            elif isinstance(step, Publish):
                assert (step.subject, step.reply) == (NEXT, INBOX)
                self.requests.append(json.loads(step.payload))
                kind, step = advance(op)
            else:
                assert isinstance(step, NextMsg)
                if self.arrivals and (step.deadline is None or self.arrivals[0][0] <= step.deadline):
                    t, m = self.arrivals.pop(0)
                    self.now = max(self.now, t)
                    kind, step = advance(op, (m, self.now))
                else:
                    self.now = step.deadline if step.deadline is not None else self.now
                    kind, step = advance(op, (None, self.now))
        return step


def test_batch_of_one_waits_out_ended_requests():
    d = Driver(arrivals=[(0.1, status(408, "Request Timeout")), (0.5, msg(b"late"))])
    out = d.run(1, 1.0)
    assert [m.data for m in out] == [b"late"]
    assert d.requests == [{"expires": 999_900_000, "batch": 1}]


def test_batch_of_one_timeout_after_heartbeats_says_so():
    d = Driver(arrivals=[(0.1, status(100, "Idle Heartbeat")), (0.9, status(408, "Request Timeout"))])
    with pytest.raises(NatsError) as err:
        d.run(1, 1.0, heartbeat=0.1)
    assert err.value.code == "ErrTimeout" and err.value.details["heartbeats"]
    assert d.requests[0]["idle_heartbeat"] == 100_000_000
    with pytest.raises(NatsError) as err:
        Driver().run(1, 0.5)
    assert not err.value.details["heartbeats"]


def test_left_over_messages_come_first_and_statuses_are_dropped():
    d = Driver(queued=[status(404, "No Messages"), msg(b"a")])
    assert [m.data for m in d.run(1, 1.0)] == [b"a"]
    assert d.requests == []  # answered from the queue
    d = Driver(queued=[msg(b"a")], arrivals=[(0.0, msg(b"b")), (0.0, status(404, "No Messages"))])
    assert [m.data for m in d.run(10, 5.0)] == [b"a", b"b"]
    assert d.requests == [{"batch": 9, "no_wait": True}]  # no expires: the server answers at once


def test_batch_takes_what_is_there_then_stops_at_the_end_of_the_request():
    d = Driver(arrivals=[(0.0, msg(b"1")), (0.0, msg(b"2")), (0.0, status(404, "No Messages")),
                         (0.2, msg(b"not for this fetch"))])
    assert [m.data for m in d.run(5, 1.0)] == [b"1", b"2"]
    assert d.requests == [{"expires": 999_900_000, "batch": 5, "no_wait": True}]


def test_batch_with_nothing_now_waits_with_the_time_left():
    d = Driver(arrivals=[(0.25, status(408, "Request Timeout")), (0.5, msg(b"x")), (0.6, msg(b"y")),
                         (0.7, status(408, "Request Timeout"))])
    assert [m.data for m in d.run(3, 1.0)] == [b"x", b"y"]
    assert d.requests[1] == {"expires": 749_900_000, "batch": 3}


def test_other_statuses_are_errors():
    d = Driver(arrivals=[(0.0, status(400, "Bad Request - heartbeat value too large"))])
    with pytest.raises(NatsError) as err:
        d.run(1, 1.0, heartbeat=0.5)
    assert err.value.code == "ErrJSResponse" and err.value.details["code"] == 400
    assert err.value.details["description"] == "Bad Request - heartbeat value too large"
    with pytest.raises(NatsError) as err:
        Driver(arrivals=[(0.0, status(503))]).run(2, 1.0)
    assert err.value.code == "ErrNoResponders"


def test_bad_arguments():
    with pytest.raises(NatsError):
        Driver().run(0, 1.0)
    with pytest.raises(NatsError):
        Driver().run(1, 0)
