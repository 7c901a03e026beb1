"""``nats.js.manager`` of nats-py 2.x: :class:`JetStreamManager`, the
management calls (streams, consumers, messages, account) over the engine's
JetStream operations (``tclnats_py.engine.js.api``), stepped by the asyncio
face's JetStream (``tclnats_py.aio.jetstream.JetStream.run``).

This layer converts: nats-py's argument names and ``nats.js.api`` dataclasses
in (their ``as_dict()`` is the request body), dataclasses out
(``from_response``), the engine's errors to ``nats.js.errors`` classes.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js import api as _eng
from tclnats_py.engine.js import consumer_admin as _admin
from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors as _core
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as _jserr

if TYPE_CHECKING:
    from tclnats_py.aio.jetstream import JetStream as _ImplJS

__all__ = ["JetStreamManager"]


def translate(exc: BaseException) -> BaseException:
    """An engine error as the nats-py class (JetStream classes first, then the core ones)."""
    out = _jserr.translate(exc)
    if out is exc:
        out = _core.translate(exc)
    return out


def name_required(what: str) -> ValueError:
    """The ValueError for a missing stream (or consumer) name."""
    return ValueError(f"nats: {what} name is required")


def check_names(**names: Any) -> None:
    """nats-py's ValueError for each name given (``stream=``, ``consumer=``)
    that is missing or not filename-safe (ADR-6, the engine's rule).  The
    texts start as nats-py's do ("nats: stream name is required", "nats:
    invalid stream name"...), which programs and nats-py's tests match."""
    for what, name in names.items():
        if not name:
            raise name_required(what)
        if not _eng.filename_safe(name):
            raise ValueError(f"nats: invalid {what} name {name!r} (ADR-6: no dots, wildcards, slashes, "
                             f"whitespace or quotes)")


NATS_HDR_LINE_SIZE = len(b"NATS/1.0")  # a header block's first line

# the pause a resumed consumer gets: until a time long past
_PAUSE_ENDED = "1970-01-01T00:00:00Z"


def _ms(timeout: float | None) -> int | None:
    return None if timeout is None else max(1, int(timeout * 1000))


def _headers_last(h: Any) -> dict[str, str] | None:
    """The engine's headers (key -> list) as nats-py shows them: key -> the last value, None when empty."""
    if not h:
        return None
    out = {}
    for k, v in dict.items(h):
        out[k] = (v[-1] if v else "") if isinstance(v, list) else v
    return out or None


def _utc(text: str) -> datetime.datetime | None:
    return api.parse_time(text) if text else None


class JetStreamManager:
    """Management of streams and consumers: ``nc.jsm()`` (and every
    ``nc.jetstream()``, which extends it)."""

    def __init__(self, conn: Any, prefix: str = api.DEFAULT_PREFIX, timeout: float = 5,
                 domain: str | None = None) -> None:
        if domain is not None:
            prefix = _eng.api_prefix(domain)
        self._prefix = prefix
        self._nc = conn
        self._timeout = timeout
        self._impl_js: "_ImplJS" | None = None

    # ------------------------------------------------------------ driving the engine
    @property
    def _js(self) -> "_ImplJS":
        """The asyncio face's JetStream on the connection (made when first needed: after connect)."""
        impl = self._impl_js
        if impl is None or impl.client is not self._nc._impl:
            from tclnats_py.aio.jetstream import JetStream
            impl = self._impl_js = JetStream(self._nc._impl, api_prefix=self._prefix, timeout=self._timeout)
        return impl

    async def _run(self, op: Any) -> Any:
        """Run an engine operation; its errors as nats-py's."""
        try:
            return await self._js.run(op)
        except NatsError as e:
            raise translate(e) from e

    async def _api(self, tail: str, body: Any = None, timeout: float | None = None,
                   check_subject: bool = True) -> dict[str, Any]:
        """One API call by subject tail (``STREAM.INFO.S``); the checked JSON reply."""
        return await self._run(self._js.jsapi.call(tail, body, _ms(timeout), check_subject))

    # ------------------------------------------------------------ account
    def _jsapi(self, timeout: float | None):
        """The engine's API operations, with a per-call ``timeout`` (s) if given."""
        return self._js.jsapi.with_timeout(_ms(timeout))

    async def account_info(self, *, timeout: float | None = None) -> api.AccountInfo:
        """The account's JetStream usage and limits (``timeout``: this call's, in s)."""
        return api.AccountInfo.from_response(await self._run(self._jsapi(timeout).account_info()))

    async def find_stream_name_by_subject(self, subject: str, *, timeout: float | None = None) -> str:
        """The first stream with a subject matching ``subject``; NotFoundError."""
        names = await self._run(self._jsapi(timeout).stream_names(subject or None))  # "": any stream
        if not names:
            raise _jserr.NotFoundError()
        return names[0]

    # ------------------------------------------------------------ streams
    async def stream_info(self, name: str, subjects_filter: str | None = None) -> api.StreamInfo:
        check_names(stream=name)
        return api.StreamInfo.from_response(await self._run(self._js.jsapi.stream_info(name, subjects_filter or None)))

    def _stream_config(self, config: api.StreamConfig | None, params: dict[str, Any]) -> api.StreamConfig:
        if config is None:
            config = api.StreamConfig()
        config = config.evolve(**params)
        check_names(stream=config.name)
        return config

    async def add_stream(self, config: api.StreamConfig | None = None, **params: Any) -> api.StreamInfo:
        config = self._stream_config(config, params)
        return api.StreamInfo.from_response(await self._run(self._js.jsapi.stream_create(config.as_dict())))

    async def update_stream(self, config: api.StreamConfig | None = None, **params: Any) -> api.StreamInfo:
        config = self._stream_config(config, params)
        return api.StreamInfo.from_response(await self._run(self._js.jsapi.stream_update(config.as_dict())))

    async def delete_stream(self, name: str, *, timeout: float | None = None) -> bool:
        check_names(stream=name)
        return await self._run(self._jsapi(timeout).stream_delete(name))

    async def purge_stream(self, name: str, seq: int | None = None, subject: str | None = None,
                           keep: int | None = None) -> bool:
        check_names(stream=name)
        body = {k: v for k, v in (("seq", seq), ("filter", subject), ("keep", keep)) if v}
        return bool((await self._api(f"STREAM.PURGE.{name}", body)).get("success"))

    async def streams_info(self, offset: int = 0) -> list[api.StreamInfo]:
        """One page of StreamInfos (the server's page size), from ``offset``."""
        resp = await self._api("STREAM.LIST", {"offset": offset})
        return [api.StreamInfo.from_response(s) for s in resp.get("streams") or []]

    async def streams_info_iterator(self, offset: int = 0) -> api.StreamsListIterator:
        resp = await self._api("STREAM.LIST", {"offset": offset})
        return api.StreamsListIterator(resp.get("offset", offset), resp.get("total", 0), resp.get("streams") or [])

    # ------------------------------------------------------------ consumers
    async def consumer_info(self, stream: str, consumer: str, timeout: float | None = None) -> api.ConsumerInfo:
        check_names(stream=stream, consumer=consumer)
        return api.ConsumerInfo.from_response(await self._api(f"CONSUMER.INFO.{stream}.{consumer}", None, timeout))

    async def add_consumer(self, stream: str, config: api.ConsumerConfig | None = None,
                           timeout: float | None = None, **params: Any) -> api.ConsumerInfo:
        check_names(stream=stream)
        if config is None:
            config = api.ConsumerConfig()
        config = config.evolve(**params)
        for given in (config.name, config.durable_name):
            if given:
                check_names(consumer=given)
        body = {"stream_name": stream, "config": config.as_dict()}
        reply = await self._api(self._create_tail(stream, config), body, timeout or self._timeout)
        return api.ConsumerInfo.from_response(reply)

    def _create_tail(self, stream: str, config: api.ConsumerConfig) -> str:
        """The API subject tail that creates ``config``'s consumer, as nats-py
        picks it: a named consumer (server 2.9+) by name, with its one filter
        subject appended when that has no wildcard; else a durable by the older
        DURABLE.CREATE; else an ephemeral one."""
        srv = self._nc.connected_server_version
        return _eng.natspy_consumer_create_tail(stream, config.name, config.durable_name, config.filter_subject,
                                                (srv.major, srv.minor))

    async def delete_consumer(self, stream: str, consumer: str, *, timeout: float | None = None) -> bool:
        check_names(stream=stream, consumer=consumer)
        return await self._run(self._jsapi(timeout).consumer_delete(stream, consumer))

    async def pause_consumer(self, stream: str, consumer: str, pause_until: str,
                             timeout: float | None = None) -> api.ConsumerPause:
        """Pause deliveries until ``pause_until`` (RFC 3339; server 2.11+:
        tclnats_py.ErrServerTooOld before, nothing sent)."""
        check_names(stream=stream, consumer=consumer)
        op = _admin.pause_consumer(self._jsapi(timeout), stream, consumer, api.format_time(pause_until))
        return api.ConsumerPause.from_response(await self._run(op))

    async def resume_consumer(self, stream: str, consumer: str, timeout: float | None = None) -> api.ConsumerPause:
        """Resume a paused consumer now (a pause until a time long past)."""
        return await self.pause_consumer(stream, consumer, _PAUSE_ENDED, timeout)

    async def reset_consumer(self, stream: str, consumer: str, seq: int | None = None,
                             timeout: float | None = None) -> api.ConsumerReset:
        """Clear the consumer's pending and redelivered state; delivery goes on
        above its ack floor, or at stream sequence ``seq`` (ADR-60; server
        2.14+: tclnats_py.ErrServerTooOld before).  ConsumerInvalidResetError
        when its deliver policy does not allow that ``seq``."""
        check_names(stream=stream, consumer=consumer)
        resp = await self._run(_admin.reset_consumer(self._jsapi(timeout), stream, consumer, seq or None))
        return api.ConsumerReset.from_response(resp)

    async def consumers_info(self, stream: str, offset: int | None = None) -> list[api.ConsumerInfo]:
        check_names(stream=stream)
        resp = await self._api(f"CONSUMER.LIST.{stream}", None if offset is None else {"offset": offset})
        return [api.ConsumerInfo.from_response(c) for c in resp.get("consumers") or []]

    # ------------------------------------------------------------ messages
    async def get_msg(self, stream_name: str, seq: int | None = None, subject: str | None = None,
                      direct: bool | None = False, next: bool | None = False) -> api.RawStreamMsg:
        """A message by sequence, the last on ``subject``, or (``next``) the
        first on ``subject`` from ``seq``; ``direct``: by DIRECT.GET."""
        body: dict[str, Any] = {}
        if next:
            body = {"seq": seq, "next_by_subj": subject}
        elif subject:
            body = {"last_by_subj": subject}
        elif seq:
            body = {"seq": seq}
        return await self._stored_msg(stream_name, body, bool(direct))

    async def _stored_msg(self, stream_name: str, body: dict[str, Any], direct: bool) -> api.RawStreamMsg:
        """The message ``body`` selects (the MSG.GET / DIRECT.GET request body)."""
        check_names(stream=stream_name)
        if direct:
            return await self._direct_get(stream_name, body)
        resp = await self._api(f"STREAM.MSG.GET.{stream_name}", body)
        m = resp.get("message") or {}
        raw = api.RawStreamMsg.from_response(m)
        stored = _eng.stored_from_get(resp, stream_name)
        raw.headers = _headers_last(stored.headers)
        raw.data = stored.data or None
        return raw

    async def _direct_get(self, stream: str, body: dict[str, Any]) -> api.RawStreamMsg:
        jsapi = self._js.jsapi
        if set(body) == {"last_by_subj"}:
            req = jsapi.direct_get_request(stream, last_by_subj=body["last_by_subj"])
        else:
            req = jsapi.request(f"DIRECT.GET.{stream}", body)
        try:
            reply = await self._nc._impl.request(req.subject, req.payload, timeout=self._timeout)
        except NatsError as e:
            raise translate(e) from e  # NoRespondersError: nothing serves direct gets there
        if reply.status == 404:
            raise _jserr.NotFoundError()
        if reply.status:
            raise _jserr.APIError(code=reply.status, description=reply.description)
        h = _headers_last(reply.headers) or {}
        seq = h.get("Nats-Sequence")
        return api.RawStreamMsg(subject=h.get("Nats-Subject"), seq=int(seq) if seq else None, data=reply.data,
                                headers=h, stream=h.get("Nats-Stream"), time=_utc(h.get("Nats-Time-Stamp", "")))

    async def delete_msg(self, stream_name: str, seq: int, *, timeout: float | None = None) -> bool:
        check_names(stream=stream_name)
        reply = await self._api(f"STREAM.MSG.DELETE.{stream_name}", {"seq": seq}, timeout)
        return bool(reply.get("success"))

    async def get_last_msg(self, stream_name: str, subject: str, direct: bool | None = False) -> api.RawStreamMsg:
        return await self._stored_msg(stream_name, {"last_by_subj": subject} if subject else {}, bool(direct))
