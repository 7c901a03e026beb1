"""What every Spark test module needs: skip without pyspark, pyarrow or java,
and a Spark session with the jetstream formats registered.

    from tests.spark_fixtures import session, tspark
    @pytest.fixture(scope="module")
    def spark():
        yield from session("local[2]", "my-tests")
"""

import shutil

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="pyspark's Python data sources need pyarrow")
if shutil.which("java") is None:
    pytest.skip("Spark needs a Java runtime", allow_module_level=True)

import tclnats_py.spark.datasource as tspark  # noqa: E402

__all__ = ["session", "tspark"]


def session(master: str, app: str, **conf):
    """A Spark session (UI off, 2 shuffle partitions, errors only in the log)
    with tclnats_py's formats registered; stopped when the generator closes."""
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    for k, v in conf.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    tspark.register(s)
    yield s
    s.stop()
