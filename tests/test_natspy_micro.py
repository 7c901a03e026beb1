"""NATS services: the sans-IO rules (tclnats_py.engine.micro, server-free) and
nats-py's ``nats.micro`` on tclnats_py (tclnats_py.natspy.micro) against a real nats-server."""

import asyncio
import datetime
import json

import pytest

from tclnats_py import natspy as nats
from tclnats_py.engine import micro
from tclnats_py.natspy.micro import add_service
from tclnats_py.natspy.micro.request import Request, ServiceError
from tclnats_py.natspy.micro.service import (EndpointConfig, ServiceConfig, ServiceInfo, ServiceStats, ServiceVerb,
                                             control_subject)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


# ---------------------------------------------------------------- engine rules, server-free
@pytest.mark.unit
def test_control_subjects_and_groups():
    assert micro.control_subject("PING") == "$SRV.PING"
    assert micro.control_subject("INFO", "svc") == "$SRV.INFO.svc"
    assert micro.control_subject("STATS", "svc", "ID1") == "$SRV.STATS.svc.ID1"
    subs = micro.control_subjects("svc", "ID1")
    assert len(subs) == 9 and ("PING", "PING-kind", "$SRV.PING.svc") in subs
    assert micro.group_subject("", "foo") == "foo"
    assert micro.group_subject("g1..", "foo") == "g1.foo"
    assert micro.group_subject(".g1.g2", "foo") == "g1.g2.foo"


@pytest.mark.unit
def test_checks_name_their_problem():
    assert micro.check_service_name("ok_name-1") is None
    assert micro.check_service_name("") == "Name cannot be empty."
    assert "alphanumeric" in micro.check_service_name("a.b")
    assert micro.check_version("1.2.3-alpha.1+build.5") is None
    assert "semantic versioning" in micro.check_version("1.2")
    assert micro.check_endpoint_subject("a.b.>") is None
    assert "spaces" in micro.check_endpoint_subject("a b")
    assert micro.check_endpoint_subject("a.>.b") is not None
    assert micro.check_queue_group("q g") is not None


@pytest.mark.unit
def test_counters_and_payloads():
    st = micro.EndpointStats()
    st.started()
    st.finished(1000)
    st.started()
    st.failed("boom")
    st.finished(3000)
    d = micro.endpoint_stats("e", "s", "q", st, data={"k": 1})
    assert (d["num_requests"], d["num_errors"], d["processing_time"], d["average_processing_time"],
            d["last_error"]) == (2, 1, 4000, 2000, "boom")
    started = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)
    p = micro.stats_payload("ID", "svc", "1.0.0", started, [d], None)
    assert p["started"] == "2024-05-06T07:08:09.123Z" and p["type"] == micro.STATS_TYPE and p["metadata"] == {}
    assert micro.parse_started(p["started"]) == datetime.datetime(2024, 5, 6, 7, 8, 9, 123000)
    assert micro.error_headers("404", "nope", {"a": "b"}) == {"a": "b", micro.ERROR_HEADER: "nope",
                                                             micro.ERROR_CODE_HEADER: "404"}
    st.reset()
    assert st.num_requests == 0 and st.last_error is None


@pytest.mark.unit
def test_config_classes_refuse_bad_input():
    with pytest.raises(ValueError, match="semantic"):
        ServiceConfig(name="svc", version="one")
    with pytest.raises(ValueError, match="empty"):
        ServiceConfig(name="", version="1.0.0")

    async def h(req):
        await req.respond(b"")
    with pytest.raises(ValueError, match="Subject must not contain spaces"):
        EndpointConfig(name="e", subject="a b", handler=h)


# ---------------------------------------------------------------- a service on the server
def test_service_endpoints_discovery_and_stats(nats_server):
    async def go():
        nc = await nats.connect(nats_server.url)

        async def add(req: Request):
            body = json.loads(req.data)
            if body.get("fail"):
                raise ServiceError("400", "asked to fail")
            await req.respond(str(body["x"] + body["y"]).encode(), headers={"Served-By": "adder"})

        svc = await add_service(nc, name="adder", version="1.0.0", description="adds", metadata={"m": "1"})
        await svc.add_endpoint(name="add", subject="math.add", handler=add, metadata={"schema": "x+y"})
        grp = svc.add_group(name="v2", queue_group="grp")
        await grp.add_endpoint(name="add2", handler=add)

        r = await nc.request("math.add", json.dumps({"x": 2, "y": 3}).encode(), timeout=2)
        assert r.data == b"5" and r.headers == {"Served-By": "adder"}
        r = await nc.request("v2.add2", json.dumps({"x": 1, "y": 1}).encode(), timeout=2)
        assert r.data == b"2"
        r = await nc.request("math.add", json.dumps({"fail": True}).encode(), timeout=2)
        assert r.headers[micro.ERROR_CODE_HEADER] == "400" and r.headers[micro.ERROR_HEADER] == "asked to fail"

        ping = json.loads((await nc.request(control_subject(ServiceVerb.PING, "adder"), timeout=2)).data)
        assert ping == {"type": micro.PING_TYPE, "id": svc.id, "name": "adder", "version": "1.0.0",
                        "metadata": {"m": "1"}}
        info = ServiceInfo.from_dict(json.loads((await nc.request(f"$SRV.INFO.adder.{svc.id}", timeout=2)).data))
        assert [(e.name, e.subject, e.queue_group) for e in info.endpoints] == [
            ("add", "math.add", "q"), ("add2", "v2.add2", "grp")]
        assert info.description == "adds" and info.endpoints[0].metadata == {"schema": "x+y"}
        stats = ServiceStats.from_dict(json.loads((await nc.request("$SRV.STATS", timeout=2)).data))
        first = stats.endpoints[0]
        assert (first.num_requests, first.num_errors) == (2, 1)
        assert first.processing_time > 0 and "asked to fail" in first.last_error

        await svc.stop()
        assert svc.stopped.is_set()
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("math.add", b"{}", timeout=1)
        await nc.close()
    run(go())
