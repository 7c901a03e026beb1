"""The Spark side of the long form (``python -m tclnats_py.compat.scale``): a
standalone Spark cluster as a user's runs, a master and workers started with
``spark-class`` (each its own JVM, its executors their own JVMs and Python
workers), a driver in its own process, and the faults and figures measured
on it.

The workers' Python is this interpreter (``spark.pyspark.python``) with
tclnats_py installed in it, as the docs tell a user to install the package
on every executor host; ``spark.executorEnv.PYTHONPATH`` points at the
folder this tclnats_py was imported from, so a source checkout under test
is what the executors run (on an installed package it is site-packages:
the same package).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from tclnats_py.testing.server import free_port


def spark_home() -> str:
    """pyspark's own folder: it carries bin/spark-class and the jars."""
    import pyspark
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def package_root() -> str:
    """The folder tclnats_py is imported from (what the executors' PYTHONPATH gets)."""
    import tclnats_py
    return os.path.dirname(os.path.dirname(os.path.abspath(tclnats_py.__file__)))


class SparkStandalone:
    """A Spark standalone master and ``workers`` workers on 127.0.0.1, each
    started with ``$SPARK_HOME/bin/spark-class`` in its own process group (a
    worker's executors and their Python workers are in its group: killing
    the group is a host going away)."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.home = spark_home()
        self.tmp = tempfile.mkdtemp(prefix="tclnats-spark-")
        self.port, self.ui_port = free_port(), free_port()
        self.cores, self.memory = cores, memory
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen | None] = [None] * workers

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        return dict(os.environ, SPARK_HOME=self.home, SPARK_LOCAL_IP="127.0.0.1",
                    SPARK_WORKER_DIR=os.path.join(self.tmp, "work"), PYSPARK_PYTHON=sys.executable)

    def _spawn(self, name: str, args: list) -> subprocess.Popen:
        log = open(os.path.join(self.tmp, f"{name}.log"), "ab")  # noqa: SIM115  (the child keeps it)
        try:
            return subprocess.Popen([os.path.join(self.home, "bin", "spark-class")] + args, env=self._env(),
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            log.close()

    def start(self, timeout: float = 120.0) -> SparkStandalone:
        self.master = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i in range(len(self.workers)):
            self.start_worker(i)
        self.wait_workers(len(self.workers), timeout)
        return self

    def start_worker(self, i: int) -> None:
        self.workers[i] = self._spawn(f"worker{i}", [
            "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1", "--cores", str(self.cores),
            "--memory", self.memory, "--webui-port", str(free_port()), "--port", str(free_port()),
            "--work-dir", os.path.join(self.tmp, f"work{i}")])

    def state(self) -> dict:
        """The master's JSON status (its web UI's /json)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
            return json.loads(r.read())

    def wait_workers(self, n: int, timeout: float = 120.0) -> None:
        """Wait until ``n`` workers are ALIVE at the master."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                alive = [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= n:
                    return
            except (OSError, ValueError):
                alive = []
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(alive)} of {n} Spark workers alive after {timeout:g}s:\n"
                                   + self.log_tail("master"))
            time.sleep(0.5)

    def log_tail(self, name: str, lines: int = 15) -> str:
        try:
            with open(os.path.join(self.tmp, f"{name}.log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``'s process group: the worker JVM, its executor
        JVM and the executor's Python workers."""
        proc, self.workers[i] = self.workers[i], None
        if proc is not None:
            _killpg(proc)

    def stop(self) -> None:
        for i in range(len(self.workers)):
            self.kill_worker(i)
        if self.master is not None:
            _killpg(self.master)
            self.master = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> SparkStandalone:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def _killpg(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def session(master: str, app: str, executors: int = 2, **conf):
    """A Spark session on ``master`` using at most ``executors`` one-core
    executors, with tclnats_py's formats registered."""
    from pyspark.sql import SparkSession

    import tclnats_py.spark.datasource as tspark
    b = (SparkSession.builder.master(master).appName(app).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1").config("spark.executor.cores", "1")
         .config("spark.cores.max", str(executors)).config("spark.executor.memory", "768m")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.executorEnv.PYTHONPATH", package_root()))
    for k, v in conf.items():
        b = b.config(k, v)
    s = b.getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    tspark.register(s)
    return s


def wait_executors(spark, n: int, timeout: float = 120.0) -> None:
    """Wait until ``n`` executors have registered with the driver."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout
    while True:
        # getExecutorInfos lists the driver too
        have = len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1
        if have >= n:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{have} of {n} executors after {timeout:g}s")
        time.sleep(0.5)


# ------------------------------------------------------------------ the raw-socket fetch ceiling

def raw_fetch(url: str, stream: str, total: int, batch: int = 500) -> float:
    """Messages per second of one raw-socket pull consumer reading ``total``
    messages of ``stream`` from its start (compat/bench_raw.py's connection;
    no client library), the ceiling the Spark reads are set against."""
    from tclnats_py.compat.bench_raw import RawConn, _api, inbox, pull_all
    a = RawConn(url, "block", name="raw-fetch")
    prefix = b"_RAWSCALE"
    inbox(a, prefix)
    durable = f"RAWSCALE{os.getpid()}{int(time.time() * 1000) % 100000}"
    out = _api(a, f"$JS.API.CONSUMER.CREATE.{stream}.{durable}",
               {"stream_name": stream, "config": {"durable_name": durable, "ack_policy": "none",
                                                  "mem_storage": True}}, prefix)
    if "error" in out:
        raise RuntimeError(f"consumer: {out['error']}")
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}".encode()
    t0 = time.perf_counter()
    got = pull_all(a, nxt, prefix, batch, total)
    rate = got / (time.perf_counter() - t0)
    _api(a, f"$JS.API.CONSUMER.DELETE.{stream}.{durable}", b"", prefix)
    a.close()
    return rate


# ------------------------------------------------------------------ the driver of the streaming fault

def stream_driver(master: str, servers: str, src: str, out_subject: str, ckpt: str, mode: str,
                  per_trigger: int) -> int:
    """A streaming query of its own process: ``src`` to ``out_subject`` (the
    jetstream sink), ``per_trigger`` sequences a micro-batch; ``forever``
    runs until killed, ``availableNow`` to the stream's end."""
    spark = session(master, "tclnats-scale-stream", executors=2)
    q = (spark.readStream.format("jetstream").option("servers", servers).option("stream", src)
         .option("maxOffsetsPerTrigger", per_trigger).option("partitions", 2)
         .option("fetchOffset.numRetries", 30).option("fetchOffset.retryIntervalMs", 1000)
         .option("requestTimeoutMs", 10000).load()
         .selectExpr("data").writeStream.format("jetstream").option("servers", servers)
         .option("subject", out_subject).option("requestTimeoutMs", 10000).option("checkpointLocation", ckpt))
    if mode == "forever":
        q.trigger(processingTime="0 seconds").start().awaitTermination()
        return 0
    done = q.trigger(availableNow=True).start()
    done.awaitTermination()
    print("DRIVER DONE", flush=True)
    spark.stop()
    return 0


def commits(ckpt: str) -> int:
    """Micro-batches a streaming query has committed to its checkpoint."""
    try:
        return len([f for f in os.listdir(os.path.join(ckpt, "commits")) if f.isdigit()])
    except OSError:
        return 0


def start_driver(master, servers, src, out_subject, ckpt, mode, per_trigger, log_path) -> subprocess.Popen:
    log = open(log_path, "ab")  # noqa: SIM115  (the child keeps it)
    try:
        return subprocess.Popen([sys.executable, "-m", "tclnats_py.compat.scale_spark", "--driver", master, servers,
                                 src, out_subject, ckpt, mode, str(per_trigger)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, PYTHONPATH=package_root()))
    finally:
        log.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--driver"]:
        a = sys.argv[2:]
        sys.exit(stream_driver(a[0], a[1], a[2], a[3], a[4], a[5], int(a[6])))
    sys.exit("usage: python -m tclnats_py.compat.scale_spark --driver MASTER SERVERS SRC SUBJECT CKPT MODE N")
