"""The two worlds meeting: orders published from Tcl, aggregated by Spark
(structured streaming over the JetStream source), results written back to a
stream, and read from Python.

    python examples/spark_pipeline.py            # starts its own nats-server

Needs the spark extra (pip install -e ".[spark]") and Java.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    import tclnats_py
    import tclnats_py.spark as tspark
    from pyspark.sql import DataFrame, SparkSession, functions as F  # noqa: F401  (DataFrame: annotations)
    from tclnats_py.testing.server import NatsServer

    with NatsServer(jetstream=True) as srv:
        url = srv.url
        tclsh = shutil.which("tclnats-tclsh") or sys.executable
        cmd = [tclsh] if tclsh.endswith("tclnats-tclsh") else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]
        subprocess.run(cmd + [os.path.join(HERE, "orders_publisher.tcl"), url, "200"], check=True)

        async def results_stream() -> None:
            c = await tclnats_py.connect(url)
            await c.jetstream().create_stream("TOTALS", subjects=["totals.*"], storage="memory")
            await c.close()
        asyncio.run(results_stream())

        spark = (SparkSession.builder.master("local[2]").appName("orders")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        tspark.register(spark)
        orders = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ORDERS")
                  .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", 100).load())
        schema = "id long, product string, qty long"
        parsed = orders.select(F.from_json(F.col("data").cast("string"), schema).alias("o")).select("o.*")

        def write_totals(batch_df: "DataFrame", batch_id: int) -> None:
            totals = batch_df.groupBy("product").agg(F.sum("qty").alias("qty"))
            out = totals.select(F.concat(F.lit("totals."), F.col("product")).alias("subject"),
                                F.to_json(F.struct("product", "qty")).cast("binary").alias("data"))
            (out.write.format("jetstream").option("servers", url).option("writeId", f"totals-{batch_id}")
             .mode("append").save())

        ckpt = tempfile.mkdtemp(prefix="orders-ckpt-")
        q = parsed.writeStream.foreachBatch(write_totals).option("checkpointLocation", ckpt) \
            .trigger(availableNow=True).start()
        q.awaitTermination(300)
        spark.stop()
        shutil.rmtree(ckpt, ignore_errors=True)

        async def read_totals() -> dict[str, int]:
            c = await tclnats_py.connect(url)
            js = c.jetstream()
            cons = await js.create_consumer("TOTALS", durable_name="READER")
            grand: dict[str, int] = {}
            for m in await cons.fetch(100, expires=1.0):
                t = json.loads(m.data)
                grand[t["product"]] = grand.get(t["product"], 0) + t["qty"]
            await c.close()
            return grand
        grand = asyncio.run(read_totals())
        print("quantities per product, summed over Spark's micro-batches:", dict(sorted(grand.items())))
        expected: dict[str, int] = {}
        for i in range(200):
            p = ["apple", "pear", "plum", "cherry"][i % 4]
            expected[p] = expected.get(p, 0) + 1 + i % 5
        assert grand == expected, (grand, expected)
        print("matches what the Tcl publisher sent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
