"""The Spark sink's and source's edges: a streaming write killed
and restarted past the target's duplicate window, and each bad input answered
on the driver with a message that names it."""

import asyncio
import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

from tests.spark_fixtures import make_stream, session, stream_count, tspark  # noqa: E402  (skips without pyspark/java)

import tclnats_py  # noqa: E402
from tclnats_py.spark import options as O  # noqa: E402

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def spark():
    yield from session("local[2]", "tclnats-edges")


def run(coro):
    return asyncio.run(coro)


def publish(url, items, msg_ids=None):
    async def go():
        c = await tclnats_py.connect(url)
        js = c.jetstream()
        for k, (subject, data) in enumerate(items):
            await js.publish_async(subject, data, msg_id=msg_ids[k] if msg_ids else None)
        await js.publish_async_complete(60)
        await c.close()
    run(go())


def messages(url, stream):
    """(data, Nats-Msg-Id) of every message of a stream."""
    from tclnats_py.spark.reader import read_columns
    out = []
    for cols in read_columns(O.parse_conn({"servers": url}), stream, 1, 10**12):
        ids = [None] * len(cols["seq"])
        for i, h in cols["headers"]:
            v = h.get("Nats-Msg-Id")
            ids[i] = v[0] if isinstance(v, list) else v
        out.extend(zip([bytes(d) for d in cols["data"]], ids))
    return out


count = stream_count


# ------------------------------------------------------------------ a re-run batch past the duplicate window
def _checkpoint(path, query, committed, planned, ts_ms):
    """A streaming checkpoint as Spark leaves it: batches 0..planned planned, 0..committed committed."""
    for d in ("offsets", "commits"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(json.dumps({"id": query}) + "\n")
    for n in range(planned + 1):
        with open(os.path.join(path, "offsets", str(n)), "w") as f:
            f.write("v1\n" + json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": ts_ms, "conf": {}})
                    + '\n{"seq":1}')
    for n in range(committed + 1):
        with open(os.path.join(path, "commits", str(n)), "w") as f:
            f.write('v1\n{"nextBatchWatermarkMs":0}')


def test_a_rerun_batch_publishes_only_what_the_interrupted_run_did_not(js_server, tmp_path):
    """The sink's part without Spark: the checkpoint says batch 4 was planned and
    not committed; the killed run had published rows 0..29 of partition 1 (and
    rows of another query and another partition); the re-run, later than the
    stream's duplicate window, publishes rows 30..99 only."""
    url = js_server.url
    make_stream(url, "RR1", ["rr1.*"], duplicate_window=1)
    query = "6d1c7a0e-0000-4000-8000-000000000001"
    ckpt = str(tmp_path / "ck")
    _checkpoint(ckpt, query, committed=3, planned=4, ts_ms=int(time.time() * 1000))
    unfinished = tspark._unfinished_batches(ckpt)
    assert unfinished["query"] == query and list(unfinished["batches"]) == [4]
    rows = [(f"rr1.{i % 3}", f"row{i}".encode()) for i in range(100)]
    publish(url, rows[:30], [f"{query}-4-1-{i}" for i in range(30)])            # the killed run
    publish(url, rows[:5], [f"{query}-4-0-{i}" for i in range(5)])              # another partition
    publish(url, rows[:5], [f"other-4-1-{i}" for i in range(5)])                # another query
    time.sleep(2.5)  # past the duplicate window: the stream no longer drops these ids
    settings = O.parse_conn({"servers": url})
    # what _StreamWriter.write() builds in task 1 of batch 4
    resume = tspark._Resume(settings, unfinished["batches"][4] - tspark._RESUME_MARGIN_MS, f"{query}-4-1-", None,
                            "partition 1 of batch 4")
    commit = tspark._write_rows(settings, {}, ["subject", "data"], rows, f"{query}-4-1", "partition 1 of batch 4",
                                resume)
    assert (commit.skipped, commit.published, commit.duplicates) == (30, 70, 0)
    got = [d for d, mid in messages(url, "RR1") if mid.startswith(f"{query}-4-1-")]
    assert sorted(got) == sorted(d for _, d in rows)  # each row of the partition once
    # without the look (no unfinished batch): the same rows again, past the window, are published again
    again = tspark._write_rows(settings, {}, ["subject", "data"], rows[:3], f"{query}-4-1", "partition 1", None)
    assert again.published == 3 and again.duplicates == 0
    # a committed checkpoint has nothing to run again
    _checkpoint(ckpt, query, committed=4, planned=4, ts_ms=0)
    assert tspark._unfinished_batches(ckpt) is None


def test_a_failed_micro_batch_run_again_after_the_window_writes_each_row_once(spark, js_server, tmp_path):
    """The same in this session (the fast form of the driver-kill test below):
    a micro-batch that fails half written (its partition 1 dies at row q1990,
    once partition 0 is in the stream), and the query started again from its
    checkpoint after twice the target's duplicate window."""
    from pyspark.sql import functions as F
    url = js_server.url
    n, window = 2000, 2
    make_stream(url, "QSRC", ["qsrc.in"])
    publish(url, [("qsrc.in", b"q%d" % i) for i in range(n)])
    make_stream(url, "QOUT", ["qsrc.out"], duplicate_window=window)
    ckpt = str(tmp_path / "ck")

    def fail_late(data):
        # runs in Spark's Python worker: it names no function of this test
        # module (the worker may not be able to import tests/, as in CI,
        # where the suite runs from an installed wheel in another folder)
        import asyncio as aio
        import time as t

        import tclnats_py as tn

        async def stored():
            c = await tn.connect(url)
            try:
                return (await c.jetstream().stream_info("QOUT")).state.messages
            finally:
                await c.close()
        if bytes(data) == b"q1990":  # partition 1: wait for partition 0's rows, then die
            deadline = t.time() + 120
            while t.time() < deadline and aio.run(stored()) < n // 2:
                t.sleep(0.1)
            raise RuntimeError("the batch dies here")
        return data

    def start(fn):
        src = (spark.readStream.format("jetstream").option("servers", url).option("stream", "QSRC")
               .option("partitions", 2).load())
        return (src.select(F.udf(fn, "binary")("data").alias("data")).writeStream.format("jetstream")
                .option("servers", url).option("subject", "qsrc.out").option("checkpointLocation", ckpt)
                .trigger(availableNow=True).start())
    q = start(fail_late)
    assert "the batch dies here" in _error(lambda: q.awaitTermination(300))
    failed = time.time()
    written_before = count(url, "QOUT")
    assert n // 2 <= written_before < n and not os.path.exists(os.path.join(ckpt, "commits", "0"))
    time.sleep(max(0.0, failed + 2 * window - time.time()))
    q = start(lambda d: d)
    q.awaitTermination(300)
    assert q.exception() is None
    got = messages(url, "QOUT")
    assert len(got) == n, (written_before, len(got))
    assert sorted(d for d, _ in got) == sorted(b"q%d" % i for i in range(n))


def _driver(url, src, ckpt, slow_ms, log):
    return subprocess.Popen([sys.executable, "-m", "tests.spark_fixtures", url, src, ckpt, str(slow_ms)], cwd=ROOT,
                            start_new_session=True, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.skipif(not os.environ.get("TCLNATS_SPARK_KILL"), reason="the driver-kill run takes two Spark driver "
                    "processes: TCLNATS_SPARK_KILL=1")
def test_streaming_write_killed_and_restarted_after_twice_the_duplicate_window(js_server, tmp_path):
    """kill -9 of a streaming driver (its process group: Python, JVM, workers)
    while its micro-batch is half written to a stream whose duplicate window is
    3 s; a new driver from the same checkpoint 6 s later: one message per row."""
    url = js_server.url
    n = int(os.environ.get("TCLNATS_SPARK_KILL_ROWS", "4000"))
    window = 3
    make_stream(url, "KSRC", ["ksrc.in"])
    publish(url, [("ksrc.in", b"m%d" % i) for i in range(n)])
    make_stream(url, "KOUT", ["ksrc.out.*"], duplicate_window=window)
    ckpt = str(tmp_path / "ck")
    with open(tmp_path / "driver1.log", "w") as log:
        p = _driver(url, "KSRC", ckpt, 2, log)
        try:
            deadline = time.time() + 300
            while time.time() < deadline and p.poll() is None and count(url, "KOUT") < n // 10:
                time.sleep(0.1)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    killed_at = time.time()
    time.sleep(0.5)
    written_before = count(url, "KOUT")
    assert 0 < written_before < n, (written_before, open(tmp_path / "driver1.log").read()[-3000:])
    assert not os.path.exists(os.path.join(ckpt, "commits", "0"))  # the batch was interrupted
    time.sleep(max(0.0, killed_at + 2 * window - time.time()))
    with open(tmp_path / "driver2.log", "w") as log:
        p = _driver(url, "KSRC", ckpt, 0, log)
        rc = p.wait(600)
    text = open(tmp_path / "driver2.log").read()
    assert rc == 0 and "DRIVER DONE" in text, text[-3000:]
    got = messages(url, "KOUT")
    print(f"\nrows {n}; written by the killed run {written_before}; after the restart {len(got)} messages, "
          f"{len({d for d, _ in got})} distinct rows")
    assert len(got) == n
    assert sorted(d for d, _ in got) == sorted(b"m%d" % i for i in range(n))


# ------------------------------------------------------------------ bad input, answered on the driver
def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return str(e.value)


def test_a_misspelled_option_gets_did_you_mean(spark, js_server):
    make_stream(js_server.url, "ED1", ["ed1.*"])
    text = _error(lambda: spark.readStream.format("jetstream").option("servers", js_server.url)
                  .option("stream", "ED1").option("maxOffsetPerTrigger", 10).load())
    assert "unknown option 'maxoffsetpertrigger' (did you mean maxOffsetsPerTrigger?)" in text, text[:800]
    assert "Spark passes option names in lower case" in text
    text = _error(lambda: spark.read.format("jetstream").option("servers", js_server.url).option("stream", "ED1")
                  .option("nats.ping_intervall", 1000).load())
    assert "'ping_intervall' is not a connection option of the client (did you mean ping_interval?)" in text
    # outside Spark (the names as written): echoed as written
    with pytest.raises(tclnats_py.NatsError) as e:
        tspark._checked({"servers": js_server.url, "StartSeqq": "1"}, O.KNOWN_READ, "jetstream (batch read)")
    assert "unknown option 'StartSeqq' (did you mean startSeq?) for format" in str(e.value)


def test_rows_without_a_subject_fail_at_save(spark, js_server):
    make_stream(js_server.url, "ED2", ["ed2.*"])
    df = spark.createDataFrame([(b"x",)], "data binary")
    text = _error(lambda: df.write.format("jetstream").option("servers", js_server.url).mode("append").save())
    assert ("rows without a subject: give the option subject or a string column 'subject' (the columns are data)"
            in text), text[:800]
    assert "stage failure" not in text  # no task ran
    df = spark.createDataFrame([(1, b"x")], "subject int, data binary")
    text = _error(lambda: df.write.format("jetstream").option("servers", js_server.url).mode("append").save())
    assert "column subject must be a string, not int" in text and "stage failure" not in text
    text = _error(lambda: df.write.format("jetstream").option("servers", js_server.url).option("subject", "ed2.*")
                  .mode("append").save())
    assert "option subject: 'ed2.*' is not a subject to publish to" in text
    # a null in a nullable subject column: only the task sees it, and names the row
    df = spark.createDataFrame([("ed2.a", b"x"), (None, b"y")], "subject string, data binary").coalesce(1)
    text = _error(lambda: df.write.format("jetstream").option("servers", js_server.url).mode("append").save())
    assert "row 1 of partition 0 has no subject (its column subject is None)" in text, text[:1500]


def test_a_subject_no_stream_captures_fails_at_save_and_start(spark, js_server, tmp_path):
    make_stream(js_server.url, "ED3", ["ed3.*"])
    df = spark.createDataFrame([("ed3.a", b"x")], "subject string, data binary")
    text = _error(lambda: df.write.format("jetstream").option("servers", js_server.url)
                  .option("subject", "nowhere.x").mode("append").save())
    assert f"no stream captures subject 'nowhere.x' (option subject) at {js_server.url}" in text, text[:800]
    assert "stage failure" not in text
    src = (spark.readStream.format("jetstream").option("servers", js_server.url).option("stream", "ED3").load()
           .selectExpr("data"))
    q = (src.writeStream.format("jetstream").option("servers", js_server.url).option("subject", "nowhere.y")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    text = _error(lambda: q.awaitTermination(120))
    assert "no stream captures subject 'nowhere.y' (option subject)" in text and "stage failure" not in text
    # a subject column: the task that publishes to it names it
    bad = spark.createDataFrame([("ed3.a", b"x"), ("nowhere.z", b"y")], "subject string, data binary").coalesce(1)
    text = _error(lambda: bad.write.format("jetstream").option("servers", js_server.url).mode("append").save())
    assert "no stream captures subject 'nowhere.z' (row 1 of partition 0; its publish got no responders)" in text


def test_an_unreachable_server_is_named_once(spark):
    url = "nats://127.0.0.1:1"
    text = _error(lambda: spark.read.format("jetstream").option("servers", url).option("stream", "X").load())
    assert f"NATS server unreachable at {url}: " in text
    assert f"{url}: NATS server unreachable" not in text, text[:800]
    with pytest.raises(tclnats_py.NatsError) as e:  # the write's connection (the asyncio face)
        tspark._write_rows(O.parse_conn({"servers": url, "connecttimeoutms": "500"}), {"subject": "a.b"},
                           ["data"], [(b"x",)], "w-0", "partition 0")
    assert str(e.value).count("unreachable at") == 1 and str(e.value).startswith(f"NATS server unreachable at {url}: ")


# ------------------------------------------------------------------ the workers' Python
def _python_with(tmp_path, module, body):
    """A python3 wrapper with the module ``module`` made of ``body`` first on its path
    (``pyarrow`` that fails to import, or a ``sitecustomize``)."""
    d = tmp_path / "shadow"
    d.mkdir(parents=True)
    (d / f"{module}.py").write_text(body)
    exe = tmp_path / "python-shadowed"
    exe.write_text(f"#!/bin/sh\nPYTHONPATH={d}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    exe.chmod(0o755)
    return str(exe)


def test_a_worker_python_without_pyarrow_or_with_another_version(tmp_path):
    exe = _python_with(tmp_path, "pyarrow", "raise ModuleNotFoundError(\"No module named 'pyarrow'\", "
                                              "name='pyarrow')\n")
    with pytest.raises(ImportError) as e:
        tspark.check_worker_python(exe)
    assert str(e.value) == (f"pyarrow is missing in Spark's worker Python {exe} (No module named 'pyarrow'): "
                            "PySpark's Python data sources need it; install it there with "
                            "pip install 'tclnats_py[spark]'")
    tspark.check_worker_python(sys.executable)  # this one is fine
    exe2 = _python_with(tmp_path / "v", "sitecustomize", "import tclnats_py\ntclnats_py.__version__ = '0.0.1'\n")
    with pytest.raises(ImportError) as e:
        tspark.check_worker_python(exe2)
    assert "has tclnats_py 0.0.1" in str(e.value) and f"the driver {tclnats_py.__version__}" in str(e.value)
    assert f"pip install 'tclnats_py[spark]=={tclnats_py.__version__}'" in str(e.value)


def test_a_task_unpickled_by_another_tclnats_py_version_names_the_fix(js_server, tmp_path):
    make_stream(js_server.url, "ED5", ["ed5.*"])
    r = tspark._BatchReader({"servers": js_server.url, "stream": "ED5"}, 1)
    blob = pickle.dumps(r)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tclnats_py\ntclnats_py.__version__ = '9.9.9'\n")
    env = dict(os.environ, PYTHONPATH=f"{site}:{ROOT}")
    p = subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                       input=blob, capture_output=True, env=env, cwd=ROOT, timeout=120)
    err = p.stderr.decode()
    assert p.returncode != 0
    assert (f"tclnats_py 9.9.9 in this Spark worker ({ROOT}/tclnats_py) but {tclnats_py.__version__} on the "
            f"driver: install the same version on the driver and the workers "
            f"(pip install 'tclnats_py[spark]=={tclnats_py.__version__}')") in err, err[-2000:]
    assert pickle.loads(blob).rc.stream == "ED5"  # the same version: unpickled as it was


def test_an_account_that_may_only_publish_still_writes(caplog):
    """The driver's check and a re-run's look need the JetStream API; an account
    allowed only to publish to its subjects writes as before, with a warning."""
    import logging

    from pyspark.sql.types import BinaryType, StructField, StructType

    from tclnats_py.testing.server import NatsServer
    conf = ('authorization {\n  users = [\n    {user: admin, password: a}\n'
            '    {user: w, password: w, permissions: {publish: {allow: ["pe.>"]}, subscribe: {allow: ["_INBOX.>"]}}}\n'
            '  ]\n}\n')
    with NatsServer(config=conf, jetstream=True) as srv:
        async def mk():
            c = await tclnats_py.connect(srv.url, user="admin", password="a")
            await c.jetstream().create_stream("PE", subjects=["pe.*"], storage="memory")
            await c.close()
        run(mk())
        st = O.parse_conn({"servers": srv.url, "user": "w", "password": "w"})
        with caplog.at_level(logging.WARNING, logger="tclnats_py.spark"):
            tspark._check_target({"subject": "pe.x"}, StructType([StructField("data", BinaryType())]), st)
            resume = tspark._Resume(st, 0, "w-1-0-", "pe.x", "partition 0 of batch 1")
            commit = tspark._write_rows(st, {"subject": "pe.x"}, ["data"], [(b"x",), (b"y",)], "w-1-0",
                                        "partition 0 of batch 1", resume)
        assert (commit.published, commit.skipped) == (2, 0)
        assert "the streams could not be listed (ErrPermissions" in caplog.text
        assert "partition 0 of batch 1 is a re-run but the stream of subject 'pe.x' could not be read" in caplog.text
