"""JetStream streams as Spark DataFrames (PySpark >= 4.2 Python Data Source API).

    import tclnats_py.spark.datasource
    tclnats_py.spark.datasource.register(spark)                  # formats "jetstream" and "jetstream-kv"

    df = (spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS")
          .option("subject", "orders.*").option("partitions", 4).load())
    q = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ORDERS")
         .option("startingoffsets", "earliest").option("maxmessagespertrigger", 10000).load())
    df.write.format("jetstream").option("servers", url).option("subject", "out.x").mode("append").save()
    kv = spark.read.format("jetstream-kv").option("servers", url).option("bucket", "SETTINGS").load()

Reading: batch reads split the stream's sequence range into partitions, each
read by its own task through an ephemeral pull consumer that is deleted when
the task ends (and expires on the server anyway), so no consumer state is left
behind.  Streaming reads use stream sequences as offsets ({"seq": next}), so a
query restarted from its checkpoint continues exactly where it stopped.

Writing: every row is published with an acknowledgement, to the row's
``subject`` column or the ``subject`` option, with optional ``headers``, and a
deterministic ``Nats-Msg-Id`` (query/batch, partition, row index, or a column
given by ``msgIdColumn``), so a retried task's messages are dropped as
duplicates by the stream.

Options are checked on the driver, before any task starts: an unknown stream,
a bad range or an unreachable server fails the query there with the error
code in the message.
"""

from __future__ import annotations

import asyncio
import datetime

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter, InputPartition,
                                    WriterCommitMessage)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tclnats_py.errors import NatsError, make_error

__all__ = ["register", "JetStreamDataSource", "KeyValueDataSource", "read_range"]

SCHEMA = ("subject string, data binary, headers map<string, array<string>>, stream string, seq long, "
          "timestamp timestamp")
KV_SCHEMA = "key string, value binary, revision long, operation string, created timestamp"
_FETCH = 1000


def register(spark) -> None:
    spark.dataSource.register(JetStreamDataSource)
    spark.dataSource.register(KeyValueDataSource)


# ------------------------------------------------------------------ helpers
def _opts(options) -> dict:
    """Spark option names are case-insensitive: keep them lower-case."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _bool(v, default=False) -> bool:
    if v is None:
        return default
    return str(v).strip().lower() in ("1", "true", "yes", "on")


def _run(coro):
    return asyncio.run(coro)


async def _connect(opts):
    import tclnats_py
    servers = opts.get("servers") or opts.get("url")
    if not servers:
        raise make_error("ErrInvalidArg", "option 'servers' is required (a NATS URL)")
    try:
        c = await tclnats_py.connect([s.strip() for s in servers.split(",")], connect_timeout=5000,
                                     max_reconnect_attempts=5, name=opts.get("name", "tclnats-spark"))
    except NatsError as e:
        raise make_error(e.code, f"NATS server unreachable at {servers}: {e}") from None
    return c, c.jetstream(domain=opts.get("domain"), api_prefix=opts.get("apiprefix"))


async def _seq_at_time(js, stream, iso, filter_subject):
    """The first stream sequence at or after a time (a one-message ephemeral consumer)."""
    cfg = {"deliver_policy": "by_start_time", "opt_start_time": iso, "ack_policy": "none",
           "inactive_threshold": 10.0, "mem_storage": True}
    if filter_subject:
        cfg["filter_subject"] = filter_subject
    cons = await js.create_consumer(stream, **cfg)
    try:
        msgs = await cons.fetch(1)
        if msgs:
            return msgs[0].metadata["stream_seq"]
        info = await js.stream_info(stream)
        return info["state"]["last_seq"] + 1
    finally:
        try:
            await js.delete_consumer(stream, cons.name)
        except NatsError:
            pass


async def read_chunks(opts, stream, first, last, filter_subject=None):
    """Messages with first <= seq <= last, as lists (one per pull) of
    ``(subject, data, headers, seq, timestamp_us)``.

    An ephemeral pull consumer (deleted at the end, and expiring on the server
    anyway) with two pull requests kept outstanding, so the server is sending
    the next batch while this one is converted.
    """
    if last < first:
        return
    from tclnats_py.engine.js.meta import seq_time_pending
    from tclnats_py.engine.js.pull import classify, pull_request_body, status_error
    c, js = await _connect(opts)
    try:
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": first, "ack_policy": "none",
               "inactive_threshold": 30.0, "mem_storage": True, "num_replicas": 1}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        cons = await js.create_consumer(stream, **cfg)
        inbox = c.new_inbox()
        sub = await c.subscribe(inbox, pending_msgs_limit=4 * _FETCH + 64)
        nxt = js.jsapi.next_subject(stream, cons.name)
        request = pull_request_body(_FETCH, expires_ns=2 * 10**9)
        c.publish(nxt, request, reply=inbox)
        c.publish(nxt, request, reply=inbox)
        try:
            chunk = []
            in_pull = 0
            while True:
                try:
                    msg = await sub.next_msg(5.0)
                except NatsError:
                    break  # nothing more within the wait: the range is done
                kind = classify(msg)
                if kind != "msg":
                    if kind == "heartbeat" or kind == "flow_control":
                        continue
                    if kind == "no_responders":
                        raise make_error("ErrStreamNotFound", f"stream {stream} or its consumer is gone")
                    err, terminal = status_error(msg)
                    if terminal or kind not in ("no_messages", "timeout", "conflict", "pin_mismatch"):
                        raise err or make_error("ErrJSResponse",
                                                f"pull on stream {stream} ended: {msg.status} {msg.description}")
                    # a pull ended (expired / no more messages): ask again unless done
                    in_pull = 0
                    if chunk:
                        yield chunk
                        chunk = []
                    if msg.status in (404, 408):
                        info = await js.consumer_info(stream, cons.name)
                        if info.get("num_pending", 0) == 0:
                            return
                    c.publish(nxt, request, reply=inbox)
                    continue
                sseq, ts, _ = seq_time_pending(msg.reply, msg.subject)
                seq = int(sseq)
                if seq > last:
                    break
                chunk.append((msg.subject, msg.data, msg.headers, seq, int(ts) // 1000))
                in_pull += 1
                if seq == last:
                    break
                if in_pull == _FETCH:
                    in_pull = 0
                    yield chunk
                    chunk = []
                    c.publish(nxt, request, reply=inbox)
            if chunk:
                yield chunk
        finally:
            try:
                await js.delete_consumer(stream, cons.name)
            except NatsError:
                pass
    finally:
        await c.close()


async def read_range(opts, stream, first, last, filter_subject=None, decode=False):
    """The same messages as DataFrame rows (tuples in the source's schema)."""
    async for chunk in read_chunks(opts, stream, first, last, filter_subject):
        for subject, data, headers, seq, ts in chunk:
            row = (subject, data, dict(headers) if headers else None, stream, seq,
                   datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=ts))
            yield row + ((data.decode("utf-8", "replace"),) if decode else ())


def _arrow_batches(opts, stream, first, last, filter_subject, decode):
    """Arrow record batches, one per fetch: no per-row conversion in Spark."""
    import pyarrow as pa
    fields = [("subject", pa.string()), ("data", pa.binary()),
              ("headers", pa.map_(pa.string(), pa.list_(pa.field("element", pa.string())))),
              ("stream", pa.string()), ("seq", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC"))]
    if decode:
        fields.append(("value", pa.string()))
    schema = pa.schema(fields)
    for chunk in _collect(lambda: read_chunks(opts, stream, first, last, filter_subject), buffer=64):
        subjects, datas, headers, seqs, tss = zip(*chunk)
        cols = [pa.array(subjects, pa.string()), pa.array(datas, pa.binary()),
                pa.array([list(h.items()) if h else None for h in headers], fields[2][1]),
                pa.array([stream] * len(chunk), pa.string()), pa.array(seqs, pa.int64()),
                pa.array(tss, pa.int64()).cast(pa.timestamp("us", tz="UTC"))]
        if decode:
            cols.append(pa.array([d.decode("utf-8", "replace") for d in datas], pa.string()))
        yield pa.RecordBatch.from_arrays(cols, schema=schema)


def _api_prefix(opts) -> str:
    from tclnats_py.engine.js.api import api_prefix
    return api_prefix(opts.get("domain"), opts.get("apiprefix"))


def _fast_arrow_batches(opts, stream, first, last, filter_subject, decode):
    """The same batches from the blocking-socket reader (tclnats_py.spark.reader)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from tclnats_py.spark.reader import read_columns as read_columns
    fields = [("subject", pa.string()), ("data", pa.binary()),
              ("headers", pa.map_(pa.string(), pa.list_(pa.field("element", pa.string())))),
              ("stream", pa.string()), ("seq", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC"))]
    if decode:
        fields.append(("value", pa.string()))
    schema = pa.schema(fields)
    hdr_type = fields[2][1]
    stream_value = pa.scalar(stream, pa.string())
    for cols in read_columns(opts, _api_prefix(opts), stream, first, last, filter_subject):
        n = len(cols["seq"])
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
        if decode:
            arrays.append(pa.array([d.decode("utf-8", "replace") for d in cols["data"]], pa.string()))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _collect(agen_factory, buffer: int = 20000):
    """Rows of an async generator, consumed from a plain iterator: the event
    loop runs in its own thread and hands rows over through a bounded queue."""
    import queue
    import threading
    q: "queue.Queue" = queue.Queue(maxsize=buffer)
    done = object()
    failure = []

    def pump():
        async def go():
            async for r in agen_factory():
                q.put(r)
        try:
            asyncio.run(go())
        except BaseException as e:  # handed to the consuming thread
            failure.append(e)
        finally:
            q.put(done)

    t = threading.Thread(target=pump, name="tclnats-spark-read", daemon=True)
    t.start()
    while True:
        r = q.get()
        if r is done:
            break
        yield r
    t.join()
    if failure:
        raise failure[0]


class _SeqRange(InputPartition):
    def __init__(self, first, last):
        super().__init__((first, last))
        self.first = first
        self.last = last


# ------------------------------------------------------------------ the source
class JetStreamDataSource(DataSource):
    """format("jetstream"): read (batch, streaming) and write a JetStream stream."""

    @classmethod
    def name(cls):
        return "jetstream"

    def schema(self):
        if _bool(self.options.get("decode")):
            return SCHEMA + ", value string"
        return SCHEMA

    def reader(self, schema):
        return _BatchReader(_opts(self.options))

    def streamReader(self, schema):
        return _StreamReader(_opts(self.options))

    def writer(self, schema, overwrite):
        return _Writer(_opts(self.options), schema)

    def streamWriter(self, schema, overwrite):
        return _StreamWriter(_opts(self.options), schema)


class _BatchReader(DataSourceReader):
    def __init__(self, opts):
        self.opts = opts
        self.stream = opts.get("stream")
        if not self.stream:
            raise make_error("ErrInvalidArg", "option 'stream' is required")
        self.filter = opts.get("subject")
        self.decode = _bool(opts.get("decode"))
        self.first, self.last = _run(self._range())

    async def _range(self):
        c, js = await _connect(self.opts)
        try:
            try:
                state = (await js.stream_info(self.stream))["state"]
            except NatsError as e:
                raise make_error(e.code, f"stream {self.stream}: {e}") from None
            first, last = state.get("first_seq", 1), state.get("last_seq", 0)
            o = self.opts
            if o.get("startseq"):
                first = max(first, int(o["startseq"]))
            if o.get("endseq"):
                last = min(last, int(o["endseq"]))
            if o.get("starttime"):
                first = max(first, await _seq_at_time(js, self.stream, o["starttime"], self.filter))
            if o.get("endtime"):
                last = min(last, await _seq_at_time(js, self.stream, o["endtime"], self.filter) - 1)
            if o.get("startseq") and o.get("endseq") and int(o["endseq"]) < int(o["startseq"]):
                raise make_error("ErrInvalidArg", f"bad range: endSeq {o['endseq']} < startSeq {o['startseq']}")
            return first, last
        finally:
            await c.close()

    def partitions(self):
        n = max(1, int(self.opts.get("partitions", 2)))
        total = self.last - self.first + 1
        if total <= 0:
            return [_SeqRange(1, 0)]
        size = -(-total // n)
        return [_SeqRange(s, min(s + size - 1, self.last)) for s in range(self.first, self.last + 1, size)]

    def read(self, partition):
        from tclnats_py.spark.reader import eligible as eligible
        batches = _fast_arrow_batches if eligible(self.opts) else _arrow_batches
        yield from batches(self.opts, self.stream, partition.first, partition.last, self.filter, self.decode)


class _StreamReader(DataSourceStreamReader):
    def __init__(self, opts):
        self.opts = opts
        self.stream = opts.get("stream")
        if not self.stream:
            raise make_error("ErrInvalidArg", "option 'stream' is required")
        self.filter = opts.get("subject")
        self.decode = _bool(opts.get("decode"))
        mx = opts.get("maxmessagespertrigger")
        self.max_per_trigger = int(mx) if mx else None
        self._state()  # fails here, on the driver, for a bad stream or server

    def _state(self):
        async def go():
            c, js = await _connect(self.opts)
            try:
                try:
                    return (await js.stream_info(self.stream))["state"]
                except NatsError as e:
                    raise make_error(e.code, f"stream {self.stream}: {e}") from None
            finally:
                await c.close()
        return _run(go())

    def initialOffset(self):
        start = str(self.opts.get("startingoffsets", "earliest"))
        state = self._state()
        if start == "earliest":
            return {"seq": state.get("first_seq", 1)}
        if start == "latest":
            return {"seq": state.get("last_seq", 0) + 1}
        if start.startswith("seq:"):
            return {"seq": int(start[4:])}
        if start.startswith("time:"):
            async def go():
                c, js = await _connect(self.opts)
                try:
                    return await _seq_at_time(js, self.stream, start[5:], self.filter)
                finally:
                    await c.close()
            return {"seq": _run(go())}
        raise make_error("ErrInvalidArg", f"startingOffsets must be earliest, latest, seq:N or time:ISO, not {start}")

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger else ReadAllAvailable()

    def latestOffset(self, start, limit):
        end = self._state().get("last_seq", 0) + 1
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["seq"] + limit.max_rows)
        return {"seq": max(end, start["seq"])}

    def partitions(self, start, end):
        first, last = start["seq"], end["seq"] - 1
        if last < first:
            return []
        n = max(1, int(self.opts.get("partitions", 1)))
        size = -(-(last - first + 1) // n)
        return [_SeqRange(s, min(s + size - 1, last)) for s in range(first, last + 1, size)]

    def read(self, partition):
        from tclnats_py.spark.reader import eligible as eligible
        batches = _fast_arrow_batches if eligible(self.opts) else _arrow_batches
        yield from batches(self.opts, self.stream, partition.first, partition.last, self.filter, self.decode)

    def commit(self, end):
        pass  # nothing held on the server: offsets live in Spark's checkpoint


# ------------------------------------------------------------------ writing
class _Commit(WriterCommitMessage):
    def __init__(self, published, duplicates):
        self.published = published
        self.duplicates = duplicates


def _write_rows(opts, columns, rows, id_base):
    subject_opt = opts.get("subject")
    msg_id_col = opts.get("msgidcolumn")

    async def go():
        c, js = await _connect(opts)
        published = duplicates = 0
        try:
            futs = []
            for i, row in enumerate(rows):
                d = row.asDict() if hasattr(row, "asDict") else dict(zip(columns, row))
                subject = d.get("subject") or subject_opt
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
    return _run(go())


def _task_ids():
    from pyspark import TaskContext
    tc = TaskContext.get()
    if tc is None:
        return 0, None
    return tc.partitionId(), tc.getLocalProperty("streaming.sql.batchId")


class _Writer(DataSourceWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.columns = [f.name for f in schema.fields]
        # a stable name for this write: given, or derived from the options
        self.write_id = opts.get("writeid") or "w"

    def write(self, iterator):
        partition, _ = _task_ids()
        return _write_rows(self.opts, self.columns, iterator, f"{self.write_id}-{partition}")


class _StreamWriter(DataSourceStreamWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.columns = [f.name for f in schema.fields]
        self.write_id = opts.get("writeid") or "s"

    def write(self, iterator):
        partition, batch = _task_ids()
        return _write_rows(self.opts, self.columns, iterator, f"{self.write_id}-{batch}-{partition}")

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
        return KV_SCHEMA

    def reader(self, schema):
        return _KvReader(_opts(self.options))


class _KvReader(DataSourceReader):
    def __init__(self, opts):
        self.opts = opts
        self.bucket = opts.get("bucket")
        if not self.bucket:
            raise make_error("ErrInvalidArg", "option 'bucket' is required")

        async def check():
            c, js = await _connect(opts)
            try:
                await js.key_value(self.bucket)
            finally:
                await c.close()
        _run(check())

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        history = _bool(self.opts.get("history"))

        async def entries():
            c, js = await _connect(self.opts)
            try:
                kv = await js.key_value(self.bucket)
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

