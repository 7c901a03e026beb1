"""``$js stream_direct_get stream -batch n ...`` / ``-multi_last {subjects}``:
a batch or multi-last direct get (ADR-31) as one request gathering its replies."""

from __future__ import annotations

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import ms_to_iso
from tclnats_py.engine.js.direct import DirectBatch

__all__ = ["BATCH_OPTIONS", "BatchGather", "direct_batch"]

# the options of a batch or multi-last get (times: ms since the epoch, or RFC 3339 text)
BATCH_OPTIONS = (("batch", "pos_int", None), ("seq", "pos_int", None), ("next_by_subj", "valid_str", None),
                 ("start_time", "valid_str", None), ("max_bytes", "pos_int", None), ("multi_last", "list", None),
                 ("up_to_seq", "pos_int", None), ("up_to_time", "valid_str", None))

# replies a gathering request waits for past the messages (the EOB)
_MAX_MULTI_LAST = 100_000


def _time(v):
    if v is None:
        return None
    text = str(v)
    return ms_to_iso(int(text)) if text.isdigit() else text


def direct_batch(stream: str, o: dict) -> DirectBatch:
    """The :class:`DirectBatch` of the checked options ``o``."""
    if "last_by_subj" in o:
        raise make_error("ErrInvalidArg", "-last_by_subj excludes -batch and -multi_last")
    return DirectBatch(stream, batch=o.get("batch"), seq=o.get("seq"), next_by_subj=o.get("next_by_subj"),
                       start_time=_time(o.get("start_time")), max_bytes=o.get("max_bytes"),
                       multi_last=o.get("multi_last"), up_to_seq=o.get("up_to_seq"),
                       up_to_time=_time(o.get("up_to_time")))


class BatchGather:
    """The replies of one batch get fed to its :class:`DirectBatch` (the
    Tcl face's gathering request: ``on_msg``/``on_end``/``finish``); the
    result is the list of message dicts (``to_dict(stored, sid)``)."""

    callback = None  # a synchronous command: the Tcl call waits for the result

    def __init__(self, get: DirectBatch, to_dict):
        self.get = get
        self.to_dict = to_dict
        self.done = False
        self.msgs: list = []
        self.error: NatsError | None = None

    @property
    def max_msgs(self) -> int:
        return (self.get.batch_size or _MAX_MULTI_LAST) + 1

    def on_msg(self, req, msg, out) -> bool:
        try:
            m = self.get.on_msg(msg)
        except NatsError as e:
            self.error = e  # raised by finish, for the Tcl caller
            return True
        if m is not None:
            self.msgs.append(self.to_dict(m, msg.sid))
        return self.get.done

    def on_end(self, outcome, req, out) -> None:
        """The request ended before the batch did (timeout, close): finish tells."""
        return None

    def finish(self, outcome, req):
        if self.error is not None:
            raise self.error
        if not self.get.done:
            if outcome == "timeout":
                raise self.get.on_timeout()
            if outcome == "no_responders":
                raise make_error("ErrNoResponders", "No responders available for request")
            if outcome != "msg":
                raise make_error("ErrConnectionClosed" if outcome == "closed" else "ErrTimeout",
                                 "Connection closed" if outcome == "closed" else "Connection lost")
        return tuple(self.msgs)
