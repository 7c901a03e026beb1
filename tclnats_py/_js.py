"""JetStream and Key-Value protocol logic shared by the Tcl and Python faces.

No I/O here: API subjects (ADR-1, with ADR-19 domains and prefixes), error
replies mapped to error codes, message metadata from ``$JS.ACK`` reply
subjects, pull-request status messages (ADR-13), KV names, bucket stream
configuration and entries (ADR-8).  ``tcljs.py`` (Tcl face) and
``jetstream.py`` / ``kv.py`` (Python face) both build on these.
"""

from __future__ import annotations

import datetime
import re

from ._errors import NatsError, make_error

__all__ = [
    "api_prefix", "check_js_error", "metadata_from_reply", "iso_to_ms", "pull_status",
    "check_bucket", "check_key", "kv_stream_config", "KV_OPERATION",
    "FILENAME_SAFE", "filename_safe",
]

FILENAME_SAFE = re.compile(r"^[-\w!#$%&()+,:;<=?@^`|~]+$", re.UNICODE)
_BUCKET = re.compile(r"^[a-zA-Z0-9_-]+$")
_KEY = re.compile(r"^[-/_=.a-zA-Z0-9]+$")
KV_OPERATION = "KV-Operation"


def api_prefix(domain: str | None = None, prefix: str | None = None) -> str:
    """``$JS.API``, ``$JS.<domain>.API`` (ADR-19) or an imported prefix."""
    if domain and prefix:
        raise make_error("ErrInvalidArg", "-domain and -api_prefix are mutually exclusive")
    if prefix:
        return prefix
    return f"$JS.{domain}.API" if domain else "$JS.API"


def filename_safe(name) -> bool:
    """ADR-6 names of streams and consumers (no dots, slashes or wildcards)."""
    s = str(name)
    return bool(FILENAME_SAFE.match(s)) and not any(c in s for c in "./\\*>")


# API error (code, err_code) -> the error code nats-tcl documents (JsAPI.md)
_SPECIFIC = {
    (400, 10071): "ErrWrongLastSequence",
    (404, 10014): "ErrConsumerNotFound",
    (404, 10037): "ErrMsgNotFound",
    (404, 10059): "ErrStreamNotFound",
    (503, 10039): "ErrJetStreamNotEnabledForAccount",
}


def check_js_error(resp) -> None:
    """Raise the mapped error for an API error reply; ErrJSResponse otherwise.

    The error's ``details`` carry the reply's ``api_code`` and ``err_code``;
    ErrJSResponse also gets the Tcl error code ``{NATS ErrJSResponse code err_code}``.
    """
    err = resp.get("error") if isinstance(resp, dict) else None
    if not err:
        return
    code, err_code = err.get("code"), err.get("err_code")
    text = err.get("description", "")
    specific = _SPECIFIC.get((code, err_code))
    if specific:
        raise make_error(specific, text, api_code=code, err_code=err_code)
    e = make_error("ErrJSResponse", text, api_code=code, err_code=err_code)
    e.details["errorcode"] = ("NATS", "ErrJSResponse", code, err_code)
    raise e


def metadata_from_reply(reply: str, subject: str = "") -> dict:
    """Metadata of a JetStream message from its ``$JS.ACK`` reply subject.

    v1: ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ns>.<pending>``;
    v2 adds ``<domain>.<account hash>`` after ACK and a token at the end.
    ``timestamp`` is in ms, as nats-tcl returns it.
    """
    tokens = (reply or "").split(".")
    if len(tokens) == 9 and tokens[0] == "$JS" and tokens[1] == "ACK":
        t = tokens[2:]
    elif len(tokens) >= 12 and tokens[0] == "$JS" and tokens[1] == "ACK":
        t = tokens[4:11]
    else:
        raise make_error("ErrNotJSMessage", f"Message with subject {subject} is not a JetStream message")
    stream, consumer, delivered, sseq, cseq, ts, pending = t
    ts_i = int(ts)
    return {
        "stream": stream, "consumer": consumer, "num_delivered": int(delivered),
        "stream_seq": int(sseq), "consumer_seq": int(cseq),
        "timestamp": ts_i // 1000000 if ts_i > 0 else ts_i, "num_pending": int(pending),
    }


def iso_to_ms(ts: str) -> int:
    """2022-11-22T13:31:35.4514983Z -> ms since the epoch."""
    if not ts:
        return 0
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[-+]\d\d:?\d\d)?$", ts)
    if not m:
        raise make_error("ErrInvalidArg", f"Invalid time {ts}")
    base = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    secs = base.timestamp()
    zone = m.group(3)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        secs -= sign * (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60)
    frac = float("0." + m.group(2)) if m.group(2) else 0.0
    return int(round((secs + frac) * 1000))


def pull_status(msg) -> str:
    """What a message on a pull request's inbox means (ADR-13):

    ``"msg"`` a stream message; ``"heartbeat"`` status 100 (idle heartbeat or
    flow control: ignore); ``"end"`` 404 no messages / 408 request expired /
    409 (consumer deleted, limits); ``"no_responders"`` 503 (no JetStream or no
    such stream).
    """
    status = msg.status
    if status == 0:
        return "msg"
    if status == 100:
        return "heartbeat"
    if status == 503:
        return "no_responders"
    if status in (404, 408, 409):
        return "end"
    return "msg"


# ------------------------------------------------------------------ KV (ADR-8)
def check_bucket(bucket) -> None:
    if not _BUCKET.match(str(bucket)):
        raise make_error("ErrInvalidArg", f"Invalid bucket name {bucket}")


def check_key(key) -> None:
    k = str(key)
    if k.startswith(".") or k.endswith(".") or k.startswith("_kv") or not _KEY.match(k):
        raise make_error("ErrInvalidArg", f"Invalid key name {key}")


def kv_stream_config(bucket: str, *, history: int = 1, ttl_ms: int | None = None, max_value_size=None,
                     max_bucket_size=None, storage: str = "file", num_replicas: int = 1, description=None,
                     compression=None, metadata=None) -> dict:
    """The stream behind a bucket: ``KV_<bucket>`` on ``$KV.<bucket>.>``."""
    check_bucket(bucket)
    if history < 1 or history > 64:
        raise make_error("ErrInvalidArg", "History must be between 1 and 64")
    dup = 120000
    if ttl_ms is not None and ttl_ms < dup:
        dup = ttl_ms
    cfg = {
        "name": f"KV_{bucket}", "description": description, "subjects": [f"$KV.{bucket}.>"],
        "retention": "limits", "max_bytes": max_bucket_size, "discard": "new",
        "max_age": ttl_ms * 1000000 if ttl_ms is not None else None, "max_msgs_per_subject": history,
        "max_msg_size": max_value_size, "storage": storage, "num_replicas": num_replicas,
        "duplicate_window": dup * 1000000, "deny_delete": True, "deny_purge": False,
        "allow_rollup_hdrs": True, "compression": compression, "allow_direct": True, "metadata": metadata,
    }
    return {k: v for k, v in cfg.items() if v is not None}


def kv_operation(headers) -> str:
    if headers and headers.get(KV_OPERATION):
        return headers[KV_OPERATION][0]
    return "PUT"


def is_not_found(err: NatsError) -> bool:
    return err.code in ("ErrMsgNotFound", "ErrKeyNotFound")
