"""register() asks the executors of a cluster for pyarrow and tclnats_py's
version (tclnats_py.spark.datasource.check_executors), on
``local-cluster[1,1,1024]``: an executor in its own JVM whose Python workers
cannot import pyarrow while the driver's Python can.  Slow (a cluster
starts): skipped unless TCLNATS_SPARK_CLUSTER=1, like test_spark_cluster.py.
"""

import os

import pytest

from tests.spark_fixtures import session  # noqa: F401,E402  (skips without pyspark/java)
if not os.environ.get("TCLNATS_SPARK_CLUSTER"):
    pytest.skip("the local-cluster long form runs with TCLNATS_SPARK_CLUSTER=1", allow_module_level=True)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_an_executor_without_pyarrow_is_named_at_register(tmp_path):
    from pyspark.sql import SparkSession

    from tclnats_py import spark as tspark
    # a folder first on the executors' Python path whose pyarrow fails to import
    hide = tmp_path / "hide"
    (hide / "pyarrow").mkdir(parents=True)
    (hide / "pyarrow" / "__init__.py").write_text("raise ImportError('pyarrow hidden from this executor')\n")
    s = (SparkSession.builder.master("local-cluster[1,1,1024]").appName("tclnats-noarrow")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "768m")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.executorEnv.PYTHONPATH", str(hide)).getOrCreate())
    try:
        s.sparkContext.setLogLevel("ERROR")
        with pytest.raises(ImportError) as e:
            tspark.register(s)
        msg = str(e.value)
        assert "pyarrow is missing in the Python of Spark's executor on" in msg, msg
        assert "pyarrow hidden from this executor" in msg and "pip install 'tclnats_py[spark]'" in msg
    finally:
        s.stop()
