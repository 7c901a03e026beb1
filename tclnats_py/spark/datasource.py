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

The formats' classes are here (Spark registers them by class); the work is
in ``read`` (planning, the batch read, the tasks' Arrow batches), ``stream``
(the streaming read), ``sink`` (writes), ``kv`` (a bucket as a table) and
``workers`` (what Spark's Python processes need).  Their names used before
the split are importable from here as before.

Options are checked on the driver, before any task starts: an unknown option,
a bad value, an unknown stream or an unreachable server fails there with an
error naming the option or the server.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

if TYPE_CHECKING:  # names used in annotations only
    from pyspark.sql import SparkSession

from tclnats_py.spark import options as O
# what was defined here before it moved to the modules of each part: importable from here as before
from tclnats_py.spark.kv import _kv_connect, _KvReader  # noqa: F401
from tclnats_py.spark.read import (_UNREACHABLE, _arrow_batches, _BatchReader, _description, _meta,
                                   _min_partitions, _ReadConfig, _SeqRange, _stream_name, _stream_state,
                                   _unreachable)  # noqa: F401
from tclnats_py.spark.sink import (_NOT_ALLOWED_TO_ASK, _RESUME_MARGIN_MS, _check_target, _checkpoint_reader,
                                   _Commit, _in_commit_runner, _Resume, _StreamWriter, _task_ids,
                                   _unfinished_batches, _write_rows, _Writer)  # noqa: F401
from tclnats_py.spark.stream import _StreamReader  # noqa: F401
from tclnats_py.spark.workers import (_EXECUTOR_PROBE, _PROBE, _executor_probe, _require_pyarrow, _Shipped,
                                      _worker_python, check_executors, check_worker_python)  # noqa: F401

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


def _opts(options) -> dict:
    """Spark option names are case-insensitive: keep them lower-case."""
    return {str(k).lower(): v for k, v in dict(options).items()}


def _checked(options, known, fmt: str) -> dict:
    """The options, lower-case, after the check that each is known (an
    unknown name is echoed as it reached us, with the closest known one)."""
    opts = _opts(options)
    O.check_known(opts, known, fmt, {str(k).lower(): str(k) for k in dict(options)})
    return opts


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
