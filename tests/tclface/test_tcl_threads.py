"""Tcl threads that start (or join) the embedded Python at the same moment,
under stock tclsh: Thread and tpool workers whose first connections come
together, child interpreters in them, and the thread that started Python
ending before the others.

Each run is a fresh tclsh process (Python starts once per process, so only
a new process races its start again): TCLNATS_THREAD_RUNS of them (3; the
long form is 20).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.tclface.test_tcl_hosts import TCLSH, ok, run_tcl, stock_env

pytestmark = pytest.mark.tcl

HERE = os.path.dirname(os.path.abspath(__file__))
STRESS = os.path.join(HERE, "thread_stress.tcl")
RUNS = int(os.environ.get("TCLNATS_THREAD_RUNS", "3"))


def counts_line(out: str) -> tuple[str, str]:
    line = next(x for x in out.splitlines() if x.startswith("threads tasks fds: "))
    before, after = line[len("threads tasks fds: "):].split(" -> ")
    return before, after


@pytest.mark.parametrize("run", range(RUNS))
def test_tpool_and_thread_workers_start_python_at_once(nats_server, run):
    """8 tpool workers (-initcmd {package require nats}) and 8 Thread workers
    (package require in the job) released at once, none of them with Python
    running yet: each connects, makes 500 requests to a responder in another
    process, and has a child interpreter that connects (before or after its
    parent) and makes 50; then the main thread joins the Python a worker
    started.  Every request is answered and the process is left with the
    Tcl threads, OS threads and descriptors it had before."""
    p = subprocess.run([TCLSH, STRESS, nats_server.url], capture_output=True, text=True,
                       timeout=300, env=stock_env(), stdin=subprocess.DEVNULL)
    out = ok(p)
    assert "answered 8800 of 8800" in out, out
    assert "main thread's request: re:main" in out
    assert "errors: 0" in out
    before, after = counts_line(out)
    assert before == after, out


def test_two_tpool_workers_connect_at_once(tmp_path, nats_server):
    """A tpool of 2 whose first jobs each make a connection at the same
    moment (it crashed tclsh: a segmentation fault, or "could not start
    Python (init_fs_encoding: ...)" then free(): invalid pointer)."""
    for _ in range(RUNS):
        out = ok(run_tcl(f"""
            package require Thread
            set pool [tpool::create -minworkers 2 -maxworkers 2 -initcmd {{package require nats}}]
            set jobs {{}}
            foreach w {{1 2}} {{
                lappend jobs [tpool::post $pool [list apply {{{{url w}} {{
                    set c [nats::connection new w$w]
                    $c configure -servers $url
                    $c connect
                    set r [$c cget -status]
                    $c destroy
                    return $r
                }}}} {nats_server.url} $w]]
            }}
            foreach j $jobs {{
                tpool::wait $pool $j
                puts [tpool::get $pool $j]
            }}
            tpool::release $pool
        """, tmp_path))
        assert out.split() == ["connected", "connected"], out


@pytest.mark.parametrize("first", ["thread", "tpool"])
def test_the_thread_that_started_python_ends_first(tmp_path, nats_server, first):
    """A Thread worker (or a tpool worker) starts Python and ends; then 4 workers at once, a
    tpool worker and the main thread connect and make requests: the state
    the first thread left (its Python thread state, the GIL) stops none of
    them."""
    out = ok(run_tcl(f"""
        package require Thread
        set url {nats_server.url}
        after 1 {{set ::warm 1}}
        vwait ::warm
        proc counts {{}} {{
            list [llength [thread::names]] [llength [glob -directory /proc/[pid]/task *]] \\
                [llength [glob -directory /proc/[pid]/fd *]]
        }}
        set before [counts]
        set serve {{
            proc serve {{url subject}} {{
                package require nats
                set c [nats::connection new]
                $c configure -servers $url
                $c connect
                $c subscribe $subject -callback [list apply {{{{c s m r}} {{ $c publish $r "re:$m" }}}} $c]
                $c ping
                return $c
            }}
            proc ask {{url subject n}} {{
                package require nats
                set c [nats::connection new]
                $c configure -servers $url
                $c connect
                set good 0
                for {{set i 0}} {{$i < $n}} {{incr i}} {{
                    if {{[$c request $subject $i -timeout 20000] eq "re:$i"}} {{ incr good }}
                }}
                $c destroy
                return $good
            }}
        }}
        # work reaches the threads by thread::send once they are in thread::wait:
        # a thread::release that arrives while a creation script still runs an
        # event loop of its own (connect, vwait) is lost (Thread 2.8's
        # thread::wait then waits for one more event first), in plain Tcl too
        # the first thread: Python starts here, then the thread ends
        set job {{
            set c [serve $url first.svc]
            set r [ask $url first.svc 20]
            $c destroy
            set r
        }}
        if {{"{first}" eq "thread"}} {{
            set first [thread::create -joinable "$serve; thread::wait"]
            thread::send $first [list set url $url]
            puts "first: [thread::send $first $job]"
            thread::release $first
            thread::join $first
        }} else {{
            set firstpool [tpool::create -minworkers 0 -maxworkers 1 -initcmd $serve]
            set j [tpool::post $firstpool "set url $url; list \\[thread::id\\] \\[$job\\]"]
            tpool::wait $firstpool $j
            lassign [tpool::get $firstpool $j] first r
            puts "first: $r"
            tpool::release $firstpool
            # tpool's worker ends on its own after tpool::release
            while {{[thread::exists $first]}} {{ after 10 }}
        }}
        puts "first exists: [thread::exists $first]"
        set responder [thread::create -joinable "$serve; thread::wait"]
        thread::send $responder [list set url $url]
        thread::send $responder {{set c [serve $url later.svc]}}
        set workers {{}}
        foreach w {{1 2 3 4}} {{
            lappend workers [thread::create -joinable "$serve; thread::wait"]
        }}
        foreach t $workers {{
            thread::send -async $t [list ask $url later.svc 200] ::answer($t)
        }}
        foreach t $workers {{
            while {{![info exists ::answer($t)]}} {{
                vwait ::answer($t)
            }}
        }}
        puts "workers: [lmap t $workers {{set ::answer($t)}}]"
        set pool [tpool::create -minworkers 1 -maxworkers 1 -initcmd $serve]
        set job [tpool::post $pool [list ask $url later.svc 50]]
        tpool::wait $pool $job
        puts "tpool: [tpool::get $pool $job]"
        tpool::release $pool
        eval $serve
        puts "main: [ask $url later.svc 50]"
        thread::send $responder {{$c destroy}}
        foreach t [list {{*}}$workers $responder] {{
            thread::release $t
            thread::join $t
        }}
        set after [counts]
        for {{set i 0}} {{$i < 600 && $after ne $before}} {{incr i}} {{
            after 100
            set after [counts]
        }}
        puts "threads tasks fds: $before -> $after"
    """, tmp_path, timeout=300))
    assert "first: 20" in out and "first exists: 0" in out, out
    assert "workers: 200 200 200 200" in out
    assert "tpool: 50" in out and "main: 50" in out
    before, after = counts_line(out)
    assert before == after, out
