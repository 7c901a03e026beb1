# The Tcl face of tclnats_py: the public shape of nats-tcl 3.2.1's Core API.
#
# No protocol logic lives here. Every nats::connection object is backed by a
# Python engine (tclnats_py/engine/) driven by tclnats_py/tclface/bridge.py,
# which opens the socket as a Tcl channel, runs the timers with [after] and
# writes the state a Tcl user can read into this object's namespace:
#   status last_error serverInfo  - public, traceable (CoreAPI.md)
#   sock subscriptions requests timers(flush) pong outBuffer serverPool
#                                  - read by tools and by nats-tcl's test suite
# Python commands never raise into Tcl: they return {0 result} or
# {1 errorCode message}, and this layer throws.

package require Tcl 8.6-
# nats-tcl loads tcllib's json and json::write; scripts written for it rely on that
catch {package require json}
catch {package require json::write}
catch {package require tls}

namespace eval ::nats {
    variable status_closed closed
    variable status_connecting connecting
    variable status_connected connected
    variable status_reconnecting reconnecting

    # run a method of an object later only if the object still exists then
    proc SafeCallback {obj method args} {
        if {[llength [info commands $obj]]} {
            $obj $method {*}$args
        }
    }
    proc mymethod {method args} {
        set obj [uplevel 1 {namespace which my}]
        list ::nats::SafeCallback $obj $method {*}$args
    }
    # TLS errors are reported once, as ErrTLS; keep the tls package quiet
    proc tls_callback {args} {}

    namespace export connection msg header isotime_to_msec msec_to_isotime timestamp
}

# A synchronous call first waits for its reply on the connection's socket for
# at most this many microseconds (0: wait in the event loop only; see
# ::tclnats::_await and README "Where tclnats_py behaves differently")
if {![info exists ::tclnats::await_us]} {
    set ::tclnats::await_us 5000
}
# ... and of that, the first ::tclnats::spin_us microseconds it polls without
# sleeping (a reply seen at once, no thread wake-up; 0: off), backing off
# after two replies in a row take longer; the environment variable
# TCLNATS_SPIN_US sets it too
if {![info exists ::tclnats::spin_us]} {
    set ::tclnats::spin_us [expr {[info exists ::env(TCLNATS_SPIN_US)] ? $::env(TCLNATS_SPIN_US) : 300}]
}
array set ::tclnats::sockets {}

# ::tclnats::r, which unpacks Python replies ({0 result} or {1 errorCode
# message}), is defined by tclnats_py.tclface.bridge.install before this file loads

# Deliveries of one socket read, in order: {kind callback a b c ...}
# kind 1: a subscription callback {subject msg reply}, posted to the event loop
# kind 0: the same, called directly (-post false)
# kind 2: a request callback {timedOut msg}, posted
# Posted callbacks of one read go to the event loop as one event that runs
# them in order (one [after] per message would make Tcl's timer list grow
# with the backlog); an error in one is reported like a background error
# and does not stop the others.
proc ::nats::_deliver {items} {
    set posted [list]
    foreach {kind cb a b c} $items {
        if {$kind == 1} {
            lappend posted [list {*}$cb $a $b $c]
        } elseif {$kind == 2} {
            lappend posted [list {*}$cb $a $b]
        } else {
            if {[llength $posted]} {
                after 0 [list ::nats::_run_posted $posted]
                set posted [list]
            }
            if {[catch {{*}$cb $a $b $c} err opts]} {
                after 0 [list return -options $opts $err]
            }
        }
    }
    if {[llength $posted]} {
        after 0 [list ::nats::_run_posted $posted]
    }
}
# A connection's readable handler.  The library reads and parses in Python;
# the subscription and request callbacks of that read then run here, in
# order, once the library's work for the read is complete (so user code is
# kept apart from library code, as posting would, without one more event
# loop turn per read); an error in one is reported like a background error
# and does not stop the others.  What they published is written at the end.
proc ::nats::_on_readable {reader} {
    set items [$reader]
    if {![llength $items]} {
        return
    }
    # each: uplevel #0 [list {*}$cb $a $b ?$c?] (kind 2: two arguments), an
    # error reported as after 0 [list return -options $opts $err] would
    # (tclcross_interp.c; the loop in C)
    ::tclnats::_run_deliveries $items
    # these deliveries have run (pending_msgs_limit counts those not run yet)
    ::tclnats::_flush_dirty $reader
}
proc ::nats::_run_posted {cmds} {
    foreach cmd $cmds {
        if {[catch {uplevel #0 $cmd} err opts]} {
            after 0 [list return -options $opts $err]
        }
    }
}

# The connection options' names, types and defaults are the engine's table
# (tclnats_py/engine/options.py OPTION_SPEC, validate.py MAX_TIMEOUT): the
# first connection reads them from Python (::nats::_load_options), which
# that connection starts anyway, so `package require nats` does not.
# _option_overrides: defaults of this API generation that differ (v2).
set ::nats::_option_overrides {}
proc ::nats::_load_options {} {
    lassign [::tclnats::r [::tclnats::_option_table]] types defaults maxTimeout
    # the longest timeout (ms) a command takes, as on the Python face
    set ::nats::_max_timeout $maxTimeout
    set ::nats::_option_types $types
    set ::nats::_option_defaults [dict merge $defaults $::nats::_option_overrides]
}

oo::class create ::nats::connection {
    variable config sock timers counters subscriptions requests serverPool outBuffer \
             requestsInboxPrefix pong ChildrenRef PingResult Py \
             PendingCount PendingBytes FastMax FastRoom Room results
    variable status last_error serverInfo

    constructor {{conn_name ""} args} {
        set status $::nats::status_closed
        set last_error ""
        set sock ""
        set Py ""
        set serverPool ""
        array set serverInfo {}
        array set subscriptions {}
        array set requests {}
        array set results {}
        array set timers {ping {} flush {} connect {}}
        array set counters [list subscription 0 request 0 pendingPings 0]
        array set ChildrenRef {}
        array set PingResult {}
        set outBuffer [list]
        set requestsInboxPrefix ""
        set pong 0
        set Room 0
        nats::_parse_args $args {
            logger valid_str ""
            log_chan valid_str stdout
            log_level valid_str warn
        }
        if {![info exists ::nats::_option_defaults]} {
            ::nats::_load_options
        }
        foreach {name def} $::nats::_option_defaults {
            set config($name) $def
        }
        set config(name) $conn_name
        my SetUpLogging $logger $log_chan $log_level
        set Py [::tclnats::r [::tclnats::_new_connection [self] [self namespace] \
                    [expr {$logger ne "" ? "debug" : $log_level}]]]
        # the fast paths' state, in C: the command Fast (also the socket's
        # readable handler), the variables FastMax FastRoom PendingCount
        # PendingBytes linked to it; the method publish becomes C's
        ::tclnats::_fastpub_new [self namespace]::Fast [list $Py pending] [self]
        if {$conn_name ne ""} {
            ::tclnats::r [$Py configure -name $conn_name]
        }
        set serverPool [::nats::server_pool new [self] $Py]
        # outBuffer shows the protocol commands waiting to be written
        trace add variable outBuffer read [list $Py out_buffer]
    }

    destructor {
        if {$Py ne ""} {
            catch {trace remove variable outBuffer read [list $Py out_buffer]}
            $Py destroy
        }
        if {$serverPool ne ""} {
            catch {$serverPool destroy}
        }
        foreach obj [array names ChildrenRef] {
            catch {$obj destroy}
        }
    }

    method releaseRef {obj} {
        unset -nocomplain ChildrenRef($obj)
    }
    method addRef {obj} {
        set ChildrenRef($obj) ""
    }

    method SetUpLogging {userLogger chan level} {
        set ns [self namespace]
        if {$userLogger ne ""} {
            package require logger
            if {[info commands ${userLogger}::servicename] eq ""} {
                throw [list NATS ErrInvalidArg] "Invalid -logger $userLogger: not a logger of the logger package"
            }
            logger::import -namespace "${ns}::log" [${userLogger}::servicename]
            return
        }
        if {$level ni {debug info warn error}} {
            throw [list NATS ErrInvalidArg] "Invalid -log_level $level"
        }
        set who [expr {$config(name) ne "" ? $config(name) : [namespace tail [self]]}]
        namespace eval log [list variable chan $chan who $who]
        proc log::write {level text} {
            variable chan
            variable who
            puts $chan "\[[nats::timestamp] $who $level\] $text"
        }
        proc log::mute {level text} {}
        set muted 0
        foreach lvl {error warn info debug} {
            interp alias {} ${ns}::log::$lvl {} ${ns}::log::[expr {$muted ? "mute" : "write"}] $lvl
            if {$lvl eq $level} {
                set muted 1
            }
        }
    }

    method cget {option} {
        set opt [string trimleft $option -]
        if {$opt eq "status"} {
            return $status
        }
        if {[info exists config($opt)]} {
            return $config($opt)
        }
        throw [list NATS ErrInvalidArg] "Invalid option $option"
    }

    method configure {args} {
        switch -- [llength $args] {
            0 { return [array get config] }
            1 { return [my cget [lindex $args 0]] }
        }
        # all or nothing: $Py configure checks every value (the engine's
        # types, URLs, the longest timeout, -1 for unlimited) before it sets any
        ::tclnats::r [$Py configure {*}$args]
        return
    }

    method reset {args} {
        foreach option $args {
            set opt [string trimleft $option -]
            if {![dict exists $::nats::_option_defaults $opt]} {
                throw [list NATS ErrInvalidArg] "Invalid option $option"
            }
            set config($opt) [dict get $::nats::_option_defaults $opt]
            ::tclnats::r [$Py reset $opt]
        }
    }

    method current_server {} {
        my CheckConnection
        return [lrange [::tclnats::r [$Py current_server]] 0 1]
    }

    method all_servers {} {
        return [::tclnats::r [$Py all_servers]]
    }

    method server_info {} {
        return [array get serverInfo]
    }

    method connect {args} {
        switch -- $args {
            -async { set async 1 }
            "" { set async 0 }
            default { throw {NATS ErrInvalidArg} "Unknown option $args" }
        }
        if {$status ne "closed"} {
            return
        }
        ::tclnats::r [$Py connect]
        if {$async} {
            return
        }
        if {$status eq "connecting"} {
            ::nats::_coroVwait [my varname status]
        }
        # several transitions may happen in one event: wait for the final word
        while {$status eq $::nats::status_connecting} {
            ::nats::_coroVwait [my varname status]
        }
        if {$status ne "connected"} {
            if {[dict exists $last_error code] && [llength [my all_servers]] <= 1} {
                set err $last_error
                throw [dict get $err code] [dict get $err errorMessage]
            }
            throw [list NATS ErrNoServers] "No servers available for connection"
        }
        return
    }

    method disconnect {} {
        if {$status eq "closed"} {
            return
        }
        ::tclnats::r [$Py disconnect]
        return
    }

    method publish_msg {msg} {
        lassign [nats::_msg_parts $msg] subject data header reply
        my publish $subject $data -header $header -reply $reply
    }

    # The first connection object replaces this method with its C form
    # (tclnats_py/_ext/tclfast.c), which does the same without a Tcl frame.
    method publish {subject message args} {
        # Fast path (Fast, in C: see ::tclnats::_fastpub_new): a subject (and
        # reply) of the engine's ASCII rule or that the engine accepted
        # before, no headers, payload within
        # max_payload (FastMax is -1 while the path is closed): the protocol
        # line is framed into a batch that the engine takes whole at the next
        # flush (no Python call per message). Past FastRoom bytes in the
        # batch, MakeRoom hands it over and waits while the way to the socket
        # is full (see MakeRoom).
        switch -- [Fast pub $subject $message {*}$args] {
            1 {
                return
            }
            2 {
                my MakeRoom
                tailcall my publish $subject $message {*}$args
            }
        }
        # (the general path is a method of its own: this one names none of
        # the class's variables, whose resolution would cost each call more
        # than the fast path itself)
        tailcall my PublishGeneral $subject $message {*}$args
    }

    # the batch of the fast path is full: room first, then publish again
    method PublishRoom {subject message args} {
        my MakeRoom
        tailcall my publish $subject $message {*}$args
    }

    method PublishGeneral {subject message args} {
        set header ""
        set check_subj 1
        if {[llength $args] == 1} {
            set reply [lindex $args 0]
            if {$reply in {-reply -header -check_subj}} {
                throw {NATS ErrInvalidArg} "Missing value for option $reply"
            }
        } else {
            set reply ""
            if {[llength $args]} {
                nats::_parse_args $args {
                    header dict ""
                    reply str ""
                    check_subj bool true
                }
            }
        }
        set r [$Py publish $subject $message $reply $header $check_subj]
        if {[lindex $r 0]} {
            return -code error -errorcode [lindex $r 1] [lindex $r 2]
        }
        if {[lindex $r 1] == 0} {
            # the way to the socket is full: nothing was accepted yet
            my MakeRoom
            tailcall my publish $subject $message {*}$args
        }
        return
    }

    # A publish found write_buf_size bytes on their way to the socket (the
    # engine's queue and the channel's buffers): wait in the event loop (or
    # yield inside a coroutine), as a synchronous call waits for its reply,
    # until the socket has taken them below half of it, or the connection is
    # not up; at most flush_timeout ms, then ErrTimeout, and the message was
    # not published.
    method MakeRoom {} {
        set ms $config(flush_timeout)
        set until [expr {[clock milliseconds] + $ms}]
        set var [my varname Room]
        while {![::tclnats::r [$Py room]]} {
            set left [expr {$until - [clock milliseconds]}]
            if {$left <= 0} {
                throw {NATS ErrTimeout} "Publish timed out after $ms ms (-flush_timeout): the server does\
                    not take the data; $config(write_buf_size) bytes (-write_buf_size) wait to be written.\
                    The message was not published"
            }
            set Room 0
            set timer [after $left [list set $var 0]]
            nats::_coroVwait $var
            after cancel $timer
        }
    }

    method subscribe {subject args} {
        my CheckConnection
        set dictmsg $config(dictmsg)
        nats::_parse_args $args {
            queue valid_str ""
            callback valid_str ""
            dictmsg bool null
            max_msgs pos_int 0
            post bool true
        }
        set sid [::tclnats::r [$Py subscribe $subject $queue $max_msgs $callback $dictmsg $post]]
        set counters(subscription) $sid
        return $sid
    }

    method unsubscribe {subID args} {
        my CheckConnection
        nats::_parse_args $args {
            max_msgs pos_int 0
        }
        ::tclnats::r [$Py unsubscribe $subID $max_msgs]
        return
    }

    method request_msg {msg args} {
        set timeout $config(request_timeout)
        set dictmsg $config(dictmsg)
        nats::_parse_args $args {
            timeout timeout null
            callback str ""
            dictmsg bool null
        }
        lassign [nats::_msg_parts $msg] subject data header reply
        if {$reply ne ""} {
            [self namespace]::log::warn "request_msg: the reply $reply will be ignored"
        }
        return [my request $subject $data -header $header -timeout $timeout \
                    -callback $callback -dictmsg $dictmsg]
    }

    method request {subject message args} {
        set dictmsg $config(dictmsg)
        set max_msgs ""
        if {[llength $args] == 2 && [lindex $args 0] eq "-timeout" && [string is entier -strict [lindex $args 1]]
                && [lindex $args 1] >= 0 && [lindex $args 1] <= $::nats::_max_timeout} {
            # the common form (what _parse_args would make of it)
            set timeout [lindex $args 1]
            set callback ""
            set header ""
            set check_subj true
        } else {
            set timeout $config(request_timeout)
            nats::_parse_args $args {
                timeout timeout null
                callback str ""
                dictmsg bool null
                header dict ""
                max_msgs pos_int null
                check_subj bool true
            }
        }
        set rid [::tclnats::r [$Py request $subject $message $timeout $callback $dictmsg \
                                   $header $max_msgs $check_subj]]
        set counters(request) $rid
        if {$callback ne ""} {
            return $rid
        }
        return [my WaitRequest $rid]
    }

    # the driver writes the result of a synchronous call into results($rid)
    # when its request ends: {0 value}, {1 errorcode message} or {2 nextRid}
    method WaitResult {rid} {
        set var [self namespace]::results($rid)
        while {![info exists $var]} {
            nats::_coroVwait $var
        }
        set r [set $var]
        unset $var
        return $r
    }

    # wait for a request run by the Python side and return its result; the
    # result may be "continue with request N" (a follow-up request).  Outside
    # a coroutine, ::tclnats::_wait (tclcross_wait.c) does it in one command: it
    # first waits for the reply on the sockets themselves (a synchronous
    # call's reply usually comes within a few ms), then in the event loop, as
    # WaitResult and WaitLoop do inside a coroutine
    method WaitRequest {rid} {
        if {[info coroutine] eq ""} {
            return [::tclnats::_wait $rid $sock]
        }
        tailcall my WaitLoop $rid
    }
    method WaitLoop {rid} {
        while {1} {
            set r [my WaitResult $rid]
            if {[lindex $r 0] == 2} {
                set rid [lindex $r 1]
                continue
            }
            return [::tclnats::r $r]
        }
    }

    method cancel_request {reqID} {
        ::tclnats::r [$Py cancel_request $reqID]
        return
    }

    method ping {args} {
        nats::_parse_args $args {
            timeout timeout 10000
        }
        if {$status ne "connected"} {
            throw [list NATS ErrConnectionClosed] "No connection to NATS server"
        }
        set id [::tclnats::r [$Py ping $timeout]]
        set var [self namespace]::PingResult($id)
        while {![info exists $var]} {
            nats::_coroVwait $var
        }
        set result [set $var]
        unset $var
        switch -- $result {
            1 { return true }
            0 { throw {NATS ErrTimeout} "PING timeout" }
            default { throw {NATS ErrConnectionClosed} "Connection closed" }
        }
    }

    method inbox {} {
        return [::tclnats::r [$Py inbox]]
    }

    method jet_stream {args} {
        nats::_parse_args $args {
            timeout timeout 5000
            domain valid_str ""
            trace bool false
            api_prefix valid_str ""
            publish_async_max_pending pos_int 4000
            publish_async_stall_wait timeout 200
        }
        if {[string length $domain] && [string length $api_prefix]} {
            throw [list NATS ErrInvalidArg] "-domain and -api_prefix are mutually exclusive"
        }
        set js [::nats::jet_stream new [self] $timeout $api_prefix $domain $trace \
                    $publish_async_max_pending $publish_async_stall_wait]
        set ChildrenRef($js) ""
        return $js
    }

    # ADR-6 checks: plain (publish/reply), -wildcard (subscribe), -queue
    method CheckSubject {subj args} {
        set mode plain
        if {"-wildcard" in $args} {
            set mode wildcard
        } elseif {"-queue" in $args} {
            set mode queue
        }
        return [::tclnats::r [$Py check_subject $subj $mode]]
    }

    method CheckConnection {} {
        if {$status eq "closed"} {
            throw [list NATS ErrConnectionClosed] "No connection to NATS server"
        }
    }
}

# ---------------------------------------------------------------- nats::msg
namespace eval ::nats::msg {
    proc create {subject args} {
        nats::_parse_args $args {
            data str ""
            reply str ""
        }
        dict create header {} data $data subject $subject reply $reply sub_id {}
    }
    proc set {msgVar opt value} {
        upvar 1 $msgVar m
        switch -- $opt {
            -data - -subject - -reply {
                try {
                    dict set m [string range $opt 1 end] $value
                } trap {TCL} {} {
                    ::nats::_not_a_msg $m
                }
                return
            }
        }
        throw [list NATS ErrInvalidArg] "Invalid field $opt"
    }
    # the accessors: a value that is not a message is ErrInvalidArg, not a dict error
    proc subject {msg} {
        try { dict get $msg subject } trap {TCL} {} { ::nats::_not_a_msg $msg subject }
    }
    proc data {msg} {
        try { dict get $msg data } trap {TCL} {} { ::nats::_not_a_msg $msg data }
    }
    proc reply {msg} {
        try { dict get $msg reply } trap {TCL} {} { ::nats::_not_a_msg $msg reply }
    }
    proc no_responders {msg} {
        expr {[nats::header lookup $msg Status 0] == 503}
    }
    # a JetStream control message: status 100, no body, description matching
    proc ControlMsg {msg pattern} {
        if {[string length [data $msg]] || [nats::header lookup $msg Status 0] != 100} {
            return 0
        }
        string match $pattern [nats::header lookup $msg Description ""]
    }
    proc idle_heartbeat {msg} { ControlMsg $msg Idle* }
    proc flow_control {msg} { ControlMsg $msg Flow* }
    proc seq {msg} {
        if {![dict exists $msg seq]} {
            throw [list NATS ErrInvalidArg] "Invalid field 'seq'"
        }
        dict get $msg seq
    }
    proc timestamp {msg} {
        if {![dict exists $msg time]} {
            throw [list NATS ErrInvalidArg] "Invalid field 'timestamp'"
        }
        dict get $msg time
    }
    namespace export {[a-z]*}
    namespace ensemble create
}

# ---------------------------------------------------------------- nats::header
# A message without a header field has no headers; a value that is not a
# message (or whose header is not a dict) is ErrInvalidArg; a key the
# message does not have is {TCL LOOKUP DICT key} for get and values.
namespace eval ::nats::header {
    proc add {msgVar key value} {
        upvar 1 $msgVar m
        ::set h [Of [expr {[info exists m] ? $m : ""}]]
        dict lappend h $key $value
        dict set m header $h
        return
    }
    proc set {msgVar key value args} {
        upvar 1 $msgVar m
        if {[llength $args] % 2} {
            throw [list NATS ErrInvalidArg] "Missing a value for a key"
        }
        ::set h [Of [expr {[info exists m] ? $m : ""}]]
        dict set h $key [list $value]
        foreach {k v} $args {
            dict set h $k [list $v]
        }
        dict set m header $h
        return
    }
    proc delete {msgVar key} {
        upvar 1 $msgVar m
        ::set h [Of [expr {[info exists m] ? $m : ""}]]
        dict unset h $key
        dict set m header $h
        return
    }
    proc get {msg key} {
        try {
            lindex [dict get $msg header $key] 0
        } trap {TCL} {} {
            NoKey $msg $key
        }
    }
    proc values {msg key} {
        try {
            dict get $msg header $key
        } trap {TCL} {} {
            NoKey $msg $key
        }
    }
    proc keys {msg {pattern ""}} {
        if {$pattern eq ""} {
            return [dict keys [Of $msg] *]
        }
        dict keys [Of $msg] $pattern
    }
    proc lookup {msg key def} {
        ::set h [Of $msg]
        if {[dict exists $h $key]} {
            return [lindex [dict get $h $key] 0]
        }
        return $def
    }
    # the header dict of a message
    proc Of {msg} {
        if {[catch {dict size $msg}]} {
            ::nats::_not_a_msg $msg
        }
        if {![dict exists $msg header]} {
            return {}
        }
        ::set h [dict get $msg header]
        if {[catch {dict size $h}]} {
            throw [list NATS ErrInvalidArg] "Invalid message header $h: a dict expected"
        }
        return $h
    }
    # a key the header does not have: Tcl's own code for a missing dict key,
    # {TCL LOOKUP DICT key}, as nats-tcl's [dict get] gives it
    proc NoKey {msg key} {
        Of $msg
        throw [list TCL LOOKUP DICT $key] "key \"$key\" not known in the header of the message"
    }
    namespace export {[a-z]*}
    namespace ensemble create
}

proc ::nats::_not_a_msg {msg {field ""}} {
    if {$field ne "" && ![catch {dict size $msg}]} {
        throw [list NATS ErrInvalidArg] "Invalid message: no field $field"
    }
    throw [list NATS ErrInvalidArg] "Invalid message: a nats::msg dict expected"
}

# ---------------------------------------------------------------- time helpers
# subject, data, header and reply of a nats::msg dict (the last two may be
# missing); ErrInvalidArg for anything else
proc ::nats::_msg_parts {msg} {
    if {[catch {dict size $msg}] || ![dict exists $msg subject] || ![dict exists $msg data]} {
        throw [list NATS ErrInvalidArg] "Invalid message: a nats::msg with subject and data expected"
    }
    set header [expr {[dict exists $msg header] ? [dict get $msg header] : ""}]
    set reply [expr {[dict exists $msg reply] ? [dict get $msg reply] : ""}]
    list [dict get $msg subject] [dict get $msg data] $header $reply
}

proc ::nats::isotime_to_msec {iso} {
    # 2022-11-22T13:31:35.4514983Z: whole seconds, a fraction, an optional zone
    if {![regexp {^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[-+]\d\d:?\d\d)?$} \
              $iso -> whole frac zone]} {
        throw [list NATS ErrInvalidArg] "Invalid time $iso"
    }
    if {$zone in {"" Z}} {
        set zone +0000
    }
    set secs [clock scan "$whole[string map {: {}} $zone]" -format {%Y-%m-%dT%H:%M:%S%z}]
    if {$frac eq ""} {
        set frac 0
    }
    return [expr {round(($secs + double("0.$frac")) * 1000)}]
}

proc ::nats::msec_to_isotime {ms {tz :UTC}} {
    if {![string is entier -strict $ms]} {
        throw [list NATS ErrInvalidArg] "Invalid time in ms $ms"
    }
    set secs [expr {$ms / 1000}]
    try {
        set whole [clock format $secs -format {%Y-%m-%dT%H:%M:%S} -timezone $tz]
    } trap {CLOCK} {err} {
        throw [list NATS ErrInvalidArg] "Invalid time $ms or time zone $tz: $err"
    }
    format %s.%03d $whole [expr {$ms % 1000}]
}

proc ::nats::timestamp {} {
    msec_to_isotime [clock milliseconds] :localtime
}

# ---------------------------------------------------------------- private helpers
# wait for a variable to be written: vwait, or yield inside a coroutine so
# that the caller's event loop keeps running
proc ::nats::_coroVwait {var} {
    set coro [info coroutine]
    if {$coro eq ""} {
        vwait $var
        return
    }
    trace add variable $var write [list ::nats::_coroResume $coro]
    yield
}
proc ::nats::_coroResume {coro name1 name2 op} {
    if {$name2 ne ""} {
        set name1 ${name1}($name2)
    }
    uplevel 1 [list trace remove variable $name1 write [list ::nats::_coroResume $coro]]
    if {[llength [info commands $coro]]} {
        after 0 $coro
    } else {
        after 0 [list throw [list NATS ErrInvalidCoroutine] "Invalid coroutine $coro"]
    }
}

# [dict lookup dictValue key ?default?]: like dict get, with a default
proc ::nats::_dict_lookup {d key {default ""}} {
    if {[dict exists $d $key]} {
        return [dict get $d $key]
    }
    return $default
}
namespace ensemble configure ::dict -map \
    [dict replace [namespace ensemble configure dict -map] lookup ::nats::_dict_lookup]

proc ::nats::_random_string {} {
    string range [::tclnats::r [::tclnats::_token]] 0 21
}

# check one value against an option type (as in nats-tcl's specs)
proc ::nats::_check_type {type val} {
    switch -- [lindex $type 0] {
        valid_str { return [expr {[string length $val] > 0}] }
        pos_int {
            return [expr {[string is entier -strict $val] && $val >= 0}]
        }
        timeout {
            return [expr {[string is entier -strict $val] && $val >= 0 && $val <= $::nats::_max_timeout}]
        }
        int { return [string is entier -strict $val] }
        bool { return [string is boolean -strict $val] }
        dict { return [expr {![catch {dict size $val}]}] }
        default { return 1 }
    }
}

# Parse "-option value" pairs against a spec of {name type default} rows,
# setting variables in the caller (or config(name) when doConfig is 1).
# A default of "null" leaves the variable unset when the option is absent.
proc ::nats::_parse_args {argList spec {doConfig 0}} {
    if {[llength $argList] % 2} {
        throw [list NATS ErrInvalidArg] "Missing value for option [lindex $argList end]"
    }
    set given [dict create]
    foreach {k v} $argList {
        dict set given [string trimleft $k -] $v
    }
    foreach {name type def} $spec {
        if {[dict exists $given $name]} {
            set val [dict get $given $name]
            dict unset given $name
            if {![_check_type $type $val]} {
                set code [expr {$type eq "timeout" ? "ErrBadTimeout" : "ErrInvalidArg"}]
                throw [list NATS $code] "Invalid value for the $type option $name : $val"
            }
            if {$type eq "bool"} {
                set val [expr {$val ? "true" : "false"}]
            }
            if {$doConfig} {
                uplevel 1 [list ::set "config($name)" $val]
            } else {
                uplevel 1 [list ::set $name $val]
            }
        } elseif {!$doConfig && $def ne "null"} {
            uplevel 1 [list ::set $name $def]
        }
    }
    if {[dict size $given]} {
        throw {NATS ErrInvalidArg} "Unknown option [lindex [dict keys $given] 0]"
    }
}

# Convert nanoseconds to milliseconds in place, for the named keys of a dict
# variable (and back).  The engine converts durations itself; these two are
# nats-tcl's helpers that its own test suite calls (jet_stream_mgmt.test
# compares `nats stream info -j` output with them), so they stay.
proc ::nats::_ns2ms {dictVar args} {
    upvar 1 $dictVar d
    foreach key $args {
        if {[dict exists $d $key]} {
            dict set d $key [expr {[dict get $d $key] / 1000000}]
        }
    }
}
proc ::nats::_ms2ns {dictVar args} {
    upvar 1 $dictVar d
    foreach key $args {
        if {[dict exists $d $key]} {
            dict set d $key [expr {entier([dict get $d $key] * 1000000)}]
        }
    }
}
