# The public shape of nats-tcl 2.0.4's API (CoreAPI.md, JsAPI.md of 2.0.4),
# with what its JetStream documents of Nov 2022 and Aug 2023 add, over the
# same engine as the 3.2.1 API. Loaded after nats.tcl, server_pool.tcl and
# jet_stream.tcl (see pkgIndex.tcl); only what differs between the
# generations is here: argument and result shapes. The behaviour itself is
# tclnats_py/engine (and engine/js), driven by tclnats_py/tclface.
#
# Core: requests without -timeout wait without limit (2.x has no
# -request_timeout; the option stays, with 0 meaning no limit), and
# [$conn jet_stream] takes -timeout, -domain and -trace only.
# JetStream: nats::jet_stream with 2.x's methods (consume, metadata, the
# -timeout/-callback of every management call of the 2022 document,
# key_value of the 2023 document), nats::key_value (2.x's KV bucket), and
# nats::kv_store (the 2023 document's KV API: bucket named in each call).

dict set ::nats::_option_overrides request_timeout 0

# a synchronous call waits in the event loop, as in nats-tcl 2.x, where the
# callbacks of earlier messages run meanwhile (3.2.1's default first waits
# for the reply on the socket; see nats.tcl)
set ::tclnats::await_us 0

# 2.x's synchronous calls: callbacks posted before the reply came (a
# watcher's entries read together with a put's reply) run before the call
# returns, as they do in 2.x where the reply is read later
oo::define ::nats::connection method WaitResult {rid} {
    set var [self namespace]::results($rid)
    while {![info exists $var]} {
        nats::_coroVwait $var
    }
    set r [set $var]
    unset $var
    ::nats::_v2_run_posted
    return $r
}
# (its WaitLoop, not 3.2.1's wait in C, which takes the result without this)
oo::define ::nats::connection method WaitRequest {rid} {
    tailcall my WaitLoop $rid
}
proc ::nats::_v2_run_posted {} {
    set var ::nats::_v2_turn([incr ::nats::_v2_turns])
    after 0 [list set $var 1]
    nats::_coroVwait $var
    unset $var
}

# 2.x's ping: a lost or closed connection does not end it; it ends with its
# reply or with ErrTimeout once its timeout is over
oo::define ::nats::connection method ping {args} {
    nats::_parse_args $args {
        timeout timeout 10000
    }
    if {$status ne "connected"} {
        throw [list NATS ErrConnectionClosed] "No connection to NATS server"
    }
    set deadline [expr {[clock milliseconds] + $timeout}]
    set id [::tclnats::r [$Py ping $timeout]]
    set var [self namespace]::PingResult($id)
    while {![info exists $var]} {
        nats::_coroVwait $var
    }
    set result [set $var]
    unset $var
    if {$result == 1} {
        return true
    }
    set left [expr {$deadline - [clock milliseconds]}]
    if {$result != 0 && $left > 0} {
        set timer [after $left [list set $var 0]]
        nats::_coroVwait $var
        after cancel $timer
        unset -nocomplain $var
    }
    throw {NATS ErrTimeout} "PING timeout"
}

# every connection tells the engine which generation it serves
oo::class create ::nats::_v2_connection {
    constructor {args} {
        next {*}$args
        ::tclnats::r [[set [self namespace]::Py] generation 2]
    }
}
oo::define ::nats::connection mixin ::nats::_v2_connection

oo::define ::nats::connection method jet_stream {args} {
    nats::_parse_args $args {
        timeout timeout 5000
        domain valid_str ""
        trace bool false
    }
    set js [::nats::jet_stream new [self] $timeout $domain $trace]
    my addRef $js
    return $js
}

# 3.2.1's nats::jet_stream makes way for 2.x's; nats::key_value is adapted
# in kv_v2.tcl; the helper classes (pull requests, watchers, ordered
# consumers) stay
::nats::jet_stream destroy

oo::class create ::nats::jet_stream {
    variable Conn ConnNs Js Timeout Domain Trace ChildrenRef AsyncFull StallWait

    constructor {conn timeout domain trace} {
        set Conn $conn
        set Js ""
        array set ChildrenRef {}
        set AsyncFull 0
        set StallWait 200
        set ConnNs [info object namespace $conn]
        set Js [::tclnats::r [[set ${ConnNs}::Py] js_new [self namespace] $timeout "" $domain $trace 4000 200]]
        # a sync consume ended by disconnect returns what it got (2.0.4 had no error for it)
        ::tclnats::r [$Js fetch_closed_returns]
        set Timeout $timeout
        set Trace $trace
        set Domain $domain
    }
    destructor {
        catch {$Conn releaseRef [self]}
        foreach obj [array names ChildrenRef] {
            catch {$obj destroy}
        }
        if {$Js ne ""} {
            catch {$Js destroy}
        }
    }
    method addRef {obj} {
        set ChildrenRef($obj) ""
    }
    method releaseRef {obj} {
        unset -nocomplain ChildrenRef($obj)
    }
    method timeout {} { return $Timeout }
    method domain {} { return $Domain }

    # A management call of the Nov 2022 document: ?-timeout ms? ?-callback
    # cmdPrefix? besides the call's own options. With -callback the call
    # returns at once and the callback gets {timedOut result error} (error:
    # the dict of a failed call: code errorMessage, or empty) once it ends.
    method Call {op fixed opts {post ""}} {
        lassign [my SplitCallOptions $opts] timeout callback opts
        set js $Js
        if {$timeout ne ""} {
            set js [::tclnats::r [$Js with_timeout $timeout]]
        }
        try {
            set rid [::tclnats::r [$js $op {*}$fixed {*}$opts]]
        } finally {
            if {$timeout ne ""} {
                $js destroy
            }
        }
        if {$callback ne ""} {
            ::nats::_v2_when_done $ConnNs $rid [list ::nats::_v2_call_done $callback $post]
            return $rid
        }
        set result [${ConnNs}::my WaitRequest $rid]
        if {$post ne ""} {
            set result [{*}$post $result]
        }
        return $result
    }
    method SplitCallOptions {opts} {
        if {[llength $opts] % 2} {
            throw {NATS ErrInvalidArg} "Missing value for option [lindex $opts end]"
        }
        set timeout ""
        set callback ""
        set rest [list]
        foreach {k v} $opts {
            switch -- $k {
                -timeout {
                    if {![string is entier -strict $v] || $v <= 0} {
                        throw {NATS ErrBadTimeout} "Invalid value for the timeout option timeout : $v"
                    }
                    set timeout $v
                }
                -callback {
                    set callback $v
                }
                default {
                    lappend rest $k $v
                }
            }
        }
        return [list $timeout $callback $rest]
    }

    # ------------------------------------------------------------ publish
    method publish {subject message args} {
        if {[::nats::_has_option $args -header]} {
            # the Nov 2022 document's -header: headers without making a nats::msg
            set hdr [dict get $args -header]
            dict unset args -header
            return [my publish_msg [dict replace [nats::msg create $subject -data $message] header $hdr] {*}$args]
        }
        if {[::nats::_has_option $args -callback]} {
            dict set args -callback [list ::nats::_v2_pub_done [dict get $args -callback]]
        }
        set rid [::tclnats::r [$Js publish $subject $message {*}$args]]
        if {[::nats::_has_option $args -callback]} {
            return $rid
        }
        ${ConnNs}::my WaitRequest $rid
    }
    method publish_msg {msg args} {
        if {[::nats::_has_option $args -callback]} {
            dict set args -callback [list ::nats::_v2_pub_done [dict get $args -callback]]
        }
        set rid [::tclnats::r [$Js publish_msg $msg {*}$args]]
        if {[::nats::_has_option $args -callback]} {
            return $rid
        }
        ${ConnNs}::my WaitRequest $rid
    }

    # ------------------------------------------------------------ pull
    # nats-tcl 2.x's consume: what 3.x calls fetch; a wrong stream or
    # consumer is a timeout (2.x asks for no consumer info)
    method consume {stream consumer args} {
        set rid [::tclnats::r [$Js fetch $stream $consumer {*}$args]]
        if {[::nats::_has_option $args -callback]} {
            return [nats::AsyncPullRequest new $Js $rid]
        }
        set req [nats::SyncPullRequest new $Js $rid]
        try {
            return [${ConnNs}::my WaitRequest $rid]
        } finally {
            $req destroy
        }
    }
    method cancel_pull_request {reqID} {
        $reqID destroy
    }
    method metadata {msg} {
        ::nats::_v2_metadata $msg
    }
    method ack {message} { ::tclnats::r [$Js ack $message]; return }
    method ack_sync {message} { ${ConnNs}::my WaitRequest [::tclnats::r [$Js ack_sync $message]] }
    method nak {message args} { ::tclnats::r [$Js nak $message {*}$args]; return }
    method term {message} { ::tclnats::r [$Js term $message]; return }
    method in_progress {message} { ::tclnats::r [$Js in_progress $message]; return }

    # ------------------------------------------------------------ streams
    method add_stream {stream args} { my Call add_stream [list $stream] $args }
    method add_stream_from_json {json_config} { my Call add_stream_from_json [list $json_config] {} }
    method delete_stream {stream args} { my Call delete_stream [list $stream] $args }
    method purge_stream {stream args} { my Call purge_stream [list $stream] $args }
    # the Nov 2022 document: without a stream, the info of every stream
    method stream_info {args} {
        if {[llength $args] % 2 == 0} {
            return [my Call stream_list {} $args ::nats::_v2_stream_infos]
        }
        my Call stream_info [list [lindex $args 0]] [lrange $args 1 end] ::nats::_v2_stream_info
    }
    method stream_names {args} { my Call stream_names {} $args }
    method stream_msg_get {stream args} { my Call stream_msg_get [list $stream] $args }
    method stream_msg_delete {stream args} { my Call stream_msg_delete [list $stream] $args }

    # ------------------------------------------------------------ consumers
    method add_consumer {stream args} { my Call add_consumer [list $stream] $args }
    method add_pull_consumer {stream consumer args} { my Call add_pull_consumer [list $stream $consumer] $args }
    method add_push_consumer {stream consumer deliver_subject args} {
        my Call add_push_consumer [list $stream $consumer $deliver_subject] $args
    }
    method add_consumer_from_json {stream consumer json_config} {
        my Call add_consumer_from_json [list $stream $consumer $json_config] {}
    }
    method delete_consumer {stream consumer args} { my Call delete_consumer [list $stream $consumer] $args }
    method consumer_info {stream consumer args} { my Call consumer_info [list $stream $consumer] $args }
    method consumer_names {stream args} { my Call consumer_names [list $stream] $args }

    # ------------------------------------------------------------ KV (2.x)
    method bind_kv_bucket {bucket} {
        my NewKv [my Call bind_kv_bucket [list $bucket] {}]
    }
    method create_kv_bucket {bucket args} {
        my NewKv [my Call create_kv_bucket [list $bucket] $args]
    }
    method NewKv {kvCmd} {
        set kv [nats::key_value new $Conn [self] $kvCmd]
        set ChildrenRef($kv) ""
        return $kv
    }
    method delete_kv_bucket {bucket} { my Call delete_kv_bucket [list $bucket] {} }
    method kv_buckets {} { my Call kv_buckets {} {} }
    method empty_kv_bucket {bucket} { my Call empty_kv_bucket [list $bucket] {} }

    # ------------------------------------------------------------ KV (Aug 2023 document)
    method key_value {args} {
        nats::_parse_args $args {
            timeout timeout 0
            check_bucket bool true
            read_only bool false
        }
        if {$timeout == 0} {
            set timeout $Timeout
        }
        set kv [nats::kv_store new $Conn [self] $Js $timeout $check_bucket $read_only]
        set ChildrenRef($kv) ""
        return $kv
    }

    method CheckFilenameSafe {str} {
        ::tclnats::r [$Js check_filename_safe $str]
    }
}

# Run cmd with the result of the call whose request is rid, once it is
# there: the driver writes ${ns}::results($rid) ({0 value}, {1 errorCode
# message}, or {2 nextRid}: the call goes on with another request)
proc ::nats::_v2_when_done {ns rid cmd} {
    set var ${ns}::results($rid)
    if {[info exists $var]} {
        after 0 [list ::nats::_v2_result_ready $ns $rid $cmd]
        return
    }
    trace add variable $var write [list ::nats::_v2_result_written $ns $rid $cmd]
}
proc ::nats::_v2_result_written {ns rid cmd args} {
    trace remove variable ${ns}::results($rid) write [list ::nats::_v2_result_written $ns $rid $cmd]
    after 0 [list ::nats::_v2_result_ready $ns $rid $cmd]
}
proc ::nats::_v2_result_ready {ns rid cmd} {
    set var ${ns}::results($rid)
    if {![info exists $var]} {
        return
    }
    set result [set $var]
    unset $var
    if {[lindex $result 0] == 2} {
        ::nats::_v2_when_done $ns [lindex $result 1] $cmd
        return
    }
    {*}$cmd $result
}

# A management call with -callback has ended: {0 value}, {1 errorCode message}
proc ::nats::_v2_call_done {callback post result} {
    if {[lindex $result 0] == 0} {
        set value [lindex $result 1]
        if {$post ne ""} {
            set value [{*}$post $value]
        }
        after 0 [list {*}$callback 0 $value ""]
        return
    }
    lassign $result - code message
    set timedOut [expr {[lindex $code 1] in {ErrTimeout ErrNoResponders}}]
    after 0 [list {*}$callback $timedOut "" [dict create code $code errorMessage $message]]
}

# an asynchronous publish has ended: 2.0.4's pubError (code err_code
# errorMessage) also carries description, as the Nov 2022 document has it
proc ::nats::_v2_pub_done {callback timedOut pubAck pubError} {
    if {$pubError ne ""} {
        dict set pubError description [dict get $pubError errorMessage]
    }
    uplevel #0 [list {*}$callback $timedOut $pubAck $pubError]
}

# 2.x's stream_info: without the paging fields
proc ::nats::_v2_stream_info {info} {
    dict unset info total
    dict unset info offset
    dict unset info limit
    return $info
}
proc ::nats::_v2_stream_infos {infos} {
    lmap info $infos {::nats::_v2_stream_info $info}
}

# 2.x's metadata: the 7 fields of its JsAPI.md
proc ::nats::_v2_metadata {msg} {
    set meta [::nats::metadata $msg]
    set out [dict create]
    foreach k {stream consumer num_delivered stream_seq consumer_seq timestamp num_pending} {
        dict set out $k [dict get $meta $k]
    }
    return $out
}
