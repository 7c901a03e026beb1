"""tclnats_py.compat.plot: the bars it draws from benchmark JSON, and the PNG."""

import json

import pytest

from tclnats_py.compat import plot


def test_bars_from_the_three_benchmarks():
    tcl = {"figures": [{"figure": "publish", "ratio": 3.5}, {"figure": "request", "ratio": None}]}
    py = {"figures": [{"figure": "deliver", "ratio": 1.5}]}
    mem = {"ratios": [{"peer": "nats-py", "ours": "tclnats_py asyncio", "ratio": 1.2}]}
    rows = plot.bars(tcl, py, mem)
    assert rows == [("Tcl publish", 3.5, "Tcl vs nats-tcl"),
                    ("Py deliver", 1.5, "Python vs nats-py"),
                    ("RSS tclnats_py asyncio", 1.2, "memory (peer / ours)")]


def test_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    src = tmp_path / "b.json"
    src.write_text(json.dumps({"figures": [{"figure": "publish", "ratio": 3.5},
                                           {"figure": "deliver", "ratio": 15.0}]}))
    out = tmp_path / "r.png"
    assert plot.main(["--tcl", str(src), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_input_is_an_error(tmp_path):
    assert plot.main(["-o", str(tmp_path / "x.png")]) == 2


def test_faces_gather_every_series_of_every_run():
    run1 = {"figures": [{"figure": "publish", "unit": "msg/s", "original": 10.0, "tclnats": 100.0, "raw_socket": 300.0},
                        {"figure": "request", "unit": "req/s", "original": 1.0, "tclnats": 2.0, "raw_socket": None}]}
    run2 = {"figures": [{"figure": "publish", "unit": "msg/s", "original": 12.0, "tclnats": 90.0, "raw_socket": 280.0}]}
    py = {"figures": [{"figure": "kv_get", "nats-py": 3.0, "tclnats_py": 7.0, "natspy_api": 4.0, "raw_socket": 9.0,
                       "nats_core": 1.0, "nats_core_missing": "not measured"}]}
    panels = plot.faces([run1, run2], [py])
    assert panels["Tcl"] == [("publish", "msg/s", {"tclnats": [100.0, 90.0], "original": [10.0, 12.0],
                                                   "raw_socket": [300.0, 280.0]}),
                             ("request", "req/s", {"tclnats": [2.0], "original": [1.0]})]
    assert panels["Python"] == [("KV get", "op/s", {"tclnats_py": [7.0], "natspy_api": [4.0], "nats-py": [3.0],
                                                    "nats_core": [1.0], "raw_socket": [9.0]})]
    assert plot.machine_of([{"machine": "m1"}], None) == "m1"
    assert plot.machine_of([{"machine": "m1"}], "given") == "given"


def test_faces_svg_is_reproducible_and_carries_the_caption(tmp_path):
    pytest.importorskip("matplotlib")
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"figures": [{"figure": "publish", "unit": "msg/s", "original": 10.0,
                                            "tclnats": 100.0, "raw_socket": 300.0}]}))
    outs = []
    for name in ("a.svg", "b.svg"):
        out = tmp_path / name
        assert plot.main(["--faces", "--tcl", str(src), "--machine", "a test box", "-o", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    assert "a test box" in outs[0] and "nats-tcl 3.2.1" in outs[0] and "raw-socket ceiling" in outs[0]


def test_scale_json_is_drawn_with_its_ceilings(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [{"target": t, "executors": e, "partitions": p, "read": 1000 * p * e, "write": 500 * p,
             "read_vs_ceiling": 0.5} for t in ("single", "cluster") for e in (1, 2) for p in (1, 2, 4, 8)]
    src = tmp_path / "scale.json"
    src.write_text(json.dumps({"throughput": rows, "ceiling": {"single": 9000, "cluster": 7000},
                               "messages": 1000, "machine": "test machine"}))
    out = tmp_path / "scale.svg"
    assert plot.main(["--scale", str(src), "-o", str(out)]) == 0
    svg = out.read_text()
    assert "raw-socket fetch ceiling" in svg and "cluster, 2 executors" in svg and "test machine" in svg
    src.write_text(json.dumps({"throughput": []}))
    assert plot.main(["--scale", str(src), "-o", str(out)]) == 2


def test_scale_json_with_read_profiles_gets_the_cpu_panel(tmp_path):
    pytest.importorskip("matplotlib")
    cpu = {"wall_s": 5.0, "cores": 2, "cpu_s": {"nats-server": 2.5, "Python workers": 1.0, "executor JVMs": 1.5},
           "ours_s": 5.0, "machine_busy_s": 9.0, "ours_of_cores": 0.5, "machine_of_cores": 0.9}
    rows = [{"target": t, "executors": e, "partitions": p, "read": 1000 * p * e + (p == 2), "write": 500 * p,
             "read_vs_ceiling": 0.5, "cpu": cpu} for t in ("single", "cluster") for e in (1, 2) for p in (1, 2)]
    src = tmp_path / "scale.json"
    src.write_text(json.dumps({"throughput": rows, "ceiling": {"single": 9000, "cluster": 7000}}))
    out = tmp_path / "scale.svg"
    assert plot.main(["--scale", str(src), "-o", str(out)]) == 0
    svg = out.read_text()
    # one bar per (target, executors): its best read, 2 partitions
    assert "what bounds the read" in svg and "other programs on the machine" in svg
    assert "single, 2 ex., 2 p." in svg and "cluster, 1 ex., 2 p." in svg and "single, 1 ex., 1 p." not in svg
