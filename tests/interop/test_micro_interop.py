"""NATS services (ADR-32) across clients: the same service written three ways,
with nats-py's ``nats.micro`` (the reference), with our asyncio face
(``nc.add_service``) and with our Tcl face (``$conn add_service`` under stock
tclsh), all on one nats-server, driven by a nats-py client: ``$SRV.PING``,
``$SRV.INFO`` and ``$SRV.STATS`` (all services, by name, by id), requests, an
error response.  Ours must answer with the JSON fields of nats-py's, in its
order, the values that do not name the instance equal, and nats-py's
``nats.micro`` payload classes must read them.

Each service "<name>" has: metadata {"team": "math"}, description "adds",
endpoint "add" on "<name>.add" (metadata {"schema": "x y"}), and a group
"<name>v2" (queue group "workers") with endpoint "add" on "<name>v2.add".
A request "x y" answers x+y with the header Served-By; a non-number x answers
an error 400 "x is not a number".
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import textwrap

import pytest

nats = pytest.importorskip("nats")
micro_service = pytest.importorskip("nats.micro.service")
import nats.micro  # noqa: E402  (the reference implementation: nats-py's own)

from tclnats_py.aio.client import Client  # noqa: E402
from tclnats_py.aio.micro import Request as AioRequest  # noqa: E402
from tclnats_py.tclface.bridge import tcl_library_dir  # noqa: E402
from tclnats_py.tclface.tclsh import find_tclsh  # noqa: E402

pytestmark = pytest.mark.tcl

ERROR_HEADERS = ("Nats-Service-Error", "Nats-Service-Error-Code")

TCL_SERVICE = r"""
package require nats
set c [nats::connection new tclsvc -log_chan stdout -log_level error]
$c configure -servers $::env(NATS_URL)
$c connect
proc add {svc subject msg reply} {
    lassign [nats::msg data $msg] x y
    if {![string is integer -strict $x]} {
        $svc respond_error $msg 400 "x is not a number"
        return
    }
    $svc respond $msg [expr {$x + $y}] -header [list Served-By tcl]
}
set svc [$c add_service tclsvc -version 1.0.0 -description adds -metadata {team math}]
$svc add_endpoint add [list add $svc] -subject tclsvc.add -metadata {schema "x y"}
set g [$svc add_group tclsvcv2 -queue_group workers]
$g add_endpoint add [list add $svc]
$c subscribe tclsvc.quit -callback {apply {{s m r} {set ::quit 1}}}
$c ping
puts "ready [$svc id]"
flush stdout
vwait ::quit
$svc stop
$c destroy
"""


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


def _numbers(data: bytes) -> tuple[int, int]:
    x, y = data.decode().split()
    return int(x), int(y)


async def start_reference(nc) -> object:
    """nats-py's own service."""
    async def add(req) -> None:
        try:
            x, y = _numbers(req.data)
        except ValueError:
            raise nats.micro.request.ServiceError("400", "x is not a number") from None
        await req.respond(str(x + y).encode(), headers={"Served-By": "nats-py"})

    svc = await nats.micro.add_service(nc, name="refsvc", version="1.0.0", description="adds",
                                       metadata={"team": "math"})
    await svc.add_endpoint(name="add", subject="refsvc.add", handler=add, metadata={"schema": "x y"})
    grp = svc.add_group(name="refsvcv2", queue_group="workers")
    await grp.add_endpoint(name="add", handler=add)
    return svc


async def start_ours(nc: Client):
    """The asyncio face's service."""
    async def add(req: AioRequest) -> None:
        try:
            x, y = _numbers(req.data)
        except ValueError:
            await req.respond_error("400", "x is not a number")
            return
        await req.respond(str(x + y).encode(), headers={"Served-By": "aio"})

    svc = await nc.add_service(name="aiosvc", version="1.0.0", description="adds", metadata={"team": "math"})
    await svc.add_endpoint("add", add, subject="aiosvc.add", metadata={"schema": "x y"})
    grp = svc.add_group("aiosvcv2", queue_group="workers")
    await grp.add_endpoint("add", add)
    return svc


def start_tcl(tmp_path, url: str) -> tuple[subprocess.Popen, str]:
    """The Tcl face's service, in stock tclsh (only our Tcl folder on TCLLIBPATH)."""
    script = tmp_path / "service.tcl"
    script.write_text(textwrap.dedent(TCL_SERVICE))
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env.update(TCLLIBPATH=tcl_library_dir(), NATS_URL=url)
    proc = subprocess.Popen([find_tclsh(), str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("ready "):
        proc.kill()
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"the Tcl service did not start: {line}{out}\n{err}")
    return proc, line.split()[1]


def shape(value):
    """The field names of a JSON value, in order, nested (values dropped)."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def without_instance(payload: dict, name: str) -> dict:
    """A payload with what names the instance (id, name, subjects, started,
    times) made neutral, for comparing values across services."""
    text = json.dumps(payload).replace(name, "SVC")
    out = json.loads(text)
    out.pop("id", None)
    out.pop("started", None)
    for ep in out.get("endpoints", []):
        for k in ("processing_time", "average_processing_time"):
            if k in ep:
                ep[k] = ep[k] > 0
    return out


def test_tcl_and_asyncio_services_answer_as_nats_py_s(nats_server, tmp_path):
    proc, tcl_id = start_tcl(tmp_path, nats_server.url)

    async def go():
        nc = await nats.connect(nats_server.url)
        ours_nc = await Client().connect(nats_server.url)
        ref = await start_reference(nc)
        aio = await start_ours(ours_nc)
        ids = {"refsvc": ref.id, "aiosvc": aio.id, "tclsvc": tcl_id}
        try:
            # ---- requests, on each endpoint, and an error response
            for name in ids:
                r = await nc.request(f"{name}.add", b"2 3", timeout=5)
                assert r.data == b"5" and "Served-By" in r.headers, (name, r.data, r.headers)
                r = await nc.request(f"{name}v2.add", b"4 5", timeout=5)
                assert r.data == b"9", name
                r = await nc.request(f"{name}.add", b"x 1", timeout=5)
                assert r.data == b"", name
                assert {k: r.headers.get(k) for k in ERROR_HEADERS} == {
                    "Nats-Service-Error": "x is not a number", "Nats-Service-Error-Code": "400"}, (name, r.headers)

            # ---- discovery: by name, by id, all services
            got: dict = {}
            for verb in ("PING", "INFO", "STATS"):
                for name, sid in ids.items():
                    by_name = json.loads((await nc.request(f"$SRV.{verb}.{name}", timeout=5)).data)
                    by_id = json.loads((await nc.request(f"$SRV.{verb}.{name}.{sid}", timeout=5)).data)
                    assert by_name["id"] == by_id["id"] == sid
                    got[verb, name] = by_id
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            await nc.publish("$SRV.PING", b"", reply=inbox)
            seen = {}
            while set(ids) - set(seen):
                m = await sub.next_msg(timeout=10)
                d = json.loads(m.data)
                seen[d["name"]] = d
            assert {n: seen[n]["id"] for n in ids} == ids

            # ---- the same fields, in nats-py's order, the same values
            for verb in ("PING", "INFO", "STATS"):
                ref_payload = got[verb, "refsvc"]
                for name in ("aiosvc", "tclsvc"):
                    payload = got[verb, name]
                    assert shape(payload) == shape(ref_payload), (verb, name, payload, ref_payload)
                    assert without_instance(payload, name) == without_instance(ref_payload, "refsvc"), (
                        verb, name, payload, ref_payload)

            # nats-py's classes read ours
            for name in ids:
                ping = micro_service.ServicePing.from_dict(got["PING", name])
                info = micro_service.ServiceInfo.from_dict(got["INFO", name])
                stats = micro_service.ServiceStats.from_dict(got["STATS", name])
                assert (ping.name, info.name, stats.name) == (name, name, name)
                assert [(e.subject, e.queue_group) for e in info.endpoints] == [
                    (f"{name}.add", "q"), (f"{name}v2.add", "workers")]
                first = stats.endpoints[0]
                assert (first.num_requests, first.num_errors, first.last_error) == (2, 1, "400:x is not a number")
                assert info.type == "io.nats.micro.v1.info_response" and stats.type == "io.nats.micro.v1.stats_response"

            # the asyncio service's own view is what it answered
            assert aio.info().as_dict() == got["INFO", "aiosvc"]
            assert aio.stats().as_dict()["endpoints"] == got["STATS", "aiosvc"]["endpoints"]
        finally:
            await nc.publish("tclsvc.quit", b"")
            await ref.stop()
            await aio.stop()
            await nc.close()
            await ours_nc.close()

    try:
        run(go())
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, (out, err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
