"""README's Spark quick start, in a typed function (it starts a Spark session when run)."""

from __future__ import annotations


def quickstart_spark() -> None:
    import asyncio

    from pyspark.sql import SparkSession

    import tclnats_py
    import tclnats_py.spark

    URL = "nats://localhost:4222"


    async def publish_orders() -> None:
        nc = await tclnats_py.connect(URL)
        js = nc.jetstream()
        await js.create_stream("ORDERS", subjects=["orders.*"], storage="memory")
        for item in (b"apple", b"pear", b"plum"):
            await js.publish("orders.new", item)
        await nc.close()


    asyncio.run(publish_orders())
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    tclnats_py.spark.register(spark)
    df = spark.read.format("jetstream").option("servers", URL).option("stream", "ORDERS").option("decode", True).load()
    print(sorted(row.value for row in df.select("value").collect()))
    spark.stop()
