"""The servers of nats-py's ``nats.aio.client``: the pool's entries as
nats-py shows them (:class:`Server`, :class:`Srv`, a live view of the
engine's pool) and :class:`ServerVersion`; ``nats.aio.client`` exports them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlparse, ParseResult

__all__ = ["Server", "Srv", "ServerVersion"]


@dataclass
class Server:
    """A server of the pool: its URL and how often the client reconnected to it."""

    uri: ParseResult
    reconnects: int = 0


@dataclass
class Srv:
    """A server of the pool, as nats-py's private ``Srv`` shows it."""

    uri: ParseResult
    reconnects: int = 0
    last_attempt: Optional[float] = None
    did_connect: bool = False
    discovered: bool = False
    tls_name: Optional[str] = None
    server_version: Optional[str] = None


class _SrvView:
    """A server of the engine's pool seen as nats-py's ``Srv`` (``reconnects``
    writes through to the pool)."""

    __slots__ = ("_s",)

    def __init__(self, server) -> None:
        self._s = server

    @property
    def uri(self) -> ParseResult:
        return _uri(self._s.as_dict())

    @property
    def reconnects(self) -> int:
        return self._s.reconnects

    @reconnects.setter
    def reconnects(self, n: int) -> None:
        self._s.reconnects = n

    @property
    def discovered(self) -> bool:
        return self._s.discovered

    @property
    def last_attempt(self) -> Optional[float]:
        return self._s.last_attempt / 1000.0 if self._s.last_attempt else None

    def __repr__(self) -> str:
        return f"<Srv {self.uri.geturl()} reconnects={self.reconnects}>"


_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


class ServerVersion:
    """A server's semantic version: ``major``, ``minor``, ``patch``,
    ``prerelease``, ``build`` and ``dev`` (prerelease+build); ValueError for
    a version that is not semver."""

    def __init__(self, server_version: str) -> None:
        self._server_version = server_version
        self._parts: Optional[tuple] = None

    def parse_version(self) -> None:
        m = _SEMVER.match(self._server_version)
        if m is None:
            raise ValueError(f"{self._server_version!r}: not a semantic version (major.minor.patch[-pre][+build])")
        pre, build = m.group(4) or "", m.group(5) or ""
        self._parts = (int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, build,
                       f"{pre}+{build}" if build else pre)

    def _part(self, i: int):
        if self._parts is None:
            self.parse_version()
        return self._parts[i]  # type: ignore[index]

    major = property(lambda self: self._part(0))
    minor = property(lambda self: self._part(1))
    patch = property(lambda self: self._part(2))
    prerelease = property(lambda self: self._part(3))
    build = property(lambda self: self._part(4))
    dev = property(lambda self: self._part(5))

    def __repr__(self) -> str:
        return f"<ServerVersion {self._server_version}>"


def _uri(server: dict) -> ParseResult:
    """A pool entry of the engine as nats-py's ParseResult."""
    user = server.get("user")
    auth = ""
    if user is not None:
        auth = f"{user}:{server.get('password') or ''}@" if server.get("password") is not None else f"{user}@"
    elif server.get("auth_token"):
        auth = f"{server['auth_token']}@"
    return urlparse(f"{server['scheme']}://{auth}{server['host']}:{server['port']}")


