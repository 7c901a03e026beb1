"""Key-Value buckets (ADR-8) as operations and a watcher state; no I/O.

A bucket ``B`` is the stream ``KV_B`` on ``$KV.B.>``, one subject per key,
``max_msgs_per_subject`` = history, deletes as ``KV-Operation: DEL``
messages and purges as ``KV-Operation: PURGE`` with ``Nats-Rollup: sub``.
:class:`Bucket` is a bound bucket: where its keys are read and written
(ADR-19: through another domain or account's API prefix, or a mirror's
origin, as nats-tcl's ``key_value`` works it out) and the operations on
it (generators, see the package docstring).  :class:`Watcher` turns the
messages of an ordered consumer into entries and the End Of Initial Data
signal.

Units: entry ``created`` is ms since the epoch (nats-tcl's); configs and
:func:`status` keep the wire's ns (:func:`status_to_ms` for Tcl).
"""

from __future__ import annotations

import re
from typing import Any

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import JsApi, check_name, iso_to_ms, ns2ms, stored_from_direct
from tclnats_py.engine.js.config import STREAM_DURATIONS, check_replicas, make_stream_source, make_subject_transform
from tclnats_py.engine.js.meta import parse_metadata
from tclnats_py.engine.js.events import INIT_DONE, InitDone, WatchEntry
from tclnats_py.engine.js.api import Request
from tclnats_py.engine.js.direct import DirectBatch
from tclnats_py.engine.js.publish import MSG_TTL, parse_ack_fast, publish_headers
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.headers import parse_headers
from tclnats_py.engine.protocol import RecordMaker, compiled
from tclnats_py.engine.records import Msg
from tclnats_py.engine.subjects import valid_wildcard_subject

#: subjects in one multi-last direct get of :meth:`Bucket.get_many_batches`
MULTI_LAST_MAX = 1000

__all__ = [
    "KV_OPERATION", "PUT", "DEL", "PURGE", "check_bucket", "check_key", "check_key_pattern", "stream_name",
    "operation_of", "bucket_config", "make_origin", "origin_to_source", "origin_to_mirror", "Entry", "Bucket",
    "bind", "create_bucket", "delete_bucket", "bucket_names", "empty_bucket", "status", "status_to_ms",
    "Watcher", "kv_operation", "is_not_found", "mirror_bucket", "watch_policy", "marker_reason", "MARKER_REASON",
]

KV_OPERATION = "KV-Operation"
MARKER_REASON = "Nats-Marker-Reason"
PUT, DEL, PURGE = "PUT", "DEL", "PURGE"

_BUCKET = re.compile(r"[a-zA-Z0-9_-]+")  # used with fullmatch (``$`` would let "\n" end it)
_KEY = re.compile(r"[-/_=.a-zA-Z0-9]+")
BUCKET_RE = _BUCKET  # a bucket name's characters (use with fullmatch)
KEY_RE = _KEY  # a key's characters (use with fullmatch)
_DUP_WINDOW_MS = 120_000
_NS_MS = 1_000_000


def check_bucket(bucket) -> str:
    if not isinstance(bucket, str) or not _BUCKET.fullmatch(bucket):
        raise make_error("ErrInvalidArg", f"Invalid bucket name {bucket}")
    return bucket


# keys check_key passed lately (exact str): the next gets and puts of a key skip the pattern
_GOOD_KEYS: set = set()


def check_key(key) -> str:
    """A key: a str of letters, digits and ``- / _ = .``, not starting or
    ending with a dot, no empty token (``a..b``), not starting with ``_kv``
    (nats-tcl's CheckKeyName, plus the empty token the server would refuse)."""
    if key.__class__ is str and key in _GOOD_KEYS:
        return key
    if not isinstance(key, str):
        raise make_error("ErrInvalidArg", f"Invalid key name {key!r}: a str expected")
    k = key
    if k.startswith(".") or k.endswith(".") or k.startswith("_kv") or not _KEY.fullmatch(k) or ".." in k:
        raise make_error("ErrInvalidArg", f"Invalid key name {key}")
    if k.__class__ is str:
        if len(_GOOD_KEYS) >= 4096:
            _GOOD_KEYS.clear()
        _GOOD_KEYS.add(k)
    return k


def check_key_pattern(pattern) -> str:
    """A key or a wildcard pattern of keys (``*`` and ``>`` as whole tokens)."""
    if not isinstance(pattern, str):
        raise make_error("ErrInvalidArg", f"Invalid key name {pattern!r}: a str expected")
    p = pattern
    if p in (">", "*"):
        return p
    toks = p.split(".")
    if not all(t in ("*", ">") or (t and _KEY.fullmatch(t)) for t in toks) or (">" in toks[:-1]):
        raise make_error("ErrInvalidArg", f"Invalid key name {pattern}")
    return p


def stream_name(bucket: str) -> str:
    return f"KV_{bucket}"


def key_prefix(bucket: str) -> str:
    """``$KV.<bucket>.``: the subject of a key is this and the key (ADR-8)."""
    return f"$KV.{bucket}."


def mirror_bucket(mirror_stream: str) -> str:
    """The bucket a KV mirror copies, from its mirror's stream name: the
    ``KV_`` prefix is dropped when it is there, the name kept whole when it
    is not (nats.go's TrimPrefix; nats-tcl drops three characters always,
    which differs only for a mirror of a stream that is not a bucket)."""
    return mirror_stream[3:] if mirror_stream.startswith("KV_") else mirror_stream


def operation_of(headers) -> str:
    """PUT, DEL or PURGE; limit markers (ADR-48) count as PURGE/DEL."""
    if headers:
        if isinstance(headers, dict):  # the stored lists, also of a Headers
            op = dict.get(headers, KV_OPERATION)
            reason = None if op else dict.get(headers, MARKER_REASON)
        else:
            op = headers.get(KV_OPERATION)
            reason = None if op else headers.get(MARKER_REASON)
        if op:
            return op[0]
        if reason:
            return DEL if reason[0] == "Remove" else PURGE
    return PUT


kv_operation = operation_of


def marker_reason(headers) -> str | None:
    """Why the server placed a marker (ADR-43/48 ``Nats-Marker-Reason``:
    MaxAge, Purge, Remove), None for a message of a client."""
    if headers:
        reason = headers.get(MARKER_REASON) if not isinstance(headers, dict) else dict.get(headers, MARKER_REASON)
        if reason:
            return reason[0]
    return None


def is_not_found(err: NatsError) -> bool:
    return err.code in ("ErrMsgNotFound", "ErrKeyNotFound")


# ------------------------------------------------------------ configuration
def make_origin(bucket: str, stream: str | None = None, keys=None, domain: str | None = None,
                api: str | None = None, deliver: str | None = None) -> dict:
    """nats::make_kv_origin: where an aggregate or mirror takes its data."""
    check_bucket(bucket)
    if stream is not None:
        check_name("stream", stream)
    if domain is not None:
        if api is not None:
            raise make_error("ErrInvalidArg", "-domain and -api are mutually exclusive")
        api = f"$JS.{domain}.API"
    origin: dict[str, Any] = {"bucket": bucket}
    for k, v in (("stream", stream), ("keys", keys), ("api", api), ("deliver", deliver)):
        if v is not None:
            origin[k] = list(v) if k == "keys" and not isinstance(v, str) else v
    if isinstance(origin.get("keys"), str):
        origin["keys"] = origin["keys"].split()
    return origin


def _origin_external(origin: dict) -> dict:
    return {"api": origin.get("api"), "deliver": origin.get("deliver") if origin.get("api") else None}


def origin_to_source(origin: dict, new_bucket: str) -> dict:
    """One source of an aggregate: the origin's keys moved from
    ``$KV.<origin>.`` to ``$KV.<new_bucket>.`` by subject transforms."""
    bucket = origin["bucket"]
    keys = origin.get("keys") or [">"]
    transforms = [make_subject_transform(f"$KV.{bucket}.{k}", f"$KV.{new_bucket}.{k}") for k in keys]
    return make_stream_source(origin.get("stream") or stream_name(bucket), subject_transforms=transforms,
                              **_origin_external(origin))


def origin_to_mirror(origin: dict) -> dict:
    """The mirror of a KV mirror: the origin's stream, maybe filtered by keys."""
    bucket = origin["bucket"]
    transforms = None
    if origin.get("keys"):
        transforms = [make_subject_transform(f"$KV.{bucket}.{k}", f"$KV.{bucket}.{k}") for k in origin["keys"]]
    return make_stream_source(origin.get("stream") or stream_name(bucket), subject_transforms=transforms,
                              **_origin_external(origin))


def bucket_config(bucket: str, *, history: int = 1, ttl_ms: int | None = None, max_value_size: int | None = None,
                  max_bucket_size: int | None = None, storage: str = "file", num_replicas: int = 1,
                  description: str | None = None, compression: str | None = None, metadata=None,
                  mirror_name: str | None = None, mirror_domain: str | None = None, origins=None,
                  writable: bool = True, mirror_origin: dict | None = None, republish: dict | None = None,
                  placement: dict | None = None, limit_marker_ttl_ms: int | None = None) -> dict:
    """The stream config (wire units) of a bucket (nats-tcl's CreateBucket).

    ``origins`` makes an aggregate (sources with subject transforms;
    read-only without ingest subjects unless ``writable``);
    ``mirror_origin`` makes a KV mirror (a stream named ``bucket`` that must
    not start with ``KV_``, so nobody binds to it); ``mirror_name`` /
    ``mirror_domain`` are the deprecated mirrors of ADR-8 v1.0.
    ``limit_marker_ttl_ms`` (ADR-48, 1000 or more) turns on per-key TTLs
    and the markers the server leaves, for that long, where a key expired.
    """
    check_bucket(bucket)
    for name, v in (("history", history), ("ttl", ttl_ms), ("max_bucket_size", max_bucket_size),
                    ("max_value_size", max_value_size), ("num_replicas", num_replicas),
                    ("limit_marker_ttl", limit_marker_ttl_ms)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0) and not (
                v == -1 and name in ("max_bucket_size", "max_value_size")):  # -1: unlimited (the server's spelling)
            raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option {name} : {v}")
    if limit_marker_ttl_ms is not None and limit_marker_ttl_ms < 1000:
        raise make_error("ErrInvalidArg", f"Invalid limit_marker_ttl {limit_marker_ttl_ms}: 1 second or more")
    if history < 1 or history > 64:
        raise make_error("ErrInvalidArg", "History must be between 1 and 64")
    if num_replicas is not None:
        check_replicas(num_replicas)
    if storage not in ("memory", "file"):
        raise make_error("ErrInvalidArg", f"Invalid value for the enum storage : {storage}; allowed values: memory file")
    if compression is not None and compression not in ("none", "s2"):
        raise make_error("ErrInvalidArg", f"Invalid value for the enum compression : {compression}; "
                                          f"allowed values: none s2")
    dup = _DUP_WINDOW_MS if not ttl_ms or ttl_ms >= _DUP_WINDOW_MS else ttl_ms
    cfg: dict[str, Any] = {"name": stream_name(bucket), "description": description, "subjects": [f"$KV.{bucket}.>"],
           "retention": "limits", "max_msgs_per_subject": history, "max_bytes": max_bucket_size,
           "max_age": ttl_ms * _NS_MS if ttl_ms else None, "max_msg_size": max_value_size, "storage": storage,
           "num_replicas": num_replicas, "duplicate_window": dup * _NS_MS, "discard": "new", "deny_delete": True,
           "deny_purge": False, "allow_rollup_hdrs": True, "allow_direct": True, "compression": compression,
           "metadata": dict(metadata) if metadata else None, "republish": republish, "placement": placement}
    if limit_marker_ttl_ms:
        cfg["allow_msg_ttl"] = True
        cfg["subject_delete_marker_ttl"] = limit_marker_ttl_ms * _NS_MS
    if mirror_name is not None:
        cfg["mirror"] = make_stream_source(stream_name(mirror_name), domain=mirror_domain)
        cfg["mirror_direct"] = True
        cfg.pop("subjects")
    if mirror_origin is not None:
        if bucket.startswith("KV_"):
            raise make_error("ErrInvalidArg", "Mirror name must not be KV")
        cfg["name"] = bucket
        cfg["mirror"] = origin_to_mirror(mirror_origin)
        cfg["mirror_direct"] = True
        cfg.pop("subjects", None)
    elif origins:
        cfg["sources"] = [origin_to_source(o, bucket) for o in origins]
        if not writable:
            cfg.pop("subjects", None)
    return {k: v for k, v in cfg.items() if v is not None}


# ------------------------------------------------------------ entries
class Entry:
    """A KV entry (KvAPI.md "Entry"); ``created`` in ms since the epoch,
    ``delta`` known only from watchers (0 else); ``reason``: a marker the
    server placed (MaxAge, Purge, Remove: :func:`marker_reason`), else None."""

    __slots__ = ("bucket", "key", "value", "revision", "created", "operation", "delta", "reason")

    def __init__(self, bucket: str, key: str, value: bytes, revision: int, created: int, operation: str = PUT,
                 delta: int = 0, reason: str | None = None):
        self.bucket = bucket
        self.key = key
        self.value = value
        self.revision = revision
        self.created = created
        self.operation = operation
        self.delta = delta
        self.reason = reason

    def as_dict(self, with_delta: bool | None = None) -> dict:
        """nats-tcl's entry dict (``delta`` only for watched entries)."""
        d = {"bucket": self.bucket, "key": self.key, "value": self.value, "revision": self.revision,
             "created": self.created}
        if with_delta:
            d["delta"] = self.delta
        d["operation"] = self.operation
        if self.reason is not None:
            d["reason"] = self.reason
        return d

    def __eq__(self, other):
        return isinstance(other, Entry) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self):
        return (f"Entry({self.bucket!r}, {self.key!r}, {self.value[:40]!r}, revision={self.revision}, "
                f"operation={self.operation!r}, delta={self.delta})")


# an Entry class -> what makes it from all of its fields (Entry.__init__'s
# arguments, in the order of its slots): P.RecordMaker when compiled
_ENTRY_MAKERS: dict = {}


def _entry_maker(cls: type):
    """The maker of ``cls`` (Entry or a face's subclass of it), kept in _ENTRY_MAKERS."""
    make: Any = cls
    if (RecordMaker is not None and cls.__init__ is Entry.__init__  # type: ignore[misc]
            and cls.__new__ is object.__new__):
        make = RecordMaker(cls, Entry.__slots__)
    _ENTRY_MAKERS[cls] = make
    return make


# kv_entry(make, bucket, key, block, payload): Bucket.direct_entry's entry of
# the common reply, compiled (natsproto.c); None: the reference decides
_kv_entry = compiled("kv_entry")


def _not_found(e: NatsError, bucket: str) -> NatsError:
    if e.code in ("ErrStreamNotFound", "ErrNoResponders", "ErrJetStreamNotEnabled"):
        return make_error("ErrBucketNotFound", f"Bucket {bucket} not found")
    return e


class Bucket:
    """A bound bucket: its stream, read/write subjects and operations."""

    def __init__(self, api: JsApi, bucket: str, stream_config: dict):
        check_bucket(bucket)
        self.api = api
        self.bucket = bucket
        self.stream = stream_name(bucket)
        self._direct_checked: str | None = None  # the stream direct_get_request checked
        self._direct_gets: dict[str, Request] = {}  # subject -> the direct get of its last message
        # key -> write_subject(key), for keys check_key took (a face may skip
        # put_request's checks for a key found here and a bytes value)
        self.put_subjects: dict[str, str] = {}
        self.config = stream_config
        self.read_prefix = f"$KV.{bucket}"
        self.write_prefix = self.read_prefix
        # ADR-19: another domain or account is reached through its prefix
        self.use_js_prefix = not api.is_default
        self.use_direct = bool(stream_config.get("allow_direct"))
        mirror = stream_config.get("mirror") or {}
        if mirror.get("name"):
            origin = mirror_bucket(mirror["name"])
            self.write_prefix = f"$KV.{origin}"
            ext_api = (mirror.get("external") or {}).get("api")
            if ext_api:
                self.use_js_prefix = False
                self.read_prefix = f"$KV.{origin}"
                self.write_prefix = f"{ext_api}.$KV.{origin}"

    def __repr__(self):
        return f"Bucket({self.bucket!r}, read={self.read_prefix!r}, write={self.write_subject('*')!r})"

    def read_as_2x(self) -> None:
        """nats-tcl 2.x's reads: by STREAM.MSG.GET only, and a mirror's by
        its origin's subjects, which the mirror's messages keep."""
        self.use_direct = False
        mirror = self.config.get("mirror") or {}
        if mirror.get("name"):
            self.read_prefix = f"$KV.{mirror_bucket(mirror['name'])}"

    def read_subject(self, key: str) -> str:
        return f"{self.read_prefix}.{key}"

    def write_subject(self, key: str) -> str:
        pre = f"{self.api.prefix}." if self.use_js_prefix else ""
        return f"{pre}{self.write_prefix}.{key}"

    # -------------------------------------------------------- reads
    def _read(self, key: str, revision: int | None):
        """Operation: the stored entry, deletes included."""
        subject = self.read_subject(key)
        try:
            if self.use_direct:
                reply = yield self._direct_request(subject, revision)
                msg = stored_from_direct(reply, self.stream)
            elif revision:
                msg = yield from self.api.msg_get(self.stream, seq=revision)
            else:
                msg = yield from self.api.msg_get(self.stream, last_by_subj=subject)
        except NatsError as e:
            raise self.get_error(key, e) from None
        return self._stored_entry(key, subject, revision, msg)

    def _direct_request(self, subject: str, revision: int | None) -> Request:
        if revision:
            return self.api.direct_get_request(self.stream, seq=revision)
        stream = self.stream
        if stream is not self._direct_checked:  # direct_get_request's checks, the stream's once
            return self._first_direct_request(subject)
        req = self._direct_gets.get(subject)
        if req is None:  # (a step is not changed by who runs it: one per subject serves every get)
            if not valid_wildcard_subject(subject):
                raise make_error("ErrBadSubject", f"Invalid subject {subject}")
            if len(self._direct_gets) >= 4096:
                self._direct_gets.clear()
            req = self._direct_gets[subject] = Request(f"{self.api.prefix}.DIRECT.GET.{stream}.{subject}")
        return req

    def _first_direct_request(self, subject: str) -> Request:
        req = self.api.direct_get_request(self.stream, last_by_subj=subject)
        self._direct_checked = self.stream
        return req

    def get_error(self, key: str, e: NatsError) -> NatsError:
        """The error :meth:`get` raises when its request failed with ``e``."""
        if e.code == "ErrMsgNotFound":
            return make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
        return _not_found(e, self.bucket)

    def _stored_entry(self, key: str, subject: str | None, revision: int | None, msg,
                      cls: type | None = None) -> "Entry":
        """The entry of ``msg``, read for ``key`` (at ``revision``: from ``subject``)."""
        if revision and msg.subject != subject:
            raise make_error("ErrKeyNotFound", f"Expected {subject}, got {msg.subject}")
        op = operation_of(msg.headers)
        cls = cls or Entry
        make = _ENTRY_MAKERS.get(cls) or _entry_maker(cls)
        return make(self.bucket, key, msg.data, msg.seq, iso_to_ms(msg.time), op, 0,
                    None if op == PUT else marker_reason(msg.headers))

    def _check_get(self, key: str, revision) -> None:
        check_key(key)
        if revision is not None and (isinstance(revision, bool) or not isinstance(revision, int) or revision < 1):
            raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option revision : {revision}")

    def _live(self, entry: "Entry") -> "Entry":
        if entry.operation in (DEL, PURGE):
            raise make_error("ErrKeyNotFound", f"Key {entry.key} was deleted or purged", revision=entry.revision)
        return entry

    def get(self, key: str, revision: int | None = None):
        """Operation: the latest entry of ``key`` or the one at ``revision``;
        ErrKeyNotFound when missing or deleted (``details["revision"]`` is
        the delete's revision then).  Through direct gets it is one request:
        :meth:`get_request` and :meth:`get_result`, which drivers may also
        run themselves."""
        req = self.get_request(key, revision)
        if req is None:
            return self._live((yield from self._read(key, revision)))
        try:
            reply = yield req
        except NatsError as e:
            raise self.get_error(key, e) from None
        return self.get_result(key, revision, reply)

    def get_request(self, key: str, revision: int | None = None) -> Request | None:
        """The one request of :meth:`get` (the bucket allows direct gets),
        its arguments checked; None: run the operation :meth:`get`."""
        self._check_get(key, revision)
        if not self.use_direct:
            return None
        return self._direct_request(self.read_subject(key), revision)

    def get_result(self, key: str, revision: int | None, reply, cls: type | None = None) -> "Entry":
        """:meth:`get`'s result from the reply to :meth:`get_request`'s
        request (or its error); ``cls``: a face's subclass of :class:`Entry`
        (its constructor's) to make it."""
        try:
            msg = stored_from_direct(reply, self.stream)
        except NatsError as e:
            raise self.get_error(key, e) from None
        return self._live(self._stored_entry(key, self.read_subject(key) if revision else None, revision, msg, cls))

    def direct_entry(self, key: str, parts: tuple, cls: type | None = None) -> "Entry":
        """:meth:`get_result` of the reply to :meth:`get_request`'s direct get
        without a revision, kept as its parts (the driver's Engine.direct_request
        ``raw``): ``(reply, header block, payload, size)``, the block one of no
        status; the same entry or error."""
        make = _ENTRY_MAKERS.get(cls or Entry) or _entry_maker(cls or Entry)
        e = None if _kv_entry is None else _kv_entry(make, self.bucket, key, parts[1], parts[2])
        if e is None:  # (the reference: the reply as the Msg get_result reads)
            return self.get_result(key, None, Msg("", parts[2], parts[0], parse_headers(parts[1]), 0), cls)
        return e if e.operation == PUT else self._live(e)

    def get_many_batches(self, keys) -> list:
        """The multi-last direct gets (ADR-31) that read the latest entries of
        ``keys`` (literal keys), at most :data:`MULTI_LAST_MAX` subjects
        each (the server answers "Too Many Results" past about a thousand);
        [] when the bucket has no direct gets (read them one by one then).
        A face checks the API level on the first (``direct.check``)."""
        keys = [check_key(k) for k in keys]
        if not self.use_direct:
            return []
        return [DirectBatch(self.stream, multi_last=[self.read_subject(k) for k in keys[i:i + MULTI_LAST_MAX]])
                for i in range(0, len(keys), MULTI_LAST_MAX)]

    def entry_of_stored(self, msg) -> "Entry":
        """The entry of a message read from the bucket's stream (a
        :class:`~.api.StoredMsg` of a direct get), deletes included."""
        key = msg.subject[len(self.read_prefix) + 1:]
        return Entry(self.bucket, key, msg.data, msg.seq, iso_to_ms(msg.time), operation_of(msg.headers))

    # -------------------------------------------------------- writes
    def put_request(self, key: str, value, headers=None) -> Request:
        """The one request of a put (:meth:`put`, :meth:`update` ...), its
        arguments checked."""
        check_key(key)
        if isinstance(value, str):
            value = value.encode()
        elif value is None:
            value = b""
        elif not isinstance(value, (bytes, bytearray, memoryview)):
            raise make_error("ErrInvalidArg", f"Invalid value of type {type(value).__name__}: bytes or str expected")
        subject = self.put_subjects.get(key)
        if subject is None:
            if len(self.put_subjects) >= 4096:
                self.put_subjects.clear()
            subject = self.put_subjects[key] = self.write_subject(key)
        return Request(subject, value if value.__class__ is bytes else bytes(value), headers)

    def put_result(self, reply) -> dict:
        """The PubAck (a dict) of a put from the reply to its request (or
        the error it means)."""
        try:
            return parse_ack_fast(reply)  # parse_ack's result and errors, the plain ack without json
        except NatsError as e:
            raise self.put_error(e) from None

    def put_error(self, e: NatsError) -> NatsError:
        """The error a put raises when its request failed with ``e``."""
        if e.code == "ErrNoResponders":
            return make_error("ErrBucketNotFound", f"Bucket {self.bucket} not found")
        return e

    def _publish(self, key: str, value, headers=None):
        req = self.put_request(key, value, headers)
        try:
            reply = yield req
        except NatsError as e:
            raise self.put_error(e) from None
        return self.put_result(reply)

    def put(self, key: str, value):
        """Operation: store ``value``; returns the new revision."""
        return (yield from self._publish(key, value))["seq"]

    def update(self, key: str, value, revision: int):
        """Operation: store ``value`` if ``revision`` is still the latest
        (0: the key must not exist); ErrWrongLastSequence otherwise."""
        return (yield from self._update(key, value, revision))

    def _update(self, key: str, value, revision: int, ttl: str | None = None):
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
            raise make_error("ErrInvalidArg", f"Invalid revision {revision}")
        check_key(key)
        hdrs = publish_headers(expected_last_subject_seq=revision, ttl=ttl)
        return (yield from self._publish(key, value, hdrs))["seq"]

    def create(self, key: str, value, ttl: str | None = None):
        """Operation: store ``value`` only if the key does not exist or was
        deleted (ADR-8: retry on top of the delete marker).  ``ttl``: the
        ``Nats-TTL`` of this value (ADR-48; ``publish.ttl_from_seconds`` /
        ``ttl_from_ms`` make it): the key goes when it expires (a bucket
        with ``limit_marker_ttl``); ErrServerTooOld before 2.11."""
        if ttl is not None:
            check_key(key)
            yield from require_level(self.api, "kv_key_ttl")
        try:
            return (yield from self._update(key, value, 0, ttl))
        except NatsError as first:
            if first.code != "ErrWrongLastSequence":
                raise
            try:
                entry = yield from self._read(key, None)
            except NatsError:
                raise first from None
            if entry.operation not in (DEL, PURGE):
                raise first from None
            return (yield from self._update(key, value, entry.revision, ttl))

    def delete(self, key: str, revision: int | None = None):
        """Operation: a DEL marker (history kept); with ``revision`` only if
        it is still the latest.

        Revision 0 is no expectation, the same as none (nats-tcl sends the
        header only for ``$revision > 0``; nats.go's LastRevision(0) sets
        none either).  Unlike ``update``, where 0 means "the key must not
        exist", a delete of a key that does not exist is harmless, so 0 has
        nothing to guard.  A negative revision is ErrInvalidArg."""
        check_key(key)
        if revision is not None and (isinstance(revision, bool) or not isinstance(revision, int) or revision < 0):
            raise make_error("ErrInvalidArg", f"Invalid revision {revision}")
        hdrs = {KV_OPERATION: [DEL]}
        if revision:
            hdrs["Nats-Expected-Last-Subject-Sequence"] = [str(revision)]
        yield from self._publish(key, b"", hdrs)

    def purge(self, key: str, ttl: str | None = None):
        """Operation: a PURGE marker that rolls up (removes) the history; its
        PubAck.  With ``ttl`` (a ``Nats-TTL`` value, ADR-48) the marker itself
        goes when it expires; ErrServerTooOld before 2.11."""
        hdrs = {KV_OPERATION: [PURGE], "Nats-Rollup": ["sub"]}
        if ttl is not None:
            check_key(key)
            if not isinstance(ttl, str) or not ttl:
                raise make_error("ErrInvalidArg", f"Invalid TTL {ttl!r}")
            yield from require_level(self.api, "kv_key_ttl")
            hdrs[MSG_TTL] = [ttl]
        return (yield from self._publish(key, b"", hdrs))

    def revert(self, key: str, revision: int):
        """Operation: put the value of ``revision`` again; the new revision."""
        check_key(key)
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
            raise make_error("ErrInvalidArg", f"Invalid revision {revision}")
        entry = yield from self.get(key, revision)
        return (yield from self.put(key, entry.value))

    def status(self):
        """Operation: the bucket status (see :func:`status`)."""
        try:
            info = yield from self.api.stream_info(self.stream)
        except NatsError as e:
            raise _not_found(e, self.bucket) from None
        return status(self.bucket, info)

    # -------------------------------------------------------- watching
    def watch_options(self, keys=">", *, include_history: bool = False, meta_only: bool = False,
                      updates_only: bool = False, idle_heartbeat_ms: int | None = None) -> dict:
        """Keyword arguments of the ordered consumer behind a watcher
        (``keys``: one pattern or a list of them)."""
        policy = watch_policy(include_history, updates_only)
        if isinstance(keys, str):
            pats = [keys]
        elif isinstance(keys, (list, tuple, set, frozenset)):
            pats = list(keys)
        else:
            raise make_error("ErrInvalidArg", f"Invalid keys to watch {keys!r}")
        if not pats:
            raise make_error("ErrInvalidArg", "No keys to watch")
        for p in pats:
            check_key_pattern(p)
        opts = {"description": "KV watcher", "headers_only": bool(meta_only), "deliver_policy": policy}
        if len(pats) == 1:
            opts["filter_subject"] = self.read_subject(pats[0])
        else:
            opts["filter_subjects"] = [self.read_subject(p) for p in pats]
        if idle_heartbeat_ms is not None:
            opts["idle_heartbeat_ms"] = idle_heartbeat_ms
        return opts

    def watcher(self, *, ignore_deletes: bool = False, updates_only: bool = False) -> "Watcher":
        return Watcher(self.bucket, self.read_prefix, ignore_deletes=ignore_deletes, updates_only=updates_only)


def watch_policy(include_history: bool = False, updates_only: bool = False) -> str:
    """The deliver policy of a watcher's ordered consumer (KV and Object
    Store): the latest message of each subject, every one kept
    (``include_history``), or only those still to come (``updates_only``)."""
    if include_history and updates_only:
        raise make_error("ErrInvalidArg", "-include_history conflicts with -updates_only")
    return "new" if updates_only else ("all" if include_history else "last_per_subject")


# ------------------------------------------------------------ bucket management
def bind(api: JsApi, bucket: str):
    """Operation: the bound Bucket; ErrBucketNotFound unless it is a KV stream."""
    check_bucket(bucket)
    try:
        info = yield from api.stream_info(stream_name(bucket))
    except NatsError as e:
        raise _not_found(e, bucket) from None
    config = info.get("config") or {}
    if (config.get("max_msgs_per_subject") or 0) < 1:
        raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found")
    return Bucket(api, bucket, config)


def create_bucket(api: JsApi, bucket: str, *, update: bool = False, **options):
    """Operation: create (or update) a bucket from :func:`bucket_config`'s
    options; the bound Bucket, or None for a KV mirror (not bindable)."""
    cfg = bucket_config(bucket, **options)
    if cfg.get("subject_delete_marker_ttl"):
        yield from require_level(api, "kv_limit_marker_ttl")
    info = yield from (api.stream_update(cfg) if update else api.stream_create(cfg))
    if options.get("mirror_origin") is not None:
        return None
    return Bucket(api, bucket, info.get("config") or cfg)


def delete_bucket(api: JsApi, bucket: str):
    check_bucket(bucket)
    try:
        return (yield from api.stream_delete(stream_name(bucket)))
    except NatsError as e:
        raise _not_found(e, bucket) from None


def bucket_names(api: JsApi):
    """Operation: the names of every bucket (streams called ``KV_*``)."""
    return [n[3:] for n in (yield from api.stream_names()) if n.startswith("KV_")]


def empty_bucket(api: JsApi, bucket: str):
    """Operation: purge every entry (the revision counter goes on)."""
    check_bucket(bucket)
    try:
        return (yield from api.stream_purge(stream_name(bucket)))
    except NatsError as e:
        raise _not_found(e, bucket) from None


def status(bucket: str, info: dict) -> dict:
    """KvAPI.md "Bucket status" from a stream info reply (``ttl`` and the
    stream config in ns; see :func:`status_to_ms`)."""
    config = info.get("config") or {}
    state = info.get("state") or {}
    st = {"bucket": bucket, "bytes": state.get("bytes", 0), "history": config.get("max_msgs_per_subject", 1),
          "ttl": config.get("max_age", 0), "values": state.get("messages", 0),
          "is_compressed": config.get("compression", "none") not in ("none", None)}
    if config.get("subject_delete_marker_ttl"):
        st["limit_marker_ttl"] = config["subject_delete_marker_ttl"]  # ADR-48, ns
    mirror = config.get("mirror") or {}
    if mirror.get("name"):
        st["mirror_name"] = mirror_bucket(mirror["name"])
        ext = (mirror.get("external") or {}).get("api", "")
        parts = ext.split(".") if ext else []
        if len(parts) == 3 and parts[2] == "API":
            st["mirror_domain"] = parts[1]
    st["stream_config"] = dict(config)
    st["stream_state"] = dict(state)
    return st


def status_to_ms(st: dict) -> dict:
    """A status with nats-tcl's ms: ``ttl`` and the stream config's durations."""
    ns2ms(st, "ttl", "limit_marker_ttl")
    if isinstance(st.get("stream_config"), dict):
        ns2ms(st["stream_config"], *STREAM_DURATIONS)
    return st


# ------------------------------------------------------------ watcher
class InitialData:
    """What KV and Object Store watchers share: the events of one delivery,
    and ``InitDone()`` once, when the watch has delivered everything
    that was there when it began (at once when the consumer starts with
    nothing pending, or with ``updates_only``).  ``ignore_deletes`` drops
    deleted items from the events while still counting them."""

    def __init__(self, ignore_deletes: bool = False, updates_only: bool = False):
        self.ignore_deletes = ignore_deletes
        self.updates_only = updates_only
        self.init_done = False

    def on_consumer_created(self, info: dict) -> list:
        if not self.init_done and (self.updates_only or (info or {}).get("num_pending", 0) == 0):
            self.init_done = True
            return [INIT_DONE]
        return []

    def _events(self, event: type, item, deleted: bool, pending: int) -> list:
        events: list = []
        if item is not None and not (self.ignore_deletes and deleted):
            events.append(event(item))
        if pending == 0 and not self.init_done:
            self.init_done = True
            events.append(INIT_DONE)
        return events


class Watcher(InitialData):
    """Entries from a watch's ordered consumer, and End Of Initial Data.

    Feed it the created consumer's info (:meth:`on_consumer_created`) and
    then each delivered message (:meth:`on_msg`).  Events:
    ``WatchEntry(Entry)`` and, once, ``InitDone()``: every entry that was
    in the bucket when the watch began has been delivered (at once when
    there were none, or with ``updates_only``).  ``ignore_deletes`` drops
    DEL/PURGE entries (still counting them for the end of initial data).
    """

    EVENTS = (WatchEntry, InitDone)

    def __init__(self, bucket: str, read_prefix: str, *, ignore_deletes: bool = False, updates_only: bool = False):
        super().__init__(ignore_deletes, updates_only)
        self.bucket = bucket
        self.read_prefix = read_prefix

    def entry_of(self, msg, meta: dict | None = None) -> Entry:
        meta = meta or parse_metadata(msg.reply, msg.subject)
        return Entry(self.bucket, msg.subject[len(self.read_prefix) + 1:], msg.data, meta["stream_seq"],
                     meta["timestamp"], operation_of(msg.headers), meta["num_pending"])

    def on_msg(self, msg, meta: dict | None = None) -> list:
        entry = self.entry_of(msg, meta)
        if entry.operation != PUT:
            entry.reason = marker_reason(msg.headers)
        return self._events(WatchEntry, entry, entry.operation in (DEL, PURGE), entry.delta)
