"""Object Store (ADR-20) as operations and small states; no I/O.

A bucket ``B`` is the stream ``OBJ_B`` on ``$O.B.C.>`` (chunks) and
``$O.B.M.>`` (metas).  An object's bytes go in chunks (128 KiB by default)
to ``$O.B.C.<nuid>``; then its info, JSON, to ``$O.B.M.<base64url(name)>``
with ``Nats-Rollup: sub`` so only the latest info of a name is kept.  A new
version gets a new nuid, and the old chunks are purged afterwards.  The
digest is ``SHA-256=<base64url(sha256)>``.  Links are infos whose
``options.link`` names a bucket (and an object).

* :class:`Put`: cut the bytes fed to it into chunks, digest them, then
  give the meta message (the driver sends chunks as acked publishes, as
  many in flight as it likes, and the meta once every chunk is acked).
* :class:`Get`: check the chunks an ordered consumer on the chunk subject
  delivers (count, size, digest).
* operations (generators, see the package docstring): ``info``,
  ``delete``, ``add_link``, ``add_bucket_link``, ``update_meta``, ``seal``,
  ``create_bucket``, ``bind``, ``delete_bucket``, ``bucket_names``, and
  ``put``, ``get``, ``list_infos`` one request at a time (for drivers that
  run operations step by step; the asyncio face streams chunks instead).
* :class:`Watcher`: infos from an ordered consumer on the meta subjects,
  with End Of Initial Data like KV watchers.

ObjectInfo is a dict in the wire's JSON shape; ``mtime`` is not stored
(ADR-20) but filled in from the meta message's time when read.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
from typing import Any

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import JsApi, Request
from tclnats_py.engine.js.config import check_replicas
from tclnats_py.engine.js.kv import _not_found  # a missing bucket, the same for both kinds
from tclnats_py.engine.js.kv import InitialData, check_bucket, watch_policy  # one bucket-name rule
from tclnats_py.engine.js.events import InitDone, WatchInfo
from tclnats_py.engine.js.meta import parse_metadata
from tclnats_py.engine.js.publish import parse_ack

__all__ = ["DEFAULT_CHUNK_SIZE", "check_bucket", "check_name", "stream_name", "bucket_config", "encode_name",
           "meta_subject", "chunk_subject", "meta_filter", "Digest", "digest_of", "digest_bytes", "Put", "Get",
           "info_from_meta", "meta_payload", "info", "delete", "add_link", "add_bucket_link", "update_meta",
           "seal", "create_bucket", "bind", "delete_bucket", "bucket_names", "status", "Watcher",
           "purge_chunks", "ROLLUP_HEADERS", "link_of", "put", "get", "list_infos", "watch_options"]

DEFAULT_CHUNK_SIZE = 128 * 1024
ROLLUP_HEADERS = {"Nats-Rollup": ["sub"]}


def check_name(name) -> str:
    """Object names are free text (ADR-20), but not empty."""
    if not isinstance(name, str) or not name:
        raise make_error("ErrInvalidArg", f"Invalid object name {name!r}")
    return name


def stream_name(bucket: str) -> str:
    return f"OBJ_{bucket}"


def bucket_config(bucket: str, *, description=None, ttl_ns=None, max_bytes=None, storage: str = "file",
                  num_replicas: int = 1, compression: bool = False, metadata=None, placement=None) -> dict:
    """The stream config (wire units) of an object store bucket."""
    check_bucket(bucket)
    check_replicas(num_replicas)
    if storage not in ("memory", "file"):
        raise make_error("ErrInvalidArg", f"Invalid value for the enum storage : {storage}; allowed values: memory file")
    cfg = {"name": stream_name(bucket), "description": description,
           "subjects": [f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"], "max_age": ttl_ns, "max_bytes": max_bytes,
           "storage": storage, "num_replicas": num_replicas, "discard": "new", "allow_rollup_hdrs": True,
           "allow_direct": True, "compression": "s2" if compression else None,
           "metadata": dict(metadata) if metadata else None, "placement": placement}
    return {k: v for k, v in cfg.items() if v is not None}


def encode_name(name: str) -> str:
    """base64url with padding, as nats.go and nats.py encode object names."""
    return base64.urlsafe_b64encode(check_name(name).encode("utf-8")).decode()


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{encode_name(name)}"


def meta_filter(bucket: str) -> str:
    return f"$O.{bucket}.M.>"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


# ------------------------------------------------------------ digests
class Digest:
    """Running SHA-256 of an object's bytes."""

    def __init__(self):
        self._h = hashlib.sha256()

    def update(self, data: bytes) -> None:
        self._h.update(data)

    def value(self) -> str:
        return "SHA-256=" + base64.urlsafe_b64encode(self._h.digest()).decode()


def digest_of(data: bytes) -> str:
    d = Digest()
    d.update(data)
    return d.value()


def digest_bytes(digest: str) -> bytes:
    """The raw sha256 of a ``SHA-256=`` digest (either case, padded or not)."""
    if not digest or "=" not in digest:
        raise make_error("ErrBadObjectMeta", f"Invalid digest {digest!r}")
    algo, _, b64 = digest.partition("=")
    if algo.upper() != "SHA-256":
        raise make_error("ErrBadObjectMeta", f"Unsupported digest {algo}")
    try:
        raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
    except (binascii.Error, ValueError):
        raise make_error("ErrBadObjectMeta", f"Invalid digest {digest!r}") from None
    if len(raw) != 32:
        raise make_error("ErrBadObjectMeta", f"Invalid digest {digest!r}")
    return raw


# ------------------------------------------------------------ infos
def _rfc3339(dt: datetime.datetime) -> str:
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def meta_payload(info: dict) -> bytes:
    """The JSON stored on the meta subject: the info without ``mtime``."""
    return json.dumps({k: v for k, v in info.items() if k != "mtime"}, separators=(",", ":")).encode()


def info_from_meta(data: bytes, mtime: str | None = None) -> dict:
    """An ObjectInfo from a meta message; ErrBadObjectMeta if it is not one."""
    try:
        meta = json.loads(data)
    except ValueError:
        raise make_error("ErrBadObjectMeta", "Invalid object meta data") from None
    if not isinstance(meta, dict) or not meta.get("name"):
        raise make_error("ErrBadObjectMeta", "Invalid object meta data")
    if mtime:
        meta["mtime"] = mtime
    return meta


def link_of(info: dict) -> dict | None:
    return (info.get("options") or {}).get("link") or None


def _new_info(bucket: str, name: str, *, nuid: str = "", size: int = 0, chunks: int = 0, digest: str = "",
              description=None, headers=None, metadata=None, chunk_size: int | None = None, link=None,
              deleted: bool = False) -> dict:
    info: dict[str, Any] = {"name": name}
    if description:
        info["description"] = description
    if headers:
        info["headers"] = {k: (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in headers.items()}
    if metadata:
        info["metadata"] = dict(metadata)
    opts: dict[str, Any] = {}
    if link is not None:
        opts["link"] = link
    elif chunk_size:
        opts["max_chunk_size"] = chunk_size
    if opts:
        info["options"] = opts
    info.update({"bucket": bucket, "nuid": nuid, "size": size, "chunks": chunks})
    if digest:
        info["digest"] = digest
    if deleted:
        info["deleted"] = True
    return info


# ------------------------------------------------------------ put / get
class Put:
    """Storing one object: bytes in, chunks and then the meta message out.

    ``feed(data)`` returns the full chunks ready to publish (bytes) to
    :attr:`chunk_subject`; ``finish()`` returns the last partial chunk (if
    any) — after which :meth:`meta_step` is the meta publish (a Request:
    its PubAck must be checked with :func:`~.publish.parse_ack`) and
    :attr:`info` the ObjectInfo to hand back (``mtime`` is now).  If
    anything fails the driver purges :attr:`chunk_subject`
    (:func:`purge_chunks`); after success it purges the chunks of the
    previous version (:attr:`old_nuid`, from :meth:`previous`).
    """

    def __init__(self, bucket: str, name: str, nuid: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 description=None, headers=None, metadata=None):
        check_bucket(bucket)
        check_name(name)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0:
            raise make_error("ErrInvalidArg", f"Invalid chunk size {chunk_size}")
        self.bucket = bucket
        self.name = name
        self.nuid = nuid
        self.chunk_size = chunk_size
        self.description = description
        self.headers = headers
        self.metadata = metadata
        self.chunk_subject = chunk_subject(bucket, nuid)
        self.size = 0
        self.chunks = 0
        self.old_nuid: str | None = None
        self._digest = Digest()
        self._buf = bytearray()
        self._finished = False
        self.info: dict | None = None

    def previous(self, old_info: dict | None) -> None:
        """The info of the name's current version (or None): its chunks are
        purged once the new version is in."""
        if old_info and old_info.get("nuid") and not old_info.get("deleted") and old_info["nuid"] != self.nuid:
            self.old_nuid = old_info["nuid"]

    def _take(self, n: int) -> bytes:
        chunk = bytes(self._buf[:n])
        del self._buf[:n]
        self._digest.update(chunk)
        self.size += len(chunk)
        self.chunks += 1
        return chunk

    def feed(self, data) -> list:
        if self._finished:
            raise make_error("ErrInvalidArg", "Object already finished")
        if isinstance(data, str):
            data = data.encode()
        self._buf += data
        out = []
        while len(self._buf) >= self.chunk_size:
            out.append(self._take(self.chunk_size))
        return out

    def finish(self) -> list:
        if self._finished:
            return []
        self._finished = True
        out = [self._take(len(self._buf))] if self._buf else []
        self.info = _new_info(self.bucket, self.name, nuid=self.nuid, size=self.size, chunks=self.chunks,
                              digest=self._digest.value(), description=self.description, headers=self.headers,
                              metadata=self.metadata, chunk_size=self.chunk_size)
        self.info["mtime"] = _rfc3339(datetime.datetime.now(datetime.timezone.utc))
        return out

    def meta_step(self) -> Request:
        if self.info is None:
            raise make_error("ErrInvalidArg", "finish() the object first")
        return Request(meta_subject(self.bucket, self.name), meta_payload(self.info), ROLLUP_HEADERS)


class Get:
    """Reading one object's chunks (from an ordered consumer filtered on
    the object's chunk subject): :meth:`on_chunk` per message, returning the
    bytes; :attr:`done` once ``chunks`` have come; :meth:`check` at the end
    raises ErrDigestMismatch (or ErrBadObjectMeta for a wrong size)."""

    def __init__(self, info: dict):
        if info.get("deleted"):
            raise make_error("ErrObjectNotFound", f"Object {info.get('name')} not found")
        if link_of(info):
            raise make_error("ErrInvalidArg", "Resolve links before reading an object")
        self.info = info
        self.expected_chunks = int(info.get("chunks") or 0)
        self.expected_size = int(info.get("size") or 0)
        self.chunks = 0
        self.size = 0
        self._digest = Digest()
        if self.expected_chunks == 0 and self.expected_size:
            raise make_error("ErrBadObjectMeta", f"Object {info.get('name')} has no chunks")

    @property
    def filter_subject(self) -> str:
        return chunk_subject(self.info["bucket"], self.info["nuid"])

    @property
    def done(self) -> bool:
        return self.chunks >= self.expected_chunks

    def on_chunk(self, msg) -> bytes:
        data = msg.data
        self.chunks += 1
        self.size += len(data)
        self._digest.update(data)
        return data

    def check(self) -> None:
        if self.size != self.expected_size:
            raise make_error("ErrBadObjectMeta", f"Object {self.info.get('name')}: {self.size} bytes, "
                                                 f"expected {self.expected_size}")
        want = self.info.get("digest")
        if want and digest_bytes(want) != digest_bytes(self._digest.value()):
            raise make_error("ErrDigestMismatch", f"Digest of object {self.info.get('name')} does not match")


# ------------------------------------------------------------ operations
def info(api: JsApi, bucket: str, name: str, show_deleted: bool = False, direct: bool = True):
    """Operation: the ObjectInfo of ``name`` (``mtime`` from the message);
    ErrObjectNotFound when missing (or deleted, unless ``show_deleted``)."""
    check_bucket(bucket)
    subject = meta_subject(bucket, name)
    try:
        if direct:
            msg = yield from api.direct_get(stream_name(bucket), last_by_subj=subject)
        else:
            msg = yield from api.msg_get(stream_name(bucket), last_by_subj=subject)
    except NatsError as e:
        if e.code == "ErrMsgNotFound":
            raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {bucket}") from None
        raise _not_found(e, bucket) from None
    obj = info_from_meta(msg.data, msg.time)
    if obj.get("deleted") and not show_deleted:
        raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {bucket}")
    return obj


def purge_chunks(api: JsApi, bucket: str, nuid: str):
    """Operation: drop the chunks of one object version."""
    return (yield from api.stream_purge(stream_name(bucket), filter=chunk_subject(bucket, nuid)))


def _publish_meta(bucket: str, obj: dict):
    reply = yield Request(meta_subject(bucket, obj["name"]), meta_payload(obj), ROLLUP_HEADERS)
    parse_ack(reply)
    obj["mtime"] = _rfc3339(datetime.datetime.now(datetime.timezone.utc))
    return obj


def delete(api: JsApi, bucket: str, name: str, direct: bool = True):
    """Operation: mark ``name`` deleted (a deleted info, rolled up) and purge
    its chunks; ErrObjectNotFound if it does not exist (no-op if deleted)."""
    obj = yield from info(api, bucket, name, show_deleted=True, direct=direct)
    if obj.get("deleted"):
        return obj
    gone = _new_info(bucket, name, nuid=obj.get("nuid", ""), deleted=True, description=obj.get("description"),
                     headers=obj.get("headers"), metadata=obj.get("metadata"))
    gone = yield from _publish_meta(bucket, gone)
    if obj.get("nuid") and not link_of(obj):
        yield from purge_chunks(api, bucket, obj["nuid"])
    return gone


def put(api: JsApi, bucket: str, name: str, data: bytes, nuid: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
        description=None, headers=None, metadata=None, direct: bool = True):
    """Operation: store ``data`` as ``name`` (chunks one acked publish at a
    time, then the meta); the ObjectInfo.  The chunks of the version it
    replaces are purged after; its own are purged if anything fails."""
    writer = Put(bucket, name, nuid, chunk_size=chunk_size, description=description, headers=headers,
                 metadata=metadata)
    try:
        old = yield from info(api, bucket, name, show_deleted=True, direct=direct)
    except NatsError as e:
        if e.code != "ErrObjectNotFound":
            raise
        old = None
    writer.previous(old)
    try:
        for chunk in writer.feed(data) + writer.finish():
            parse_ack((yield Request(writer.chunk_subject, chunk)))
        parse_ack((yield writer.meta_step()))
    except NatsError:
        yield from purge_chunks(api, bucket, nuid)
        raise
    if writer.old_nuid:
        yield from purge_chunks(api, bucket, writer.old_nuid)
    return writer.info


def _stored_after(api: JsApi, bucket: str, seq: int, subject: str):
    """Operation: the first message on ``subject`` from ``seq`` on, or None."""
    try:
        return (yield from api.msg_get(stream_name(bucket), seq=seq, next_by_subj=subject))
    except NatsError as e:
        if e.code == "ErrMsgNotFound":
            return None
        raise _not_found(e, bucket) from None


def get(api: JsApi, bucket: str, name: str, direct: bool = True):
    """Operation: the bytes of ``name``, a link to an object followed (in
    any bucket), the digest checked; chunks read one STREAM.MSG.GET at a
    time.  ErrObjectNotFound, ErrDigestMismatch, ErrInvalidArg for a link
    to a whole bucket."""
    obj = yield from info(api, bucket, name, direct=direct)
    link = link_of(obj)
    if link:
        if not link.get("name"):
            raise make_error("ErrInvalidArg", f"{name} links to a whole bucket")
        obj = yield from info(api, link["bucket"], link["name"], direct=direct)
        if link_of(obj):
            raise make_error("ErrInvalidArg", "Cannot follow a link to a link")
    reader = Get(obj)
    data = bytearray()
    seq = 1
    while not reader.done:
        msg = yield from _stored_after(api, obj["bucket"], seq, reader.filter_subject)
        if msg is None:
            raise make_error("ErrBadObjectMeta", f"Object {name}: {reader.chunks} chunks of "
                                                 f"{reader.expected_chunks}")
        data += reader.on_chunk(msg)
        seq = msg.seq + 1
    reader.check()
    return bytes(data)


def list_infos(api: JsApi, bucket: str, show_deleted: bool = False):
    """Operation: the ObjectInfo of every object in stream order (the meta
    subjects keep only their latest message: they are rolled up)."""
    check_bucket(bucket)
    out: list[dict] = []
    seq = 1
    while True:
        msg = yield from _stored_after(api, bucket, seq, meta_filter(bucket))
        if msg is None:
            return out
        seq = msg.seq + 1
        try:
            obj = info_from_meta(msg.data, msg.time)
        except NatsError:
            continue  # not an info: skip it
        if show_deleted or not obj.get("deleted"):
            out.append(obj)


def _check_link_name(api, bucket, name, direct):
    """A link may replace a link or a deleted object, not a live object."""
    try:
        cur = yield from info(api, bucket, name, show_deleted=True, direct=direct)
    except NatsError as e:
        if e.code != "ErrObjectNotFound":
            raise
        return
    if not cur.get("deleted") and not link_of(cur):
        raise make_error("ErrInvalidArg", f"An object named {name} already exists")


def add_link(api: JsApi, bucket: str, name: str, target: dict, direct: bool = True):
    """Operation: a link ``name`` to the object ``target`` (an ObjectInfo of
    this or another bucket)."""
    check_name(name)
    if not isinstance(target, dict) or not target.get("name") or not target.get("bucket"):
        raise make_error("ErrInvalidArg", "A link needs an object info")
    if target.get("deleted"):
        raise make_error("ErrInvalidArg", "Cannot link to a deleted object")
    if link_of(target):
        raise make_error("ErrInvalidArg", "Cannot link to a link")
    yield from _check_link_name(api, bucket, name, direct)
    obj = _new_info(bucket, name, nuid="", link={"bucket": target["bucket"], "name": target["name"]})
    return (yield from _publish_meta(bucket, obj))


def add_bucket_link(api: JsApi, bucket: str, name: str, target_bucket: str, direct: bool = True):
    """Operation: a link ``name`` to the whole bucket ``target_bucket``."""
    check_name(name)
    check_bucket(target_bucket)
    yield from _check_link_name(api, bucket, name, direct)
    obj = _new_info(bucket, name, nuid="", link={"bucket": target_bucket})
    return (yield from _publish_meta(bucket, obj))


def update_meta(api: JsApi, bucket: str, name: str, *, new_name: str | None = None, description=None,
                headers=None, metadata=None, direct: bool = True):
    """Operation: change an object's name, description, headers, metadata
    (ADR-20: not of a deleted object; not onto a live object's name)."""
    check_name(name)
    if new_name is not None:
        check_name(new_name)
    obj = yield from info(api, bucket, name, direct=direct)
    target = new_name or name
    if target != name:
        try:
            other = yield from info(api, bucket, target, show_deleted=True, direct=direct)
        except NatsError as e:
            if e.code != "ErrObjectNotFound":
                raise
        else:
            if not other.get("deleted"):
                raise make_error("ErrInvalidArg", f"An object named {target} already exists")
    new = dict(obj)
    new.pop("mtime", None)
    new["name"] = target
    for k, v in (("description", description), ("headers", headers), ("metadata", metadata)):
        if v is not None:
            new[k] = v
    new = yield from _publish_meta(bucket, new)
    if target != name:
        # the old name's info goes away (purged, like nats.go)
        yield from api.stream_purge(stream_name(bucket), filter=meta_subject(bucket, name))
    return new


def seal(api: JsApi, bucket: str):
    """Operation: seal the bucket (no more changes); returns the stream info."""
    check_bucket(bucket)
    try:
        cur = yield from api.stream_info(stream_name(bucket))
    except NatsError as e:
        raise _not_found(e, bucket) from None
    cfg = dict(cur.get("config") or {})
    cfg["sealed"] = True
    return (yield from api.stream_update(cfg))


def create_bucket(api: JsApi, bucket: str, **options):
    """Operation: create the bucket's stream; its stream info."""
    return (yield from api.stream_create(bucket_config(bucket, **options)))


def bind(api: JsApi, bucket: str):
    """Operation: the stream info of an existing bucket (ErrBucketNotFound)."""
    check_bucket(bucket)
    try:
        return (yield from api.stream_info(stream_name(bucket)))
    except NatsError as e:
        raise _not_found(e, bucket) from None


def delete_bucket(api: JsApi, bucket: str):
    check_bucket(bucket)
    try:
        return (yield from api.stream_delete(stream_name(bucket)))
    except NatsError as e:
        raise _not_found(e, bucket) from None


def bucket_names(api: JsApi):
    return [n[4:] for n in (yield from api.stream_names()) if n.startswith("OBJ_")]


def status(bucket: str, stream_info: dict) -> dict:
    """ADR-20 ObjectStoreStatus from a stream info (ttl in ns)."""
    config = stream_info.get("config") or {}
    state = stream_info.get("state") or {}
    return {"bucket": bucket, "description": config.get("description", ""), "ttl": config.get("max_age", 0),
            "storage": config.get("storage", "file"), "replicas": config.get("num_replicas", 1),
            "sealed": bool(config.get("sealed")), "size": state.get("bytes", 0), "backing_store": "JetStream",
            "is_compressed": config.get("compression", "none") not in ("none", None),
            "metadata": config.get("metadata") or {}, "stream_info": stream_info}


def watch_options(bucket: str, *, include_history: bool = False, updates_only: bool = False) -> dict:
    """Keyword arguments of the ordered consumer behind a watcher."""
    return {"filter_subject": meta_filter(bucket), "deliver_policy": watch_policy(include_history, updates_only),
            "description": "object store watcher"}


class Watcher(InitialData):
    """Object infos from an ordered consumer on :func:`meta_filter`;
    events ``WatchInfo(ObjectInfo)`` and once ``InitDone()``."""

    EVENTS = (WatchInfo, InitDone)

    def __init__(self, *, ignore_deletes: bool = False, updates_only: bool = False):
        super().__init__(ignore_deletes, updates_only)

    def on_msg(self, msg, meta: dict | None = None) -> list:
        meta = meta or parse_metadata(msg.reply, msg.subject)
        try:
            obj = info_from_meta(msg.data)
        except NatsError:
            obj = None  # not an info: skip it, but count it
        if obj is not None:
            ts = meta["timestamp"]
            obj["mtime"] = _rfc3339(datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc))
        return self._events(WatchInfo, obj, bool(obj and obj.get("deleted")), meta["num_pending"])
