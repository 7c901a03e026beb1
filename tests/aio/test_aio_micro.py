"""NATS services on the asyncio face (tclnats_py.aio.micro) against a real
nats-server: handlers (coroutine and plain), ServiceError and other
exceptions, respond_error, groups, info/stats, reset, stop, and the
ErrInvalidArg of bad arguments.  Field-by-field agreement with nats-py's
services: tests/interop/test_micro_interop.py."""

import asyncio
import json

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.micro import Request, ServiceError, ServiceInfo, ServiceStats


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_endpoints_errors_groups_and_stats(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        cli = await tclnats_py.connect(nats_server.url)

        async def echo(req: Request) -> None:
            if req.data == b"raise":
                raise ServiceError(404, "not here")
            if req.data == b"crash":
                raise RuntimeError("crashed")
            if req.data == b"refuse":
                await req.respond_error("409", "refused", data=b"why")
                return
            await req.respond(req.subject.encode() + b":" + req.data, headers={"X": "1"})

        def plain(req: Request) -> None:   # a plain function handler
            asyncio.get_running_loop().create_task(req.respond(b"plain"))

        svc = await nc.add_service(name="echo", version="1.2.3", description="echoes", metadata={"a": "b"},
                                   queue_group="svcq")
        await svc.add_endpoint("echo", echo, metadata={"k": "v"})
        v1 = svc.add_group("v1")
        inner = v1.add_group("deep", queue_group="dq")
        await inner.add_endpoint("echo", echo, subject="e")
        await v1.add_endpoint("plain", plain)

        r = await cli.request("echo", b"hi", timeout=5)
        assert r.data == b"echo:hi" and r.headers["X"] == "1"
        assert (await cli.request("v1.deep.e", b"x", timeout=5)).data == b"v1.deep.e:x"
        assert (await cli.request("v1.plain", b"", timeout=5)).data == b"plain"
        errors = {}
        for body in (b"raise", b"crash", b"refuse"):
            r = await cli.request("echo", body, timeout=5)
            errors[body] = (r.headers["Nats-Service-Error-Code"], r.headers["Nats-Service-Error"], r.data)
        assert errors == {b"raise": ("404", "not here", b""),
                          b"crash": ("500", "RuntimeError('crashed')", b""),
                          b"refuse": ("409", "refused", b"why")}

        info = svc.info()
        assert isinstance(info, ServiceInfo)
        assert [(e.name, e.subject, e.queue_group, e.metadata) for e in info.endpoints] == [
            ("echo", "echo", "svcq", {"k": "v"}), ("echo", "v1.deep.e", "dq", None),
            ("plain", "v1.plain", "svcq", None)]
        assert (info.name, info.version, info.description, info.metadata) == ("echo", "1.2.3", "echoes", {"a": "b"})
        stats = svc.stats()
        assert isinstance(stats, ServiceStats)
        first = stats.endpoints[0]
        assert (first.num_requests, first.num_errors, first.last_error) == (4, 3, "409:refused")
        assert first.processing_time > 0 and first.average_processing_time == first.processing_time // 4
        wire = json.loads((await cli.request(f"$SRV.STATS.echo.{svc.id}", timeout=5)).data)
        assert wire == stats.as_dict() | {"started": wire["started"]} and wire["started"].endswith("Z")

        svc.reset()
        assert [e.num_requests for e in svc.stats().endpoints] == [0, 0, 0]

        await svc.stop()
        await svc.stop()
        assert svc.stopped
        await nc.flush()
        with pytest.raises(NatsError) as e:
            await cli.request("echo", b"hi", timeout=2)
        assert e.value.code == "ErrNoResponders"
        with pytest.raises(NatsError) as e:
            await svc.add_endpoint("more", echo)
        assert e.value.code == "ErrInvalidArg" and "stopped" in str(e.value)
        await nc.close()
        await cli.close()
    run(go())


def test_bad_arguments_are_err_invalid_arg(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)

        async def h(req: Request) -> None:
            await req.respond(b"")

        bad_services = [dict(name="a.b", version="1.0.0"), dict(name="", version="1.0.0"),
                        dict(name="ok", version="1"), dict(name="ok", version=""),
                        dict(name="ok", version="1.0.0", metadata={"a": 1}),
                        dict(name="ok", version="1.0.0", queue_group="q q")]
        for kw in bad_services:
            with pytest.raises(NatsError) as e:
                await nc.add_service(**kw)
            assert e.value.code == "ErrInvalidArg", kw
        svc = await nc.add_service(name="ok", version="1.0.0")
        for args, kw in [(("a b", h), {}), (("ok", h), {"subject": "a b"}), (("ok", h), {"subject": "a.>.b"}),
                         (("ok", h), {"queue_group": "q q"}), (("ok", "not callable"), {}),
                         (("ok", h), {"metadata": ["x"]})]:
            with pytest.raises(NatsError) as e:
                await svc.add_endpoint(*args, **kw)
            assert e.value.code == "ErrInvalidArg", (args, kw)
        for name in ("", "a b", "a.>"):
            with pytest.raises(NatsError) as e:
                svc.add_group(name)
            assert e.value.code == "ErrInvalidArg", name
        assert svc.info().endpoints == []
        await svc.stop()
        await nc.close()
    run(go())
