"""Object Store on the Python face, and interop with nats-py's object store."""

import asyncio
import os

import pytest

import tclnats_py


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_object_store_roundtrip_links_list_delete(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        obs = await js.create_object_store("PY_FILES", storage="memory")
        data = os.urandom(300 * 1024 + 17)  # three chunks of 128 KiB, the last one short
        info = await obs.put("blob.bin", data, description="random")
        assert info["size"] == len(data) and info["chunks"] == 3 and info["digest"].startswith("SHA-256=")
        assert await obs.get_bytes("blob.bin") == data
        await obs.put("small.txt", b"hello")
        await obs.put("small.txt", b"hello again")  # a new version; the old chunks are purged
        assert await obs.get_bytes("small.txt") == b"hello again"
        await obs.add_link("latest", info)
        assert await obs.get_bytes("latest") == data
        assert sorted(i["name"] for i in await obs.list()) == ["blob.bin", "latest", "small.txt"]
        await obs.delete("small.txt")
        with pytest.raises(tclnats_py.ErrObjectNotFound):
            await obs.get_bytes("small.txt")
        assert "PY_FILES" in await js.object_store_names()
        await js.delete_object_store("PY_FILES")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.object_store("PY_FILES")
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
        await obs.put("from-tclnats", payload[::-1])
        res = await tobs.get("from-tclnats")
        assert res.data == payload[::-1]
        await tjs.delete_object_store("X_OBJ")
        await ours.close()
        await theirs.close()
    run(go())


def test_object_store_across_faces(js_server, tmp_path):
    """An object put from Tcl is got by nats-py; one put by nats-py is got from Tcl."""
    import shutil
    import subprocess
    import sys

    import nats
    exe = shutil.which("tclnats-tclsh")
    cmd = [exe] if exe else [sys.executable, "-m", "tclnats_py.tclsh"]
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
        await tjs.delete_object_store("XF_OBJ")
        await theirs.close()
    run(go())
