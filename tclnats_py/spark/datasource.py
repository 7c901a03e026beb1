"""JetStream streams as Spark DataFrames (PySpark >= 4.2 Python Data Source API).

    import tclnats_py.spark.datasource
    tclnats_py.spark.datasource.register(spark)                  # formats "jetstream" and "jetstream-kv"

    df = (spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS")
          .option("subject", "orders.*").option("minPartitions", 4).load())
    q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ORDERS")
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 10000).load())
    df.write.format("jetstream").option("servers", url).option("subject", "out.x").mode("append").save()
    kv = spark.read.format("jetstream-kv").option("servers", url).option("bucket", "SETTINGS").load()

Reading: the driver plans sequence ranges (split where the subject filter's
messages are, ``reader.Meta.split``); each task reads its range with the
blocking reader (``reader.read_columns``) through an ephemeral pull consumer
that is deleted when the task ends, retrying a broken connection.  Streaming
reads use stream sequences as offsets ({"seq": next}), so a query restarted
from its checkpoint continues exactly where it stopped; messages removed
below that offset fail the query (failOnDataLoss, as Kafka's).

Writing: every row is published with an acknowledgement, to the ``subject``
option or else the row's ``subject`` column (the option wins, as Kafka's
``topic``), with optional ``headers``, and a ``Nats-Msg-Id`` made of a
write id (a UUID per batch write, the query id for a streaming query, or the
``writeId`` option), the batch, partition and row index (or a column given by
``msgIdColumn``), so a retried task's messages are dropped as duplicates by
the stream while two different writes never collide.

Options are checked on the driver, before any task starts: an unknown option,
a bad value, an unknown stream or an unreachable server fails there with an
error naming the option or the server.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter, InputPartition,
                                    WriterCommitMessage)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

if TYPE_CHECKING:  # names used in annotations only
    from pyspark.sql import SparkSession

try:  # PySpark >= 4.1
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older PySpark: Spark runs availableNow as one batch
    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.reader import DEFAULT_RETRIES, DEFAULT_RETRY_INTERVAL_MS, Meta, data_loss_message

__all__ = ["register", "JetStreamDataSource", "KeyValueDataSource"]

log = logging.getLogger("tclnats_py.spark")

SCHEMA = ("subject string, data binary, headers map<string, array<string>>, stream string, seq long, "
          "timestamp timestamp")
KV_SCHEMA = "key string, value binary, revision long, operation string, created timestamp"


def register(spark: "SparkSession") -> None:
    """Register the formats on a session.  The session's default parallelism
    (the default of minPartitions) travels with the registered class, since
    the planner's Python processes have no SparkContext to ask."""
    try:
        parallelism = int(spark.sparkContext.defaultParallelism)
    except Exception as e:  # Spark Connect has no sparkContext
        log.info("no defaultParallelism from the session (%s): minPartitions defaults to 1", e)
        parallelism = 1
    # a class of this name that is not the module's: pickled by value, with the figure
    js = type("JetStreamDataSource", (JetStreamDataSource,),
              {"default_parallelism": parallelism, "__module__": __name__, "__qualname__": "JetStreamDataSource"})
    spark.dataSource.register(js)
    spark.dataSource.register(KeyValueDataSource)


# ------------------------------------------------------------------ helpers
def _opts(options) -> dict:
    """Spark option names are case-insensitive: keep them lower-case."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _stream_name(opts) -> str:
    stream = opts.get("stream")
    if not stream:
        raise make_error("ErrInvalidArg", "option 'stream' is required")
    return stream


def _meta(settings):
    try:
        return Meta(settings)
    except NatsError as e:
        raise make_error(e.code, f"NATS server unreachable at {settings.servers_text()}: {e}") from None


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
    stream_value = pa.scalar(rc.stream, pa.string())
    cols_iter = read_columns(rc.settings, rc.stream, first, last, rc.filter,
                             fail_on_data_loss=rc.fail_on_data_loss, retries=rc.retries,
                             retry_interval_ms=rc.retry_interval_ms)
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
            ts_ns = pa.array(cols["ts_ns"], pa.string()).cast(pa.int64())
            arrays = [pa.array(cols["subject"], pa.string()), pa.array(cols["data"], pa.binary()), headers,
                      pa.repeat(stream_value, n),
                      pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols["seq"])]),
                      pc.divide(ts_ns, 1000).cast(fields[5][1])]
            if rc.decode:
                arrays.append(pa.array([d.decode("utf-8", "replace") for d in cols["data"]], pa.string()))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        cols_iter.close()  # a task ended early (limit, cancel): the consumer and socket go now


def _collect(agen_factory, buffer: int = 256):
    """Items of an async generator, consumed from a plain iterator.

    The event loop runs in its own thread; items cross through an
    asyncio.Queue that the loop awaits (it never blocks its own loop) and the
    consuming thread reads with run_coroutine_threadsafe.  Closing the
    iterator early cancels the producer, which closes the generator (and so
    its connection) before the loop stops."""
    import threading
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, name="tclnats-spark-read", daemon=True)
    t.start()
    done = object()

    async def produce(q):
        agen = agen_factory()
        try:
            async for r in agen:
                await q.put(r)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # handed to the consuming thread
            await q.put((done, e))
            return
        finally:
            await agen.aclose()
        await q.put((done, None))

    async def start():
        q = asyncio.Queue(buffer)
        return q, asyncio.ensure_future(produce(q))

    async def stop(task):
        if not task.done():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except BaseException as e:  # the producer failed on its way out: say so, it is not lost
            log.warning("the reader's producer ended with %r", e)
        await loop.shutdown_asyncgens()

    q, task = asyncio.run_coroutine_threadsafe(start(), loop).result()
    try:
        while True:
            r = asyncio.run_coroutine_threadsafe(q.get(), loop).result()
            if isinstance(r, tuple) and len(r) == 2 and r[0] is done:
                if r[1] is not None:
                    raise r[1]
                break
            yield r
    finally:
        try:
            asyncio.run_coroutine_threadsafe(stop(task), loop).result(30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            t.join(10)
            loop.close()


class _SeqRange(InputPartition):
    def __init__(self, first, last):
        super().__init__((first, last))
        self.first = first
        self.last = last


# ------------------------------------------------------------------ the source
class JetStreamDataSource(DataSource):
    """format("jetstream"): read (batch, streaming) and write a JetStream stream."""

    default_parallelism = 1  # register() ships the session's figure

    @classmethod
    def name(cls):
        return "jetstream"

    def schema(self):
        opts = _opts(self.options)
        # at load(): options of any use are checked here, the stream too when reading
        O.check_known(opts, set(O.KNOWN_READ) | set(O.KNOWN_STREAM) | set(O.KNOWN_WRITE), "jetstream")
        O.check_values(opts)
        settings = O.parse_conn(opts)
        if opts.get("stream"):
            with _meta(settings) as m:
                _stream_state(m, opts["stream"])
        if O.opt_bool(opts, "decode", False):
            return SCHEMA + ", value string"
        return SCHEMA

    def reader(self, schema):
        opts = _opts(self.options)
        O.check_known(opts, O.KNOWN_READ, "jetstream (batch read)")
        return _BatchReader(opts, self.default_parallelism)

    def streamReader(self, schema):
        opts = _opts(self.options)
        O.check_known(opts, O.KNOWN_STREAM, "jetstream (streaming read)")
        return _StreamReader(opts, self.default_parallelism)

    def writer(self, schema, overwrite):
        opts = _opts(self.options)
        O.check_known(opts, O.KNOWN_WRITE, "jetstream (write)")
        return _Writer(opts, schema)

    def streamWriter(self, schema, overwrite):
        opts = _opts(self.options)
        O.check_known(opts, O.KNOWN_WRITE, "jetstream (streaming write)")
        return _StreamWriter(opts, schema)


class _BatchReader(DataSourceReader):
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
        state = _stream_state(m, rc.stream)["state"]
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


class _StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
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
        pass  # nothing held on the server: offsets live in Spark's checkpoint


# ------------------------------------------------------------------ writing
class _Commit(WriterCommitMessage):
    def __init__(self, published, duplicates):
        self.published = published
        self.duplicates = duplicates


def _write_rows(settings, opts, columns, rows, id_base):
    subject_opt = opts.get("subject")
    msg_id_col = opts.get("msgidcolumn")
    if msg_id_col and msg_id_col not in columns:
        raise make_error("ErrInvalidArg", f"option msgIdColumn: no column {msg_id_col!r} (columns: {columns})")

    async def go():
        import tclnats_py
        try:
            c = await tclnats_py.connect(settings.servers, **settings.connect_kwargs())
        except NatsError as e:
            raise make_error(e.code, f"NATS server unreachable at {settings.servers_text()}: {e}") from None
        js = c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)
        published = duplicates = 0
        try:
            futs = []
            for i, row in enumerate(rows):
                d = row.asDict() if hasattr(row, "asDict") else dict(zip(columns, row))
                subject = subject_opt or d.get("subject")  # the option wins, as Kafka's topic
                if not subject:
                    raise make_error("ErrInvalidArg", "rows need a 'subject' column or the 'subject' option")
                data = d.get("data")
                if data is None:
                    data = d.get("value", b"")
                if isinstance(data, str):
                    data = data.encode()
                headers = d.get("headers") or None
                if headers:
                    headers = {k: list(v) if isinstance(v, (list, tuple)) else [str(v)] for k, v in headers.items()}
                msg_id = str(d[msg_id_col]) if msg_id_col else f"{id_base}-{i}"
                futs.append(await js.publish_async(subject, bytes(data), headers, msg_id=msg_id))
                if len(futs) >= 512:
                    for f in futs:
                        ack = await f
                        published += 1
                        duplicates += bool(ack.get("duplicate"))
                    futs = []
            for f in futs:
                ack = await f
                published += 1
                duplicates += bool(ack.get("duplicate"))
        finally:
            await c.close()
        return _Commit(published, duplicates)
    return asyncio.run(go())


def _task_ids():
    from pyspark import TaskContext
    tc = TaskContext.get()
    if tc is None:
        return 0, None, None
    return tc.partitionId(), tc.getLocalProperty("streaming.sql.batchId"), tc.getLocalProperty("sql.streaming.queryId")


class _Writer(DataSourceWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        # given (an idempotent re-run), or new for this write: two writes never share ids
        self.write_id = opts.get("writeid") or uuid.uuid4().hex

    def write(self, iterator):
        partition, _, _ = _task_ids()
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{self.write_id}-{partition}")


class _StreamWriter(DataSourceStreamWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        self.write_id = opts.get("writeid")

    def write(self, iterator):
        partition, batch, query = _task_ids()
        base = self.write_id or query
        if not base:
            raise make_error("ErrInvalidArg", "no streaming query id in the task (sql.streaming.queryId): "
                             "give the option writeId")
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{base}-{batch}-{partition}")

    def commit(self, messages, batchId):
        pass

    def abort(self, messages, batchId):
        pass


# ------------------------------------------------------------------ KV as a table
class KeyValueDataSource(DataSource):
    """format("jetstream-kv"): the current entries of a bucket (option 'history' true: all revisions)."""

    @classmethod
    def name(cls):
        return "jetstream-kv"

    def schema(self):
        O.check_known(_opts(self.options), O.KNOWN_KV, "jetstream-kv")
        return KV_SCHEMA

    def reader(self, schema):
        opts = _opts(self.options)
        O.check_known(opts, O.KNOWN_KV, "jetstream-kv")
        return _KvReader(opts)


async def _kv_connect(settings):
    import tclnats_py
    try:
        c = await tclnats_py.connect(settings.servers, **settings.connect_kwargs())
    except NatsError as e:
        raise make_error(e.code, f"NATS server unreachable at {settings.servers_text()}: {e}") from None
    return c, c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)


class _KvReader(DataSourceReader):
    def __init__(self, opts):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.history = O.opt_bool(opts, "history", False)
        self.bucket = opts.get("bucket")
        if not self.bucket:
            raise make_error("ErrInvalidArg", "option 'bucket' is required")

        async def check():
            c, js = await _kv_connect(self.settings)
            try:
                await js.key_value(self.bucket)
            finally:
                await c.close()
        asyncio.run(check())

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        history, settings, bucket = self.history, self.settings, self.bucket

        async def entries():
            c, js = await _kv_connect(settings)
            try:
                kv = await js.key_value(bucket)
                agen = kv.watch(">", include_history=history)
                try:
                    async for e in agen:
                        if e is None:
                            break
                        yield (e.key, e.value, e.revision, e.operation,
                               datetime.datetime.fromtimestamp(e.created / 1000, datetime.timezone.utc))
                finally:
                    await agen.aclose()
            finally:
                await c.close()
        yield from _collect(entries)
