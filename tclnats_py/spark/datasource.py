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
the stream while two different writes never collide.  A micro-batch that a
restarted query runs again (planned in its checkpoint, not committed) first
reads the message ids its interrupted attempt left in the target stream and
publishes only the other rows, so a restart later than the stream's
duplicate window publishes no row twice (``_unfinished_batches``, ``_Resume``).
Where the rows go is checked on the driver at save()/start() (``_check_target``).

Options are checked on the driver, before any task starts: an unknown option,
a bad value, an unknown stream or an unreachable server fails there with an
error naming the option or the server.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import time
import types
import uuid
from typing import Optional
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
    check_worker_python(_worker_python(spark))
    check_executors(spark)
    # a class of this name that is not the module's: pickled by value, with the figure
    js = type("JetStreamDataSource", (JetStreamDataSource,),
              {"default_parallelism": parallelism, "__module__": __name__, "__qualname__": "JetStreamDataSource"})
    spark.dataSource.register(js)
    spark.dataSource.register(KeyValueDataSource)


def _worker_python(spark):
    """The Python that Spark starts for its workers and planners: the one PySpark
    ships with its Python functions (PYSPARK_PYTHON, else python3), else the
    spark.pyspark.python setting."""
    import os
    try:
        sc = spark.sparkContext
        return (getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON")
                or sc.getConf().get("spark.pyspark.python", None) or "python3")
    except Exception as e:  # Spark Connect has no sparkContext: the server's side is not ours to run
        log.info("no worker Python to check from this session (%s)", e)
        return None


_PROBE = """
import sys
try:
    import pyarrow
except ImportError as e:
    print("NO-PYARROW", e)
try:
    import tclnats_py
    print("VERSION", tclnats_py.__version__, tclnats_py.__file__)
except ImportError as e:
    print("NO-TCLNATS", e)
"""


def check_worker_python(python) -> None:
    """Spark's Python workers need pyarrow and the driver's tclnats_py version;
    without pyarrow a worker dies ("Python worker exited unexpectedly (crashed)")
    or a write fails with pyspark's ModuleNotFoundError.  Checked once here, on
    the driver, by running that Python (the copy on the driver's host: on a
    cluster each executor host needs the same)."""
    import os
    import shutil
    import subprocess

    import tclnats_py
    if not python:
        return
    exe = python if os.path.sep in python else shutil.which(python)
    if not exe or not os.path.exists(exe):
        log.info("Spark's worker Python %r is not on this host: not checked", python)
        return
    try:
        r = subprocess.run([exe, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("could not run Spark's worker Python %s to check it: %s", exe, e)
        return
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] if " " in ln else "" for ln in r.stdout.splitlines()}
    fix = "pip install 'tclnats_py[spark]'"
    if "NO-PYARROW" in lines:
        raise ImportError(f"pyarrow is missing in Spark's worker Python {python} ({lines['NO-PYARROW']}): "
                          f"PySpark's Python data sources need it; install it there with {fix}")
    if "NO-TCLNATS" in lines:
        raise ImportError(f"tclnats_py is missing in Spark's worker Python {python}: install it there with {fix}")
    if "VERSION" in lines:
        version = lines["VERSION"].split(" ", 1)[0]
        if version != tclnats_py.__version__:
            raise ImportError(f"Spark's worker Python {python} has tclnats_py {lines['VERSION']}, the driver "
                              f"{tclnats_py.__version__}: install the same version in both "
                              f"({fix.rstrip(chr(39))}=={tclnats_py.__version__}')")
    elif r.returncode:
        log.warning("Spark's worker Python %s failed its check (exit %d): %s", exe, r.returncode, r.stderr[-500:])


# what each executor's Python worker runs for check_executors: compiled here
# with a module name that no worker can import, so that Spark's cloudpickle
# ships the function itself (a function of this module would need tclnats_py
# on the executor just to be unpickled, which is one of the things checked)
_EXECUTOR_PROBE = """
def probe(_partition):
    import socket
    import sys
    host = socket.gethostname()
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        yield (host, sys.executable, "pyarrow", str(e))
    try:
        import tclnats_py
    except ImportError as e:
        yield (host, sys.executable, "tclnats_py", str(e))
    else:
        yield (host, sys.executable, "version", tclnats_py.__version__)
"""


def _executor_probe():
    namespace: dict = {"__name__": "tclnats_py_executor_probe"}
    exec(compile(_EXECUTOR_PROBE, "<tclnats_py executor probe>", "exec"), namespace)
    return namespace["probe"]


def check_executors(spark) -> None:
    """On a cluster (a master that is not local[...]), the executors' Python
    workers run on other hosts, with their own Python: one small job, a
    partition per default-parallelism slot, asks each of them for pyarrow and
    tclnats_py's version, so that a host set up otherwise fails here, on the
    driver, naming the host and the fix, instead of a task failing later with
    pyspark's ModuleNotFoundError.  TCLNATS_SPARK_CHECK_EXECUTORS=0 skips it."""
    import os

    import tclnats_py
    if os.environ.get("TCLNATS_SPARK_CHECK_EXECUTORS", "1") == "0":
        return
    try:
        sc = spark.sparkContext
        master = sc.master or ""
        slots = max(1, int(sc.defaultParallelism))
    except Exception as e:  # Spark Connect: the executors are the server's
        log.info("executors not checked (%s)", e)
        return
    if master.startswith("local[") or master == "local":
        return  # the workers run on this host: check_worker_python covered them
    answers = set(sc.parallelize(range(slots), slots).mapPartitions(_executor_probe()).collect())
    fix = "pip install 'tclnats_py[spark]'"
    for host, exe, what, detail in sorted(answers):
        if what == "pyarrow":
            raise ImportError(f"pyarrow is missing in the Python of Spark's executor on {host} ({exe}: {detail}): "
                              f"PySpark's Python data sources need it; install it there with {fix}")
        if what == "tclnats_py":
            raise ImportError(f"tclnats_py is missing in the Python of Spark's executor on {host} ({exe}): "
                              f"install it there with {fix}")
        if detail != tclnats_py.__version__:
            raise ImportError(f"Spark's executor on {host} ({exe}) has tclnats_py {detail}, the driver "
                              f"{tclnats_py.__version__}: install the same version on both "
                              f"(pip install 'tclnats_py[spark]=={tclnats_py.__version__}')")


# ------------------------------------------------------------------ helpers
def _opts(options) -> dict:
    """Spark option names are case-insensitive: keep them lower-case."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _checked(options, known, fmt: str) -> dict:
    """The options, lower-case, after the check that each is known (an
    unknown name is echoed as it reached us, with the closest known one)."""
    opts = _opts(options)
    O.check_known(opts, known, fmt, {str(k).lower(): str(k) for k in dict(options)})
    return opts


def _require_pyarrow(where: str) -> None:
    """PySpark's Python data sources exchange Arrow batches: without pyarrow the
    Python worker dies with 'Python worker exited unexpectedly (crashed)'.
    Say so here instead, naming the fix."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        import sys
        raise ImportError(f"pyarrow is missing in the Python that Spark runs {where} ({sys.executable}): "
                          f"install it there with pip install 'tclnats_py[spark]'") from e


class _Shipped:
    """A reader or writer that Spark pickles on the driver and unpickles in
    each Python worker: it carries the driver's tclnats_py version, and its
    unpickling checks pyarrow and that version, so a worker set up otherwise
    fails with the fix instead of a crash or a mismatch of pickled state."""

    def __getstate__(self):
        import tclnats_py
        state = dict(self.__dict__)
        state["_driver_version"] = tclnats_py.__version__
        return state

    def __setstate__(self, state):
        import tclnats_py
        driver = state.pop("_driver_version", None)
        if driver is not None and driver != tclnats_py.__version__:
            import os
            raise make_error("ErrInvalidArg", f"tclnats_py {tclnats_py.__version__} in this Spark worker "
                             f"({os.path.dirname(tclnats_py.__file__)}) but {driver} on the driver: install the "
                             f"same version on the driver and the workers (pip install 'tclnats_py[spark]=={driver}')")
        _require_pyarrow("for its tasks")
        self.__dict__.update(state)


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
        # at load(): options of any use are checked here, the stream too when reading
        opts = _checked(self.options, set(O.KNOWN_READ) | set(O.KNOWN_STREAM) | set(O.KNOWN_WRITE), "jetstream")
        _require_pyarrow("for data sources")  # this runs in that Python (a planner process of the driver)
        O.check_values(opts)
        settings = O.parse_conn(opts)
        if opts.get("stream"):
            with _meta(settings) as m:
                _stream_state(m, opts["stream"])
        if O.opt_bool(opts, "decode", False):
            return SCHEMA + ", value string"
        return SCHEMA

    def reader(self, schema):
        opts = _checked(self.options, O.KNOWN_READ, "jetstream (batch read)")
        return _BatchReader(opts, self.default_parallelism)

    def streamReader(self, schema):
        opts = _checked(self.options, O.KNOWN_STREAM, "jetstream (streaming read)")
        return _StreamReader(opts, self.default_parallelism)

    def writer(self, schema, overwrite):
        opts = _checked(self.options, O.KNOWN_WRITE, "jetstream (write)")
        return _Writer(opts, schema)

    def streamWriter(self, schema, overwrite):
        opts = _checked(self.options, O.KNOWN_WRITE, "jetstream (streaming write)")
        return _StreamWriter(opts, schema)


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
    def __init__(self, published, duplicates, skipped=0):
        self.published = published
        self.duplicates = duplicates
        self.skipped = skipped  # rows an interrupted run had written already (a re-run batch)


def _in_commit_runner() -> bool:
    """Whether Spark made this writer to commit a micro-batch (it makes one per
    commit, in pyspark.sql.worker.python_streaming_sink_runner) rather than to
    start the query: the checks against the server were made at start()."""
    import sys
    f: Optional[types.FrameType] = sys._getframe(1)
    while f is not None:
        if f.f_globals.get("__name__") == "pyspark.sql.worker.python_streaming_sink_runner":
            return True
        f = f.f_back
    return False


def _check_target(opts, schema, settings) -> None:
    """Where the rows go, checked on the driver at save() / start(): a literal
    ``subject`` option must be a subject to publish to that a stream captures;
    without it the rows need a string column ``subject`` (its values are the
    tasks' to check: the driver does not read the data)."""
    from pyspark.sql.types import StringType

    from tclnats_py.engine.subjects import valid_subject
    fields = {f.name: f for f in schema.fields}
    id_col = opts.get("msgidcolumn")
    if id_col and id_col not in fields:
        raise make_error("ErrInvalidArg", f"option msgIdColumn: no column {id_col!r} (the columns are "
                         f"{', '.join(fields) or 'none'})")
    subject = opts.get("subject")
    if subject:
        subject = str(subject)
        if not valid_subject(subject):
            raise make_error("ErrBadSubject", f"option subject: {subject!r} is not a subject to publish to "
                             f"(no wildcards * or >, no spaces, no empty tokens)")
        try:
            with _meta(settings) as m:
                streams = m.call(m.api.stream_names(subject))
        except NatsError as e:
            if e.code not in _NOT_ALLOWED_TO_ASK:
                raise
            # an account that may publish but not list streams: its publishes tell
            log.warning("option subject %r: the streams could not be listed (%s: %s): not checked before the "
                        "write", subject, e.code, e)
            return
        if not streams:
            raise make_error("ErrStreamNotFound", f"no stream captures subject {subject!r} (option subject) at "
                             f"{settings.servers_text()}: create a stream with that subject, or correct the subject")
        return
    f = fields.get("subject")
    if f is None:
        raise make_error("ErrBadSubject", f"rows without a subject: give the option subject or a string column "
                         f"'subject' (the columns are {', '.join(fields) or 'none'})")
    if not isinstance(f.dataType, StringType):
        raise make_error("ErrBadSubject", f"column subject must be a string, not {f.dataType.simpleString()}")


# a JetStream API request that the account may not make (or that got no answer in time)
_NOT_ALLOWED_TO_ASK = frozenset(("ErrPermissions", "ErrAuthorization", "ErrTimeout"))

# how long before a batch's start (by Spark's clock) its messages are looked for (the server's clock may differ)
_RESUME_MARGIN_MS = 60_000


def _checkpoint_reader(ckpt: str):
    """(list_dir, read_file) for a checkpoint location: a local path or file: URI
    directly, anything else through pyarrow.fs (s3://, gs://, hdfs:// ...)."""
    import os
    import urllib.parse
    if "://" not in ckpt or ckpt.startswith("file:"):
        path = urllib.parse.urlsplit(ckpt).path if ckpt.startswith("file:") else ckpt

        def list_local(sub):
            try:
                return os.listdir(os.path.join(path, sub))
            except FileNotFoundError:
                return []

        def read_local(sub):
            try:
                with open(os.path.join(path, sub), encoding="utf-8") as f:
                    return f.read()
            except FileNotFoundError:
                return None
        return list_local, read_local
    import pyarrow.fs as pafs
    fs, root = pafs.FileSystem.from_uri(ckpt.replace("s3a://", "s3://", 1))

    def list_remote(sub):
        infos = fs.get_file_info(pafs.FileSelector(f"{root}/{sub}", allow_not_found=True))
        return [i.base_name for i in infos]

    def read_remote(sub):
        if fs.get_file_info(f"{root}/{sub}").type == pafs.FileType.NotFound:
            return None
        with fs.open_input_stream(f"{root}/{sub}") as f:
            return f.read().decode("utf-8")
    return list_remote, read_remote


def _unfinished_batches(ckpt):
    """The micro-batches that a streaming query's checkpoint planned (offsets/N)
    but did not commit (no commits/N): the batches a restarted query runs again.

    ``{"query": id, "batches": {N: batchTimestampMs}}``, or None when there is
    none.  Their tasks look in the target stream for what the interrupted run
    wrote, so a re-run past the stream's duplicate window publishes each row once."""
    if not ckpt:
        log.warning("streaming write without the option checkpointLocation: a micro-batch run again after a "
                    "restart is deduplicated only within the target stream's duplicate_window")
        return None
    try:
        list_dir, read = _checkpoint_reader(str(ckpt))
        meta = read("metadata")
        if meta is None:
            return None  # a new query
        query = json.loads(meta.splitlines()[0])["id"]
        offsets = [int(n) for n in list_dir("offsets") if n.isdigit()]
        commits = [int(n) for n in list_dir("commits") if n.isdigit()]
        done = max(commits, default=-1)
        batches = {}
        for n in sorted(b for b in offsets if b > done):
            lines = (read(f"offsets/{n}") or "").splitlines()
            try:
                batches[n] = int(json.loads(lines[1])["batchTimestampMs"])
            except (IndexError, KeyError, ValueError) as e:
                log.warning("checkpoint %s: offsets/%d has no batchTimestampMs (%s): its re-run looks through "
                            "the whole target stream", ckpt, n, e)
                batches[n] = 0
    except Exception as e:  # the protection is lost, not the write: say so
        log.warning("cannot read the checkpoint %s (%s: %s): a micro-batch run again after a restart is "
                    "deduplicated only within the target stream's duplicate_window", ckpt, type(e).__name__, e)
        return None
    if not batches:
        return None
    log.info("checkpoint %s: query %s runs batch(es) %s again (planned, not committed)", ckpt, query,
             sorted(batches))
    return {"query": query, "batches": batches}


class _Resume:
    """What an interrupted run of this task (same query, batch and partition)
    already wrote: the message ids in the target stream's messages since the
    batch began, read headers only by the blocking reader; one look per stream."""

    def __init__(self, settings, since_ms, prefix, subject_filter, where):
        self.settings = settings
        self.since_ms = max(0, since_ms)
        self.prefix = prefix            # None with msgIdColumn: every id counts
        self.filter = subject_filter    # the literal subject option, if any
        self.where = where
        self.by_subject = {}
        self.by_stream = {}

    async def written(self, subject):
        ids = self.by_subject.get(subject)
        if ids is None:
            ids = await asyncio.to_thread(self._look, subject)
            self.by_subject[subject] = ids
        return ids

    def _look(self, subject):
        try:
            return self._read_ids(subject)
        except NatsError as e:
            if e.code not in _NOT_ALLOWED_TO_ASK:
                raise
            log.warning("%s is a re-run but the stream of subject %r could not be read (%s: %s): its rows are "
                        "published again, deduplicated only within the stream's duplicate_window",
                        self.where, subject, e.code, e)
            return frozenset()

    def _read_ids(self, subject):
        from tclnats_py.spark.reader import read_columns
        with Meta(self.settings) as m:
            streams = m.call(m.api.stream_names(subject))
            if not streams:
                return frozenset()  # its publish fails, naming the subject
            stream = streams[0]
            if stream in self.by_stream:
                return self.by_stream[stream]
            last = int(m.stream_info(stream)["state"].get("last_seq", 0))
            since = datetime.datetime.fromtimestamp(self.since_ms / 1000, datetime.timezone.utc)
            first = m.seq_at_time(stream, since.isoformat(), self.filter)
        ids = set()
        seen = 0
        for cols in read_columns(self.settings, stream, first, last, self.filter, headers_only=True):
            seen += len(cols["seq"])
            for _, h in cols["headers"]:
                v = h.get("Nats-Msg-Id")
                if isinstance(v, (list, tuple)):
                    v = v[0] if v else None
                if v and (self.prefix is None or v.startswith(self.prefix)):
                    ids.add(v)
        log.info("%s is a re-run: %d of its messages are in stream %s already (%d messages looked at, "
                 "sequences %d..%d)", self.where, len(ids), stream, seen, first, last)
        self.by_stream[stream] = ids
        return ids


def _write_rows(settings, opts, columns, rows, id_base, where, resume=None):
    subject_opt = opts.get("subject")
    msg_id_col = opts.get("msgidcolumn")
    if msg_id_col and msg_id_col not in columns:
        raise make_error("ErrInvalidArg", f"option msgIdColumn: no column {msg_id_col!r} (columns: {columns})")

    async def settle(futs, counts):
        for subject, i, f in futs:
            try:
                ack = await f
            except NatsError as e:
                if e.code == "ErrNoResponders":
                    raise make_error("ErrNoResponders", f"no stream captures subject {subject!r} (row {i} of "
                                     f"{where}; its publish got no responders): create a stream with that "
                                     f"subject, or correct the subject") from None
                raise make_error(e.code, f"publishing row {i} of {where} to {subject!r}: {e}") from None
            counts[0] += 1
            counts[1] += bool(ack.get("duplicate"))
        futs.clear()

    async def go():
        import tclnats_py
        try:
            c = await tclnats_py.connect(settings.servers, **settings.connect_kwargs())
        except NatsError as e:
            raise _unreachable(settings, e) from None
        js = c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)
        counts = [0, 0]  # published, duplicates
        skipped = 0
        try:
            futs = []
            for i, row in enumerate(rows):
                d = row.asDict() if hasattr(row, "asDict") else dict(zip(columns, row))
                subject = subject_opt or d.get("subject")  # the option wins, as Kafka's topic
                if not subject:
                    raise make_error("ErrBadSubject", f"row {i} of {where} has no subject (its column subject "
                                     f"is {d.get('subject')!r}): give every row a subject, or the option subject")
                msg_id = str(d[msg_id_col]) if msg_id_col else f"{id_base}-{i}"
                if resume is not None and msg_id in await resume.written(subject):
                    skipped += 1
                    continue
                data = d.get("data")
                if data is None:
                    data = d.get("value", b"")
                if isinstance(data, str):
                    data = data.encode()
                headers = d.get("headers") or None
                if headers:
                    headers = {k: list(v) if isinstance(v, (list, tuple)) else [str(v)] for k, v in headers.items()}
                futs.append((subject, i, await js.publish_async(subject, bytes(data), headers, msg_id=msg_id)))
                if len(futs) >= 512:
                    await settle(futs, counts)
            await settle(futs, counts)
        finally:
            await c.close()
        return _Commit(counts[0], counts[1], skipped)
    return asyncio.run(go())


def _task_ids():
    from pyspark import TaskContext
    tc = TaskContext.get()
    if tc is None:
        return 0, None, None
    return tc.partitionId(), tc.getLocalProperty("streaming.sql.batchId"), tc.getLocalProperty("sql.streaming.queryId")


class _Writer(_Shipped, DataSourceWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        _check_target(opts, schema, self.settings)
        # given (an idempotent re-run), or new for this write: two writes never share ids
        self.write_id = opts.get("writeid") or uuid.uuid4().hex

    def write(self, iterator):
        partition, _, _ = _task_ids()
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{self.write_id}-{partition}",
                           f"partition {partition}")


class _StreamWriter(_Shipped, DataSourceStreamWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        self.write_id = opts.get("writeid")
        self.unfinished = None
        if not _in_commit_runner():  # at start(): the checks, and the batches run again
            _check_target(opts, schema, self.settings)
            self.unfinished = _unfinished_batches(opts.get("checkpointlocation"))

    def write(self, iterator):
        partition, batch, query = _task_ids()
        base = self.write_id or query
        if not base:
            raise make_error("ErrInvalidArg", "no streaming query id in the task (sql.streaming.queryId): "
                             "give the option writeId")
        where = f"partition {partition} of batch {batch}"
        resume = None
        u = self.unfinished
        if u and batch is not None and int(batch) in u["batches"] and (self.write_id or query == u["query"]):
            prefix = None if self.opts.get("msgidcolumn") else f"{base}-{batch}-{partition}-"
            resume = _Resume(self.settings, u["batches"][int(batch)] - _RESUME_MARGIN_MS, prefix,
                             self.opts.get("subject") or None, where)
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{base}-{batch}-{partition}", where,
                           resume)

    def commit(self, messages, batchId):
        done = [m for m in messages if isinstance(m, _Commit)]
        skipped = sum(m.skipped for m in done)
        if skipped:
            log.info("batch %d (run again after a restart): %d row(s) were in the stream already and were not "
                     "published again; %d published", batchId, skipped, sum(m.published for m in done))

    def abort(self, messages, batchId):
        log.warning("batch %d aborted: what its tasks published stays in the stream; a restart from the "
                    "checkpoint runs the batch again and publishes only the rows that are not there", batchId)


# ------------------------------------------------------------------ KV as a table
class KeyValueDataSource(DataSource):
    """format("jetstream-kv"): the current entries of a bucket (option 'history' true: all revisions)."""

    @classmethod
    def name(cls):
        return "jetstream-kv"

    def schema(self):
        _checked(self.options, O.KNOWN_KV, "jetstream-kv")
        _require_pyarrow("for data sources")
        return KV_SCHEMA

    def reader(self, schema):
        opts = _checked(self.options, O.KNOWN_KV, "jetstream-kv")
        return _KvReader(opts)


async def _kv_connect(settings):
    import tclnats_py
    try:
        c = await tclnats_py.connect(settings.servers, **settings.connect_kwargs())
    except NatsError as e:
        raise _unreachable(settings, e) from None
    return c, c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)


class _KvReader(_Shipped, DataSourceReader):
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
