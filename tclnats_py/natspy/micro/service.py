"""``nats.micro.service`` of nats-py 2.x: :class:`Service`, its endpoints and
groups, and the PING / INFO / STATS payload classes.

Checks, subjects, payloads and counters come from ``tclnats_py.engine.micro``;
this module subscribes with the natspy client, times each request and
converts between the payload dicts and nats-py's dataclasses.  (No
``__all__``: like nats-py's module, ``import *`` gives every public name,
``json`` included, which nats-py's own tests rely on.)
"""

from __future__ import annotations

import json
import time
from asyncio import Event
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, AsyncContextManager, Callable, Protocol

from tclnats_py.engine import micro as _micro
from tclnats_py.natspy.aio.msg import Msg
from tclnats_py.natspy.aio.subscription import Subscription
from tclnats_py.natspy.micro.request import Handler, Request, ServiceError

DEFAULT_QUEUE_GROUP = _micro.DEFAULT_QUEUE_GROUP
DEFAULT_PREFIX = _micro.DEFAULT_PREFIX
INFO_RESPONSE_TYPE = _micro.INFO_TYPE
PING_RESPONSE_TYPE = _micro.PING_TYPE
STATS_RESPONSE_TYPE = _micro.STATS_TYPE


def _check(problem: str | None) -> None:
    if problem is not None:
        raise ValueError(problem)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class ServiceVerb(str, Enum):
    PING = "PING"
    STATS = "STATS"
    INFO = "INFO"


def control_subject(verb: ServiceVerb, name: str | None = None, id: str | None = None,
                    prefix: str = DEFAULT_PREFIX) -> str:
    """The control subject of ``verb`` for every service, those named ``name``, or the instance ``id``."""
    return _micro.control_subject(ServiceVerb(verb).value, name, id, prefix)


# ---------------------------------------------------------------- configurations
@dataclass
class EndpointConfig:
    """An endpoint: ``name``, ``handler``, ``subject`` (default: the name), ``queue_group``, ``metadata``."""

    name: str
    handler: Handler
    queue_group: str | None = None
    subject: str | None = None
    metadata: dict[str, str] | None = None

    def __post_init__(self) -> None:
        _check(_micro.check_endpoint_name(self.name))
        _check(_micro.check_endpoint_subject(self.subject))
        _check(_micro.check_queue_group(self.queue_group))


@dataclass
class GroupConfig:
    name: str
    queue_group: str | None = None


StatsHandler = Callable[["EndpointStats"], Any]


@dataclass
class ServiceConfig:
    """A service: ``name``, semantic ``version``, ``description``, ``metadata``,
    default ``queue_group``, ``stats_handler`` (extra data of each endpoint's STATS)."""

    name: str
    version: str
    description: str | None = None
    metadata: dict[str, str] | None = None
    queue_group: str | None = None
    stats_handler: StatsHandler | None = None

    def __post_init__(self) -> None:
        _check(_micro.check_service_name(self.name))
        _check(_micro.check_version(self.version))
        _check(_micro.check_queue_group(
            self.queue_group, "It must contain only alphanumeric characters, dashes, and underscores."))


# ---------------------------------------------------------------- payload classes
@dataclass
class EndpointStats:
    name: str
    subject: str
    queue_group: str
    num_requests: int
    num_errors: int
    processing_time: int
    average_processing_time: int
    last_error: str | None = None
    data: Any | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EndpointStats":
        return cls(name=data["name"], subject=data["subject"], queue_group=data["queue_group"],
                   num_requests=data["num_requests"], num_errors=data["num_errors"],
                   processing_time=data["processing_time"], average_processing_time=data["average_processing_time"],
                   last_error=data["last_error"], data=data["data"])

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "queue_group": self.queue_group,
                "num_requests": self.num_requests, "num_errors": self.num_errors,
                "last_error": self.last_error or "", "processing_time": self.processing_time,
                "average_processing_time": self.average_processing_time, "data": self.data}


@dataclass
class EndpointInfo:
    name: str
    subject: str
    queue_group: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EndpointInfo":
        return cls(name=data["name"], subject=data["subject"], queue_group=data["queue_group"],
                   metadata=data["metadata"])

    def to_dict(self) -> dict[str, Any]:
        return _micro.endpoint_info(self.name, self.subject, self.queue_group, self.metadata)


class ServiceIdentity(Protocol):
    """What names a service instance (ServicePing and ServiceStats have it)."""

    id: str
    name: str
    version: str
    metadata: dict[str, str]


@dataclass
class ServicePing(ServiceIdentity):
    id: str
    name: str
    version: str
    metadata: dict[str, str] = field(default_factory=dict)
    type: str = PING_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ServicePing":
        return cls(id=data["id"], name=data["name"], version=data["version"], metadata=data.get("metadata", {}))

    def to_dict(self) -> dict[str, Any]:
        return _micro.ping_payload(self.id, self.name, self.version, self.metadata)


@dataclass
class ServiceStats(ServiceIdentity):
    id: str
    name: str
    version: str
    started: datetime
    endpoints: list[EndpointStats] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    type: str = STATS_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ServiceStats":
        return cls(id=data["id"], name=data["name"], version=data["version"],
                   started=_micro.parse_started(data["started"]),
                   endpoints=[EndpointStats.from_dict(e) for e in data["endpoints"]], metadata=data["metadata"])

    def to_dict(self) -> dict[str, Any]:
        return _micro.stats_payload(self.id, self.name, self.version, self.started,
                                    [e.to_dict() for e in self.endpoints], self.metadata)


@dataclass
class ServiceInfo:
    name: str
    id: str
    version: str
    description: str | None = None
    endpoints: list[EndpointInfo] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    type: str = INFO_RESPONSE_TYPE

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ServiceInfo":
        return cls(id=data["id"], name=data["name"], version=data["version"], description=data.get("description"),
                   endpoints=[EndpointInfo.from_dict(e) for e in data["endpoints"]], metadata=data["metadata"],
                   type=data.get("type", INFO_RESPONSE_TYPE))

    def to_dict(self) -> dict[str, Any]:
        out = _micro.info_payload(self.id, self.name, self.version, self.description,
                                  [e.to_dict() for e in self.endpoints], self.metadata)
        out["type"] = self.type
        return out


# ---------------------------------------------------------------- endpoints, groups, the service
def _config_of(cls: type, config: Any, overrides: dict[str, Any]) -> Any:
    """``config`` with ``overrides`` applied, or a new ``cls`` of them alone
    (``add_endpoint``/``add_group`` take either or both)."""
    return cls(**overrides) if config is None else dataclasses.replace(config, **overrides)


class Endpoint:
    """One endpoint: the engine's record (subject and queue group resolved,
    counters) and the queue subscription whose requests go to the handler."""

    def __init__(self, service: Service, record: _micro.Endpoint, handler: Handler) -> None:
        self._service = service
        self._record = record
        self._handler = handler
        self._sub: Subscription | None = None

    @property
    def _name(self) -> str:
        return self._record.name

    @property
    def _subject(self) -> str:
        return self._record.subject

    @property
    def _queue_group(self) -> str:
        return self._record.queue_group

    async def _start(self) -> None:
        self._sub = await self._service._client.subscribe(self._subject, queue=self._queue_group, cb=self._serve)

    async def _stop(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            await sub.unsubscribe()

    async def _serve(self, msg: Msg) -> None:
        """One request: run the handler; when it raises, count the error and
        answer with it (a ServiceError's code and text, else 500)."""
        began = time.perf_counter_ns()
        record = self._record
        _micro.ServiceCore.begin(record)
        req = Request(msg)
        try:
            await self._handler(req)
        except Exception as exc:  # counted, and the requester gets an error reply
            # (counted first: answering fails too when the request has no reply subject)
            record.stats.failed(repr(exc))
            code, text = (exc.code, exc.description) if isinstance(exc, ServiceError) else ("500", repr(exc))
            await req.respond_error(code, text)
        _micro.ServiceCore.end(record, time.perf_counter_ns() - began)

    def _info(self) -> EndpointInfo:
        r = self._record
        return EndpointInfo(name=r.name, subject=r.subject, queue_group=r.queue_group,
                            metadata=r.metadata)  # type: ignore[arg-type]

    def _stats_of(self, handler: StatsHandler | None) -> EndpointStats:
        r = self._record
        c = r.stats
        out = EndpointStats(name=r.name, subject=r.subject, queue_group=r.queue_group,
                            num_requests=c.num_requests, num_errors=c.num_errors,
                            processing_time=c.processing_time, average_processing_time=c.average_processing_time,
                            last_error=c.last_error)
        if handler is not None:
            out.data = handler(out)
        return out


class EndpointManager(Protocol):
    """What endpoints are added to (a Group)."""

    async def add_endpoint(self, config: EndpointConfig | None = None, **kwargs: Any) -> None:
        """Add an endpoint: an EndpointConfig or its fields as keywords."""


class GroupManager(Protocol):
    """What groups are added to (a Group)."""

    def add_group(self, config: GroupConfig | None = None, **kwargs: Any) -> Group:
        """Add a group: a GroupConfig or its fields as keywords."""


class Group(GroupManager, EndpointManager):
    """Endpoints under a common subject prefix (and default queue group)."""

    def __init__(self, service: Service, group: _micro.Group) -> None:
        self._service = service
        self._group = group

    async def add_endpoint(self, config: EndpointConfig | None = None, **kwargs: Any) -> None:
        await self._service._open_endpoint(_config_of(EndpointConfig, config, kwargs), self._group)

    def add_group(self, config: GroupConfig | None = None, **kwargs: Any) -> Group:
        sub = _config_of(GroupConfig, config, kwargs)
        core = self._service._core
        return Group(self._service, core.group(sub.name, sub.queue_group, self._group, check=False))


class Service(AsyncContextManager):
    """A running service instance (``add_service`` starts one); its state is
    the engine's :class:`~tclnats_py.engine.micro.ServiceCore`."""

    def __init__(self, client: Any, config: ServiceConfig) -> None:
        self._config = config
        self._core = _micro.ServiceCore(config.name, config.version, config.description, config.metadata,
                                        config.queue_group, prefix=DEFAULT_PREFIX)
        self._core.start(_utcnow())
        self._client = client
        self._control: dict[str, Subscription] = {}   # control subject -> its subscription
        self._verbs: dict[str, str] = {}              # control subject -> PING / INFO / STATS
        self._endpoints: list[Endpoint] = []
        self._stopped = Event()

    @property
    def id(self) -> str:
        return self._core.id

    @property
    def _metadata(self) -> dict[str, str]:
        return self._core.metadata

    async def start(self) -> None:
        """Subscribe to the control subjects (PING, INFO, STATS: all, by name, by id)."""
        if self._control:
            return
        for verb, subject in self._core.control():
            self._verbs[subject] = verb
            self._control[subject] = await self._client.subscribe(subject, cb=self._answer_control)
        self._core.start(_utcnow())
        await self._client.flush()

    async def add_endpoint(self, config: EndpointConfig | None = None, **kwargs: Any) -> None:
        await self._open_endpoint(_config_of(EndpointConfig, config, kwargs))

    async def _open_endpoint(self, config: EndpointConfig, group: _micro.Group | None = None) -> None:
        """Start an endpoint (subject and queue group resolved by the engine)."""
        record = self._core.endpoint(config.name, config.subject, config.queue_group, config.metadata, group)
        ep = Endpoint(self, record, config.handler)
        await ep._start()
        self._core.add(record)
        self._endpoints.append(ep)

    def add_group(self, config: GroupConfig | None = None, **kwargs: Any) -> Group:
        grp = _config_of(GroupConfig, config, kwargs)
        return Group(self, self._core.group(grp.name, grp.queue_group, check=False))

    def stats(self) -> ServiceStats:
        core = self._core
        return ServiceStats(id=core.id, name=core.name, version=core.version, metadata=core.metadata,
                            endpoints=[e._stats_of(self._config.stats_handler) for e in self._endpoints],
                            started=core.started)

    def info(self) -> ServiceInfo:
        core = self._core
        return ServiceInfo(id=core.id, name=core.name, version=core.version, metadata=core.metadata,
                           description=core.description, endpoints=[e._info() for e in self._endpoints])

    async def reset(self) -> None:
        """Start the statistics over."""
        self._core.reset(_utcnow())

    async def stop(self) -> None:
        """Unsubscribe the endpoints and drain the control subscriptions."""
        if self._stopped.is_set():
            return
        for e in self._endpoints:
            await e._stop()
        for sub in self._control.values():
            await sub.drain()
        self._core.stop()
        self._endpoints = []
        self._control = {}
        self._stopped.set()

    @property
    def stopped(self) -> Event:
        return self._stopped

    async def __aenter__(self) -> Service:
        await self.start()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.stop()

    def _control_payload(self, verb: str) -> dict[str, Any]:
        """The answer to a PING, INFO or STATS request (nats-py's classes'
        ``to_dict``, which a subclass may change; PING is the engine's)."""
        if verb == "PING":
            return self._core.ping()
        return (self.info() if verb == "INFO" else self.stats()).to_dict()

    async def _answer_control(self, msg: Msg) -> None:
        """The callback of every control subscription: the subject tells the verb."""
        await msg.respond(json.dumps(self._control_payload(self._verbs[msg.subject])).encode())
