"""Object Store protocol logic (ADR-20), shared by both faces; no I/O.

A bucket is the stream ``OBJ_<bucket>`` over ``$O.<bucket>.C.>`` (chunks) and
``$O.<bucket>.M.>`` (one meta message per object, rolled up).  An object's
chunks go to ``$O.<bucket>.C.<nuid>``; its meta, a JSON ObjectInfo, to
``$O.<bucket>.M.<base64url(name)>`` with ``Nats-Rollup: sub``.  The digest is
``SHA-256=<base64url of the sha256>``.  Links are metas whose
``options.link`` names another bucket/object.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import re

from ._errors import make_error

__all__ = ["DEFAULT_CHUNK", "stream_name", "check_bucket", "stream_config", "meta_subject", "chunk_subject",
           "encode_name", "digest_of", "Digest", "new_meta", "parse_meta", "chunks_of"]

DEFAULT_CHUNK = 128 * 1024
_BUCKET = re.compile(r"^[a-zA-Z0-9_-]+$")


def check_bucket(bucket) -> None:
    if not _BUCKET.match(str(bucket)):
        raise make_error("ErrInvalidArg", f"Invalid bucket name {bucket}")


def stream_name(bucket: str) -> str:
    return f"OBJ_{bucket}"


def stream_config(bucket: str, *, description=None, ttl_ns=None, max_bytes=None, storage="file",
                  replicas=1, compression=None, metadata=None) -> dict:
    check_bucket(bucket)
    cfg = {"name": stream_name(bucket), "description": description,
           "subjects": [f"$O.{bucket}.C.>", f"$O.{bucket}.M.>"], "max_age": ttl_ns, "max_bytes": max_bytes,
           "storage": storage, "num_replicas": replicas, "discard": "new", "allow_rollup_hdrs": True,
           "allow_direct": True, "compression": compression, "metadata": metadata}
    return {k: v for k, v in cfg.items() if v is not None}


def encode_name(name: str) -> str:
    if not name:
        raise make_error("ErrInvalidArg", "Invalid object name")
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode()


def meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{encode_name(name)}"


def chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


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


def chunks_of(data: bytes, size: int = DEFAULT_CHUNK):
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_meta(bucket: str, name: str, nuid: str, size: int, chunks: int, digest: str, *, description=None,
             headers=None, metadata=None, chunk_size: int = DEFAULT_CHUNK, link=None, deleted=False) -> dict:
    meta = {"name": name, "bucket": bucket, "nuid": nuid, "size": size, "mtime": _now_rfc3339(),
            "chunks": chunks, "digest": digest}
    if description:
        meta["description"] = description
    if headers:
        meta["headers"] = headers
    if metadata:
        meta["metadata"] = metadata
    opts = {"max_chunk_size": chunk_size}
    if link is not None:
        opts = {"link": link}
    meta["options"] = opts
    if deleted:
        meta["deleted"] = True
    return meta


def parse_meta(data: bytes) -> dict:
    try:
        meta = json.loads(data)
    except ValueError:
        raise make_error("ErrBadObjectMeta", "Invalid object meta data") from None
    if not isinstance(meta, dict) or "name" not in meta:
        raise make_error("ErrBadObjectMeta", "Invalid object meta data")
    return meta
