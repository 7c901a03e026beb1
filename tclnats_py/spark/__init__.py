"""JetStream streams and Key-Value buckets as PySpark data sources.

``import tclnats_py.spark; tclnats_py.spark.register(spark)`` registers the
``jetstream`` and ``jetstream-kv`` formats (``datasource``); the driver plans
and each Spark task reads its sequence range with the blocking reader in
``reader``; ``options`` holds the option tables and the connection settings.
"""

from tclnats_py.spark.datasource import JetStreamDataSource, KeyValueDataSource, register

__all__ = ["register", "JetStreamDataSource", "KeyValueDataSource"]
