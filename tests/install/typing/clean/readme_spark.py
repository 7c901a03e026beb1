"""docs/spark.md's lines (section "Use"), in a typed function."""

from __future__ import annotations

from pyspark.sql import SparkSession


def readme_spark(spark: SparkSession, url: str) -> None:
    import tclnats_py.spark
    tclnats_py.spark.register(spark)                     # after the session exists: it ships its defaultParallelism
    df = (spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS")
          .option("subject", "orders.*").option("minPartitions", 4).load())  # also startSeq/endSeq/startTime/endTime
    stream = (spark.readStream.format("jetstream").option("servers", url).option("stream", "ORDERS")
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", 10000).load())
    df.write.format("jetstream").option("servers", url).option("subject", "out.x").mode("append").save()
    kv = spark.read.format("jetstream-kv").option("servers", url).option("bucket", "SETTINGS").load()
    print(stream.isStreaming, kv.count())
