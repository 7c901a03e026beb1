"""JetStream streams and Key-Value buckets as PySpark data sources.

``import tclnats_py.spark; tclnats_py.spark.register(spark)`` registers the
``jetstream`` and ``nats-kv`` formats (``datasource``); each Spark task reads
its sequence range with the blocking reader in ``reader``.
"""

from tclnats_py.spark.datasource import JetStreamDataSource, KeyValueDataSource, read_range, register

__all__ = ["register", "JetStreamDataSource", "KeyValueDataSource", "read_range"]
