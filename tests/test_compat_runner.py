"""The conformance runner on a small suite of our own (no nats-tcl checkout needed)."""

import json
import os

import pytest

from compat import runner

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat_fixture")

pytestmark = pytest.mark.tcl


def test_runner_table_json_and_differences(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = runner.main([FIXTURE, "--json", str(out), "--no-netns", "--keep-logs", str(tmp_path / "logs")])
    printed = capsys.readouterr().out
    assert code == 1  # alpha-3 fails on one side
    report = json.loads(out.read_text())
    assert report["totals"]["original"] == {"passed": 5, "failed": 0, "skipped": 1}
    assert report["totals"]["tclnats"] == {"passed": 4, "failed": 1, "skipped": 1}
    assert report["differ"] == [{"file": "alpha.test", "test": "alpha-3", "original": "PASSED", "tclnats": "FAILED"}]
    assert "alpha.test" in printed and "tests whose outcome differs: 1" in printed
    assert (tmp_path / "logs" / "tclnats.log").exists()


def test_runner_one_side_and_file_filter(tmp_path):
    out = tmp_path / "r.json"
    code = runner.main([FIXTURE, "--side", "original", "-file", "beta*", "--json", str(out), "--no-netns"])
    report = json.loads(out.read_text())
    assert code == 0 and report["files"] == ["beta.test"]
    assert list(report["sides"]) == ["original"]


def test_parse_tcltest_output():
    text = "alpha.test\n++++ a-1 PASSED\n==== a-2 FAILED\n++++ a-3 SKIPPED: c\nbeta.test\n++++ b-1 PASSED\n"
    assert runner.parse_tcltest(text) == {"alpha.test": {"a-1": "PASSED", "a-2": "FAILED", "a-3": "SKIPPED"},
                                          "beta.test": {"b-1": "PASSED"}}


def test_natscli_pub_headers_and_stream_info(js_server):
    import asyncio
    import subprocess
    import sys

    import nats

    async def scenario():
        nc = await nats.connect(js_server.url)
        got = asyncio.get_running_loop().create_future()

        async def cb(msg):
            got.set_result(msg)
        await nc.subscribe("cli.hdr", cb=cb)
        await nc.flush()
        p = subprocess.run([sys.executable, "-m", "compat.natscli", "-s", js_server.url, "pub", "--force-stdin",
                            "-H", "k:v", "cli.hdr"], input=b"\x00\xffbinary", capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr
        msg = await asyncio.wait_for(got, 5)
        assert msg.data == b"\x00\xffbinary" and msg.headers == {"k": "v"}
        js = nc.jetstream()
        await js.add_stream(name="CLI_INFO", subjects=["cli.info.*"])
        p = subprocess.run([sys.executable, "-m", "compat.natscli", "-s", js_server.url, "stream", "info", "-j",
                            "CLI_INFO"], capture_output=True, text=True, timeout=30)
        info = json.loads(p.stdout)
        assert info["config"]["name"] == "CLI_INFO" and "state" in info
        p = subprocess.run([sys.executable, "-m", "compat.natscli", "-s", js_server.url, "stream", "info", "-j",
                            "NOPE"], capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "not found" in p.stderr
        await nc.close()
    asyncio.run(scenario())
