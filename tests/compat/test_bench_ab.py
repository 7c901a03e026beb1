"""compat/bench_ab's arithmetic: paired new/old ratios per round, their
quartiles, and the CPU column (the runs themselves need two installs and
are the lead's to make)."""

from tclnats_py.compat import bench_ab


def _rounds(pairs):
    old = [{"py:deliver": (o, 2.0)} if o else {} for o, _n in pairs]
    new = [{"py:deliver": (n, 1.0)} if n else {} for _o, n in pairs]
    return {"old": old, "new": new}


def test_ratio_is_the_median_of_paired_rounds_not_of_medians():
    # the machine halves its speed now and then; in most rounds both sides
    # ran at the same speed, but the slow spells fell on new's turns in two
    # rounds: the ratio of the medians says 0.5, the paired rounds say 1
    runs = _rounds([(100.0, 100.0), (100.0, 50.0), (100.0, 50.0), (50.0, 50.0), (50.0, 50.0)])
    (row,) = bench_ab._rows("py", ["py:deliver"], runs, {"deliver": 900.0})
    assert row["old"] == 100.0 and row["new"] == 50.0
    assert row["new_over_old"] == 1.0
    assert (row["q1"], row["q3"]) == (0.5, 1.0)
    assert (row["cpu_us_old"], row["cpu_us_new"]) == (2.0, 1.0)
    assert row["raw_socket"] == 900.0


def test_a_failed_round_on_one_side_drops_that_pair_only():
    runs = _rounds([(100.0, 90.0), (100.0, None), (100.0, 80.0)])
    (row,) = bench_ab._rows("py", ["py:deliver"], runs, {})
    assert abs(row["new_over_old"] - 0.85) < 1e-9
    assert row["q1"] is not None and row["q1"] <= 0.85 <= row["q3"]


def test_tcl_figures_are_plain_rates_without_cpu():
    runs = {"old": [{"tcl:publish": 10.0}, {"tcl:publish": 12.0}], "new": [{"tcl:publish": 11.0}, {"tcl:publish": 12.0}]}
    (row,) = bench_ab._rows("tcl", ["tcl:publish"], runs, {})
    assert row["cpu_us_old"] is None and row["cpu_us_new"] is None
    assert abs(row["new_over_old"] - 1.05) < 1e-9


def test_print_marks_a_slower_row_and_says_when_its_spread_reaches_one(capsys):
    rows = [{"face": "py", "figure": "py:kv_get", "old": 100.0, "new": 90.0, "new_over_old": 0.9, "q1": 0.8,
             "q3": 1.02, "cpu_us_old": 3.0, "cpu_us_new": 3.1, "raw_socket": None}]
    bench_ab._print(rows, 1000, 3)
    out = capsys.readouterr().out
    assert "10.0% slower (spread reaches 1)" in out
    assert "0.80-1.02" in out and "3.00>3.10" in out


def test_rows_names_are_checked_before_anything_runs(capsys):
    import pytest
    with pytest.raises(SystemExit) as e:
        bench_ab.main(["--baseline", "/nonexistent/python", "--rows", "request,kv_gets"])
    assert e.value.code == 2
    assert "no such figure kv_gets" in capsys.readouterr().err


def test_turns_pair_each_group_of_figures_and_cover_every_figure():
    py = bench_ab.turns("py", [])
    assert py[:2] == [("tclnats_py", ["publish", "deliver"]), ("natspy", ["publish", "deliver"])]
    from tclnats_py.compat import bench, bench_py
    assert sorted(f for side, g in py if side == "natspy" for f in g) == sorted(bench_py.FIGURES)
    tcl = bench_ab.turns("tcl", [])
    assert all(side is None for side, _g in tcl)
    assert sorted(f for _side, g in tcl for f in g) == sorted(bench.FIGURES)


def test_turns_for_some_rows_bring_only_their_groups():
    assert bench_ab.turns("py", ["kv_get", "fetch"]) == [
        ("tclnats_py", ["fetch"]), ("natspy", ["fetch"]), ("tclnats_py", ["kv_put", "kv_get"]),
        ("natspy", ["kv_put", "kv_get"])]
    assert bench_ab.turns("tcl", ["request_async"]) == []
    assert bench_ab.turns("tcl", ["kv_get", "deliver"]) == [(None, ["deliver"]), (None, ["kv_put", "kv_get"])]


def test_a_serving_side_answers_each_group_and_survives_a_bad_line(js_server):
    # bench_py --serve, as bench_ab keeps it: one line a group, one answer a line
    import json
    import subprocess
    import sys
    from tclnats_py.compat import bench_py
    proc = subprocess.Popen([sys.executable, bench_py.__file__, "--serve", "tclnats_py", "--url", js_server.url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        asks = [{"rows": ["publish", "deliver"], "count": 2000}, {"rows": ["publish"], "count": "many"},
                {"rows": ["kv_put", "kv_get"], "count": 2000}]
        out, err = proc.communicate("".join(json.dumps(a) + "\n" for a in asks), timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    first, bad, kv = (json.loads(line) for line in out.splitlines())
    assert sorted(first["figures"]) == ["deliver", "publish"]
    assert all(rate > 0 and cpu > 0 for rate, cpu in first["figures"].values())
    assert bad == {"error": "ValueError: invalid literal for int() with base 10: 'many'"}
    assert sorted(kv["figures"]) == ["kv_get", "kv_put"]
