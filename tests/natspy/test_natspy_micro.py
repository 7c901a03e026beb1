"""nats-py's ``nats.micro`` on tclnats_py (tclnats_py.natspy.micro): its config
checks (server-free) and a service against a real nats-server.  The engine's
rules themselves: tests/engine/test_micro_engine.py."""

import asyncio
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
