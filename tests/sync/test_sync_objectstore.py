"""Object Store on the blocking face (tclnats_py.sync.objectstore) against a
real nats-server: put and get from bytes, files, file objects and
iterables, info, list, delete, links and a watch."""

import io
import os

import pytest

import tclnats_py
from tclnats_py.aio.objectstore import ObjectInfo as AioObjectInfo
from tclnats_py.sync.objectstore import ObjectInfo

from tests.sync.js_helpers import js_client


def test_put_get_info_delete(js_server, tmp_path):
    assert ObjectInfo is AioObjectInfo
    with js_client(js_server) as (nc, js):
        obs = js.create_object_store("SO_FILES", storage="memory", description="files")
        data = os.urandom(300_000)
        info = obs.put("blob", data, description="random", metadata={"k": "v"}, chunk_size=64_000)
        assert isinstance(info, ObjectInfo) and (info.size, info.chunks, info.description) == (300_000, 5, "random")
        assert obs.get_bytes("blob") == data
        assert b"".join(obs.get("blob")) == data and len(list(obs.get("blob"))) == 5
        assert obs.get_info("blob").metadata == {"k": "v"}
        src = tmp_path / "in.bin"
        src.write_bytes(data[:1000])
        obs.put_file("file", src)
        assert obs.get_file("file", tmp_path / "out.bin").size == 1000
        assert (tmp_path / "out.bin").read_bytes() == data[:1000]
        obs.put("stream", io.BytesIO(b"from a file object"))
        obs.put("parts", [b"ab", "cd", bytearray(b"ef")])
        obs.put("gen", (b"%d" % i for i in range(3)))
        assert (obs.get_string("stream"), obs.get_bytes("parts"), obs.get_bytes("gen")) == (
            "from a file object", b"abcdef", b"012")
        obs.put("empty", b"")
        assert obs.get_bytes("empty") == b""
        assert sorted(i.name for i in obs.list()) == ["blob", "empty", "file", "gen", "parts", "stream"]
        assert obs.delete("blob").deleted is True
        with pytest.raises(tclnats_py.ErrObjectNotFound):
            obs.get_bytes("blob")
        assert "blob" in {i.name for i in obs.list(show_deleted=True)}
        with pytest.raises(tclnats_py.ErrInvalidArg):
            obs.put("bad", 12345)
        assert obs.status().bucket == "SO_FILES" and "SO_FILES" in js.object_store_names()
        assert js.delete_object_store("SO_FILES") is True
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            js.object_store("SO_FILES")


def test_links_and_watch(js_server):
    with js_client(js_server) as (nc, js):
        obs = js.create_object_store("SO_LINKS", storage="memory")
        target = obs.put("doc", b"the document")
        obs.add_link("latest", target)
        assert obs.get_bytes("latest") == b"the document" and obs.get_info("latest").is_link
        with obs.watch() as w:
            first = [next(w).name, next(w).name]
            assert sorted(first) == ["doc", "latest"] and next(w) is None
            obs.put("new", b"x")
            assert next(w).name == "new"
        obs.update_meta("doc", description="described")
        assert obs.get_info("doc").description == "described"
