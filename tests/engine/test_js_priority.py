"""engine/js/priority.py and the priority groups of Fetch and Consume (ADR-42): no server."""

import json

import pytest

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import config
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.events import Delivered, Ended, Pull
from tclnats_py.engine.js.priority import (PIN_ID, PullGroup, consumer_create, consumer_unpin, from_wire, to_wire,
                                           unpin_body)
from tclnats_py.engine.js.pull import Consume, Fetch, pull_request_body
from tclnats_py.errors import ErrInvalidArg, ErrServerTooOld

pytestmark = pytest.mark.unit


def status(code, desc=""):
    return Msg("_INBOX.x", b"", None, {"Status": [str(code)], "Description": [desc]})


def js_msg(seq, pin=None):
    h = {PIN_ID: [pin]} if pin else None
    return Msg("s.a", b"x", f"$JS.ACK.S.C.1.{seq}.{seq}.1700000000000000000.0", h)


def body(b):
    return json.loads(b)


def test_pull_group_fields_and_checks():
    pins = {}
    g = PullGroup("jobs", min_pending=10, min_ack_pending=3, priority=0, pins=pins)
    assert body(pull_request_body(5, None, False, None, None, g)) == {
        "batch": 5, "group": "jobs", "min_pending": 10, "min_ack_pending": 3, "priority": 0}
    assert body(pull_request_body(5)) == {"batch": 5}
    g.saw({PIN_ID: ["P1"]})
    assert pins == {"jobs": "P1"} and g.pin == "P1"
    assert body(pull_request_body(1, group=PullGroup("jobs", pins=pins))) == {"batch": 1, "group": "jobs", "id": "P1"}
    g.saw({"Other": ["x"]})
    assert pins == {"jobs": "P1"}
    assert g.lost() is True and pins == {} and g.lost() is False
    for bad in ({"group": ""}, {"group": "a" * 17}, {"group": "a.b"}, {"group": "x", "priority": 10},
                {"group": "x", "priority": True}, {"group": "x", "min_pending": -1},
                {"group": "x", "min_ack_pending": "3"}):
        with pytest.raises(ErrInvalidArg):
            PullGroup(**bad)
    PullGroup("A-z_0/9=")
    assert json.loads(unpin_body("jobs")) == {"group": "jobs"}


def test_config_names():
    cfg = config.consumer_config({"-durable_name": "C", "-priority_policy": "pinned_client",
                                  "-priority_groups": "jobs", "-pinned_ttl": 1500})
    assert (cfg["priority_policy"], cfg["priority_groups"], cfg["priority_timeout"]) == (
        "pinned_client", ["jobs"], 1_500_000_000)
    assert "pinned_ttl" not in cfg
    with pytest.raises(ErrInvalidArg):
        config.consumer_config({"priority_policy": "sometimes"})
    with pytest.raises(ErrInvalidArg):
        config.consumer_config({"priority_groups": ["no spaces"]})
    assert from_wire({"priority_timeout": 5}) == {"pinned_ttl": 5}
    assert to_wire({"pinned_ttl": 5, "priority_policy": "pinned_client"}) == {
        "priority_timeout": 5, "priority_policy": "pinned_client"}
    # a pin's lifetime under another policy: refused here, as the server would
    for policy in (None, "none", "overflow"):
        with pytest.raises(ErrInvalidArg, match="pinned_client"):
            to_wire({"pinned_ttl": 5, "priority_policy": policy})
    reply = config.consumer_reply_to_ms({"config": {"priority_timeout": 2_000_000_000}})
    assert reply["config"]["priority_timeout"] == 2000


def test_fetch_keeps_the_pin_and_pulls_again_on_423():
    pins = {}
    f = Fetch(2, timeout_ms=1000, group=PullGroup("jobs", pins=pins), repull=True)
    assert Pull in f.EVENTS and "id" not in body(f.body)
    m = js_msg(1, pin="P1")
    assert f.on_msg(m) == [Delivered(m, None)]
    assert pins == {"jobs": "P1"} and body(f.body)["id"] == "P1"
    f2 = Fetch(1, timeout_ms=1000, group=PullGroup("jobs", pins=pins), repull=True)
    assert body(f2.body)["id"] == "P1"
    # the pin went stale: forgotten, the same pull again without it, the fetch goes on
    evs = f2.on_msg(status(423, "Nats-Wrong-Pin-Id"))
    assert evs == [Pull(f2.body)] and "id" not in body(evs[0].body) and not f2.done and pins == {}
    # another 423 (no pin left to forget) ends it
    assert f2.on_msg(status(423, "Nats-Pin-Id mismatch"))[0].__class__ is Ended and f2.done
    assert f2.result() == []


def test_fetch_without_repull_ends_on_423():
    pins = {"jobs": "P1"}
    f = Fetch(1, timeout_ms=1000, group=PullGroup("jobs", pins=pins))
    assert f.EVENTS == Fetch.EVENTS and Pull not in f.EVENTS
    assert f.on_msg(status(423, "Nats-Wrong-Pin-Id"))[0].__class__ is Ended
    assert f.done and pins == {}
    # a fetch without a group is as before: a 423 ends it, nothing else
    f = Fetch(1, timeout_ms=1000, repull=True)
    assert not f.repull and f.on_msg(js_msg(1, pin="P1"))[0].__class__ is Delivered


def test_consume_keeps_the_pin_and_refills_unpinned_on_423():
    pins = {}
    c = Consume(10, expires_ms=2000, group=PullGroup("jobs", min_pending=1, pins=pins))
    first = c.start()
    assert body(first[0].body)["group"] == "jobs" and body(first[0].body)["min_pending"] == 1
    evs = []
    for i in range(5):  # down to the threshold (5): a top-up pull, now with the pin
        evs += c.on_msg(js_msg(i + 1, pin="P1"))
    assert pins == {"jobs": "P1"}
    top_up = [e for e in evs if e.__class__ is Pull]
    assert len(top_up) == 1 and body(top_up[0].body)["id"] == "P1"
    evs = c.on_msg(status(423, "Nats-Wrong-Pin-Id"))
    assert pins == {} and [e.__class__ for e in evs] == [Pull]
    assert "id" not in body(evs[0].body) and body(evs[0].body)["batch"] == 10
    # the other pulls sent with the stale pin end the same way: no second refill
    assert c.on_msg(status(423, "Nats-Wrong-Pin-Id")) == []
    assert c.stopped is None


INFO = {"type": "io.nats.jetstream.api.v1.account_info_response", "api": {"level": 5}}
INFO_OLD = {"type": "io.nats.jetstream.api.v1.account_info_response"}


def _server(info):
    asked = []

    def handler(step):
        assert isinstance(step, Request)
        asked.append((step.subject, step.payload))
        reply = info if step.subject.endswith(".INFO") else {"type": "x", "config": {}}
        return Msg(step.subject, json.dumps(reply).encode())
    return handler, asked


@pytest.mark.parametrize("policy,level,version", [("overflow", 1, "2.11"), ("pinned_client", 1, "2.11"),
                                                  ("prioritized", 2, "2.12")])
def test_levels(policy, level, version):
    api = JsApi()
    cfg = config.consumer_config({"durable_name": "C", "priority_policy": policy, "priority_groups": ["g"]})
    req = api.consumer_create_request("S", cfg)
    handler, asked = _server(INFO)
    run_sync(consumer_create(api, req, cfg), handler)
    assert [s for s, _ in asked] == ["$JS.API.INFO", "$JS.API.CONSUMER.CREATE.S.C"]
    handler, asked = _server(dict(INFO, api={"level": level - 1}))
    with pytest.raises(ErrServerTooOld, match=f"needs nats-server {version} or newer"):
        run_sync(consumer_create(JsApi(), req, cfg), handler)
    assert [s for s, _ in asked] == ["$JS.API.INFO"]


def test_no_policy_asks_no_level_and_unpin():
    api = JsApi()
    cfg = config.consumer_config({"durable_name": "C"})
    handler, asked = _server(INFO_OLD)
    run_sync(consumer_create(api, api.consumer_create_request("S", cfg), cfg), handler)
    assert [s for s, _ in asked] == ["$JS.API.CONSUMER.CREATE.S.C"]
    with pytest.raises(ErrServerTooOld):
        run_sync(consumer_unpin(api, "S", "C", "g"), handler)
    handler, asked = _server(INFO)
    assert run_sync(consumer_unpin(JsApi(), "S", "C", "g"), handler) is True
    assert asked[-1] == ("$JS.API.CONSUMER.UNPIN.S.C", b'{"group":"g"}')
    with pytest.raises(ErrInvalidArg):
        run_sync(consumer_unpin(JsApi(), "S", "C", "bad group"), handler)
