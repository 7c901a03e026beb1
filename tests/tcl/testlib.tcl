# testlib.tcl - shared set-up for the tclnats_py tcltest files in this folder.
#
# Every *.test file sources this file first.  The servers come from the
# environment (tests/tclface/test_tcl_suite.py sets all of these; by hand,
# `tclnats-tclsh --nats-server tests/tcl/all.tcl` is enough for the plain ones):
#
#   NATS_URL                     plain nats-server (required)
#   TCLNATS_TEST_CTL             port of the runner's control socket (restart tests)
#   TCLNATS_TEST_RESTART_URL     a server of its own that the control socket can stop/start
#   TCLNATS_TEST_TLS_URL         TLS server; TCLNATS_TEST_TLS_CA is its CA file
#   TCLNATS_TEST_TLSV_URL        TLS server that verifies client certificates;
#                                TCLNATS_TEST_TLS_CERT / TCLNATS_TEST_TLS_KEY for the client
#   TCLNATS_TEST_USERPASS_URL    user/password server: TCLNATS_TEST_USER, TCLNATS_TEST_PASSWORD;
#                                user "limited" (same password) may publish only to allowed.>
#   TCLNATS_TEST_TOKEN_URL       token server: TCLNATS_TEST_TOKEN
#   TCLNATS_TEST_TLSAUTH_URL     TLS and user/password (TCLNATS_TEST_USER / _PASSWORD)
#   TCLNATS_TEST_JS_URL          JetStream server
#   TCLNATS_TEST_CLUSTER_URLS    the URLs of a cluster of three; server_ctl names them c0 c1 c2
#
# Tests that need a variant the environment does not offer are skipped via
# tcltest constraints.

package require tcltest 2.5
namespace import -force ::tcltest::test ::tcltest::testConstraint ::tcltest::cleanupTests
if {[llength $::argv]} {
    ::tcltest::configure {*}$::argv
}
package require nats

if {![info exists ::env(NATS_URL)]} {
    puts stderr "NATS_URL is not set: run under tests/tclface/test_tcl_suite.py or `tclnats-tclsh --nats-server ...`"
    exit 2
}
set ::url $::env(NATS_URL)

proc ::have_env {args} {
    foreach name $args {
        if {![info exists ::env($name)] || $::env($name) eq ""} {
            return 0
        }
    }
    return 1
}
testConstraint restart  [have_env TCLNATS_TEST_CTL TCLNATS_TEST_RESTART_URL]
testConstraint tls      [have_env TCLNATS_TEST_TLS_URL TCLNATS_TEST_TLS_CA]
testConstraint tlsVerify [have_env TCLNATS_TEST_TLSV_URL TCLNATS_TEST_TLS_CA TCLNATS_TEST_TLS_CERT TCLNATS_TEST_TLS_KEY]
testConstraint userpass [have_env TCLNATS_TEST_USERPASS_URL TCLNATS_TEST_USER TCLNATS_TEST_PASSWORD]
testConstraint token    [have_env TCLNATS_TEST_TOKEN_URL TCLNATS_TEST_TOKEN]
testConstraint cluster  [have_env TCLNATS_TEST_CTL TCLNATS_TEST_CLUSTER_URLS]
testConstraint oldJs    [have_env TCLNATS_TEST_OLD_JS_URL]
testConstraint websocket [have_env TCLNATS_TEST_CTL TCLNATS_TEST_WS_URL TCLNATS_TEST_WSS_URL TCLNATS_TEST_WSZ_URL TCLNATS_TEST_TLS_CA]
testConstraint thread   [expr {![catch {package require Thread}]}]

# Test connections log errors only, to stdout: tcltest's runAllTests takes any
# output of a test file on stderr for a failure of the whole file.
set ::log_opts {-log_chan stdout -log_level error}

# --------------------------------------------------------------- helpers

# The result of a script as an error code: "ok" when it succeeds, the NATS
# code (e.g. ErrTimeout) when it throws {NATS code}, else "other: <errorcode>".
proc ::errcode {script} {
    set rc [catch {uplevel 1 $script} msg opts]
    if {$rc != 1} {
        return ok
    }
    set ec [dict get $opts -errorcode]
    if {[lindex $ec 0] eq "NATS" && [llength $ec] == 2} {
        return [lindex $ec 1]
    }
    return "other: $ec ($msg)"
}

# A connection to ::url, connected; it logs errors only (see ::log_opts).
proc ::new_conn {{name tester} args} {
    set c [nats::connection new $name {*}$::log_opts]
    $c configure -servers $::url {*}$args
    $c connect
    return $c
}

# The NATS error code of a script, "ok" when it succeeds; other errors propagate.
proc ::code_of {script} {
    try {
        uplevel 1 $script
    } trap NATS {msg opts} {
        return [lindex [dict get $opts -errorcode] 1]
    }
    return ok
}

# Run the event loop for ms milliseconds.
proc ::pause {ms} {
    set var ::_pause[incr ::_pause_n]
    after $ms [list set $var 1]
    vwait $var
    unset $var
}

# Wait (in the event loop) until a global variable is written; return its
# value.  Raises an error after ms milliseconds.
proc ::wait_var {var {ms 3000}} {
    set var ::[string trimleft $var :]
    set id [after $ms [list set ::_wait_timeout($var) 1]]
    trace add variable $var write ::_wait_wake
    trace add variable ::_wait_timeout($var) write ::_wait_wake
    vwait ::_wait_wake_flag
    trace remove variable $var write ::_wait_wake
    trace remove variable ::_wait_timeout($var) write ::_wait_wake
    after cancel $id
    if {[info exists ::_wait_timeout($var)]} {
        unset ::_wait_timeout($var)
        error "timed out after $ms ms waiting for $var"
    }
    return [set $var]
}
proc ::_wait_wake {args} {
    set ::_wait_wake_flag 1
}

# Wait until an expression (evaluated at global level) is true.
proc ::wait_until {cond {ms 3000}} {
    set deadline [expr {[clock milliseconds] + $ms}]
    while {![uplevel #0 [list expr $cond]]} {
        if {[clock milliseconds] > $deadline} {
            error "timed out after $ms ms waiting for: $cond"
        }
        pause 10
    }
    return 1
}

# A new connection object, configured with the given options and connected.
proc ::connected {name args} {
    set c [nats::connection new $name {*}$::log_opts]
    if {"-servers" ni $args} {
        lappend args -servers $::url
    }
    $c configure {*}$args
    $c connect
    return $c
}

# The namespace variable of a connection (status, last_error, serverInfo ...)
proc ::conn_var {conn name} {
    return [info object namespace $conn]::$name
}
# The error code in last_error ("" when none)
proc ::last_code {conn} {
    set e [set [conn_var $conn last_error]]
    if {$e eq ""} {
        return ""
    }
    return [lindex [dict get $e code] 1]
}

# A subscription callback that appends {subject message reply} to a global list.
proc ::collector {var} {
    set ::$var [list]
    return [list ::_collect ::$var]
}
proc ::_collect {var subject msg reply} {
    lappend $var [list $subject $msg $reply]
}

# A port with nothing listening on it.
proc ::dead_port {} {
    set s [socket -server {apply {{c a p} {close $c}}} -myaddr 127.0.0.1 0]
    set port [lindex [chan configure $s -sockname] 2]
    close $s
    return $port
}

# Ask the pytest runner to act on one of its servers: stop/start/restart/kill NAME
# (stop: SIGTERM and wait for the end; term: SIGTERM only).
proc ::server_ctl {cmd name} {
    set s [socket 127.0.0.1 $::env(TCLNATS_TEST_CTL)]
    chan configure $s -translation lf -buffering line
    puts $s "$cmd $name"
    set reply [gets $s]
    close $s
    if {$reply ne "ok"} {
        error "server control \"$cmd $name\" failed: $reply"
    }
}

# --------------------------------------------------------------- a fake server
# A NATS "server" in this interpreter, for protocol situations a real server
# won't produce on demand (silence, garbage, a given -ERR, a broken header).
#
#   fake::start ?-info 0|1? ?-pong 0|1? ?-headers 0|1?  -> port
#   fake::send bytes        write to the current client
#   fake::wait_line glob    wait for a received line that matches
#   fake::drop              close the current client's socket
#   fake::stop              close everything
namespace eval ::fake {
    variable listen "" client "" lines {} port 0 info 1 pong 1 headers 1 clients 0
}
proc ::fake::start {args} {
    variable listen
    variable port
    variable lines {}
    variable clients 0
    variable client ""
    variable info 1
    variable pong 1
    variable headers 1
    foreach {k v} $args {
        set [string trimleft $k -] $v
    }
    set listen [socket -server ::fake::Accept -myaddr 127.0.0.1 0]
    set port [lindex [chan configure $listen -sockname] 2]
    return $port
}
proc ::fake::Accept {chan addr p} {
    variable client
    variable port
    variable clients
    variable info
    variable headers
    if {$client ne ""} {
        catch {close $client}
    }
    set client $chan
    incr clients
    chan configure $chan -translation binary -blocking 0 -buffering none
    chan event $chan readable [list ::fake::Read $chan]
    if {$info} {
        set hdr [expr {$headers ? {"headers":true,} : ""}]
        puts -nonewline $chan "INFO {\"server_id\":\"FAKE\",\"server_name\":\"fake\",\"version\":\"2.10.0\",\"proto\":1,\"host\":\"127.0.0.1\",\"port\":$port,${hdr}\"max_payload\":1048576}\r\n"
    }
}
proc ::fake::Read {chan} {
    variable lines
    variable pong
    variable client
    if {[catch {read $chan} data] || ([eof $chan] && $data eq "")} {
        catch {close $chan}
        if {$client eq $chan} {
            set client ""
        }
        return
    }
    foreach line [split [string map [list \r\n \n] $data] \n] {
        if {$line eq ""} continue
        lappend lines $line
        if {$line eq "PING" && $pong} {
            catch {puts -nonewline $chan "PONG\r\n"}
        }
    }
}
proc ::fake::send {bytes} {
    variable client
    puts -nonewline $client $bytes
}
proc ::fake::wait_line {pattern {ms 3000}} {
    variable want $pattern
    wait_until {[lsearch -glob $::fake::lines $::fake::want] >= 0} $ms
}
proc ::fake::drop {} {
    variable client
    if {$client ne ""} {
        catch {close $client}
        set client ""
    }
}
proc ::fake::stop {} {
    variable listen
    drop
    if {$listen ne ""} {
        close $listen
        set listen ""
    }
}
# A connection to the fake server that completed its handshake; after a
# failure it does not try again (one attempt per server).
proc ::fake::connected {name args} {
    set c [nats::connection new $name {*}$::log_opts]
    $c configure -servers nats://127.0.0.1:$::fake::port -reconnect_time_wait 50 \
        -max_reconnect_attempts 1 {*}$args
    $c connect
    return $c
}
