"""NATS services ("micro", ADR-32), sans-IO: names, subjects, payloads, statistics.

A service instance answers three verbs on control subjects
(``$SRV.<VERB>``, ``$SRV.<VERB>.<name>``, ``$SRV.<VERB>.<name>.<id>``):
``PING`` (identity), ``INFO`` (identity, description, endpoints) and
``STATS`` (per-endpoint request and error counts, processing times).  Its
endpoints are queue subscriptions (queue group ``q`` unless configured);
an error reply carries the ``Nats-Service-Error`` and
``Nats-Service-Error-Code`` headers.

This module owns no socket and no clock: a face subscribes, times each
request (:meth:`EndpointStats.record` takes the elapsed nanoseconds) and
publishes the payloads built here.  The check functions return the text of
what is wrong (None when it is fine); each face raises its own error with it.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Iterable, List, Optional

__all__ = ["DEFAULT_PREFIX", "DEFAULT_QUEUE_GROUP", "PING_TYPE", "INFO_TYPE", "STATS_TYPE", "ERROR_HEADER",
           "ERROR_CODE_HEADER", "VERBS", "control_subject", "control_subjects", "check_service_name",
           "check_version", "check_endpoint_name", "check_endpoint_subject", "check_queue_group", "group_subject",
           "EndpointStats", "ping_payload", "info_payload", "stats_payload", "format_started", "parse_started",
           "error_headers"]

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
