"""NATS services (ADR-32) on the asyncio face, in nats.go micro's names (snake_case).

    svc = await nc.add_service(name="adder", version="1.0.0", description="adds",
                               metadata={"team": "math"})       # queue_group= too

    async def add(req: Request) -> None:                      # or a plain function
        x, y = json.loads(req.data)
        if not isinstance(x, int):
            raise ServiceError("400", "x is not a number")     # -> an error reply
        await req.respond(str(x + y).encode(), headers={"K": "v"})

    await svc.add_endpoint("add", add, subject="math.add", metadata={"schema": "[x, y]"})
    v2 = svc.add_group("v2", queue_group="workers")          # a subject prefix
    await v2.add_endpoint("add", add)                          # subject v2.add
    svc.info(); svc.stats(); svc.reset()                       # ServiceInfo, ServiceStats
    await svc.stop()

The service answers ``$SRV.PING``, ``$SRV.INFO`` and ``$SRV.STATS`` (for all
services, by name, by name and id) with ADR-32's JSON, the same fields as
nats.go and nats-py.  Each endpoint is a queue subscription (queue group
``q`` unless the endpoint, its group or the service names another); its
handler (a coroutine function or a plain function of the :class:`Request`)
runs in the subscription's task, one request after the other.  A handler
that raises is counted as an error of its endpoint (``num_errors``,
``last_error``), and the requester gets an error reply: a
:class:`ServiceError`'s code and description, else code 500 and the
exception's repr.  ``req.respond_error(code, description, data=b"")``
answers with an error without raising (counted as well).  Error replies
carry the ``Nats-Service-Error`` and ``Nats-Service-Error-Code`` headers.

Bad arguments raise ErrInvalidArg (the engine's checks, the text nats-py
gives).  The service's state, its payloads and its counters are
:class:`tclnats_py.engine.micro.ServiceCore`; this module subscribes, runs
the handlers, takes their time and publishes.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Union

from tclnats_py.engine import micro as _micro
from tclnats_py.engine.connection import Msg
from tclnats_py.errors import NatsError, make_error

if TYPE_CHECKING:
    from tclnats_py.aio.client import Client, HeadersArg, Payload, Subscription

__all__ = ["add_service", "Service", "Group", "Request", "Handler", "ServiceError", "ServiceInfo",
           "ServiceStats", "EndpointInfo", "EndpointStats", "ERROR_HEADER", "ERROR_CODE_HEADER"]

ERROR_HEADER = _micro.ERROR_HEADER
ERROR_CODE_HEADER = _micro.ERROR_CODE_HEADER


def _invalid(text: str) -> NatsError:
    return make_error("ErrInvalidArg", text)


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class ServiceError(Exception):
    """Raised by a handler: the requester gets an error reply with ``code``
    (``Nats-Service-Error-Code``) and ``description`` (``Nats-Service-Error``)."""

    def __init__(self, code: Union[str, int], description: str) -> None:
        super().__init__(f"{code}:{description}")
        self.code = str(code)
        self.description = description


class Request:
    """A request to an endpoint: ``subject``, ``data``, ``headers``, ``reply``."""

    __slots__ = ("_msg", "_client", "_failed")

    def __init__(self, client: Client, msg: Msg) -> None:
        self._msg = msg
        self._client = client
        self._failed: str | None = None

    @property
    def subject(self) -> str:
        return self._msg.subject

    @property
    def data(self) -> bytes:
        return self._msg.data

    @property
    def headers(self) -> Any:
        """The request's headers (the face's Headers mapping) or None."""
        return self._msg.headers

    @property
    def reply(self) -> str | None:
        return self._msg.reply

    @property
    def msg(self) -> Msg:
        return self._msg

    async def respond(self, data: Payload = b"", headers: HeadersArg = None) -> None:
        """Reply with ``data`` (and ``headers``).  ErrInvalidArg: the request has no reply subject."""
        reply = self._msg.reply
        if not reply:
            raise _invalid(f"The request on {self._msg.subject} has no reply subject to respond to")
        await self._client.publish(reply, data, headers=headers)

    async def respond_error(self, code: Union[str, int], description: str, data: Payload = b"",
                            headers: dict[str, str] | None = None) -> None:
        """Reply with an error: ``code`` and ``description`` in the service
        error headers (counted as an error of the endpoint)."""
        problem = _micro.error_code_of(code)
        if problem is not None:
            raise _invalid(problem)
        self._failed = f"{code}:{description}"
        await self.respond(data, headers=_micro.error_headers(str(code), description, headers))


#: an endpoint's handler: a coroutine function (or a plain function) of the Request
Handler = Callable[[Request], Union[Awaitable[None], None]]


# ---------------------------------------------------------------- what info() and stats() return
@dataclass(frozen=True)
class EndpointInfo:
    name: str
    subject: str
    queue_group: str
    metadata: dict[str, str] | None = None


@dataclass(frozen=True)
class EndpointStats:
    name: str
    subject: str
    queue_group: str
    num_requests: int
    num_errors: int
    last_error: str
    processing_time: int           # ns, all requests
    average_processing_time: int   # ns


@dataclass(frozen=True)
class ServiceInfo:
    """INFO of a service; :meth:`as_dict` is the ``$SRV.INFO`` reply."""

    name: str
    id: str
    version: str
    description: str | None
    metadata: dict[str, str]
    endpoints: list[EndpointInfo] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return _micro.info_payload(self.id, self.name, self.version, self.description,
                                   [_micro.endpoint_info(e.name, e.subject, e.queue_group, e.metadata)
                                    for e in self.endpoints], self.metadata)


@dataclass(frozen=True)
class ServiceStats:
    """STATS of a service (``started``: UTC); :meth:`as_dict` is the ``$SRV.STATS`` reply."""

    name: str
    id: str
    version: str
    metadata: dict[str, str]
    started: datetime.datetime
    endpoints: list[EndpointStats] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        eps = []
        for e in self.endpoints:
            st = _micro.EndpointStats()
            st.num_requests, st.num_errors, st.last_error = e.num_requests, e.num_errors, e.last_error
            st.processing_time, st.average_processing_time = e.processing_time, e.average_processing_time
            eps.append(_micro.endpoint_stats(e.name, e.subject, e.queue_group, st))
        return _micro.stats_payload(self.id, self.name, self.version, self.started, eps, self.metadata)


# ---------------------------------------------------------------- the service
class _Endpoint:
    """An endpoint's subscription and handler (its state: the engine's record)."""

    __slots__ = ("service", "record", "handler", "sub")

    def __init__(self, service: Service, record: _micro.Endpoint, handler: Handler) -> None:
        self.service = service
        self.record = record
        self.handler = handler
        self.sub: Subscription | None = None

    async def serve(self, msg: Msg) -> None:
        began = time.perf_counter_ns()
        record = self.record
        _micro.ServiceCore.begin(record)
        req = Request(self.service._client, msg)
        error: str | None = None
        try:
            r = self.handler(req)
            if inspect.isawaitable(r):
                await r
            error = req._failed
        except Exception as exc:  # counted; the requester gets an error reply
            code, text = (exc.code, exc.description) if isinstance(exc, ServiceError) else ("500", repr(exc))
            error = f"{code}:{text}"
            if msg.reply:
                await req.respond(b"", headers=_micro.error_headers(code, text))
        finally:
            # (counted also when the error reply cannot be sent: the connection closed)
            _micro.ServiceCore.end(record, time.perf_counter_ns() - began, error)


class Group:
    """A subject prefix (and default queue group) for endpoints; groups nest."""

    def __init__(self, service: Service, group: _micro.Group) -> None:
        self._service = service
        self._group = group

    @property
    def prefix(self) -> str:
        return self._group.prefix

    async def add_endpoint(self, name: str, handler: Handler, *, subject: str | None = None,
                           queue_group: str | None = None, metadata: dict[str, str] | None = None) -> None:
        """An endpoint whose subject is this group's prefix, a dot, and ``subject`` (default: ``name``)."""
        await self._service._add(name, handler, subject, queue_group, metadata, self._group)

    def add_group(self, name: str, queue_group: str | None = None) -> Group:
        svc = self._service
        svc._core.check_running()
        return Group(svc, svc._core.group(name, queue_group, self._group))


class Service:
    """A running service instance (:meth:`Client.add_service` starts one)."""

    def __init__(self, client: Client, core: _micro.ServiceCore) -> None:
        self._client = client
        self._core = core
        self._control: list[Subscription] = []
        self._endpoints: list[_Endpoint] = []
        self._stopped = asyncio.Event()

    @property
    def id(self) -> str:
        return self._core.id

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def version(self) -> str:
        return self._core.version

    @property
    def stopped(self) -> bool:
        return self._core.stopped

    async def _start(self) -> None:
        for verb, subject in self._core.control():
            self._control.append(await self._client.subscribe(subject, cb=self._answerer(verb)))
        self._core.start(_utcnow())
        await self._client.flush()

    def _answerer(self, verb: str) -> Callable[[Msg], Awaitable[None]]:
        async def answer(msg: Msg) -> None:
            if msg.reply:
                await self._client.publish(msg.reply, self._core.answer(verb))
        return answer

    async def add_endpoint(self, name: str, handler: Handler, *, subject: str | None = None,
                           queue_group: str | None = None, metadata: dict[str, str] | None = None) -> None:
        """An endpoint on ``subject`` (default: ``name``), in ``queue_group``
        (default: the service's, else ``q``), its requests to ``handler``;
        subscribed at the server when this returns."""
        await self._add(name, handler, subject, queue_group, metadata, None)

    async def _add(self, name: str, handler: Handler, subject: str | None, queue_group: str | None,
                   metadata: dict[str, str] | None, group: _micro.Group | None) -> None:
        core = self._core
        core.check_running()
        if not callable(handler):
            raise _invalid(f"Invalid handler {handler!r}: a function of the request expected")
        record = core.endpoint(name, subject, queue_group, metadata, group)
        ep = _Endpoint(self, record, handler)
        ep.sub = await self._client.subscribe(record.subject, queue=record.queue_group, cb=ep.serve)
        core.add(record)
        self._endpoints.append(ep)
        # the server has the subscription when add_endpoint returns
        await self._client.flush()

    def add_group(self, name: str, queue_group: str | None = None) -> Group:
        """A group: endpoints added to it get ``name.`` before their subject."""
        self._core.check_running()
        return Group(self, self._core.group(name, queue_group))

    def info(self) -> ServiceInfo:
        d = self._core.info()
        return ServiceInfo(name=d["name"], id=d["id"], version=d["version"], description=d["description"],
                           metadata=d["metadata"], endpoints=[EndpointInfo(**e) for e in d["endpoints"]])

    def stats(self) -> ServiceStats:
        d = self._core.stats()
        return ServiceStats(name=d["name"], id=d["id"], version=d["version"], metadata=d["metadata"],
                            started=self._core.started,
                            endpoints=[EndpointStats(**{k: v for k, v in e.items() if k != "data"})
                                       for e in d["endpoints"]])

    def reset(self) -> None:
        """Start the statistics over (counters to zero, ``started`` now)."""
        self._core.reset(_utcnow())

    async def stop(self) -> None:
        """Unsubscribe the endpoints and the control subjects (again: nothing)."""
        if self._stopped.is_set():
            return
        self._core.stop()
        endpoints, self._endpoints = self._endpoints, []
        control, self._control = self._control, []
        for ep in endpoints:
            if ep.sub is not None:
                await ep.sub.unsubscribe()
        for sub in control:
            await sub.unsubscribe()
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def __aenter__(self) -> Service:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


async def add_service(client: Client, name: str, version: str, description: str | None = None,
                      metadata: dict[str, str] | None = None, queue_group: str | None = None) -> Service:
    """Start a service on ``client`` (see the module's docstring); ErrInvalidArg for bad arguments."""
    core = _micro.ServiceCore(name, version, description, metadata, queue_group, error=_invalid)
    svc = Service(client, core)
    await svc._start()
    return svc
