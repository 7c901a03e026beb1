"""Object Store on the Python face against a real nats-server, with nats-py and
with the Tcl face."""

import asyncio
import io
import json
import os

import pytest

import tclnats_py
from tclnats_py.engine.js import objstore as O


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_object_store_roundtrip(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        obs = await js.create_object_store("PY_FILES", storage="memory", description="files",
                                           metadata={"kind": "test"})
        data = os.urandom(300 * 1024 + 17)  # three chunks of 128 KiB, the last one short
        info = await obs.put("blob.bin", data, description="random", headers={"Content-Type": "x/bin"},
                             metadata={"m": "1"})
        assert (info.size, info.chunks, info.digest) == (len(data), 3, O.digest_of(data)) and info.mtime
        assert info.headers == {"Content-Type": ["x/bin"]} and info.options == {"max_chunk_size": 128 * 1024}
        assert await obs.get_bytes("blob.bin") == data
        parts = [chunk async for chunk in obs.get("blob.bin")]
        assert [len(p) for p in parts] == [131072, 131072, 45073]
        got = await obs.get_info("blob.bin")
        assert got.nuid == info.nuid and got.description == "random" and got.mtime
        # other sources: str, a file, an async iterable; small chunks; empty objects
        assert (await obs.put("s.txt", "hello", chunk_size=2)).chunks == 3
        assert await obs.get_string("s.txt") == "hello"
        assert (await obs.put("f.bin", io.BytesIO(b"x" * 1000), chunk_size=300)).chunks == 4

        async def gen():
            for i in range(5):
                yield bytes([i]) * 100
        assert (await obs.put("gen.bin", gen(), chunk_size=128)).size == 500
        assert await obs.get_bytes("gen.bin") == b"".join(bytes([i]) * 100 for i in range(5))
        assert (await obs.put("empty", b"")).chunks == 0 and await obs.get_bytes("empty") == b""
        # a new version: the old chunks go
        before = (await js.stream_info("OBJ_PY_FILES")).state.messages
        await obs.put("s.txt", "hello again", chunk_size=4)
        assert await obs.get_string("s.txt") == "hello again"
        after = (await js.stream_info("OBJ_PY_FILES")).state.messages
        assert after == before - 3 + 3  # 3 old chunks purged, 3 new ones, the meta rolled up
        # list, delete, errors
        names = sorted(i.name for i in await obs.list())
        assert names == ["blob.bin", "empty", "f.bin", "gen.bin", "s.txt"]
        gone = await obs.delete("f.bin")
        assert gone.deleted and (await obs.get_info("f.bin", show_deleted=True)).deleted
        assert "f.bin" not in [i.name for i in await obs.list()]
        assert "f.bin" in [i.name for i in await obs.list(show_deleted=True)]
        for bad in (lambda: obs.get_bytes("f.bin"), lambda: obs.get_info("nope"), lambda: obs.delete("nope")):
            with pytest.raises(tclnats_py.ErrObjectNotFound):
                await bad()
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await obs.put("", b"x")
        st = await obs.status()
        assert (st.bucket, st.description, st.storage, st.sealed, st.backing_store) == (
            "PY_FILES", "files", "memory", False, "JetStream")
        assert st.metadata["kind"] == "test" and st.size > len(data)
        assert "PY_FILES" in await js.object_store_names()
        # sealed: nothing changes any more
        sealed = await obs.seal()
        assert sealed.config.sealed and sealed["config"]["sealed"]  # a StreamInfo: typed config, the JSON too
        with pytest.raises(tclnats_py.NatsError):
            await obs.put("late", b"x")
        assert await obs.get_bytes("blob.bin") == data
        await js.delete_object_store("PY_FILES")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.object_store("PY_FILES")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.delete_object_store("PY_FILES")
        await c.close()
    run(go())


def test_links_meta_watch_and_digest(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        a = await js.create_object_store("PY_A", storage="memory")
        b = await js.create_object_store("PY_B", storage="memory")
        info = await a.put("doc", b"document")
        await a.add_link("same-bucket", info)
        await b.add_link("other-bucket", info)
        assert await a.get_bytes("same-bucket") == b"document"
        assert await b.get_bytes("other-bucket") == b"document"
        await b.put("own", b"b's own")
        await b.add_link("by-name", "own")  # an object of this bucket by its name
        assert await b.get_bytes("by-name") == b"b's own"
        with pytest.raises(tclnats_py.ErrObjectNotFound):
            await b.add_link("dangling", "no-such-object")
        link = await b.get_info("other-bucket")
        assert link.is_link and link.link == {"bucket": "PY_A", "name": "doc"}
        await b.add_bucket_link("all-of-a", a)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await b.get_bytes("all-of-a")  # a link to a bucket is no object
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await a.add_link("doc", info)  # a live object has that name
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await b.add_link("chain", link)  # no links to links
        # update_meta: rename, description
        await a.update_meta("doc", new_name="doc2", description="renamed")
        with pytest.raises(tclnats_py.ErrObjectNotFound):
            await a.get_info("doc")
        assert (await a.get_info("doc2")).description == "renamed" and await a.get_bytes("doc2") == b"document"
        # watch: current infos, the marker, then changes
        w = a.watch()
        first = []
        async for i in w:
            first.append(i)
            if i is None:
                break
        assert sorted(i.name for i in first[:-1]) == ["doc2", "same-bucket"]
        await a.put("new", b"n")
        assert (await w.__anext__()).name == "new"
        await a.delete("new")
        assert (await w.__anext__()).deleted
        await w.stop()
        w = a.watch(updates_only=True)
        assert await w.__anext__() is None
        await w.stop()
        # a tampered digest is found out at the end of the read
        meta = await a.get_info("doc2")
        bad = dict(meta, digest=O.digest_of(b"something else"))
        bad.pop("mtime", None)
        await js.publish(O.meta_subject("PY_A", "doc2"), json.dumps(bad).encode(), {"Nats-Rollup": ["sub"]})
        with pytest.raises(tclnats_py.ErrDigestMismatch):
            await a.get_bytes("doc2")
        await js.delete_object_store("PY_A")
        await js.delete_object_store("PY_B")
        await c.close()
    run(go())


def test_object_store_interop_with_nats_py(js_server):
    import nats

    async def go():
        theirs = await nats.connect(js_server.url)
        tjs = theirs.jetstream()
        tobs = await tjs.create_object_store("X_OBJ")
        payload = os.urandom(200 * 1024)
        await tobs.put("from-nats-py", payload)
        ours = await tclnats_py.connect(js_server.url)
        obs = await ours.jetstream().object_store("X_OBJ")
        assert await obs.get_bytes("from-nats-py") == payload
        assert (await obs.get_info("from-nats-py")).size == len(payload)
        await obs.put("from-tclnats", payload[::-1], description="ours")
        res = await tobs.get("from-tclnats")
        assert res.data == payload[::-1] and res.info.description == "ours"
        assert sorted(i.name for i in await tobs.list()) == ["from-nats-py", "from-tclnats"]
        await obs.delete("from-nats-py")
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await tobs.get("from-nats-py")
        await tobs.delete("from-tclnats")
        with pytest.raises(tclnats_py.ErrObjectNotFound):
            await obs.get_info("from-tclnats")
        # a bucket made by tclnats_py, used by nats-py
        mine = await ours.jetstream().create_object_store("X_OBJ2")
        await mine.put("k", b"v" * 5000, chunk_size=1024)
        assert (await (await tjs.object_store("X_OBJ2")).get("k")).data == b"v" * 5000
        await tjs.delete_object_store("X_OBJ")
        await tjs.delete_object_store("X_OBJ2")
        await ours.close()
        await theirs.close()
    run(go())


@pytest.mark.tcl
def test_object_store_across_faces(js_server, tmp_path):
    """An object put from Tcl is got by nats-py; one put by nats-py is got from Tcl."""
    import shutil
    import subprocess
    import sys

    import nats
    exe = shutil.which("tclnats-tclsh")
    cmd = [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]
    script = tmp_path / "obj.tcl"
    script.write_text(
        "package require nats\n"
        "set c [nats::connection new]\n$c configure -servers $env(NATS_URL)\n$c connect\n"
        "set js [$c jet_stream]\nset obs [$js bind_object_store XF_OBJ]\n"
        "puts [string length [$obs get from-nats-py]]\n"
        "$obs put from-tcl [string repeat t 150000]\n$c destroy\n")

    async def go():
        theirs = await nats.connect(js_server.url)
        tjs = theirs.jetstream()
        tobs = await tjs.create_object_store("XF_OBJ")
        await tobs.put("from-nats-py", b"n" * 140000)
        env = dict(os.environ, NATS_URL=js_server.url)
        p = await asyncio.get_running_loop().run_in_executor(None, lambda: subprocess.run(
            cmd + [str(script)], capture_output=True, text=True, timeout=60, env=env))
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "140000"
        assert (await tobs.get("from-tcl")).data == b"t" * 150000
        ours = await tclnats_py.connect(js_server.url)
        assert await (await ours.jetstream().object_store("XF_OBJ")).get_bytes("from-tcl") == b"t" * 150000
        await ours.close()
        await tjs.delete_object_store("XF_OBJ")
        await theirs.close()
    run(go())


def test_replicas_follow_the_one_rule(js_server):
    """replicas=0 (the server's default) is accepted, as for streams and KV
    buckets; 6 is refused before anything is sent (engine.js.config.check_replicas)."""
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        obs = await js.create_object_store("REPL0", replicas=0, storage="memory")
        assert (await obs.status()).replicas == 1
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_object_store("REPL6", replicas=6, storage="memory")
        await js.delete_object_store("REPL0")
        await c.close()
    asyncio.run(go())
