"""The Tcl face's priority groups (ADR-42) against nats-server 2.10: ErrServerTooOld."""

import tkinter

import pytest

from tclnats_py.tclface import bridge as tclbridge

pytestmark = pytest.mark.tcl


@pytest.mark.feature("priority_groups", "api_level")
def test_priority_groups_need_a_newer_server(old_js_server):
    host = tkinter.Tcl()
    tclbridge.install(host)
    host.eval("package require nats")
    host.eval(f"""
        set conn [nats::connection new old]
        $conn configure -servers {old_js_server.url}
        $conn connect
        set js [$conn jet_stream]
        $js add_stream PRIO_OLD -subjects prio_old.> -storage memory
        proc code_of {{script}} {{
            try {{
                uplevel 1 $script
            }} trap NATS {{msg opts}} {{
                return [list [lindex [dict get $opts -errorcode] 1] $msg]
            }}
            return ok
        }}
    """)
    r = host.eval("code_of {$js add_pull_consumer PRIO_OLD P -priority_policy pinned_client -priority_groups jobs}")
    code, msg = host.splitlist(r)
    assert code == "ErrServerTooOld" and "needs nats-server 2.11 or newer" in msg
    code, msg = host.splitlist(host.eval(
        "code_of {$js add_pull_consumer PRIO_OLD P -priority_policy prioritized -priority_groups jobs}"))
    assert code == "ErrServerTooOld" and "2.12" in msg
    assert host.eval("$js consumer_names PRIO_OLD") == ""
    host.eval("$js add_pull_consumer PRIO_OLD P")
    assert host.splitlist(host.eval("code_of {$js unpin_consumer PRIO_OLD P jobs}"))[0] == "ErrServerTooOld"
    host.eval("$conn destroy")
