# Shared set-up of our Tcl tests: the server URL comes from the pytest runner.
package require tcltest 2.5
namespace import ::tcltest::test
package require nats

set ::url $::env(TCLNATS_TEST_URL)

# wait for a variable to be written, at most ms milliseconds
proc wait_var {var {ms 2000}} {
    set timer [after $ms [list set $var __timeout__]]
    vwait $var
    after cancel $timer
    if {[set $var] eq "__timeout__"} {
        error "timeout waiting for $var"
    }
    return [set $var]
}

proc new_conn {{name tester} args} {
    set c [nats::connection new $name -log_chan stderr -log_level error]
    $c configure -servers $::url {*}$args
    $c connect
    return $c
}

# the error code of a script, or "ok"
proc code_of {script} {
    try {
        uplevel 1 $script
    } trap NATS {msg opts} {
        return [lindex [dict get $opts -errorcode] 1]
    }
    return ok
}
