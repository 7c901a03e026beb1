"""The streaming read of a stream: stream sequences as offsets
({"seq": next}), admission control (maxOffsetsPerTrigger, minOffsetsPerTrigger,
maxTriggerDelay, availableNow), failOnDataLoss, and the lag shown in the
query's progress.  The ranges are read as the batch read reads them.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

try:  # PySpark >= 4.1
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older PySpark: Spark runs availableNow as one batch
    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """PySpark before 4.1 has no such interface (it runs availableNow as one batch)."""

from tclnats_py.errors import make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.read import _description, _min_partitions, _ReadConfig, _SeqRange, _stream_state
from tclnats_py.spark.reader import data_loss_message
from tclnats_py.spark.workers import _Shipped

log = logging.getLogger("tclnats_py.spark")


class _StreamReader(_Shipped, DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts, parallelism):
        self.opts = opts
        self.rc = _ReadConfig(opts, O.parse_conn(opts))
        self.n = _min_partitions(opts, parallelism)
        mx = O.opt_int(opts, "maxoffsetspertrigger", None, 1)
        alias = O.opt_int(opts, "maxmessagespertrigger", None, 1)
        if mx is not None and alias is not None and mx != alias:
            raise make_error("ErrInvalidArg", f"options maxOffsetsPerTrigger ({mx}) and maxMessagesPerTrigger "
                             f"({alias}) disagree: give one")
        self.max_per_trigger = mx or alias
        self.min_per_trigger = O.opt_int(opts, "minoffsetspertrigger", None, 1)
        self.max_trigger_delay_ms = O.opt_ms(opts, "maxtriggerdelay", 15 * 60 * 1000)
        if self.max_per_trigger and self.min_per_trigger and self.min_per_trigger > self.max_per_trigger:
            raise make_error("ErrInvalidArg", f"option minOffsetsPerTrigger ({self.min_per_trigger}) is above "
                             f"maxOffsetsPerTrigger ({self.max_per_trigger})")
        start = str(opts.get("startingoffsets", "earliest")).strip()
        if not (start in ("earliest", "latest") or start.startswith("time:")
                or (start.startswith("seq:") and start[4:].isdigit() and int(start[4:]) >= 1)):
            raise make_error("ErrInvalidArg", f"option startingOffsets must be earliest, latest, seq:N (N >= 1) or "
                             f"time:ISO-8601, not {start!r}")
        self.starting = start
        self.target = None          # the end of an availableNow query
        self.last_batch = time.monotonic()
        self.last_state = None
        self.last_end = None
        self._state()  # fails here, on the driver, for a bad stream or server
        if not self.rc.mode:
            self.rc.ask(lambda m: self.rc.resolve_mode(m, _stream_state(m, self.rc.stream)))

    def _state(self):
        self.last_state = self.rc.ask(lambda m: _stream_state(m, self.rc.stream)["state"])
        return self.last_state

    def initialOffset(self):
        start = self.starting
        state = self._state()
        if start == "earliest":
            return {"seq": max(1, state.get("first_seq", 0))}
        if start == "latest":
            return {"seq": state.get("last_seq", 0) + 1}
        if start.startswith("seq:"):
            return {"seq": int(start[4:])}
        return {"seq": self.rc.ask(lambda m: m.seq_at_time(self.rc.stream, start[5:], self.rc.filter))}

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self):
        self.target = self._state().get("last_seq", 0) + 1

    def _available_start(self, seq, state):
        """``seq``, or the stream's first sequence when messages from seq on were removed."""
        first = max(1, state.get("first_seq", 0))
        if seq < first:
            if self.rc.fail_on_data_loss:
                raise make_error("ErrDataLoss", data_loss_message(self.rc.stream, seq, first, "query"),
                                 stream=self.rc.stream, expected=seq, available=first)
            log.warning("stream %s: %d message(s) from sequence %d to %d were removed before they were read "
                        "(failOnDataLoss=false: skipped)", self.rc.stream, first - seq, seq, first - 1)
            return first
        return seq

    def latestOffset(self, start, limit):
        state = self._state()
        s = start["seq"]
        if s > state.get("last_seq", 0) + 1:
            # the stream went back: deleted and created again, or purged with a new first sequence
            text = (f"stream {self.rc.stream}: the query's offset is sequence {s} but the stream ends at "
                    f"{state.get('last_seq', 0)} (deleted and created again?)")
            if self.rc.fail_on_data_loss:
                raise make_error("ErrDataLoss", text, stream=self.rc.stream, expected=s,
                                 available=state.get("last_seq", 0) + 1)
            log.warning("%s; failOnDataLoss=false: waiting for sequence %d", text, s)
        begin = self._available_start(s, state)
        end = state.get("last_seq", 0) + 1
        if self.target is not None:
            end = min(end, self.target)
        end = max(end, begin)
        if isinstance(limit, ReadMaxRows):
            end = min(end, begin + limit.max_rows)
        if (self.target is None and self.min_per_trigger and end - begin < self.min_per_trigger
                and (time.monotonic() - self.last_batch) * 1000 < self.max_trigger_delay_ms):
            end = s  # too little yet: wait for more or for maxTriggerDelay
        if end > s:
            self.last_batch = time.monotonic()
        else:
            end = s
        self.last_end = end
        return {"seq": end}

    def reportLatestOffset(self):
        """The stream's end, with the lag behind it (shown as the source's
        latestOffset in StreamingQueryProgress)."""
        state = self.last_state or self._state()
        latest = state.get("last_seq", 0) + 1
        out = {"seq": latest, "description": _description(self.rc.stream, self.rc.filter)}
        if self.last_end is not None:
            behind_seqs = max(0, latest - self.last_end)
            msgs, nbytes = state.get("messages", 0), state.get("bytes", 0)
            behind = min(behind_seqs, msgs)
            out["messagesBehind"] = behind
            out["bytesBehind"] = (nbytes * behind) // msgs if msgs else 0
        return out

    def partitions(self, start, end):
        state = self.last_state or self._state()
        first = start["seq"]
        if first < max(1, state.get("first_seq", 0)):
            first = self._available_start(first, self._state())
        last = end["seq"] - 1
        if last < first:
            return []
        ranges = self.rc.ask(lambda m: m.split(self.rc.stream, first, last, self.n, self.rc.filter,
                                               stream_last=state.get("last_seq", 0)))
        return [_SeqRange(a, b) for a, b in ranges]

    def read(self, partition):
        yield from self.rc.batches(partition.first, partition.last)

    def commit(self, end):
        """Nothing is held on the server: the offsets live in Spark's checkpoint."""
        return None
