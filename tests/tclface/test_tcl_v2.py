"""The nats-tcl 2.x API (``package require nats 2``, or TCLNATS_API=2) on a
real nats-server, through stock tclsh and the Tcl extension: how the
generation is selected, both generations in one process, and what the
JetStream documents of Nov 2022 (seed 000) and Aug 2023 (seed 001) add to
2.0.4 that nats-tcl 2.0.4's own suite does not exercise: the per-call
``-timeout``/``-callback`` of management calls, ``stream_info`` of every
stream, ``publish -header``, stream and consumer options (``-mirror``,
``-sources``, JSON configs, consumer policies), ``stream_msg_get
-next_by_subj``, ``stream_msg_delete -no_erase``, ``$js metadata``, and the
``$js key_value`` factory with that document's KV API.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.tclface.test_tcl_hosts import LIBDIR, TCLSH, ok, run_tcl, stock_env

pytestmark = pytest.mark.tcl

LAUNCHER = shutil.which("tclnats-tclsh")


def lines(out: str) -> dict:
    """``name: value`` lines of a script's output."""
    d = {}
    for line in out.splitlines():
        name, sep, value = line.partition(": ")
        if sep:
            d[name] = value
    return d


PRELUDE = """
package require nats 2
set conn [nats::connection new v2test]
$conn configure -servers {url}
$conn connect
set js [$conn jet_stream]
proc show {{name value}} {{ puts "$name: $value" }}
proc err {{script}} {{
    if {{[catch {{uplevel 1 $script}} e opts]}} {{
        return [list [dict get $opts -errorcode] $e]
    }}
    return ok
}}
"""


def v2(script: str, server, tmp_path, **kw) -> dict:
    return lines(ok(run_tcl(PRELUDE.format(url=server.url) + script + "\n$conn destroy\n", tmp_path, **kw)))


# ------------------------------------------------------------ selection

def test_package_require_nats_2_gives_the_2x_api_and_3_stays_the_default(tmp_path):
    out = lines(ok(run_tcl("""
        puts "default: [package require nats]"
        puts "provider: [lindex $::tclnats::provider 0] [lindex $::tclnats::provider 2]"
        puts "methods3: [expr {"fetch" in [info class methods ::nats::jet_stream]}]"
        interp create two
        puts "two: [two eval {package require nats 2}]"
        puts "methods2: [two eval {lsort [info class methods ::nats::jet_stream]}]"
        puts "kv_store: [two eval {info commands ::nats::kv_store}]|[info commands ::nats::kv_store]"
    """, tmp_path)))
    assert out["default"] == "3.2.1"
    assert out["provider"] == "tclnats_py 3.2.1"
    assert out["methods3"] == "1"
    assert out["two"] == "2.0.4"
    for m in ("consume", "metadata", "key_value", "cancel_pull_request", "bind_kv_bucket"):
        assert m in out["methods2"].split()
    assert "fetch" not in out["methods2"].split()
    assert out["kv_store"] == "::nats::kv_store|"      # in the child only


def test_tclnats_api_2_selects_the_2x_api_without_editing_the_script(tmp_path):
    script = """
        puts "version: [package require nats]"
        puts "provider: [lindex $::tclnats::provider 2]"
        puts "three: [catch {package require nats 3} e] $e"
    """
    for host in (TCLSH, LAUNCHER):
        if host is None:
            continue
        out = lines(ok(run_tcl(script, tmp_path, host=host, env=stock_env(TCLNATS_API="2"))))
        assert out["version"] == "2.0.4", host
        assert out["provider"] == "2.0.4"
        assert out["three"].startswith("1 ")
    # any other value leaves the default
    out = lines(ok(run_tcl(script, tmp_path, env=stock_env(TCLNATS_API="3"))))
    assert out["version"] == "3.2.1"


def test_both_generations_in_one_process_talk_to_each_other(tmp_path, js_server):
    out = lines(ok(run_tcl(f"""
        package require nats
        set c3 [nats::connection new three]
        $c3 configure -servers {js_server.url}
        $c3 connect
        interp create two
        two eval {{
            package require nats 2
            set c2 [nats::connection new two]
            $c2 configure -servers {js_server.url}
            $c2 connect
            $c2 subscribe gen.svc -callback {{apply {{{{s m r}} {{ $::c2 publish $r "v2 got $m" }}}}}}
            $c2 ping
        }}
        puts "reply: [$c3 request gen.svc hello -timeout 2000]"
        # a 2.x request without -timeout has no limit (3.x: -request_timeout)
        puts "timeouts: [$c3 cget -request_timeout] [two eval {{$c2 cget -request_timeout}}]"
        puts "back: [two eval {{$c2 request gen.svc again}}]"
        two eval {{$c2 destroy}}
        $c3 destroy
    """, tmp_path)))
    assert out["reply"] == "v2 got hello"
    assert out["timeouts"] == "10000 0"
    assert out["back"] == "v2 got again"


def test_a_thread_worker_serves_2x_while_the_main_thread_serves_3x(tmp_path, js_server):
    out = lines(ok(run_tcl(f"""
        package require Thread
        package require nats
        set c3 [nats::connection new main]
        $c3 configure -servers {js_server.url}
        $c3 connect
        $c3 subscribe thr.svc -callback {{apply {{{{s m r}} {{ $::c3 publish $r "main got $m" }}}}}}
        $c3 ping
        set t [thread::create]
        thread::send $t [list set url {js_server.url}]
        # asynchronous: the main thread's event loop answers the worker's request meanwhile
        thread::send -async $t {{
            package require nats 2
            set c2 [nats::connection new worker]
            $c2 configure -servers $url
            $c2 connect
            set js [$c2 jet_stream]
            set r "[package present nats] [$c2 request thr.svc hi -timeout 2000] [info object class $js]"
            $c2 destroy
            set r
        }} ::reply
        vwait ::reply
        puts "worker: $::reply"
        puts "main: [package present nats] [expr {{"fetch" in [info class methods ::nats::jet_stream]}}]"
        thread::release $t
        $c3 destroy
    """, tmp_path)))
    assert out["worker"] == "2.0.4 main got hi ::nats::jet_stream"
    assert out["main"] == "3.2.1 1"


# ------------------------------------------------------------ seed 000: management calls

def test_management_calls_take_timeout_and_callback(tmp_path, js_server):
    out = v2("""
        catch {$js delete_stream MG}
        proc done {name timedOut result error} { set ::res($name) [list $timedOut $result $error] }
        $js add_stream MG -subjects mg.* -callback {done add}
        vwait ::res(add)
        lassign $::res(add) t r e
        show add "$t [dict get $r config name] <$e>"
        $js publish mg.a 1 -header {K v1}
        $js publish mg.a 1 -stream OTHER -callback {apply {{t a e} { set ::pub [list $t $a $e] }}}
        vwait ::pub
        lassign $::pub t a e
        show pub_error "$t <$a> [dict get $e code] [dict get $e err_code] [expr {[dict get $e description] eq [dict get $e errorMessage]}]"
        set m [nats::msg create mg.b -data x]
        $js publish_msg $m -timeout 2000 -callback {apply {{t a e} { set ::pub [list $t $a $e] }}}
        vwait ::pub
        show pub_ok "[lindex $::pub 0] [dict get [lindex $::pub 1] stream] <[lindex $::pub 2]>"
        $js publish mg.b 2
        show header [nats::header get [$js stream_msg_get MG -seq 1 -timeout 3000] K]
        $js stream_names -callback {done names}
        vwait ::res(names)
        show names [lrange $::res(names) 0 1]
        $js stream_info MG -timeout 2000 -callback {done info}
        vwait ::res(info)
        show info [dict get [lindex $::res(info) 1] state messages]
        $js stream_info NOPE -callback {done nope}
        vwait ::res(nope)
        lassign $::res(nope) t r e
        show nope "$t <$r> [dict get $e code]"
        $js stream_msg_get MG -last_by_subj mg.b -callback {done get}
        vwait ::res(get)
        show get [dict get [lindex $::res(get) 1] data]
        $js stream_msg_delete MG -seq 1 -callback {done del}
        vwait ::res(del)
        show del [lindex $::res(del) 1]
        show msgs [dict get [$js stream_info MG -timeout 2000] state messages]
        show all [lsort [lmap i [$js stream_info] {dict get $i config name}]]
        show all_timeout [llength [$js stream_info -timeout 2000]]
        $js publish mg.c 5
        $js publish mg.c 6
        show keep [$js purge_stream MG -filter mg.c -keep 1]
        show below [$js purge_stream MG -seq 3 -timeout 2000]
        $js purge_stream MG -callback {done purge}
        vwait ::res(purge)
        show purge [lindex $::res(purge) 1]
        show badtimeout [err {$js stream_names -timeout -5}]
        show nocallback [err {$js stream_names -timeout}]
        $js delete_stream MG -timeout 2000 -callback {done delete}
        vwait ::res(delete)
        show delete [lindex $::res(delete) 1]
    """, js_server, tmp_path)
    assert out["add"] == "0 MG <>"
    assert out["header"] == "v1"
    assert out["pub_error"] == "0 <> 400 10060 1"
    assert out["pub_ok"] == "0 MG <>"
    assert out["names"] == "0 MG"
    assert out["info"] == "3"
    assert out["nope"] == "0 <> NATS ErrStreamNotFound"
    assert out["get"] == "2"
    assert out["del"] == "true"
    assert out["msgs"] == "2"
    assert "MG" in out["all"].split()
    assert int(out["all_timeout"]) >= 1
    assert out["keep"] == "1" and out["below"] == "1"
    assert out["purge"] == "2"
    assert out["badtimeout"].startswith("{NATS ErrBadTimeout}")
    assert out["nocallback"].startswith("{NATS ErrInvalidArg}")
    assert out["delete"] == "true"


def test_a_management_call_failing_or_timing_out_tells_its_callback(tmp_path, js_server):
    # an API prefix nobody serves: ErrJetStreamNotEnabled (2.x's name for no
    # responders there), timedOut 0; one whose requests are received but
    # never answered: ErrTimeout after the call's -timeout, timedOut 1
    out = v2("""
        set dead [$conn jet_stream -domain nobody -timeout 300]
        show sync [err {$dead stream_names}]
        $dead stream_names -callback {apply {{t r e} { set ::r [list $t $r $e] }}}
        vwait ::r
        lassign $::r t r e
        show async "$t <$r> [dict get $e code]"
        $conn subscribe {$JS.silent.API.>} -callback {apply {{s m r} {}}}
        $conn ping
        set silent [$conn jet_stream -domain silent -timeout 5000]
        set t0 [clock milliseconds]
        $silent stream_names -timeout 300 -callback {apply {{t r e} { set ::r [list $t $r $e] }}}
        vwait ::r
        lassign $::r t r e
        show timeout "$t <$r> [dict get $e code] [expr {[clock milliseconds] - $t0 < 4000}]"
        show sync_timeout [lindex [err {$silent stream_info S -timeout 300}] 0]
    """, js_server, tmp_path)
    assert out["sync"] == "{NATS ErrJetStreamNotEnabled} {JetStream is not enabled in the server}"
    assert out["async"] == "0 <> NATS ErrJetStreamNotEnabled"
    assert out["timeout"] == "1 <> NATS ErrTimeout 1"
    assert out["sync_timeout"] == "NATS ErrTimeout"


# ------------------------------------------------------------ seed 001: streams and consumers

def test_stream_options_mirror_sources_and_json_configs(tmp_path, js_server):
    out = v2("""
        foreach s {OPT OMIR OSRC OJS} { catch {$js delete_stream $s} }
        set r [$js add_stream OPT -subjects opt.> -description "the source" -retention limits -discard new \
                   -max_age 60000 -duplicate_window 1000 -allow_direct true -max_msgs 100 -max_bytes 100000 \
                   -max_msg_size 1000 -max_msgs_per_subject 10 -storage memory -num_replicas 1 -deny_delete true \
                   -deny_purge false -allow_rollup_hdrs true -max_consumers 5 -no_ack false -sealed false \
                   -mirror_direct false]
        set c [dict get $r config]
        show config [lmap k {description retention discard max_age duplicate_window allow_direct max_msgs storage deny_delete max_consumers} {dict get $c $k}]
        $js publish opt.a 1
        $js publish opt.b 2
        $js publish opt.a 3
        show mirror [dict get [$js add_stream OMIR -mirror {name OPT}] config mirror name]
        show sources [llength [dict get [$js add_stream OSRC -sources {{name OPT} {name OPT filter_subject opt.b}}] config sources]]
        foreach s {OMIR OSRC} {
            for {set i 0} {$i < 50 && [dict get [$js stream_info $s] state messages] < 3} {incr i} { after 100 }
        }
        show copied "[dict get [$js stream_info OMIR] state messages] [dict get [$js stream_info OSRC] state messages]"
        show next [dict get [$js stream_msg_get OPT -next_by_subj opt.a -seq 2] seq]
        show nodelete [err {$js stream_msg_delete OPT -seq 1 -no_erase false}]
        set json [$js add_stream_from_json {{"name":"OJS","subjects":["ojs.>"],"storage":"memory"}}]
        show json_stream [dict get [json::json2dict $json] config storage]
        set json [$js add_consumer_from_json OJS JC {{"durable_name":"JC","ack_policy":"none"}}]
        show json_consumer [dict get [json::json2dict $json] config ack_policy]
        $js delete_stream OSRC
        $js add_stream OSRC -subjects osrc.>
        $js publish osrc.x 1
        $js publish osrc.x 2
        show erase [$js stream_msg_delete OSRC -seq 1 -no_erase false]
    """, js_server, tmp_path)
    assert out["config"] == "{the source} limits new 60000 1000 true 100 memory true 5"
    assert out["mirror"] == "OPT"
    assert out["sources"] == "2"
    assert out["copied"] == "3 4"
    assert out["next"] == "3"
    assert out["nodelete"].startswith("{NATS ErrJSResponse ")
    assert out["json_stream"] == "memory"
    assert out["json_consumer"] == "none"
    assert out["erase"] == "true"


def test_consumer_options_and_management(tmp_path, js_server):
    out = v2("""
        catch {$js delete_stream CON}
        $js add_stream CON -subjects con.>
        foreach i {1 2 3} { $js publish con.a $i }
        $js publish con.b 4
        set r [$js add_consumer CON -name EPH -description d -deliver_policy by_start_sequence -opt_start_seq 2 \
                   -ack_policy explicit -ack_wait 3000 -max_deliver 3 -filter_subject con.a -replay_policy instant \
                   -max_ack_pending 10 -headers_only true -inactive_threshold 5000 -mem_storage true -max_waiting 7]
        set c [dict get $r config]
        show eph [lmap k {name description deliver_policy opt_start_seq ack_wait max_deliver filter_subject headers_only inactive_threshold mem_storage max_waiting} {dict get $c $k}]
        show pending [dict get $r num_pending]
        set m [lindex [$js consume CON EPH -timeout 1000] 0]
        show headers_only "[dict get $m data]|[nats::header get $m Nats-Msg-Size]"
        set r [$js add_push_consumer CON PUSH push.con -deliver_group g1 -flow_control true -idle_heartbeat 1000 \
                   -rate_limit_bps 100000 -sample_freq 50% -ack_policy all]
        set c [dict get $r config]
        show push [lmap k {deliver_subject deliver_group flow_control idle_heartbeat rate_limit_bps sample_freq ack_policy} {dict get $c $k}]
        set r [$js add_consumer CON -durable_name TIME -deliver_policy by_start_time -opt_start_time 2020-01-01T00:00:00Z \
                   -replay_policy original -ack_policy none]
        show time [lmap k {deliver_policy opt_start_time replay_policy} {dict get $r config $k}]
        $js add_pull_consumer CON LAST -deliver_policy last_per_subject -filter_subject con.>
        show last [dict get [$js consumer_info CON LAST] num_pending]
        $js add_pull_consumer CON LAST1 -deliver_policy last -num_replicas 1 -ack_policy all
        show last1 [lmap k {deliver_policy num_replicas} {dict get [$js consumer_info CON LAST1] config $k}]
        show last1_pending [dict get [$js consumer_info CON LAST1] num_pending]
        $js add_pull_consumer CON NEW -deliver_policy new
        show new [dict get [$js consumer_info CON NEW -timeout 2000] num_pending]
        show names [lsort [$js consumer_names CON]]
        show bad_enum [err {$js add_consumer CON -durable_name X -deliver_policy sometimes}]
        show delete [$js delete_consumer CON NEW -timeout 2000]
        show gone [lindex [err {$js consumer_info CON NEW}] 0]
    """, js_server, tmp_path)
    assert out["eph"] == "EPH d by_start_sequence 2 3000 3 con.a true 5000 true 7"
    assert out["pending"] == "2"
    assert out["headers_only"] == "|1"
    assert out["push"] == "push.con g1 true 1000 100000 50% all"
    assert out["time"] == "by_start_time 2020-01-01T00:00:00Z original"
    assert out["last"] == "2"
    assert out["new"] == "0"
    assert out["last1"] == "last 1" and out["last1_pending"] == "1"
    assert out["names"] == "EPH LAST LAST1 NEW PUSH TIME"
    assert out["bad_enum"].startswith("{NATS ErrInvalidArg}")
    assert out["delete"] == "true"
    assert out["gone"] == "NATS ErrConsumerNotFound"


def test_metadata_acks_and_cancel_pull_request(tmp_path, js_server):
    out = v2("""
        catch {$js delete_stream META}
        $js add_stream META -subjects meta.>
        $js publish meta.a one
        $js publish meta.a two
        $js add_pull_consumer META C -ack_wait 60000
        set m [lindex [$js consume META C -batch_size 1 -timeout 1000] 0]
        set meta [$js metadata $m]
        show keys [dict keys $meta]
        show meta [lmap k {stream consumer num_delivered stream_seq consumer_seq num_pending} {dict get $meta $k}]
        show ts [expr {abs([dict get $meta timestamp] - [clock milliseconds]) < 60000}]
        $js nak $m -delay 60000
        $js in_progress $m
        set m2 [lindex [$js consume META C -timeout 1000] 0]
        show second [dict get $m2 data]
        $js term $m2
        show bad_meta [lindex [err {$js metadata [nats::msg create x]}] 0]
        # an async pull request cancelled: its callback is not called
        set ::calls 0
        set id [$js consume META C -batch_size 5 -timeout 600 -callback {apply {{t m} { incr ::calls }}}]
        $js cancel_pull_request $id
        after 900 {set ::waited 1}
        vwait ::waited
        show cancelled $::calls
    """, js_server, tmp_path)
    assert out["keys"] == "stream consumer num_delivered stream_seq consumer_seq timestamp num_pending"
    assert out["meta"] == "META C 1 1 1 1"
    assert out["ts"] == "1"
    assert out["second"] == "two"
    assert out["bad_meta"] == "NATS ErrNotJSMessage"
    assert out["cancelled"] == "0"


# ------------------------------------------------------------ seed 001: $js key_value

def test_key_value_factory_keys_and_errors(tmp_path, js_server):
    out = v2("""
        set kv [$js key_value]
        catch {$kv del KB}
        show add [dict get [$kv add KB -history 5 -storage memory -ttl 600000 -max_value_size 1000 -max_bucket_size 100000] config name]
        show put [$kv put KB k1 v1]
        show put2 [$kv put KB k1 v2 -check_bucket false]
        show get [$kv get KB k1]
        show getrev [dict get [$kv get KB k1 -revision 1] value]
        show nokey [err {$kv get KB nokey}]
        show norev [lindex [err {$kv get KB k1 -revision 99}] 0]
        show nobucket [lindex [err {$kv get NOBUCKET k}] 0]
        show nobucket_put [lindex [err {$kv put NOBUCKET k v}] 0]
        show unchecked_put [lindex [err {$kv put NOBUCKET k v -check_bucket false}] 0]
        show create_exists [lindex [err {$kv create KB k1 x}] 0]
        show create [$kv create KB k2 x]
        show update_stale [lindex [err {$kv update KB k2 1 y}] 0]
        show update [$kv update KB k2 3 y]
        show purge [dict get [$kv purge KB k2] seq]
        show history [lmap e [$kv history KB k1] {dict get $e value}]
        show history_all [llength [$kv history KB -timeout 2000]]
        show history_none [$kv history KB nothing]
        show keys [lsort [$kv keys KB]]
        show revert [$kv revert KB k1 1]
        show reverted [dict get [$kv get KB k1] value]
        $kv del KB k1
        show deleted [lindex [err {$kv get KB k1}] 0]
        show keys_after [$kv keys KB -timeout 2000]
        show bad_bucket [lindex [err {$kv put "bad.name" k v}] 0]
        show bad_key [lindex [err {$kv put KB .k v}] 0]
        show bad_add [lindex [err {$kv add KB2 -history 65}] 0]
        show bad_opt [lindex [err {$kv add KB2 -colour red}] 0]
        set info [$kv info KB]
        show info [lmap k {bucket stream storage history ttl max_value_size max_bucket_size backing_store} {dict get $info $k}]
        show info_has [expr {[dict exists $info store_config] && [dict exists $info store_state] && [dict get $info created] > 0}]
        show ls [expr {"KB" in [$kv ls]}]
        $kv del KB
        show dropped [lindex [err {$kv info KB}] 0]
        show dropped_del [lindex [err {$kv del KB}] 0]
    """, js_server, tmp_path)
    assert out["add"] == "KV_KB"
    assert out["put"] == "1" and out["put2"] == "2"
    get = out["get"].split()
    assert get[:8] == ["value", "v2", "bucket", "KB", "key", "k1", "operation", "PUT"]
    assert get[8:10] == ["revision", "2"] and get[10] == "created"
    assert out["getrev"] == "v1"
    assert out["nokey"].startswith("{NATS KeyNotFound}")
    assert out["norev"] == "NATS KeyNotFound"
    assert out["nobucket"] == "NATS BucketNotFound"
    assert out["nobucket_put"] == "NATS BucketNotFound"
    assert out["unchecked_put"] == "NATS BucketNotFound"
    assert out["create_exists"] == "NATS WrongLastSequence"
    assert out["create"] == "3"
    assert out["update_stale"] == "NATS WrongLastSequence"
    assert out["update"] == "4"
    assert out["purge"] == "5"
    assert out["history"] == "v1 v2"
    assert out["history_all"] == "3"
    assert out["history_none"] == ""
    assert out["keys"] == "k1"
    assert out["revert"] == "6"
    assert out["reverted"] == "v1"
    assert out["deleted"] == "NATS KeyNotFound"
    assert out["keys_after"] == ""
    assert out["bad_bucket"] == "NATS ErrInvalidArg"
    assert out["bad_key"] == "NATS ErrInvalidArg"
    assert out["bad_add"] == "NATS ErrInvalidArg"
    assert out["bad_opt"] == "NATS ErrInvalidArg"
    assert out["info"] == "KB KV_KB memory 5 600000 1000 100000 JetStream"
    assert out["info_has"] == "1"
    assert out["ls"] == "1"
    assert out["dropped"] == "NATS BucketNotFound"
    assert out["dropped_del"] == "NATS BucketNotFound"


def test_key_value_factory_read_only_and_options(tmp_path, js_server):
    out = v2("""
        set kv [$js key_value -timeout 3000 -check_bucket false]
        catch {$kv del RO}
        $kv add RO
        $kv put RO k v
        set ro [$js key_value -read_only true]
        foreach {name script} {
            put {$ro put RO k x} create {$ro create RO k2 x} update {$ro update RO k 1 x} del {$ro del RO k}
            purge {$ro purge RO k} revert {$ro revert RO k 1} add {$ro add RO2} drop {$ro del RO}
        } {
            show ro_$name [lindex [err $script] 0]
        }
        show ro_get [dict get [$ro get RO k] value]
        show ro_keys [$ro keys RO]
        show bad_factory [lindex [err {$js key_value -read_only maybe}] 0]
        show bad_timeout [lindex [err {$kv history RO -timeout 0}] 0]
        show unchecked_get [dict get [$kv get RO k] value]
        show unchecked_delete [err {$kv del RO k -check_bucket false}]
        show after_delete [lindex [err {$kv get RO k}] 0]
        $kv del RO
    """, js_server, tmp_path)
    for name in ("put", "create", "update", "del", "purge", "revert", "add", "drop"):
        assert out[f"ro_{name}"] == "NATS KvReadOnly", name
    assert out["ro_get"] == "v"
    assert out["ro_keys"] == "k"
    assert out["bad_factory"] == "NATS ErrInvalidArg"
    assert out["bad_timeout"] == "NATS ErrBadTimeout"
    assert out["unchecked_get"] == "v"
    assert out["unchecked_delete"] == "ok"
    assert out["after_delete"] == "NATS KeyNotFound"


def test_key_value_factory_watch_and_unwatch(tmp_path, js_server):
    out = v2("""
        set kv [$js key_value]
        catch {$kv del WB}
        $kv add WB -history 10
        $kv put WB a 1
        $kv put WB a 2
        $kv put WB b.x 3
        $kv del WB b.x
        proc cb {tag status msg} {
            if {$status eq ""} {
                lappend ::seen($tag) "[dict get $msg key]=[dict get $msg value]/[dict get $msg operation]"
            } else {
                lappend ::seen($tag) "<$status>"
            }
        }
        proc settle {tag n} {
            set t [after 5000 [list set ::seen(timeout) 1]]
            while {[llength [set ::seen($tag)]] < $n && ![info exists ::seen(timeout)]} { vwait ::seen }
            after cancel $t
            unset -nocomplain ::seen(timeout)
        }
        foreach {tag opts} {
            plain {} history {-include_history true} updates {-updates_only true}
            nodel {-ignore_deletes true} meta {-headers_only true} key {a} sub {b.> -idle_heartbeat 1000}
        } {
            set ::seen($tag) {}
            set w($tag) [$kv watch WB {*}$opts -callback [list cb $tag]]
        }
        $kv put WB a 4
        foreach {tag n} {plain 4 history 6 updates 2 nodel 3 meta 4 key 3 sub 2} { settle $tag $n }
        foreach tag {plain history updates nodel meta key sub} { show $tag $::seen($tag) }
        $kv unwatch $w(plain)
        $kv put WB a 5
        settle key 4
        show key_after $::seen(key)
        show after_unwatch $::seen(plain)
        show unwatch_twice [lindex [err {$kv unwatch $w(plain)}] 0]
        show no_callback [lindex [err {$kv watch WB}] 0]
        show both [lindex [err {$kv watch WB -callback x -include_history 1 -updates_only 1}] 0]
        show no_bucket [lindex [err {$kv watch NOWB -callback x}] 0]
        # the bucket goes: the watch says error
        set ::seen(gone) {}
        set w(gone) [$kv watch WB a -idle_heartbeat 200 -callback [list cb gone]]
        settle gone 2
        $kv del WB
        set t [after 8000 [list set ::seen(timeout2) 1]]
        while {![string match *<error>* $::seen(gone)] && ![info exists ::seen(timeout2)]} { vwait ::seen }
        after cancel $t
        show gone_error [expr {"<error>" in $::seen(gone)}]
        foreach tag [array names w] { catch {$kv unwatch $w($tag)} }
        $kv destroy
    """, js_server, tmp_path)
    assert out["plain"] == "a=2/PUT b.x=/DEL <end_of_initial_data> a=4/PUT"
    assert out["history"] == "a=1/PUT a=2/PUT b.x=3/PUT b.x=/DEL <end_of_initial_data> a=4/PUT"
    assert out["updates"] == "<end_of_initial_data> a=4/PUT"
    assert out["nodel"] == "a=2/PUT <end_of_initial_data> a=4/PUT"
    assert out["meta"] == "a=/PUT b.x=/DEL <end_of_initial_data> a=/PUT"
    assert out["key"] == "a=2/PUT <end_of_initial_data> a=4/PUT"
    assert out["key_after"] == "a=2/PUT <end_of_initial_data> a=4/PUT a=5/PUT"
    assert out["sub"] == "b.x=/DEL <end_of_initial_data>"
    assert out["after_unwatch"] == out["plain"]
    assert out["unwatch_twice"] == "NATS ErrInvalidArg"
    assert out["no_callback"] == "NATS ErrInvalidArg"
    assert out["both"] == "NATS ErrInvalidArg"
    assert out["no_bucket"] == "NATS BucketNotFound"
    assert out["gone_error"] == "1"


def test_key_value_factory_mirror_reads_the_copy_and_writes_the_origin(tmp_path, js_server):
    out = v2("""
        set kv [$js key_value]
        catch {$kv del MIR}
        catch {$kv del ORIG}
        $kv add ORIG -history 3
        $kv put ORIG k v
        show mirror [dict get [$kv add MIR -mirror_name ORIG] config mirror name]
        proc copied {n} {
            for {set i 0} {$i < 100 && [dict get [$::kv info MIR] values_stored] < $n} {incr i} { after 50 }
        }
        copied 1
        show get [dict get [$kv get MIR k] value]
        show put [$kv put MIR k2 v2]
        show origin [dict get [$kv get ORIG k2] value]
        copied 2
        show copy [dict get [$kv get MIR k2] value]
        show history [llength [$kv history MIR]]
        show keys [lsort [$kv keys MIR]]
        show info [dict exists [$kv info MIR] mirror]
        $kv del MIR
        $kv del ORIG
    """, js_server, tmp_path)
    assert out == {"mirror": "KV_ORIG", "get": "v", "put": "2", "origin": "v2", "copy": "v2", "history": "2",
                   "keys": "k k2", "info": "1"}


@pytest.mark.skipif(LAUNCHER is None, reason="tclnats-tclsh is not installed")
def test_the_same_2x_script_under_tclnats_tclsh(tmp_path, js_server):
    script = """
        set kv [$js key_value]
        catch {$kv del LB}
        $kv add LB
        show put [$kv put LB k v]
        show get [dict get [$kv get LB k] value]
        set b [$js bind_kv_bucket LB]
        show bound [dict get [$b get k] delta]|[dict get [$b get k] value]
        $kv del LB
    """
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env["TCLLIBPATH"] = LIBDIR
    a = v2(script, js_server, tmp_path, host=LAUNCHER, env=env)
    b = v2(script, js_server, tmp_path)
    assert a == b == {"put": "1", "get": "v", "bound": "|v"}
