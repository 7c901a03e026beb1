"""NATS services ("micro", ADR-32), sans-IO: names, subjects, payloads, statistics.

A service instance answers three verbs on control subjects
(``$SRV.<VERB>``, ``$SRV.<VERB>.<name>``, ``$SRV.<VERB>.<name>.<id>``):
``PING`` (identity), ``INFO`` (identity, description, endpoints) and
``STATS`` (per-endpoint request and error counts, processing times).  Its
endpoints are queue subscriptions (queue group ``q`` unless configured);
an error reply carries the ``Nats-Service-Error`` and
``Nats-Service-Error-Code`` headers.

This module owns no socket and no clock: a face subscribes, times each
request (:meth:`EndpointStats.finished` takes the elapsed nanoseconds) and
publishes the payloads built here.  The check functions return the text of
what is wrong (None when it is fine); each face raises its own error with it.

:class:`ServiceCore` is one service instance's state, which every face
(natspy's ``nats.micro``, the asyncio face's ``aio/micro.py``, the Tcl face's
``nats::service``) drives: its identity and checked configuration, the
control subjects to subscribe to, the endpoints (subject and queue group
resolved through groups) with their counters, the answers to PING, INFO and
STATS, reset and stop.  A face subscribes and unsubscribes, runs the
handlers, takes the time and publishes.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional

from tclnats_py.engine.nuid import next_token

__all__ = ["DEFAULT_PREFIX", "DEFAULT_QUEUE_GROUP", "PING_TYPE", "INFO_TYPE", "STATS_TYPE", "ERROR_HEADER",
           "ERROR_CODE_HEADER", "VERBS", "control_subject", "control_subjects", "check_service_name",
           "check_version", "check_endpoint_name", "check_endpoint_subject", "check_queue_group", "group_subject",
           "EndpointStats", "ping_payload", "info_payload", "stats_payload", "format_started", "parse_started",
           "error_headers", "check_metadata", "check_group_name", "Endpoint", "Group", "ServiceCore",
           "error_code_of"]

DEFAULT_PREFIX = "$SRV"
DEFAULT_QUEUE_GROUP = "q"
PING_TYPE = "io.nats.micro.v1.ping_response"
INFO_TYPE = "io.nats.micro.v1.info_response"
STATS_TYPE = "io.nats.micro.v1.stats_response"
ERROR_HEADER = "Nats-Service-Error"
ERROR_CODE_HEADER = "Nats-Service-Error-Code"
VERBS = ("PING", "INFO", "STATS")

# semantic versioning 2.0.0 (the regular expression semver.org suggests)
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")
_NAME = re.compile(r"^[A-Za-z0-9\-_]+$")
_SUBJECT = re.compile(r"^[^ >]*[>]?$")  # no spaces; ">" only at the end


# ---------------------------------------------------------------- subjects
def control_subject(verb: str, name: Optional[str] = None, id: Optional[str] = None,
                    prefix: str = DEFAULT_PREFIX) -> str:
    """``$SRV.VERB``, ``$SRV.VERB.name`` or ``$SRV.VERB.name.id``."""
    if name is None and id is None:
        return f"{prefix}.{verb}"
    if id is None:
        return f"{prefix}.{verb}.{name}"
    return f"{prefix}.{verb}.{name}.{id}"


def control_subjects(name: str, id: str, prefix: str = DEFAULT_PREFIX) -> List[tuple]:
    """Every (verb, key, subject) a service instance subscribes to: all
    services, all of its name, itself."""
    out = []
    for verb in VERBS:
        out.append((verb, f"{verb}-all", control_subject(verb, None, None, prefix)))
        out.append((verb, f"{verb}-kind", control_subject(verb, name, None, prefix)))
        out.append((verb, verb, control_subject(verb, name, id, prefix)))
    return out


def group_subject(prefix: str, subject: str) -> str:
    """An endpoint's subject inside a group (empty group names add nothing)."""
    return f"{prefix.strip('.')}.{subject}".strip(".")


# ---------------------------------------------------------------- checks (text of the problem, or None)
def check_service_name(name: Any) -> Optional[str]:
    if not name:
        return "Name cannot be empty."
    if not isinstance(name, str) or not _NAME.match(name):
        return "Invalid name. It must contain only alphanumeric characters, dashes, and underscores."
    return None


def check_version(version: Any) -> Optional[str]:
    if not version:
        return "Version cannot be empty."
    if not isinstance(version, str) or not _SEMVER.match(version):
        return "Invalid version. It must follow semantic versioning (e.g., 1.0.0, 2.1.3-alpha.1)."
    return None


def check_endpoint_name(name: Any) -> Optional[str]:
    if not name:
        return "Name cannot be empty."
    if not isinstance(name, str) or not _NAME.match(name):
        return "Invalid name. Name must contain only alphanumeric characters, underscores, and hyphens."
    return None


def check_endpoint_subject(subject: Any) -> Optional[str]:
    if subject and (not isinstance(subject, str) or not _SUBJECT.match(subject)):
        return "Invalid subject. Subject must not contain spaces, and can only have '>' at the end."
    return None


def check_queue_group(queue_group: Any, what: str = "Queue group must not contain spaces.") -> Optional[str]:
    if queue_group and (not isinstance(queue_group, str) or not _SUBJECT.match(queue_group)):
        return f"Invalid queue group. {what}"
    return None


# ---------------------------------------------------------------- statistics
class EndpointStats:
    """The counters of one endpoint (the face measures the time)."""

    __slots__ = ("num_requests", "num_errors", "processing_time", "average_processing_time", "last_error")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.num_requests = 0
        self.num_errors = 0
        self.processing_time = 0           # ns, all requests
        self.average_processing_time = 0   # ns
        self.last_error: Optional[str] = None

    def started(self) -> None:
        """A request arrived (counted before its handler runs)."""
        self.num_requests += 1

    def failed(self, error: str) -> None:
        """Its handler failed (``error``: what to show as last_error)."""
        self.num_errors += 1
        self.last_error = error

    def finished(self, elapsed_ns: int) -> None:
        """Its handler returned after ``elapsed_ns``."""
        self.processing_time += int(elapsed_ns)
        self.average_processing_time = int(self.processing_time / self.num_requests) if self.num_requests else 0


# ---------------------------------------------------------------- payloads
def format_started(t: datetime.datetime) -> str:
    """The ``started`` time of STATS: UTC, milliseconds, ``Z``."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_started(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def ping_payload(id: str, name: str, version: str, metadata: Optional[Dict[str, str]]) -> Dict[str, Any]:
    return {"type": PING_TYPE, "id": id, "name": name, "version": version, "metadata": metadata or {}}


def endpoint_info(name: str, subject: str, queue_group: str, metadata: Optional[Dict[str, str]]) -> Dict[str, Any]:
    return {"name": name, "subject": subject, "queue_group": queue_group, "metadata": metadata}


def info_payload(id: str, name: str, version: str, description: Optional[str],
                 endpoints: Iterable[Dict[str, Any]], metadata: Optional[Dict[str, str]]) -> Dict[str, Any]:
    return {"type": INFO_TYPE, "id": id, "name": name, "version": version, "description": description,
            "endpoints": list(endpoints), "metadata": metadata or {}}


def endpoint_stats(name: str, subject: str, queue_group: str, st: EndpointStats, data: Any = None) -> Dict[str, Any]:
    return {"name": name, "subject": subject, "queue_group": queue_group, "num_requests": st.num_requests,
            "num_errors": st.num_errors, "last_error": st.last_error or "", "processing_time": st.processing_time,
            "average_processing_time": st.average_processing_time, "data": data}


def stats_payload(id: str, name: str, version: str, started: datetime.datetime,
                  endpoints: Iterable[Dict[str, Any]], metadata: Optional[Dict[str, str]]) -> Dict[str, Any]:
    return {"type": STATS_TYPE, "name": name, "id": id, "version": version, "started": format_started(started),
            "endpoints": list(endpoints), "metadata": metadata or {}}


def error_headers(code: str, description: str, headers: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The headers of an error reply (the caller's, then the two service error headers)."""
    out = dict(headers or {})
    out[ERROR_HEADER] = description
    out[ERROR_CODE_HEADER] = code
    return out


def check_metadata(metadata: Any) -> Optional[str]:
    """Metadata is a mapping of strings to strings (or nothing)."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        return "Invalid metadata. It must map strings to strings."
    return None


def check_group_name(name: Any) -> Optional[str]:
    """A group's name is a subject prefix: not empty, no spaces, no ``>``."""
    if not name or not isinstance(name, str):
        return "Group name cannot be empty."
    if not _SUBJECT.match(name) or ">" in name:
        return "Invalid group name. It must not contain spaces or '>'."
    return None


def error_code_of(code: Any) -> Optional[str]:
    """The text of what is wrong with an error reply's code (None: fine): a
    code is a number (the HTTP-like status of ADR-32's examples) or a word,
    one header value (no line break)."""
    if code is None or str(code) == "":
        return "Error code cannot be empty."
    if any(c in str(code) for c in "\r\n"):
        return "Invalid error code. It must be one line."
    return None


# ---------------------------------------------------------------- one service instance
class Endpoint:
    """An endpoint of a service: its resolved subject and queue group, its
    metadata, its counters; ``handle`` is the face's (its subscription)."""

    __slots__ = ("name", "subject", "queue_group", "metadata", "stats", "handle")

    def __init__(self, name: str, subject: str, queue_group: str, metadata: Optional[Dict[str, str]]) -> None:
        self.name = name
        self.subject = subject
        self.queue_group = queue_group
        self.metadata = metadata
        self.stats = EndpointStats()
        self.handle: Any = None

    def info(self) -> Dict[str, Any]:
        return endpoint_info(self.name, self.subject, self.queue_group, self.metadata)

    def stats_dict(self, data: Any = None) -> Dict[str, Any]:
        return endpoint_stats(self.name, self.subject, self.queue_group, self.stats, data)


class Group(NamedTuple):
    """A subject prefix for endpoints (and their default queue group)."""

    prefix: str
    queue_group: Optional[str]


class ServiceCore:
    """One service instance, sans-IO (see the module's docstring).

    ``error`` makes the exception a failed check raises from its text (a
    face's error class: ValueError for nats-py's API, ErrInvalidArg for ours).
    ``now`` values are the face's UTC clock (naive datetimes, as nats-py's
    ``started``)."""

    def __init__(self, name: Any, version: Any, description: Optional[str] = None,
                 metadata: Optional[Dict[str, str]] = None, queue_group: Optional[str] = None, *,
                 error: Callable[[str], Exception] = ValueError, id: Optional[str] = None,
                 prefix: str = DEFAULT_PREFIX) -> None:
        self.error = error
        self._check(check_service_name(name))
        self._check(check_version(version))
        self._check(check_metadata(metadata))
        self._check(check_queue_group(queue_group,
                                      "It must contain only alphanumeric characters, dashes, and underscores."))
        self.name: str = name
        self.version: str = version
        self.description = description
        self.metadata: Dict[str, str] = metadata or {}
        self.queue_group = queue_group or None
        self.id = id or next_token()
        self.prefix = prefix
        self.endpoints: List[Endpoint] = []
        self.started = datetime.datetime(1970, 1, 1)
        self.stopped = False

    def _check(self, problem: Optional[str]) -> None:
        if problem is not None:
            raise self.error(problem)

    # ------------------------------------------------------------ life
    def control(self) -> List[tuple]:
        """(verb, subject) of each control subscription to make."""
        return [(verb, subject) for verb, _key, subject in control_subjects(self.name, self.id, self.prefix)]

    def start(self, now: datetime.datetime) -> None:
        self.started = now

    def check_running(self) -> None:
        """A stopped service takes no more endpoints or groups."""
        if self.stopped:
            raise self.error(f"The service {self.name} ({self.id}) is stopped.")

    def stop(self) -> List[Endpoint]:
        """Mark it stopped; the endpoints whose subscriptions the face ends."""
        self.stopped = True
        gone, self.endpoints = self.endpoints, []
        return gone

    def reset(self, now: datetime.datetime) -> None:
        """Start the statistics over."""
        for ep in self.endpoints:
            ep.stats.reset()
        self.started = now

    # ------------------------------------------------------------ endpoints and groups
    def group(self, name: Any, queue_group: Optional[str] = None, parent: Optional[Group] = None,
              check: bool = True) -> Group:
        """A group under ``parent`` (or the service): its name appended to the
        prefix, its queue group the given one, else the parent's, else the
        service's.  (``check=False``: nats-py's API checks no group name.)"""
        if check:
            self._check(check_group_name(name))
            self._check(check_queue_group(queue_group))
        if parent is None:
            return Group(str(name), queue_group or self.queue_group)
        return Group(f"{parent.prefix}.{name}", queue_group or parent.queue_group)

    def endpoint(self, name: Any, subject: Optional[str] = None, queue_group: Optional[str] = None,
                 metadata: Optional[Dict[str, str]] = None, group: Optional[Group] = None) -> Endpoint:
        """A checked endpoint, subject and queue group resolved (not added yet:
        :meth:`add` once the face subscribed it)."""
        self._check(check_endpoint_name(name))
        self._check(check_endpoint_subject(subject))
        self._check(check_queue_group(queue_group))
        self._check(check_metadata(metadata))
        subject = subject or name
        if group is not None:
            subject = group_subject(group.prefix, subject)
            queue_group = queue_group or group.queue_group
        return Endpoint(name, subject, queue_group or self.queue_group or DEFAULT_QUEUE_GROUP, metadata)

    def add(self, ep: Endpoint) -> Endpoint:
        self.endpoints.append(ep)
        return ep

    # ------------------------------------------------------------ answers
    def ping(self) -> Dict[str, Any]:
        return ping_payload(self.id, self.name, self.version, self.metadata)

    def info(self) -> Dict[str, Any]:
        return info_payload(self.id, self.name, self.version, self.description,
                            [ep.info() for ep in self.endpoints], self.metadata)

    def stats(self, data_of: Optional[Callable[[Endpoint], Any]] = None) -> Dict[str, Any]:
        return stats_payload(self.id, self.name, self.version, self.started,
                             [ep.stats_dict(data_of(ep) if data_of else None) for ep in self.endpoints],
                             self.metadata)

    def answer(self, verb: str, data_of: Optional[Callable[[Endpoint], Any]] = None) -> bytes:
        """The JSON reply to a control request of ``verb`` (nats-py's json.dumps form)."""
        if verb == "PING":
            out = self.ping()
        elif verb == "INFO":
            out = self.info()
        elif verb == "STATS":
            out = self.stats(data_of)
        else:
            raise self.error(f"Unknown service verb {verb!r}; one of {', '.join(VERBS)}")
        return json.dumps(out).encode()

    # ------------------------------------------------------------ requests
    @staticmethod
    def begin(ep: Endpoint) -> None:
        """A request arrived at ``ep`` (counted before its handler runs)."""
        ep.stats.started()

    @staticmethod
    def end(ep: Endpoint, elapsed_ns: int, error: Optional[str] = None) -> None:
        """Its handler returned after ``elapsed_ns`` (``error``: it failed with that)."""
        if error is not None:
            ep.stats.failed(error)
        ep.stats.finished(elapsed_ns)
