"""What a user of Spark's Kafka connector relies on, for the jetstream source
and sink, on a local[2] session and real servers: writes that
never collide, failOnDataLoss, empty streams, admission control, security
options, retry inside a task, planning by the data, progress, ends only at
the end."""

import asyncio
import json
import logging
import threading
import time

import pytest

from tests.spark_fixtures import session, tspark  # noqa: E402  (skips without pyspark/java)

import tclnats_py  # noqa: E402
from tclnats_py.testing.server import NatsServer  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    yield from session("local[2]", "tclnats-guarantees")


def run(coro):
    return asyncio.run(coro)


async def _conn(url, **kw):
    return await tclnats_py.connect(url, **kw)


def make_stream(url, stream, subjects, storage="memory", **kw):
    async def go():
        c = await _conn(url, **kw)
        js = c.jetstream()
        try:
            await js.delete_stream(stream)
        except tclnats_py.NatsError:
            pass
        await js.create_stream(stream, subjects=subjects, storage=storage)
        await c.close()
    run(go())


def publish(url, items, **kw):
    """items: (subject, data) pairs, published with acks."""
    async def go():
        c = await _conn(url, **kw)
        js = c.jetstream()
        for subject, data in items:
            await js.publish_async(subject, data)
        await js.publish_async_complete(60)
        await c.close()
    run(go())


def state(url, stream, **kw):
    async def go():
        c = await _conn(url, **kw)
        try:
            return (await c.jetstream().stream_info(stream))["state"]
        finally:
            await c.close()
    return run(go())


def purge(url, stream, keep):
    async def go():
        c = await _conn(url)
        await c.jetstream().purge_stream(stream, keep=keep)
        await c.close()
    run(go())


def consumers(url, stream):
    async def go():
        c = await _conn(url)
        try:
            return await c.jetstream().consumer_names(stream)
        finally:
            await c.close()
    return run(go())


def reader(spark, url, stream, **opts):
    r = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


# ------------------------------------------------------------------ 1. writes never lose a row
def test_two_different_writes_inside_the_duplicate_window_both_land(spark, js_server, tmp_path):
    make_stream(js_server.url, "GW_OUT", ["gw.*"])
    df = spark.createDataFrame([(f"gw.{i % 2}", f"row{i}".encode()) for i in range(300)],
                               "subject string, data binary").repartition(2)
    for _ in range(2):  # the same rows, two writes: each has its own write id
        df.write.format("jetstream").option("servers", js_server.url).mode("append").save()
    assert state(js_server.url, "GW_OUT")["messages"] == 600
    # an explicit writeId is an idempotent re-run: the second is dropped as duplicates
    df2 = df.limit(50).coalesce(1)
    for _ in range(2):
        df2.write.format("jetstream").option("servers", js_server.url).option("writeId", "job-7").mode("append").save()
    assert state(js_server.url, "GW_OUT")["messages"] == 650

    # two streaming queries with their own checkpoints: ids from the query id, both land
    make_stream(js_server.url, "GW_SRC", ["gws.*"])
    publish(js_server.url, [("gws.a", f"s{i}".encode()) for i in range(100)])
    make_stream(js_server.url, "GW_SINK", ["gwk.*"])
    for n in range(2):
        q = (reader_stream(spark, js_server.url, "GW_SRC").selectExpr("'gwk.x' as subject", "data").writeStream
             .format("jetstream").option("servers", js_server.url)
             .option("checkpointLocation", str(tmp_path / f"ck{n}")).trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None
    assert state(js_server.url, "GW_SINK")["messages"] == 200


def reader_stream(spark, url, stream, **opts):
    r = spark.readStream.format("jetstream").option("servers", url).option("stream", stream)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_the_subject_option_wins_over_the_column(spark, js_server):
    make_stream(js_server.url, "GW_SUBJ", ["gs.*"])
    df = spark.createDataFrame([("gs.col", b"x")] * 5, "subject string, data binary")
    # nats.<option> takes the engine's names and milliseconds, whatever the asyncio face's units
    df.write.format("jetstream").option("servers", js_server.url).option("subject", "gs.opt") \
        .option("nats.flush_timeout", 20000).option("nats.ping_interval", 90000).mode("append").save()
    rows = reader(spark, js_server.url, "GW_SUBJ").collect()
    assert {r.subject for r in rows} == {"gs.opt"} and len(rows) == 5


# ------------------------------------------------------------------ 2. failOnDataLoss
def _to_parquet(spark, url, stream, out, ckpt, **opts):
    q = (reader_stream(spark, url, stream, **opts).selectExpr("seq").writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
    except Exception as e:  # the query's failure, checked by the caller
        return q, e
    return q, None


def test_purge_between_micro_batches_fails_or_warns(spark, js_server, tmp_path):
    make_stream(js_server.url, "DL1", ["dl1.*"])
    publish(js_server.url, [("dl1.a", b"x")] * 1000)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")
    _, err = _to_parquet(spark, js_server.url, "DL1", out, ckpt)
    assert err is None
    publish(js_server.url, [("dl1.a", b"y")] * 2000)      # 1001..3000
    purge(js_server.url, "DL1", keep=1000)                 # 1001..2000 gone before they were read
    _, err = _to_parquet(spark, js_server.url, "DL1", out, ckpt)
    assert err is not None
    text = str(err)
    assert "ErrDataLoss" in text and "DL1" in text and "1001" in text and "2001" in text
    _, err = _to_parquet(spark, js_server.url, "DL1", out, ckpt, failOnDataLoss="false")
    assert err is None
    seqs = sorted(r.seq for r in spark.read.parquet(out).collect())
    assert seqs == list(range(1, 1001)) + list(range(2001, 3001))


def test_data_loss_warning_names_the_count(js_server, caplog):
    make_stream(js_server.url, "DL2", ["dl2.*"])
    publish(js_server.url, [("dl2.a", b"x")] * 50)
    purge(js_server.url, "DL2", keep=20)  # first seq 31
    opts = {"servers": js_server.url, "stream": "DL2", "failondataloss": "false"}
    r = tspark._StreamReader(opts, 2)
    with caplog.at_level(logging.WARNING, logger="tclnats_py.spark"):
        end = r.latestOffset({"seq": 11}, r.getDefaultReadLimit())
    assert end == {"seq": 51}
    assert "20 message(s) from sequence 11 to 30 were removed" in caplog.text
    assert [(p.first, p.last) for p in r.partitions({"seq": 11}, end)] == [(31, 40), (41, 50)]
    r2 = tspark._StreamReader(dict(opts, failondataloss="true"), 2)
    with pytest.raises(tclnats_py.NatsError) as e:
        r2.latestOffset({"seq": 11}, r2.getDefaultReadLimit())
    assert e.value.code == "ErrDataLoss" and "needs sequence 11" in str(e.value) and "now 31" in str(e.value)


def test_an_offset_past_the_stream_end_is_data_loss(js_server):
    make_stream(js_server.url, "DL4", ["dl4.*"])  # as if deleted and created again under a running query
    publish(js_server.url, [("dl4.a", b"x")] * 10)
    r = tspark._StreamReader({"servers": js_server.url, "stream": "DL4"}, 2)
    with pytest.raises(tclnats_py.NatsError) as e:
        r.latestOffset({"seq": 500}, r.getDefaultReadLimit())
    assert e.value.code == "ErrDataLoss" and "sequence 500" in str(e.value) and "ends at 10" in str(e.value)
    r = tspark._StreamReader({"servers": js_server.url, "stream": "DL4", "failondataloss": "false"}, 2)
    assert r.latestOffset({"seq": 500}, r.getDefaultReadLimit()) == {"seq": 500}


def test_batch_range_below_the_first_sequence(spark, js_server):
    make_stream(js_server.url, "DL3", ["dl3.*"])
    publish(js_server.url, [("dl3.a", b"x")] * 9000)
    purge(js_server.url, "DL3", keep=1000)  # 8001..9000 left
    with pytest.raises(Exception) as e:
        reader(spark, js_server.url, "DL3", startSeq=1, endSeq=9000).collect()
    assert "ErrDataLoss" in str(e.value) and "8001" in str(e.value)
    rows = reader(spark, js_server.url, "DL3", startSeq=1, endSeq=9000, failOnDataLoss="false").collect()
    assert sorted(r.seq for r in rows) == list(range(8001, 9001))


# ------------------------------------------------------------------ 3. empty and growing streams
def test_empty_stream_and_a_query_started_before_the_first_message(spark, js_server):
    make_stream(js_server.url, "EMPTY1", ["em.*"])
    assert reader(spark, js_server.url, "EMPTY1").count() == 0
    q = (reader_stream(spark, js_server.url, "EMPTY1").selectExpr("seq").writeStream.format("memory")
         .queryName("empty1").trigger(processingTime="300 milliseconds").start())
    try:
        time.sleep(1.5)
        assert q.exception() is None
        publish(js_server.url, [("em.a", b"1"), ("em.b", b"2"), ("em.a", b"3")])
        deadline = time.time() + 60
        while time.time() < deadline and spark.table("empty1").count() < 3:
            time.sleep(0.3)
        assert sorted(r.seq for r in spark.table("empty1").collect()) == [1, 2, 3]
    finally:
        q.stop()


# ------------------------------------------------------------------ 4. admission control, 8. progress
def test_available_now_honours_max_offsets_per_trigger_and_reports_lag(spark, js_server, tmp_path):
    make_stream(js_server.url, "AN1", ["an.*"])
    publish(js_server.url, [("an.x", b"m" * 100)] * 10_000)
    q = (reader_stream(spark, js_server.url, "AN1", maxOffsetsPerTrigger=2500).selectExpr("seq").writeStream
         .format("parquet").option("path", str(tmp_path / "o")).option("checkpointLocation", str(tmp_path / "c"))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in progress] == [2500] * 4
    src = progress[0]["sources"][0]
    latest = json.loads(src["latestOffset"])
    assert latest["seq"] == 10_001 and latest["messagesBehind"] == 7500 and latest["bytesBehind"] > 7500 * 100
    assert latest["description"] == "JetStream[stream=AN1]"
    assert json.loads(src["endOffset"]) == {"seq": 2501}
    assert sorted(r.seq for r in spark.read.parquet(str(tmp_path / "o")).collect()) == list(range(1, 10_001))


def test_min_offsets_wait_for_max_trigger_delay(js_server):
    make_stream(js_server.url, "AN2", ["an2.*"])
    publish(js_server.url, [("an2.x", b"1")] * 10)
    r = tspark._StreamReader({"servers": js_server.url, "stream": "AN2", "minoffsetspertrigger": "50",
                              "maxtriggerdelay": "1s", "maxmessagespertrigger": "100"}, 2)
    limit = r.getDefaultReadLimit()
    assert limit.max_rows == 100
    assert r.latestOffset({"seq": 1}, limit) == {"seq": 1}  # 10 < 50: wait
    time.sleep(1.1)
    assert r.latestOffset({"seq": 1}, limit) == {"seq": 11}  # the delay is over: what there is
    r.prepareForTriggerAvailableNow()  # availableNow does not wait for more
    publish(js_server.url, [("an2.x", b"1")] * 5)
    assert r.latestOffset({"seq": 11}, limit) == {"seq": 11}  # stops at the target taken before


def test_options_are_checked_at_load(spark, js_server):
    make_stream(js_server.url, "OPT1", ["opt1.*"])
    cases = [({"bogusOption": "1"}, "'bogusoption'"), ({"partitions": "abc"}, "option partitions must be an integer"),
             ({"failOnDataLoss": "maybe"}, "option failOnDataLoss must be true or false"),
             ({"nats.no_such": "1"}, "option nats.no_such"),
             ({"tlsCa": "/nonexistent/ca.pem"}, "option tlsCa: no such file"),
             ({"creds": "/nonexistent.creds"}, "option creds: no such file")]
    for opts, text in cases:
        with pytest.raises(Exception) as e:
            reader(spark, js_server.url, "OPT1", **opts).collect()
        assert text in str(e.value), (opts, str(e.value)[:600])
    with pytest.raises(Exception) as e:
        reader(spark, js_server.url, "OPT1", bogusOption="1")
    assert "known options:" in str(e.value) and "maxOffsetsPerTrigger" in str(e.value)
    with pytest.raises(Exception) as e:  # at load(), not at start()
        reader_stream(spark, js_server.url, "NO_SUCH_STREAM")
    assert "NO_SUCH_STREAM" in str(e.value)
    with pytest.raises(Exception) as e:
        reader_stream(spark, js_server.url, "OPT1", maxOffsetsPerTrigger="-3")
    assert "maxOffsetsPerTrigger" in str(e.value) or "maxoffsetspertrigger" in str(e.value)


# ------------------------------------------------------------------ 5. connect options reach every task
def _js_server_with(config, **kw):
    return NatsServer(config=config, jetstream=True, **kw)


def test_user_password_token_and_nkey_reach_the_tasks(spark, tmp_path):
    from tclnats_py.testing.auth import nkey_auth, token_auth, userpass_auth
    up = userpass_auth()
    with _js_server_with(up.config) as srv:
        make_stream(srv.url, "AU1", ["au.*"], user=up.user, password=up.password)
        publish(srv.url, [("au.a", b"x")] * 300, user=up.user, password=up.password)
        df = reader(spark, srv.url, "AU1", user=up.user, password=up.password, minPartitions=2)
        assert df.count() == 300
        # the pass-through form reaches the tasks too
        assert reader(spark, srv.url, "AU1", **{"nats.user": up.user, "nats.password": up.password}).count() == 300
        plan = df._jdf.queryExecution().toString()
        assert up.password not in plan
        t = time.monotonic()
        with pytest.raises(Exception) as e:
            reader(spark, srv.url, "AU1", user=up.user, password="wrong").count()
        assert "Authorization Violation" in str(e.value) or "ErrAuthorization" in str(e.value)
        assert "wrong" not in str(e.value).replace("wrong password", "")
        assert time.monotonic() - t < 20
    tk = token_auth()
    with _js_server_with(tk.config) as srv:
        make_stream(srv.url, "AU2", ["au2.*"], token=tk.token)
        publish(srv.url, [("au2.a", b"x")] * 10, token=tk.token)
        assert reader(spark, srv.url, "AU2", token=tk.token).count() == 10
    nk = nkey_auth(tmp_path)
    with _js_server_with(nk.config) as srv:
        make_stream(srv.url, "AU3", ["au3.*"], nkey_seed=nk.seed_path)
        publish(srv.url, [("au3.a", b"x")] * 10, nkey_seed=nk.seed_path)
        assert reader(spark, srv.url, "AU3", nkey=nk.seed_path).count() == 10
        # and a write through the same options
        spark.createDataFrame([("au3.w", b"w")] * 4, "subject string, data binary").write.format("jetstream") \
            .option("servers", srv.url).option("nkey", nk.seed_path).mode("append").save()
        assert state(srv.url, "AU3", nkey_seed=nk.seed_path)["messages"] == 14


def test_creds_read(spark, creds_server):
    srv, creds = creds_server
    make_stream(srv.url, "CR1", ["cr.*"], creds=creds)
    publish(srv.url, [("cr.a", b"x")] * 120, creds=creds)
    assert reader(spark, srv.url, "CR1", creds=creds, minPartitions=2).count() == 120
    with pytest.raises(Exception) as e:
        reader(spark, srv.url, "CR1", creds=srv.auth.bad_creds_path).count()
    assert "Authorization" in str(e.value) or "ErrAuth" in str(e.value)


def test_tls_read_and_write(spark, tls_certs):
    from tclnats_py.testing.certs import tls_config
    with _js_server_with(tls_config(tls_certs), tls=True) as srv:
        kw = {"tls_ca": tls_certs["ca"]}
        make_stream(srv.url, "TL1", ["tl.*"], **kw)
        publish(srv.url, [("tl.a", b"x")] * 200, **kw)
        assert reader(spark, srv.url, "TL1", tlsCa=tls_certs["ca"], minPartitions=2).count() == 200
        with pytest.raises(Exception) as e:  # no CA: the certificate is not trusted
            reader(spark, srv.url, "TL1").count()
        assert "certificate" in str(e.value).lower() or "ErrTLS" in str(e.value)
        spark.createDataFrame([("tl.w", b"w")] * 3, "subject string, data binary").write.format("jetstream") \
            .option("servers", srv.url).option("tlsCa", tls_certs["ca"]).mode("append").save()
        assert state(srv.url, "TL1", **kw)["messages"] == 203


# ------------------------------------------------------------------ 6. retry inside a task
def test_server_restart_mid_read_with_one_task_try(spark, fresh_server):
    url = fresh_server.url
    make_stream(url, "RS1", ["rs.*"], storage="file")
    n = 40_000
    publish(url, [("rs.a", b"r" * 1000)] * n)  # 40 MB: more than the buffers between the tasks and the sleeps
    df = reader(spark, url, "RS1", minPartitions=2, **{"fetchOffset.numRetries": 30,
                                                       "fetchOffset.retryIntervalMs": 200})

    def slow(rows):  # consumes slowly (1 KB rows), so the server restarts while the tasks read
        for i, r in enumerate(rows):
            if i % 1000 == 0:
                time.sleep(0.1)
            yield r.seq
    result = {}

    def go():
        try:
            result["rows"] = df.rdd.mapPartitions(slow).collect()
        except Exception as e:  # reported below
            result["error"] = e
    t = threading.Thread(target=go)
    t.start()
    deadline = time.time() + 30
    while time.time() < deadline and not consumers(url, "RS1"):
        time.sleep(0.05)
    assert consumers(url, "RS1"), f"the tasks' reads did not start: {str(result)[:3000]}"
    fresh_server.restart()
    # the tasks connect again and go on with new consumers (so the restart was mid-read)
    resumed = False
    while t.is_alive() and not resumed:
        try:
            resumed = bool(consumers(url, "RS1"))
        except tclnats_py.NatsError:
            pass
        time.sleep(0.05)
    t.join(180)
    assert resumed, "no read went on after the restart"
    assert "error" not in result, str(result.get("error"))[:2000]
    assert sorted(result["rows"]) == list(range(1, n + 1))
    assert spark.sparkContext.getConf().get("spark.task.maxFailures", "1") == "1"


def test_planning_waits_for_a_restarting_server(fresh_server, caplog):
    url = fresh_server.url
    make_stream(url, "RS2", ["rs2.*"], storage="file")
    publish(url, [("rs2.a", b"x")] * 100)
    fresh_server.stop()
    threading.Timer(1.0, fresh_server.start).start()
    opts = {"servers": url, "stream": "RS2", "fetchoffset.numretries": "20", "fetchoffset.retryintervalms": "200"}
    with caplog.at_level(logging.WARNING, logger="tclnats_py.spark"):
        r = tspark._BatchReader(opts, 2)
    assert [(p.first, p.last) for p in r.partitions()] == [(1, 50), (51, 100)]
    assert "retry 1 of 20" in caplog.text
    fresh_server.stop()
    with pytest.raises(tclnats_py.NatsError) as e:  # past the budget: the server's error
        tspark._BatchReader(dict(opts, **{"fetchoffset.numretries": "1"}), 2)
    assert e.value.code == "ErrNoServers" and url in str(e.value)


# ------------------------------------------------------------------ 7. planning follows the data
def test_subject_filtered_plan_is_balanced_and_a_miss_is_quick(spark, js_server):
    make_stream(js_server.url, "PL1", ["pl.*"])
    publish(js_server.url, [("pl.a", b"x")] * 9000 + [("pl.b", b"y")] * 1000)
    df = reader(spark, js_server.url, "PL1", subject="pl.b", minPartitions=4)
    sizes = df.rdd.mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    assert all(abs(n - 250) <= 6 for n in sizes) and sum(sizes) == 1000, sizes  # boundaries within 1/64 of a part
    # without minPartitions: the session's defaultParallelism, shipped by register()
    assert reader(spark, js_server.url, "PL1").rdd.getNumPartitions() == spark.sparkContext.defaultParallelism == 2
    t = time.monotonic()
    assert reader(spark, js_server.url, "PL1", subject="pl.none", minPartitions=4).count() == 0
    assert time.monotonic() - t < 10


def test_streaming_splits_a_backlog_over_min_partitions(js_server):
    make_stream(js_server.url, "PL2", ["pl2.*"])
    publish(js_server.url, [("pl2.a", b"x")] * 100)
    r = tspark._StreamReader({"servers": js_server.url, "stream": "PL2"}, 3)  # the cluster's parallelism: 3
    assert [(p.first, p.last) for p in r.partitions({"seq": 1}, {"seq": 101})] == [(1, 34), (35, 68), (69, 100)]


# ------------------------------------------------------------------ 9. ends only at the end
def test_limit_closes_the_consumers(spark, js_server):
    make_stream(js_server.url, "LIM1", ["lim.*"])
    publish(js_server.url, [("lim.a", b"x" * 32)] * 50_000)
    rows = reader(spark, js_server.url, "LIM1", minPartitions=2).limit(10).collect()
    assert len(rows) == 10
    deadline = time.time() + 20
    while time.time() < deadline and consumers(js_server.url, "LIM1"):
        time.sleep(0.2)
    assert consumers(js_server.url, "LIM1") == []
