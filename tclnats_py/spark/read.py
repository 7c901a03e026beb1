"""The batch read of a stream, and what every read shares: the planning
on the driver (``reader.Meta`` on a connection of its own, retried as a
task's read is) and the tasks' Arrow record batches, one per pull batch of
the blocking reader (``reader.read_columns``).
"""

from __future__ import annotations

import logging
import time

from pyspark.sql.datasource import DataSourceReader, InputPartition

from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.reader import DEFAULT_RETRIES, DEFAULT_RETRY_INTERVAL_MS, Meta, data_loss_message
from tclnats_py.spark.workers import _Shipped

log = logging.getLogger("tclnats_py.spark")


_UNREACHABLE = "NATS server unreachable at "


def _unreachable(settings, e: NatsError) -> NatsError:
    """``e`` with the servers named once (the blocking reader's error already names them)."""
    text = str(e)
    if not text.startswith(_UNREACHABLE):
        text = f"{_UNREACHABLE}{settings.servers_text()}: {text}"
    return make_error(e.code, text)


def _stream_name(opts) -> str:
    stream = opts.get("stream")
    if not stream:
        raise make_error("ErrInvalidArg", "option 'stream' is required")
    return stream


def _meta(settings):
    try:
        return Meta(settings)
    except NatsError as e:
        raise _unreachable(settings, e) from None


def _stream_state(m: Meta, stream: str) -> dict:
    try:
        return m.stream_info(stream)
    except NatsError as e:
        raise make_error(e.code, f"stream {stream}: {e}") from None


def _description(stream, subject) -> str:
    return f"JetStream[stream={stream}" + (f", subject={subject}" if subject else "") + "]"


class _ReadConfig:
    """What every task of a read needs (pickled with the reader)."""

    def __init__(self, opts, settings):
        self.settings = settings
        self.stream = _stream_name(opts)
        self.filter = opts.get("subject") or None
        self.decode = O.opt_bool(opts, "decode", False)
        self.fail_on_data_loss = O.opt_bool(opts, "failondataloss", True)
        self.retries = O.opt_int(opts, "fetchoffset.numretries", DEFAULT_RETRIES, 0)
        self.retry_interval_ms = O.opt_int(opts, "fetchoffset.retryintervalms", DEFAULT_RETRY_INTERVAL_MS, 0)
        self.read_mode = O.opt_choice(opts, "readmode", O.READ_MODES, O.READ_MODES[0])
        self.mode = "consumer" if self.read_mode == "consumer" else ""  # how the tasks read: set on the driver

    def resolve_mode(self, m: Meta, info: dict) -> str:
        """How the tasks read (readMode on the driver, with the stream's
        ``info``): "direct" asked of a stream or server that cannot is an
        error; "auto" takes batch direct gets for a stream that allows them
        on one replica (a follower answering a direct get may lag behind
        the leader) on a server that has them, else the consumer."""
        if self.mode:
            return self.mode
        from tclnats_py.engine.js.api_level import server_level
        from tclnats_py.spark.reader import direct_refusal
        why = direct_refusal(info, m.call(server_level(m.api)))
        if self.read_mode == "direct":
            if why:
                raise make_error(why.code, f"readMode=direct: {why}; read with readMode=consumer or auto")
            self.mode = "direct"
        elif why or (info.get("config") or {}).get("num_replicas", 1) > 1:
            self.mode = "consumer"
        else:
            self.mode = "direct"
        return self.mode

    def batches(self, first, last):
        return _arrow_batches(self, first, last)

    def ask(self, fn):
        """``fn(meta)`` on a driver connection, retried as a task's read is
        (fetchOffset.numRetries / retryIntervalMs, as Kafka's driver retries
        its offset requests): a server restarting during planning is waited for."""
        from tclnats_py.spark.reader import retryable
        failures = 0
        while True:
            try:
                with _meta(self.settings) as m:
                    return fn(m)
            except Exception as e:
                if not retryable(e) or failures >= self.retries:
                    raise
                failures += 1
                log.warning("stream %s at %s: %s: %s; retry %d of %d in %d ms", self.stream,
                            self.settings.servers_text(), type(e).__name__, e, failures, self.retries,
                            self.retry_interval_ms)
                time.sleep(self.retry_interval_ms / 1000)


def _min_partitions(opts, default):
    n = O.opt_int(opts, "minpartitions", None, 1)
    p = O.opt_int(opts, "partitions", None, 1)
    if n is not None and p is not None and n != p:
        raise make_error("ErrInvalidArg", f"options minPartitions ({n}) and partitions ({p}) disagree: give one")
    return n or p or max(1, int(default or 1))


def _arrow_batches(rc: _ReadConfig, first, last):
    """Arrow record batches of first..last, one per pull batch of the blocking reader."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tclnats_py.spark.reader import read_columns
    fields = [("subject", pa.string()), ("data", pa.binary()),
              ("headers", pa.map_(pa.string(), pa.list_(pa.field("element", pa.string())))),
              ("stream", pa.string()), ("seq", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC"))]
    if rc.decode:
        fields.append(("value", pa.string()))
    schema = pa.schema(fields)
    hdr_type = fields[2][1]
    ts_ns_type = pa.timestamp("ns", tz="UTC")
    stream_value = pa.scalar(rc.stream, pa.string())
    cols_iter = read_columns(rc.settings, rc.stream, first, last, rc.filter,
                             fail_on_data_loss=rc.fail_on_data_loss, retries=rc.retries,
                             retry_interval_ms=rc.retry_interval_ms, mode=rc.mode or "consumer")
    try:
        for cols in cols_iter:
            n = len(cols["seq"])
            if not n:
                continue
            if cols["headers"]:
                hdrs = [None] * n
                for i, h in cols["headers"]:
                    hdrs[i] = list(h.items())
                headers = pa.array(hdrs, hdr_type)
            else:
                headers = pa.nulls(n, hdr_type)
            if "ts_iso" in cols:  # direct gets: RFC 3339 text, to the microsecond as the ns figures are
                ts = pa.array(cols["ts_iso"], pa.string()).cast(ts_ns_type).cast(fields[5][1], safe=False)
            else:
                ts = pc.divide(pa.array(cols["ts_ns"], pa.string()).cast(pa.int64()), 1000).cast(fields[5][1])
            arrays = [pa.array(cols["subject"], pa.string()), pa.array(cols["data"], pa.binary()), headers,
                      pa.repeat(stream_value, n),
                      pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols["seq"])]), ts]
            if rc.decode:
                arrays.append(pa.array([d.decode("utf-8", "replace") for d in cols["data"]], pa.string()))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        cols_iter.close()  # a task ended early (limit, cancel): the consumer and socket go now


class _SeqRange(InputPartition):
    def __init__(self, first, last):
        super().__init__((first, last))
        self.first = first
        self.last = last


class _BatchReader(_Shipped, DataSourceReader):
    def __init__(self, opts, parallelism):
        self.rc = _ReadConfig(opts, O.parse_conn(opts))
        self.n = _min_partitions(opts, parallelism)
        start, end = O.opt_int(opts, "startseq", None, 1), O.opt_int(opts, "endseq", None, 0)
        if start is not None and end is not None and end < start:
            raise make_error("ErrInvalidArg", f"bad range: endSeq {end} < startSeq {start}")
        self.ranges = self._plan(opts, start, end)

    def _plan(self, opts, start, end):
        return self.rc.ask(lambda m: self._plan_with(m, opts, start, end))

    def _plan_with(self, m, opts, start, end):
        rc = self.rc
        info = _stream_state(m, rc.stream)
        rc.resolve_mode(m, info)
        state = info["state"]
        # first_seq is 0 in a stream that never had a message
        first, last = max(1, state.get("first_seq", 0)), state.get("last_seq", 0)
        if start is not None:
            if start < first and start <= last:
                if rc.fail_on_data_loss:
                    raise make_error("ErrDataLoss", data_loss_message(rc.stream, start, first, "startSeq"),
                                     stream=rc.stream, expected=start, available=first)
                log.warning("stream %s: startSeq %d is below the first sequence %d: %d message(s) skipped "
                            "(failOnDataLoss=false)", rc.stream, start, first, first - start)
            first = max(first, start)
        if end is not None:
            last = min(last, end)
        if opts.get("starttime"):
            first = max(first, m.seq_at_time(rc.stream, opts["starttime"], rc.filter))
        if opts.get("endtime"):
            last = min(last, m.seq_at_time(rc.stream, opts["endtime"], rc.filter) - 1)
        if last < first:
            return []
        return m.split(rc.stream, first, last, self.n, rc.filter, stream_last=state.get("last_seq", 0))

    def partitions(self):
        if not self.ranges:
            return [_SeqRange(1, 0)]
        return [_SeqRange(a, b) for a, b in self.ranges]

    def read(self, partition):
        yield from self.rc.batches(partition.first, partition.last)
