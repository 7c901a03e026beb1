"""Metadata of a consumed message, from its ``$JS.ACK`` reply subject (ADR-15).

v1 (what servers send today):
``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ns>.<pending>``
v2: ``$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ns>.<pending>[.<token>...]``
(a domain of ``_`` means none).

:func:`parse_metadata` returns what nats-tcl's ``nats::metadata`` returns:
``stream consumer num_delivered stream_seq consumer_seq timestamp num_pending``
with the timestamp in ms; v2 adds ``domain`` when there is one.
:func:`metadata_fields` gives the same fields as a tuple, the timestamp in
ns, for the asyncio face's metadata object (nats.go's MsgMetadata).
"""

from __future__ import annotations

from tclnats_py.errors import make_error

__all__ = ["parse_metadata", "metadata_fields", "is_js_reply", "metadata_from_reply", "seq_time_pending", "ACK_PREFIX",
           "CONSUMER_STALLED", "LAST_CONSUMER", "LAST_STREAM"]

#: how every reply subject of a consumed JetStream message starts
ACK_PREFIX = "$JS.ACK."

# headers the server puts on deliveries: an idle heartbeat names the subject
# that unblocks a stalled consumer; a heartbeat of an ordered consumer names
# the last consumer and stream sequences it delivered
CONSUMER_STALLED = "Nats-Consumer-Stalled"
LAST_CONSUMER = "Nats-Last-Consumer"
LAST_STREAM = "Nats-Last-Stream"


def is_js_reply(reply) -> bool:
    return bool(reply) and reply.startswith(ACK_PREFIX)


def _tokens(reply: str, subject: str):
    t = (reply or "").split(".")
    if len(t) >= 2 and t[0] == "$JS" and t[1] == "ACK":
        if len(t) == 9:
            return None, t[2:9]
        if len(t) >= 11:
            return t[2], t[4:11]
    raise make_error("ErrNotJSMessage", f"Message with subject {subject} is not a JetStream message")


def seq_time_pending(reply: str, subject: str = "") -> tuple[str, str, str]:
    """The stream sequence, the time (ns) and the pending count of a
    ``$JS.ACK`` reply, as the digit strings of the subject: what a bulk
    reader keeps of each message, without building the metadata dict.
    ErrNotJSMessage for any other reply (the digits are not checked)."""
    t = reply.split(".") if reply else []
    if len(t) == 9 and t[0] == "$JS" and t[1] == "ACK":
        return t[5], t[7], t[8]
    _, t = _tokens(reply, subject)
    return t[3], t[5], t[6]


def parse_metadata(reply: str, subject: str = "") -> dict:
    """The metadata dict; ErrNotJSMessage for any other reply subject."""
    domain, t = _tokens(reply, subject)
    stream, consumer, delivered, sseq, cseq, ts, pending = t
    try:
        ts_i = int(ts)
        meta = {"stream": stream, "consumer": consumer, "num_delivered": int(delivered),
                "stream_seq": int(sseq), "consumer_seq": int(cseq),
                "timestamp": ts_i // 1_000_000 if ts_i > 0 else ts_i, "num_pending": int(pending)}
    except ValueError:
        raise make_error("ErrNotJSMessage", f"Message with subject {subject} is not a JetStream message") from None
    if domain and domain != "_":
        meta["domain"] = domain
    return meta


def metadata_fields(reply: str, subject: str = "") -> tuple[str | None, str, str, int, int, int, int, int]:
    """``(domain, stream, consumer, num_delivered, stream_seq, consumer_seq,
    timestamp_ns, num_pending)``; the domain is None for a v1 reply, the
    token as sent for v2 (``_``: none).  ErrNotJSMessage for any other reply
    subject."""
    domain, t = _tokens(reply, subject)
    stream, consumer, delivered, sseq, cseq, ts, pending = t
    try:
        return domain, stream, consumer, int(delivered), int(sseq), int(cseq), int(ts), int(pending)
    except ValueError:
        raise make_error("ErrNotJSMessage", f"Message with subject {subject} is not a JetStream message") from None


def metadata_from_reply(reply: str, subject: str = "") -> dict:
    """nats-tcl's exact shape (the seven keys, no domain)."""
    meta = parse_metadata(reply, subject)
    meta.pop("domain", None)
    return meta
