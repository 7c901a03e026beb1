"""Object Store values both Python faces hand out (:class:`ObjectInfo`,
:class:`ObjectStoreStatus`) and the checks and reading of what a put stores."""

from __future__ import annotations

from typing import Any, AsyncIterable, Iterable, Iterator, Protocol, Union

from tclnats_py.errors import make_error
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.validate import check_int, check_seconds, check_str
from tclnats_py.jsface.info import Reply, StreamInfo

__all__ = ["ObjectInfo", "ObjectStoreStatus", "ObjectData", "WINDOW", "bucket_options", "check_metadata",
           "check_data", "to_part", "parts"]


class _Reader(Protocol):
    """A file or a stream: ``read(size)`` gives the next part (bytes or str; awaitable or not), empty at the end."""

    def read(self, size: int, /) -> Any: ...


_Part = Union[bytes, bytearray, memoryview, str]
#: what ``ObjectStore.put`` stores: bytes-like, str (UTF-8), a file, or an (async) iterable of parts
ObjectData = Union[_Part, _Reader, Iterable[_Part], AsyncIterable[_Part]]

WINDOW = 64  # chunk publishes in flight during a put


class ObjectInfo(Reply):
    """An object's info: name, bucket, nuid, size (bytes), chunks, digest
    ("SHA-256=..."), mtime (RFC 3339), description, headers (lists of values,
    as stored), metadata, options, deleted; the whole JSON stays readable
    (``info["name"]``, ``as_dict()``)."""
    __slots__ = ("name", "bucket", "nuid", "size", "chunks", "digest", "mtime", "description", "headers",
                 "metadata", "options", "deleted")
    name: str
    bucket: str
    nuid: str
    size: int
    chunks: int
    digest: str | None
    mtime: str | None
    description: str | None
    headers: dict[str, list[str]] | None
    metadata: dict[str, str] | None
    options: dict[str, Any] | None
    deleted: bool
    _fields = (("name", ""), ("bucket", ""), ("nuid", ""), ("size", 0), ("chunks", 0), ("digest", None),
               ("mtime", None), ("description", None), ("headers", None), ("metadata", None), ("options", None),
               ("deleted", False))
    _convert = {"deleted": bool}

    @property
    def link(self) -> dict[str, str] | None:
        """The link's target (``{"bucket": ..., "name": ...}``; no name: the whole bucket), None for an object."""
        return _obj.link_of(self)

    @property
    def is_link(self) -> bool:
        return bool(_obj.link_of(self))


class ObjectStoreStatus(Reply):
    """ADR-20 status of an object store: ``ttl`` in ns (0: forever), ``size``
    in bytes; ``stream_info`` the stream's :class:`StreamInfo`."""
    __slots__ = ("bucket", "description", "ttl", "storage", "replicas", "sealed", "size", "backing_store",
                 "is_compressed", "metadata", "stream_info")
    bucket: str
    description: str
    ttl: int
    storage: str
    replicas: int
    sealed: bool
    size: int
    backing_store: str
    is_compressed: bool
    metadata: dict[str, str]
    stream_info: StreamInfo
    _fields = (("bucket", ""), ("description", ""), ("ttl", 0), ("storage", "file"), ("replicas", 1),
               ("sealed", False), ("size", 0), ("backing_store", "JetStream"), ("is_compressed", False),
               ("metadata", None), ("stream_info", None))
    _convert = {"metadata": lambda v: dict(v or {}), "stream_info": StreamInfo}


def check_metadata(metadata: Any) -> None:
    """ErrInvalidArg unless ``metadata`` is None or a dict of str to str."""
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        raise make_error("ErrInvalidArg", f"Invalid metadata {metadata!r}: a dict of str to str expected")


def check_data(data: Any) -> None:
    """What put() can read: bytes-like, str, a file, an (async) iterable of bytes/str parts."""
    if isinstance(data, (str, bytes, bytearray, memoryview)) or hasattr(data, "read") or hasattr(data, "__aiter__"):
        return
    if isinstance(data, (list, tuple)):
        if all(isinstance(p, (str, bytes, bytearray, memoryview)) for p in data):
            return
    elif hasattr(data, "__iter__") and not isinstance(data, dict):
        return  # parts are checked as they come
    raise make_error("ErrInvalidArg", f"Invalid object data of type {type(data).__name__}")


def to_part(part: Any) -> bytes:
    """One part of an object's data as bytes (str: UTF-8); ErrInvalidArg for anything else."""
    if isinstance(part, str):
        return part.encode()
    if isinstance(part, (bytes, bytearray, memoryview)):
        return bytes(part)
    raise make_error("ErrInvalidArg", f"Invalid part of object data of type {type(part).__name__}")


def parts(data: Any, size: int) -> Iterator[bytes]:
    """The object's bytes in pieces of ``size``, from bytes, str, a file
    whose ``read`` returns bytes or str, or an iterable of parts."""
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        mv = memoryview(data)
        for i in range(0, len(mv), size):
            yield bytes(mv[i:i + size])
        return
    if hasattr(data, "read"):
        while True:
            part = data.read(size)
            if not part:
                return
            yield to_part(part)
    for part in data:
        yield to_part(part)


def bucket_options(description: str | None = None, ttl: float | None = None, max_bytes: int | None = None,
                   storage: str = "file", replicas: int = 1, compression: bool = False,
                   metadata: dict[str, str] | None = None, placement: Any = None) -> dict[str, Any]:
    """An object store's options in the faces' names and seconds, checked ->
    the keywords of the engine's ``objstore.create_bucket`` (ns, ``num_replicas``)."""
    check_str("description", description)
    check_seconds("ttl", ttl)
    check_int("max_bytes", max_bytes, -1, allow_none=True)
    if replicas.__class__ is not int:  # the count itself: engine.js.config.check_replicas (0..5)
        check_int("replicas", replicas)
    check_metadata(metadata)
    return dict(description=description, ttl_ns=int(ttl * 1e9) if ttl else None, max_bytes=max_bytes,
                storage=storage, num_replicas=replicas, compression=compression, metadata=metadata,
                placement=placement)
