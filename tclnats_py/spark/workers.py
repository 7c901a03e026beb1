"""What the Spark source needs of the Python processes Spark starts:
pyarrow and the driver's tclnats_py version, checked once on the driver
when the formats are registered (``check_worker_python``, ``check_executors``),
and again when a reader or writer is unpickled in a worker (``_Shipped``).
"""

from __future__ import annotations

import logging

from tclnats_py.errors import make_error

__all__ = ["check_worker_python", "check_executors"]

log = logging.getLogger("tclnats_py.spark")


def _worker_python(spark):
    """The Python that Spark starts for its workers and planners: the one PySpark
    ships with its Python functions (PYSPARK_PYTHON, else python3), else the
    spark.pyspark.python setting."""
    import os
    try:
        sc = spark.sparkContext
        return (getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON")
                or sc.getConf().get("spark.pyspark.python", None) or "python3")
    except Exception as e:  # Spark Connect has no sparkContext: the server's side is not ours to run
        log.info("no worker Python to check from this session (%s)", e)
        return None


_PROBE = """
import sys
try:
    import pyarrow
except ImportError as e:
    print("NO-PYARROW", e)
try:
    import tclnats_py
    print("VERSION", tclnats_py.__version__, tclnats_py.__file__)
except ImportError as e:
    print("NO-TCLNATS", e)
"""


def check_worker_python(python) -> None:
    """Spark's Python workers need pyarrow and the driver's tclnats_py version;
    without pyarrow a worker dies ("Python worker exited unexpectedly (crashed)")
    or a write fails with pyspark's ModuleNotFoundError.  Checked once here, on
    the driver, by running that Python (the copy on the driver's host: on a
    cluster each executor host needs the same)."""
    import os
    import shutil
    import subprocess

    import tclnats_py
    if not python:
        return
    exe = python if os.path.sep in python else shutil.which(python)
    if not exe or not os.path.exists(exe):
        log.info("Spark's worker Python %r is not on this host: not checked", python)
        return
    try:
        r = subprocess.run([exe, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("could not run Spark's worker Python %s to check it: %s", exe, e)
        return
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] if " " in ln else "" for ln in r.stdout.splitlines()}
    fix = "pip install 'tclnats_py[spark]'"
    if "NO-PYARROW" in lines:
        raise ImportError(f"pyarrow is missing in Spark's worker Python {python} ({lines['NO-PYARROW']}): "
                          f"PySpark's Python data sources need it; install it there with {fix}")
    if "NO-TCLNATS" in lines:
        raise ImportError(f"tclnats_py is missing in Spark's worker Python {python}: install it there with {fix}")
    if "VERSION" in lines:
        version = lines["VERSION"].split(" ", 1)[0]
        if version != tclnats_py.__version__:
            raise ImportError(f"Spark's worker Python {python} has tclnats_py {lines['VERSION']}, the driver "
                              f"{tclnats_py.__version__}: install the same version in both "
                              f"({fix.rstrip(chr(39))}=={tclnats_py.__version__}')")
    elif r.returncode:
        log.warning("Spark's worker Python %s failed its check (exit %d): %s", exe, r.returncode, r.stderr[-500:])


# what each executor's Python worker runs for check_executors: compiled here
# with a module name that no worker can import, so that Spark's cloudpickle
# ships the function itself (a function of this module would need tclnats_py
# on the executor just to be unpickled, which is one of the things checked)
_EXECUTOR_PROBE = """
def probe(_partition):
    import socket
    import sys
    host = socket.gethostname()
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        yield (host, sys.executable, "pyarrow", str(e))
    try:
        import tclnats_py
    except ImportError as e:
        yield (host, sys.executable, "tclnats_py", str(e))
    else:
        yield (host, sys.executable, "version", tclnats_py.__version__)
"""


def _executor_probe():
    namespace: dict = {"__name__": "tclnats_py_executor_probe"}
    exec(compile(_EXECUTOR_PROBE, "<tclnats_py executor probe>", "exec"), namespace)
    return namespace["probe"]


def check_executors(spark) -> None:
    """On a cluster (a master that is not local[...]), the executors' Python
    workers run on other hosts, with their own Python: one small job, a
    partition per default-parallelism slot, asks each of them for pyarrow and
    tclnats_py's version, so that a host set up otherwise fails here, on the
    driver, naming the host and the fix, instead of a task failing later with
    pyspark's ModuleNotFoundError.  TCLNATS_SPARK_CHECK_EXECUTORS=0 skips it."""
    import os

    import tclnats_py
    if os.environ.get("TCLNATS_SPARK_CHECK_EXECUTORS", "1") == "0":
        return
    try:
        sc = spark.sparkContext
        master = sc.master or ""
        slots = max(1, int(sc.defaultParallelism))
    except Exception as e:  # Spark Connect: the executors are the server's
        log.info("executors not checked (%s)", e)
        return
    if master.startswith("local[") or master == "local":
        return  # the workers run on this host: check_worker_python covered them
    answers = set(sc.parallelize(range(slots), slots).mapPartitions(_executor_probe()).collect())
    fix = "pip install 'tclnats_py[spark]'"
    for host, exe, what, detail in sorted(answers):
        if what == "pyarrow":
            raise ImportError(f"pyarrow is missing in the Python of Spark's executor on {host} ({exe}: {detail}): "
                              f"PySpark's Python data sources need it; install it there with {fix}")
        if what == "tclnats_py":
            raise ImportError(f"tclnats_py is missing in the Python of Spark's executor on {host} ({exe}): "
                              f"install it there with {fix}")
        if detail != tclnats_py.__version__:
            raise ImportError(f"Spark's executor on {host} ({exe}) has tclnats_py {detail}, the driver "
                              f"{tclnats_py.__version__}: install the same version on both "
                              f"(pip install 'tclnats_py[spark]=={tclnats_py.__version__}')")


def _require_pyarrow(where: str) -> None:
    """PySpark's Python data sources exchange Arrow batches: without pyarrow the
    Python worker dies with 'Python worker exited unexpectedly (crashed)'.
    Say so here instead, naming the fix."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as e:
        import sys
        raise ImportError(f"pyarrow is missing in the Python that Spark runs {where} ({sys.executable}): "
                          f"install it there with pip install 'tclnats_py[spark]'") from e


class _Shipped:
    """A reader or writer that Spark pickles on the driver and unpickles in
    each Python worker: it carries the driver's tclnats_py version, and its
    unpickling checks pyarrow and that version, so a worker set up otherwise
    fails with the fix instead of a crash or a mismatch of pickled state."""

    def __getstate__(self):
        import tclnats_py
        state = dict(self.__dict__)
        state["_driver_version"] = tclnats_py.__version__
        return state

    def __setstate__(self, state):
        import tclnats_py
        driver = state.pop("_driver_version", None)
        if driver is not None and driver != tclnats_py.__version__:
            import os
            raise make_error("ErrInvalidArg", f"tclnats_py {tclnats_py.__version__} in this Spark worker "
                             f"({os.path.dirname(tclnats_py.__file__)}) but {driver} on the driver: install the "
                             f"same version on the driver and the workers (pip install 'tclnats_py[spark]=={driver}')")
        _require_pyarrow("for its tasks")
        self.__dict__.update(state)
