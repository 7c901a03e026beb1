"""A Key-Value bucket as a table (format "jetstream-kv"): its current
entries, or every revision, read by the blocking face (tclnats_py.sync) in
the task's own thread, as Spark's plain iterator wants them.
"""

from __future__ import annotations

import datetime
import logging

from pyspark.sql.datasource import DataSourceReader, InputPartition

from tclnats_py.errors import make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.sink import _js_connect
from tclnats_py.spark.workers import _Shipped

log = logging.getLogger("tclnats_py.spark")


def _kv_connect(settings):
    """A blocking client of the task's servers and its JetStream context (close both)."""
    return _js_connect(settings)


class _KvReader(_Shipped, DataSourceReader):
    def __init__(self, opts):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.history = O.opt_bool(opts, "history", False)
        self.bucket = opts.get("bucket")
        if not self.bucket:
            raise make_error("ErrInvalidArg", "option 'bucket' is required")
        c, js = _kv_connect(self.settings)
        try:
            js.key_value(self.bucket)
        finally:
            c.close()

    def partitions(self):
        return [InputPartition(0)]

    def read(self, partition):
        c, js = _kv_connect(self.settings)
        try:
            kv = js.key_value(self.bucket)
            with kv.watch(">", include_history=self.history) as w:
                for e in w:
                    if e is None:
                        break
                    yield (e.key, e.value, e.revision, e.operation,
                           datetime.datetime.fromtimestamp(e.created / 1000, datetime.timezone.utc))
        finally:
            c.close()
