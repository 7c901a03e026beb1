"""What every Spark test module needs: skip without pyspark, pyarrow or java,
and a Spark session with the jetstream formats registered.

    from tests.spark_fixtures import session, tspark
    @pytest.fixture(scope="module")
    def spark():
        yield from session("local[2]", "my-tests")
"""

import asyncio
import shutil

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="pyspark's Python data sources need pyarrow")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime", allow_module_level=True)

import tclnats_py  # noqa: E402
import tclnats_py.spark.datasource as tspark  # noqa: E402

__all__ = ["session", "tspark", "make_stream", "stream_count"]


def make_stream(url, stream, subjects, **kw):
    """A new memory stream ``stream`` (an old one of that name deleted first)."""
    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        try:
            await js.delete_stream(stream)
        except tclnats_py.NatsError:
            pass
        await js.create_stream(stream, subjects=subjects, storage="memory", **kw)
        await c.close()
    asyncio.run(go())


def stream_count(url, stream):
    """How many messages the server holds in ``stream``."""
    async def go():
        c = await tclnats_py.connect(url)
        try:
            return (await c.jetstream().stream_info(stream)).state.messages
        finally:
            await c.close()
    return asyncio.run(go())


def session(master: str, app: str, **conf):
    """A Spark session (UI off, 2 shuffle partitions, errors only in the log)
    with tclnats_py's formats registered; stopped when the generator closes."""
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         # loopback only: driver and executors on this machine's 127.0.0.1
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1"))
    for k, v in conf.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    tspark.register(s)
    yield s
    s.stop()


def stream_to_stream_driver(url, src, ckpt, slow_ms):
    """A streaming query of its own process (``python -m tests.spark_fixtures``):
    stream ``src`` to the subjects ``<src>.out.<seq % 2>`` (a subject column),
    each row slowed by ``slow_ms`` in a Python UDF and handed to the sink in
    Arrow batches of 20 rows, so a kill lands inside a micro-batch.  One
    availableNow run: to the stream's end, unless it is killed first."""
    import time

    from pyspark.sql import functions as F
    gen = session("local[2]", "tclnats-driver", **{"spark.sql.execution.arrow.maxRecordsPerBatch": "20",
                                                   "spark.sql.execution.pandas.udf.buffer.size": "1024"})
    spark = next(gen)

    @F.udf("binary")
    def slow(data):
        time.sleep(slow_ms / 1000)
        return data
    df = (spark.readStream.format("jetstream").option("servers", url).option("stream", src).option("partitions", 2)
          .load())
    out = df.select(F.concat(F.lit(src.lower() + ".out."), (F.col("seq") % 2).cast("string")).alias("subject"),
                    slow("data").alias("data"))
    q = (out.writeStream.format("jetstream").option("servers", url).option("checkpointLocation", ckpt)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    print("DRIVER DONE", flush=True)
    gen.close()


if __name__ == "__main__":
    import sys
    stream_to_stream_driver(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
