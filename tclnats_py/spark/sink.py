"""The sink: batch and streaming writes of rows as JetStream messages,
each with a ``Nats-Msg-Id`` that makes a retried task's messages duplicates
the stream drops, and a re-run micro-batch (planned in the checkpoint, not
committed) that first reads which of its rows an interrupted run wrote
(``_unfinished_batches``, ``_Resume``).  With the option ``atomic`` each
task writes its partition as atomic batches (ADR-50, ``_publish_batch``), so
a task that dies mid-partition leaves only whole batches.  Where the rows go
is checked on the driver at save()/start() (``_check_target``, ``_atomic_size``).
"""

from __future__ import annotations

import datetime
import json
import logging
import types
import uuid
from typing import Optional

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage

from tclnats_py.engine.js import batch as _batch
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.publish import MSG_ID
from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark import options as O
from tclnats_py.spark.read import _meta, _unreachable
from tclnats_py.spark.reader import Meta
from tclnats_py.spark.workers import _Shipped

log = logging.getLogger("tclnats_py.spark")


class _Commit(WriterCommitMessage):
    def __init__(self, published, duplicates, skipped=0):
        self.published = published
        self.duplicates = duplicates
        self.skipped = skipped  # rows an interrupted run had written already (a re-run batch)


def _in_commit_runner() -> bool:
    """Whether Spark made this writer to commit a micro-batch (it makes one per
    commit, in pyspark.sql.worker.python_streaming_sink_runner) rather than to
    start the query: the checks against the server were made at start()."""
    import sys
    f: Optional[types.FrameType] = sys._getframe(1)
    while f is not None:
        if f.f_globals.get("__name__") == "pyspark.sql.worker.python_streaming_sink_runner":
            return True
        f = f.f_back
    return False


def _check_target(opts, schema, settings) -> None:
    """Where the rows go, checked on the driver at save() / start(): a literal
    ``subject`` option must be a subject to publish to that a stream captures;
    without it the rows need a string column ``subject`` (its values are the
    tasks' to check: the driver does not read the data)."""
    from pyspark.sql.types import StringType

    from tclnats_py.engine.subjects import valid_subject
    fields = {f.name: f for f in schema.fields}
    id_col = opts.get("msgidcolumn")
    if id_col and id_col not in fields:
        raise make_error("ErrInvalidArg", f"option msgIdColumn: no column {id_col!r} (the columns are "
                         f"{', '.join(fields) or 'none'})")
    subject = opts.get("subject")
    if subject:
        subject = str(subject)
        if not valid_subject(subject):
            raise make_error("ErrBadSubject", f"option subject: {subject!r} is not a subject to publish to "
                             f"(no wildcards * or >, no spaces, no empty tokens)")
        try:
            with _meta(settings) as m:
                streams = m.call(m.api.stream_names(subject))
        except NatsError as e:
            if e.code not in _NOT_ALLOWED_TO_ASK:
                raise
            # an account that may publish but not list streams: its publishes tell
            log.warning("option subject %r: the streams could not be listed (%s: %s): not checked before the "
                        "write", subject, e.code, e)
            return
        if not streams:
            raise make_error("ErrStreamNotFound", f"no stream captures subject {subject!r} (option subject) at "
                             f"{settings.servers_text()}: create a stream with that subject, or correct the subject")
        return
    f = fields.get("subject")
    if f is None:
        raise make_error("ErrBadSubject", f"rows without a subject: give the option subject or a string column "
                         f"'subject' (the columns are {', '.join(fields) or 'none'})")
    if not isinstance(f.dataType, StringType):
        raise make_error("ErrBadSubject", f"column subject must be a string, not {f.dataType.simpleString()}")


# a JetStream API request that the account may not make (or that got no answer in time)
_NOT_ALLOWED_TO_ASK = frozenset(("ErrPermissions", "ErrAuthorization", "ErrTimeout"))

# how long before a batch's start (by Spark's clock) its messages are looked for (the server's clock may differ)
_RESUME_MARGIN_MS = 60_000


def _checkpoint_reader(ckpt: str):
    """(list_dir, read_file) for a checkpoint location: a local path or file: URI
    directly, anything else through pyarrow.fs (s3://, gs://, hdfs:// ...)."""
    import os
    import urllib.parse
    if "://" not in ckpt or ckpt.startswith("file:"):
        path = urllib.parse.urlsplit(ckpt).path if ckpt.startswith("file:") else ckpt

        def list_local(sub):
            try:
                return os.listdir(os.path.join(path, sub))
            except FileNotFoundError:
                return []

        def read_local(sub):
            try:
                with open(os.path.join(path, sub), encoding="utf-8") as f:
                    return f.read()
            except FileNotFoundError:
                return None
        return list_local, read_local
    import pyarrow.fs as pafs
    fs, root = pafs.FileSystem.from_uri(ckpt.replace("s3a://", "s3://", 1))

    def list_remote(sub):
        infos = fs.get_file_info(pafs.FileSelector(f"{root}/{sub}", allow_not_found=True))
        return [i.base_name for i in infos]

    def read_remote(sub):
        if fs.get_file_info(f"{root}/{sub}").type == pafs.FileType.NotFound:
            return None
        with fs.open_input_stream(f"{root}/{sub}") as f:
            return f.read().decode("utf-8")
    return list_remote, read_remote


def _unfinished_batches(ckpt):
    """The micro-batches that a streaming query's checkpoint planned (offsets/N)
    but did not commit (no commits/N): the batches a restarted query runs again.

    ``{"query": id, "batches": {N: batchTimestampMs}}``, or None when there is
    none.  Their tasks look in the target stream for what the interrupted run
    wrote, so a re-run past the stream's duplicate window publishes each row once."""
    if not ckpt:
        log.warning("streaming write without the option checkpointLocation: a micro-batch run again after a "
                    "restart is deduplicated only within the target stream's duplicate_window")
        return None
    try:
        list_dir, read = _checkpoint_reader(str(ckpt))
        meta = read("metadata")
        if meta is None:
            return None  # a new query
        query = json.loads(meta.splitlines()[0])["id"]
        offsets = [int(n) for n in list_dir("offsets") if n.isdigit()]
        commits = [int(n) for n in list_dir("commits") if n.isdigit()]
        done = max(commits, default=-1)
        batches = {}
        for n in sorted(b for b in offsets if b > done):
            lines = (read(f"offsets/{n}") or "").splitlines()
            try:
                batches[n] = int(json.loads(lines[1])["batchTimestampMs"])
            except (IndexError, KeyError, ValueError) as e:
                log.warning("checkpoint %s: offsets/%d has no batchTimestampMs (%s): its re-run looks through "
                            "the whole target stream", ckpt, n, e)
                batches[n] = 0
    except Exception as e:  # the protection is lost, not the write: say so
        log.warning("cannot read the checkpoint %s (%s: %s): a micro-batch run again after a restart is "
                    "deduplicated only within the target stream's duplicate_window", ckpt, type(e).__name__, e)
        return None
    if not batches:
        return None
    log.info("checkpoint %s: query %s runs batch(es) %s again (planned, not committed)", ckpt, query,
             sorted(batches))
    return {"query": query, "batches": batches}


class _Resume:
    """What an interrupted run of this task (same query, batch and partition)
    already wrote: the message ids in the target stream's messages since the
    batch began, read headers only by the blocking reader; one look per stream."""

    def __init__(self, settings, since_ms, prefix, subject_filter, where):
        self.settings = settings
        self.since_ms = max(0, since_ms)
        self.prefix = prefix            # None with msgIdColumn: every id counts
        self.filter = subject_filter    # the literal subject option, if any
        self.where = where
        self.by_subject = {}
        self.by_stream = {}

    def written(self, subject):
        ids = self.by_subject.get(subject)
        if ids is None:
            ids = self._look(subject)
            self.by_subject[subject] = ids
        return ids

    def _look(self, subject):
        try:
            return self._read_ids(subject)
        except NatsError as e:
            if e.code not in _NOT_ALLOWED_TO_ASK:
                raise
            log.warning("%s is a re-run but the stream of subject %r could not be read (%s: %s): its rows are "
                        "published again, deduplicated only within the stream's duplicate_window",
                        self.where, subject, e.code, e)
            return frozenset()

    def _read_ids(self, subject):
        from tclnats_py.spark.reader import read_columns
        with Meta(self.settings) as m:
            streams = m.call(m.api.stream_names(subject))
            if not streams:
                return frozenset()  # its publish fails, naming the subject
            stream = streams[0]
            if stream in self.by_stream:
                return self.by_stream[stream]
            last = int(m.stream_info(stream)["state"].get("last_seq", 0))
            since = datetime.datetime.fromtimestamp(self.since_ms / 1000, datetime.timezone.utc)
            first = m.seq_at_time(stream, since.isoformat(), self.filter)
        ids = set()
        seen = 0
        for cols in read_columns(self.settings, stream, first, last, self.filter, headers_only=True):
            seen += len(cols["seq"])
            for _, h in cols["headers"]:
                v = h.get("Nats-Msg-Id")
                if isinstance(v, (list, tuple)):
                    v = v[0] if v else None
                if v and (self.prefix is None or v.startswith(self.prefix)):
                    ids.add(v)
        log.info("%s is a re-run: %d of its messages are in stream %s already (%d messages looked at, "
                 "sequences %d..%d)", self.where, len(ids), stream, seen, first, last)
        self.by_stream[stream] = ids
        return ids


def _atomic_size(opts, settings, check_server: bool) -> int:
    """Rows per atomic batch with the option ``atomic`` true (``atomicBatchSize``,
    default the server's default limit, 1000), else 0: the plain write.  On the
    driver at save() / start() (``check_server``): the server must take atomic
    batches (nats-server 2.12, asked once: ErrServerTooOld), and the streams of
    a literal ``subject`` option must have ``allow_atomic``."""
    if not O.opt_bool(opts, "atomic", False):
        if opts.get("atomicbatchsize") is not None:
            raise make_error("ErrInvalidArg", "option atomicBatchSize is for atomic writes: give atomic=true too")
        return 0
    size = O.opt_int(opts, "atomicbatchsize", _batch.DEFAULT_LIMITS["max_msgs"], 1)
    if not check_server:
        return size
    subject = opts.get("subject")
    try:
        with _meta(settings) as m:
            m.call(require_level(m.api, _batch.FEATURE))
            streams = m.call(m.api.stream_names(str(subject))) if subject else []
            off = [s for s in streams if not m.stream_info(s)["config"].get("allow_atomic")]
    except NatsError as e:
        if e.code not in _NOT_ALLOWED_TO_ASK:
            raise
        log.warning("option atomic: the server's API level or the target streams could not be read (%s: %s): "
                    "not checked before the write", e.code, e)
        return size
    if off:
        raise make_error("ErrInvalidArg", f"option atomic: stream {off[0]} (of subject {subject!r}) does not take "
                         f"atomic batches: update it with allow_atomic true, or write with atomic=false")
    return size


def _publish_batch(js, pending, counts, where):
    """Publish ``pending`` (subject, data, headers, row) as one atomic batch.

    A batch refused for a duplicate Nats-Msg-Id holds rows an earlier try of
    this task stored (Spark may end a failing task's input early, so its
    last batch can be shorter than the retry's): it is split in halves, each
    published again as an atomic batch, down to single rows, so the rows
    stored already are refused alone and every other row is stored once,
    inside an atomic batch."""
    first, last = pending[0][3], pending[-1][3]
    try:
        ack = js.publish_batch([m[:3] for m in pending])
    except NatsError as e:
        if e.code == "ErrNoResponders":
            raise make_error("ErrNoResponders", f"no stream captures a subject of rows {first}..{last} of "
                             f"{where} (an atomic batch got no responders): create a stream with that subject, "
                             f"or correct the subject") from None
        if e.details.get("err_code") != _batch.ERR_DUPLICATE_MSG_ID:
            raise make_error(e.code, f"publishing rows {first}..{last} of {where} as an atomic batch: {e}") from None
        if len(pending) == 1:
            counts[0] += 1
            counts[1] += 1  # in the stream already
            return
        half = len(pending) // 2
        _publish_batch(js, pending[:half], counts, where)
        _publish_batch(js, pending[half:], counts, where)
    else:
        counts[0] += ack.batch_size


def _write_rows(settings, opts, columns, rows, id_base, where, resume=None, atomic=0):
    subject_opt = opts.get("subject")
    msg_id_col = opts.get("msgidcolumn")
    if msg_id_col and msg_id_col not in columns:
        raise make_error("ErrInvalidArg", f"option msgIdColumn: no column {msg_id_col!r} (columns: {columns})")

    def settle(futs, counts):
        for subject, i, f in futs:
            try:
                ack = f.result()  # within the publish's own deadline (the JetStream timeout)
            except NatsError as e:
                if e.code == "ErrNoResponders":
                    raise make_error("ErrNoResponders", f"no stream captures subject {subject!r} (row {i} of "
                                     f"{where}; its publish got no responders): create a stream with that "
                                     f"subject, or correct the subject") from None
                raise make_error(e.code, f"publishing row {i} of {where} to {subject!r}: {e}") from None
            counts[0] += 1
            counts[1] += bool(ack.get("duplicate"))
        futs.clear()

    c, js = _js_connect(settings)
    counts = [0, 0]  # published, duplicates
    skipped = 0
    try:
        futs = []
        pending = [] if atomic else None  # the rows of the atomic batch being made
        for i, row in enumerate(rows):
            d = row.asDict() if hasattr(row, "asDict") else dict(zip(columns, row))
            subject = subject_opt or d.get("subject")  # the option wins, as Kafka's topic
            if not subject:
                raise make_error("ErrBadSubject", f"row {i} of {where} has no subject (its column subject "
                                 f"is {d.get('subject')!r}): give every row a subject, or the option subject")
            msg_id = str(d[msg_id_col]) if msg_id_col else f"{id_base}-{i}"
            if resume is not None and msg_id in resume.written(subject):
                skipped += 1
                continue
            data = d.get("data")
            if data is None:
                data = d.get("value", b"")
            if isinstance(data, str):
                data = data.encode()
            headers = d.get("headers") or None
            if headers:
                headers = {k: list(v) if isinstance(v, (list, tuple)) else [str(v)] for k, v in headers.items()}
            if pending is not None:
                pending.append((subject, bytes(data), dict(headers or {}, **{MSG_ID: [msg_id]}), i))
                if len(pending) >= atomic:
                    _publish_batch(js, pending, counts, where)
                    pending.clear()
                continue
            futs.append((subject, i, js.publish_async(subject, bytes(data), headers, msg_id=msg_id)))
            if len(futs) >= 512:
                settle(futs, counts)
        if pending:
            _publish_batch(js, pending, counts, where)
        settle(futs, counts)
    finally:
        try:
            js.close()
        finally:
            c.close()
    return _Commit(counts[0], counts[1], skipped)


def _js_connect(settings):
    """A blocking client (tclnats_py.sync) of the task's servers and its JetStream context."""
    import tclnats_py.sync
    try:
        c = tclnats_py.sync.connect(settings.servers, **settings.connect_kwargs())
    except NatsError as e:
        raise _unreachable(settings, e) from None
    return c, c.jetstream(domain=settings.domain, api_prefix=settings.api_prefix)


def _task_ids():
    from pyspark import TaskContext
    tc = TaskContext.get()
    if tc is None:
        return 0, None, None
    return tc.partitionId(), tc.getLocalProperty("streaming.sql.batchId"), tc.getLocalProperty("sql.streaming.queryId")


class _Writer(_Shipped, DataSourceWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        _check_target(opts, schema, self.settings)
        self.atomic = _atomic_size(opts, self.settings, True)
        # given (an idempotent re-run), or new for this write: two writes never share ids
        self.write_id = opts.get("writeid") or uuid.uuid4().hex

    def write(self, iterator):
        partition, _, _ = _task_ids()
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{self.write_id}-{partition}",
                           f"partition {partition}", atomic=self.atomic)


class _StreamWriter(_Shipped, DataSourceStreamWriter):
    def __init__(self, opts, schema):
        self.opts = opts
        self.settings = O.parse_conn(opts)
        self.columns = [f.name for f in schema.fields]
        self.write_id = opts.get("writeid")
        self.unfinished = None
        at_start = not _in_commit_runner()
        self.atomic = _atomic_size(opts, self.settings, at_start)
        if at_start:  # the checks, and the batches run again
            _check_target(opts, schema, self.settings)
            self.unfinished = _unfinished_batches(opts.get("checkpointlocation"))

    def write(self, iterator):
        partition, batch, query = _task_ids()
        base = self.write_id or query
        if not base:
            raise make_error("ErrInvalidArg", "no streaming query id in the task (sql.streaming.queryId): "
                             "give the option writeId")
        where = f"partition {partition} of batch {batch}"
        resume = None
        u = self.unfinished
        if u and batch is not None and int(batch) in u["batches"] and (self.write_id or query == u["query"]):
            prefix = None if self.opts.get("msgidcolumn") else f"{base}-{batch}-{partition}-"
            resume = _Resume(self.settings, u["batches"][int(batch)] - _RESUME_MARGIN_MS, prefix,
                             self.opts.get("subject") or None, where)
        return _write_rows(self.settings, self.opts, self.columns, iterator, f"{base}-{batch}-{partition}", where,
                           resume, self.atomic)

    def commit(self, messages, batchId):
        done = [m for m in messages if isinstance(m, _Commit)]
        skipped = sum(m.skipped for m in done)
        if skipped:
            log.info("batch %d (run again after a restart): %d row(s) were in the stream already and were not "
                     "published again; %d published", batchId, skipped, sum(m.published for m in done))

    def abort(self, messages, batchId):
        log.warning("batch %d aborted: what its tasks published stays in the stream; a restart from the "
                    "checkpoint runs the batch again and publishes only the rows that are not there", batchId)
