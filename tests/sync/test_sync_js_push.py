"""Push consumers on the blocking face (js.push_subscribe): deliver group,
flow control, idle heartbeats, binding, iteration and the callback thread,
against a real server."""

import threading
import time

import pytest

import tclnats_py
from tclnats_py.sync.jetstream.push import PushSubscription

from tests.sync.js_helpers import js_client


def wait_for(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_group_callbacks_flow_control_and_iteration(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SPUSH", subjects=["spush.>"])
        a, b = [], []
        lock = threading.Lock()

        def keep(into):
            def cb(m):
                with lock:
                    into.append(m)
            return cb
        sub_a = js.push_subscribe("SPUSH", keep(a), durable_name="GRP", deliver_subject="sdeliver.grp",
                                  deliver_group="workers", flow_control=True, idle_heartbeat=0.5, ack_policy="none")
        assert isinstance(sub_a, PushSubscription) and sub_a.deliver_group == "workers"
        assert sub_a.consumer_info()["config"]["idle_heartbeat"] == 500_000_000
        sub_b = js.push_subscribe("SPUSH", keep(b), consumer="GRP")
        assert (sub_b.deliver_subject, sub_b.deliver_group) == ("sdeliver.grp", "workers")
        for i in range(200):
            js.publish_async("spush.x", b"p%d" % i)
        js.publish_async_complete()
        wait_for(lambda: len(a) + len(b) == 200)
        assert a and b and sorted(int(m.data[1:]) for m in a + b) == list(range(200))
        time.sleep(1.3)
        assert sub_a.state.heartbeats + sub_b.state.heartbeats >= 1
        sub_b.unsubscribe()
        assert sub_a.delete() is True

        errors = []
        with js.push_subscribe("SPUSH", flow_control=True, idle_heartbeat=1, error_cb=errors.append,
                               ack_policy="none") as sub:
            got = 0
            for m in sub:
                got += 1
                if got == 200:
                    break
            big = b"z" * 64 * 1024
            for _ in range(300):  # about 19 MiB: the server asks for flow control
                js.publish_async("spush.big", big)
            js.publish_async_complete()
            while got < 500:
                sub.next_msg(10)
                got += 1
            assert sub.state.flow_controls >= 1 and sub.delivered == 500 and not errors
        with pytest.raises(tclnats_py.ErrConsumerStopped):
            sub.next_msg(0.1)
        assert list(sub) == []


def test_heartbeats_missed_callback_errors_and_refusals(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SPUSH2", subjects=["spush2.>"])
        errors = []
        sub = js.push_subscribe("SPUSH2", durable_name="D", idle_heartbeat=0.2, error_cb=errors.append)
        js.publish("spush2.a", b"1")
        m = sub.next_msg(5)
        assert m.data == b"1" and m.metadata.consumer == "D"
        m.ack()
        with pytest.raises(tclnats_py.ErrTimeout):
            sub.next_msg(0.1)
        js.delete_consumer("SPUSH2", "D")  # its heartbeats stop
        wait_for(lambda: any(e.code == "ErrNoHeartbeat" for e in errors), 5)
        sub.unsubscribe()

        def boom(m):
            raise ValueError("the callback failed")
        errs = []
        cb_sub = js.push_subscribe("SPUSH2", boom, error_cb=errs.append, ack_policy="none", deliver_policy="new")
        js.publish("spush2.b", b"2")
        wait_for(lambda: errs)
        assert isinstance(errs[0], ValueError)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            cb_sub.next_msg(0.1)
        cb_sub.unsubscribe()
        js.create_consumer("SPUSH2", durable_name="PULL")
        for bad in (lambda: js.push_subscribe("SPUSH2", consumer="PULL"),
                    lambda: js.push_subscribe("SPUSH2", consumer="D", deliver_group="x"),
                    lambda: js.push_subscribe("SPUSH2", flow_control=True),
                    lambda: js.push_subscribe("SPUSH2", cb="not callable")):
            with pytest.raises(tclnats_py.ErrInvalidArg):
                bad()
