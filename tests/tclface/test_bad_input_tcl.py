"""Bad input on the Tcl face: every public command with wrong option values,
unknown options, missing option values, invalid subjects, queue groups,
stream, consumer, bucket and key names, negative, non-numeric or huge
timeouts and sizes.  Each call must fail with the documented ``{NATS Err...}``
error code, and afterwards the connection is still connected, an existing
subscription still gets its message and a request is still answered.

(Tcl's own "wrong # args" for a method called with too few words is Tcl's
calling convention and stays as it is.)
"""

from __future__ import annotations

import tkinter

import pytest

from tclnats_py.tclface.bridge import install

pytestmark = pytest.mark.tcl

CASES = [
    ('$c publish "" x', 'ErrBadSubject'),
    ('$c publish "a b" x', 'ErrBadSubject'),
    ('$c publish a..b x', 'ErrBadSubject'),
    ('$c publish a.* x', 'ErrBadSubject'),
    ('$c publish a.> x', 'ErrBadSubject'),
    ('$c publish foo x -reply "bad reply"', 'ErrBadSubject'),
    ('$c publish foo x -header {a}', 'ErrInvalidArg'),
    ('$c publish foo x -header 1', 'ErrInvalidArg'),
    ('$c publish foo x -bogus 1', 'ErrInvalidArg'),
    ('$c publish foo [string repeat x 2000000]', 'ErrMaxPayload'),
    ('$c subscribe "" -callback cb', 'ErrBadSubject'),
    ('$c subscribe "a b" -callback cb', 'ErrBadSubject'),
    ('$c subscribe a..b -callback cb', 'ErrBadSubject'),
    ('$c subscribe foo -queue "a b" -callback cb', 'ErrBadQueueName'),
    ('$c subscribe foo -queue a.b -callback cb', 'ErrBadQueueName'),
    ('$c subscribe foo -max_msgs -1 -callback cb', 'ErrInvalidArg'),
    ('$c subscribe foo -max_msgs abc -callback cb', 'ErrInvalidArg'),
    ('$c subscribe foo -dictmsg maybe -callback cb', 'ErrInvalidArg'),
    ('$c subscribe foo -callback', 'ErrInvalidArg'),
    ('$c subscribe foo -bogus 1', 'ErrInvalidArg'),
    ('$c unsubscribe 99999', 'ErrBadSubscription'),
    ('$c unsubscribe abc', 'ErrBadSubscription'),
    ('$c unsubscribe $sid -max_msgs -5', 'ErrInvalidArg'),
    ('$c unsubscribe $sid -max_msgs abc', 'ErrInvalidArg'),
    ('$c request "" x', 'ErrBadSubject'),
    ('$c request "a b" x', 'ErrBadSubject'),
    ('$c request svc x -timeout -1', 'ErrBadTimeout'),
    ('$c request svc x -timeout abc', 'ErrBadTimeout'),
    ('$c request svc x -timeout 1e12', 'ErrBadTimeout'),
    ('$c request svc x -max_msgs -1', 'ErrInvalidArg'),
    ('$c request svc x -bogus 1', 'ErrInvalidArg'),
    ('$c request_msg {}', 'ErrInvalidArg'),
    ('$c request_msg {subject}', 'ErrInvalidArg'),
    ('$c publish_msg {}', 'ErrInvalidArg'),
    ('$c publish_msg [nats::msg create ""]', 'ErrBadSubject'),
    ('$c ping -timeout -5', 'ErrBadTimeout'),
    ('$c ping -timeout abc', 'ErrBadTimeout'),
    ('$c configure -servers {nats://bad host:4222}', 'ErrInvalidArg'),
    ('$c configure -servers {bogus://x}', 'ErrInvalidArg'),
    ('$c configure -ping_interval -1', 'ErrBadTimeout'),
    ('$c configure -ping_interval abc', 'ErrBadTimeout'),
    ('$c configure -max_reconnect_attempts abc', 'ErrInvalidArg'),
    ('$c configure -connect_timeout -5', 'ErrBadTimeout'),
    ('$c configure -randomize maybe', 'ErrInvalidArg'),
    ('$c configure -bogus 1', 'ErrInvalidArg'),
    ('$c cget -bogus', 'ErrInvalidArg'),
    ('$c connect -async maybe', 'ErrInvalidArg'),
    ('$c cancel_request abc', 'ErrInvalidArg'),
    ('$c cancel_request 99999', 'ErrInvalidArg'),
    ('$c jet_stream -timeout -1', 'ErrBadTimeout'),
    ('$c jet_stream -timeout abc', 'ErrBadTimeout'),
    ('$c jet_stream -domain "a b"', 'ErrInvalidArg'),
    ('nats::msg set {} bogus 1', 'ErrInvalidArg'),
    ('nats::isotime_to_msec garbage', 'ErrInvalidArg'),
    ('nats::msec_to_isotime abc', 'ErrInvalidArg'),
    ('$js publish "" x', 'ErrBadSubject'),
    ('$js publish "a b" x', 'ErrBadSubject'),
    ('$js publish foo x -timeout -1', 'ErrBadTimeout'),
    ('$js publish foo x -msg_id "a b"', 'ErrInvalidArg'),
    ('$js publish foo x -expected_last_seq abc', 'ErrInvalidArg'),
    ('$js publish foo x -bogus 1', 'ErrInvalidArg'),
    ('$js fetch "" pull', 'ErrInvalidArg'),
    ('$js fetch "a b" pull', 'ErrInvalidArg'),
    ('$js fetch BI ""', 'ErrInvalidArg'),
    ('$js fetch BI "a.b"', 'ErrInvalidArg'),
    ('$js fetch BI pull -batch_size -1', 'ErrInvalidArg'),
    ('$js fetch BI pull -batch_size abc', 'ErrInvalidArg'),
    ('$js fetch BI pull -timeout -1', 'ErrBadTimeout'),
    ('$js fetch BI pull -expires -1', 'ErrBadTimeout'),
    ('$js fetch BI nosuch -batch_size 1 -timeout 500', 'ErrConsumerNotFound'),
    ('$js fetch NOSUCH pull -batch_size 1 -timeout 500', 'ErrStreamNotFound'),
    ('$js ack {}', 'ErrBadSubject'),
    ('$js ack garbage', 'ErrInvalidArg'),
    ('$js nak garbage', 'ErrInvalidArg'),
    ('$js term garbage', 'ErrInvalidArg'),
    ('$js in_progress garbage', 'ErrInvalidArg'),
    ('$js ack_sync garbage', 'ErrInvalidArg'),
    ('$js add_stream "" -subjects x', 'ErrInvalidArg'),
    ('$js add_stream "a.b" -subjects x', 'ErrInvalidArg'),
    ('$js add_stream "a b" -subjects x', 'ErrInvalidArg'),
    ('$js add_stream "a*b" -subjects x', 'ErrInvalidArg'),
    ('$js add_stream OK2 -storage disk', 'ErrInvalidArg'),
    ('$js add_stream OK3 -max_msgs abc', 'ErrInvalidArg'),
    ('$js add_stream OK6 -subjects', 'ErrInvalidArg'),
    ('$js stream_info ""', 'ErrInvalidArg'),
    ('$js stream_info "a.b"', 'ErrInvalidArg'),
    ('$js stream_info NOSUCH', 'ErrStreamNotFound'),
    ('$js delete_stream "a b"', 'ErrInvalidArg'),
    ('$js delete_stream NOSUCH', 'ErrStreamNotFound'),
    ('$js purge_stream NOSUCH', 'ErrStreamNotFound'),
    ('$js add_consumer BI -durable_name "a.b"', 'ErrInvalidArg'),
    ('$js add_consumer BI -durable_name "a b"', 'ErrInvalidArg'),
    ('$js add_consumer BI -ack_policy maybe', 'ErrInvalidArg'),
    ('$js add_consumer BI -max_deliver abc', 'ErrInvalidArg'),
    ('$js add_consumer "a b" -durable_name x', 'ErrInvalidArg'),
    ('$js add_pull_consumer BI "a.b"', 'ErrInvalidArg'),
    ('$js add_pull_consumer BI ""', 'ErrInvalidArg'),
    ('$js consumer_info BI "a b"', 'ErrInvalidArg'),
    ('$js consumer_info BI NOSUCH', 'ErrConsumerNotFound'),
    ('$js delete_consumer BI NOSUCH', 'ErrConsumerNotFound'),
    ('$js stream_msg_get BI -seq abc', 'ErrInvalidArg'),
    ('$js stream_msg_delete BI -seq abc', 'ErrInvalidArg'),
    ('$js create_kv_bucket ""', 'ErrInvalidArg'),
    ('$js create_kv_bucket "a.b"', 'ErrInvalidArg'),
    ('$js create_kv_bucket "a b"', 'ErrInvalidArg'),
    ('$js create_kv_bucket OK -history 1000', 'ErrInvalidArg'),
    ('$js create_kv_bucket OK -history -1', 'ErrInvalidArg'),
    ('$js create_kv_bucket OK -ttl -1', 'ErrInvalidArg'),
    ('$js create_kv_bucket OK -storage disk', 'ErrInvalidArg'),
    ('$js create_kv_bucket OK -bogus 1', 'ErrInvalidArg'),
    ('$js bind_kv_bucket NOSUCH', 'ErrBucketNotFound'),
    ('$js bind_kv_bucket "a b"', 'ErrInvalidArg'),
    ('$js delete_kv_bucket NOSUCH', 'ErrBucketNotFound'),
    ('$kv get ""', 'ErrInvalidArg'),
    ('$kv get "a b"', 'ErrInvalidArg'),
    ('$kv get a..b', 'ErrInvalidArg'),
    ('$kv get .a', 'ErrInvalidArg'),
    ('$kv get a.', 'ErrInvalidArg'),
    ('$kv get "a*"', 'ErrInvalidArg'),
    ('$kv get a>', 'ErrInvalidArg'),
    ('$kv get nosuchkey', 'ErrKeyNotFound'),
    ('$kv get k -revision abc', 'ErrInvalidArg'),
    ('$kv get k -revision -1', 'ErrInvalidArg'),
    ('$kv put "" v', 'ErrInvalidArg'),
    ('$kv put "a b" v', 'ErrInvalidArg'),
    ('$kv put a..b v', 'ErrInvalidArg'),
    ('$kv create "a b" v', 'ErrInvalidArg'),
    ('$kv update "a b" v 1', 'ErrInvalidArg'),
    ('$kv update k v abc', 'ErrInvalidArg'),
    ('$kv delete "a b"', 'ErrInvalidArg'),
    ('$kv delete k abc', 'ErrInvalidArg'),
    ('$kv purge "a b"', 'ErrInvalidArg'),
    ('$kv revert k abc', 'ErrInvalidArg'),
    ('$kv history "a b"', 'ErrInvalidArg'),
    ('$kv watch "a b" -callback cb', 'ErrInvalidArg'),
    ('$kv watch k -callback', 'ErrInvalidArg'),
    ('$kv watch k -bogus 1', 'ErrInvalidArg'),
    ('$js create_object_store "a b"', 'ErrInvalidArg'),
    ('$js bind_object_store NOSUCH', 'ErrBucketNotFound'),
    ('$js ordered_consumer "a b" -callback cb', 'ErrInvalidArg'),
    ('$js ordered_consumer BI', 'ErrInvalidArg'),
    ('$c publish foo x -header [dict create "bad key" 1]', 'ErrInvalidArg'),
    ('$c publish foo x -header [dict create k [list "a\\r\\nb"]]', 'ErrInvalidArg'),
    ('$c publish foo x -header [dict create "" 1]', 'ErrInvalidArg'),
]


@pytest.fixture(scope="module")
def tcl(js_server):
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval(f"""
        package require nats
        proc cb {{args}} {{}}
        set c [nats::connection new badinput -log_chan stderr -log_level error]
        $c configure -servers {js_server.url}
        $c connect
        set ::got [list]
        set sid [$c subscribe probe -callback [list apply {{{{s m r}} {{lappend ::got $m}}}}]]
        $c subscribe svc -callback [list apply {{{{s m r}} {{$::c publish $r "re:$m"}}}}]
        set js [$c jet_stream -timeout 2000]
        catch {{$js delete_stream BI}}
        $js add_stream BI -subjects bi.>
        $js add_pull_consumer BI pull
        catch {{$js delete_kv_bucket BIKV}}
        set kv [$js create_kv_bucket BIKV]
        $kv put k v
    """)
    yield tk
    tk.eval("$c destroy")


def _healthy(tk):
    assert tk.eval("$c cget -status") == "connected"
    assert tk.eval("set [info object namespace $c]::last_error") == ""
    n = len(tk.splitlist(tk.eval("set ::got")))
    tk.eval("$c publish probe hello; $c ping")
    tk.eval(f"""
        set ::t [after 3000 {{set ::got timeout}}]
        while {{$::got ne "timeout" && [llength $::got] <= {n}}} {{ vwait ::got }}
        after cancel $::t
    """)
    assert tk.splitlist(tk.eval("set ::got"))[-1] == "hello"
    assert tk.eval("$c request svc ping -timeout 3000") == "re:ping"


@pytest.mark.parametrize("command,code", CASES, ids=[c for c, _ in CASES])
def test_bad_input_gives_the_documented_code(tcl, command, code):
    with pytest.raises(tkinter.TclError) as e:
        tcl.eval(command)
    assert tcl.splitlist(tcl.eval("set ::errorCode"))[:2] == ("NATS", code), str(e.value)
    assert str(e.value)  # a message, not just a code
    _healthy(tcl)
