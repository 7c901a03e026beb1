# thread_stress.tcl - many Tcl threads start (or join) the embedded Python at
# the same moment, under stock tclsh:
#
#   TCLLIBPATH=<checkout>/tcl tclsh tests/tclface/thread_stress.tcl URL ?TPOOL? ?THREADS? ?REQUESTS? ?CHILD_REQUESTS?
#
# TPOOL workers (a tpool whose -initcmd is `package require nats`) and THREADS
# Thread workers (which require nats in their job) are created at once; the
# main thread has not loaded nats, so no Python runs in the process yet.  All
# of them wait on one flag, then each makes a connection and REQUESTS requests
# (default 8, 8, 500) to a responder in a separate process (this script again,
# with -responder), and each creates a child interpreter ([interp create]) that
# makes its own connection and CHILD_REQUESTS requests (default 50): in the
# odd-numbered workers the child connects first, in the others the parent.
# Then the threads go, the main thread loads nats and makes one request, and
# the script prints what was answered and the process's Tcl threads, task
# (OS thread) count and open descriptors before and after.  It exits with 0
# when every request was answered and those counts are back where they were.
package require Thread

proc counts {} {
    list [llength [thread::names]] [llength [glob -directory /proc/[pid]/task *]] \
        [llength [glob -directory /proc/[pid]/fd *]]
}

if {[lindex $argv 0] eq "-responder"} {
    # a responder on "stress.svc" in its own process; it ends at EOF on stdin
    package require nats
    set c [nats::connection new responder]
    $c configure -servers [lindex $argv 1]
    $c connect
    $c subscribe stress.svc -callback [list apply {{c s m r} { $c publish $r "re:$m" }} $c]
    $c ping
    puts ready
    flush stdout
    fconfigure stdin -blocking 0
    fileevent stdin readable {
        read stdin
        if {[eof stdin]} { set ::done 1 }
    }
    vwait ::done
    $c destroy
    exit 0
}

lassign $argv url npool nthreads nreq nchild
foreach {var default} {npool 8 nthreads 8 nreq 500 nchild 50} {
    if {[set $var] eq ""} { set $var $default }
}
# Tcl's notifier thread (and its pipe) starts once per process, when a thread
# first waits for events: before the counts
after 1 {set ::warm 1}
vwait ::warm
set before [counts]

# the job of every worker: tag, url, parent's and child's request counts,
# whether the child connects first; returns {answered childAnswered}
set job {
    proc ::stress_requests {c tag n} {
        set good 0
        for {set i 0} {$i < $n} {incr i} {
            if {[$c request stress.svc "$tag-$i" -timeout 20000] eq "re:$tag-$i"} { incr good }
        }
        return $good
    }
    proc ::stress_job {tag url nreq nchild childfirst} {
        while {![tsv::get stress go]} { after 1 }
        set child [interp create]
        $child eval [list set url $url]
        $child eval [list set tag $tag.child]
        $child eval [list set n $nchild]
        set childconnect {
            package require nats
            set c [nats::connection new $tag]
            $c configure -servers $url
            $c connect
        }
        if {$childfirst} {
            $child eval $childconnect
        }
        package require nats
        set c [nats::connection new $tag]
        $c configure -servers $url
        $c connect
        if {!$childfirst} {
            $child eval $childconnect
        }
        $child eval [list proc ::stress_requests {c tag n} [info body ::stress_requests]]
        set good [::stress_requests $c $tag $nreq]
        set childgood [$child eval {::stress_requests $c $tag $n}]
        $child eval {$c destroy}
        interp delete $child
        $c destroy
        return [list $good $childgood]
    }
}

tsv::set stress go 0
set responder [open |[list [info nameofexecutable] [info script] -responder $url] r+]
if {[gets $responder] ne "ready"} {
    puts "the responder did not start"
    exit 1
}

set main [thread::id]
set pool [tpool::create -minworkers $npool -maxworkers $npool -initcmd "package require nats; $job"]
set jobs {}
for {set w 0} {$w < $npool} {incr w} {
    lappend jobs [tpool::post $pool [list ::stress_job pool$w $url $nreq $nchild [expr {$w % 2}]]]
}
set threads {}
for {set w 0} {$w < $nthreads} {incr w} {
    lappend threads [thread::create -joinable [list apply {{job main tag url nreq nchild childfirst} {
        eval $job
        if {[catch {::stress_job $tag $url $nreq $nchild $childfirst} r]} {
            set r [list error $r]
        }
        thread::send -async $main [list lappend ::results $tag $r]
    }} $job $main thread$w $url $nreq $nchild [expr {$w % 2}]]]
}
set ::results {}
tsv::set stress go 1

foreach j $jobs {
    tpool::wait $pool $j
    if {[catch {tpool::get $pool $j} r]} {
        set r [list error $r]
    }
    lappend ::results pool$j $r
}
while {[llength $::results] < 2 * ($npool + $nthreads)} {
    vwait ::results
}
foreach t $threads {
    thread::join $t
}
tpool::release $pool

set answered 0
set errors {}
foreach {tag r} $::results {
    if {[lindex $r 0] eq "error"} {
        lappend errors "$tag: [lindex $r 1]"
    } else {
        incr answered [expr {[lindex $r 0] + [lindex $r 1]}]
    }
}

# the main thread joins the Python that a worker started
package require nats
set c [nats::connection new main]
$c configure -servers $url
$c connect
set mainreply [$c request stress.svc main -timeout 20000]
$c destroy
close $responder

# tpool's workers end after tpool::release, on their own: wait (at most 60 s)
# until the threads are gone; what is left then has leaked
set after [counts]
for {set i 0} {$i < 600 && $after ne $before} {incr i} {
    after 100
    set after [counts]
}
set expected [expr {($npool + $nthreads) * ($nreq + $nchild)}]
puts "answered $answered of $expected"
puts "main thread's request: $mainreply"
puts "errors: [llength $errors]"
foreach e [lrange $errors 0 9] {
    puts "  $e"
}
puts "threads tasks fds: $before -> $after"
exit [expr {$answered == $expected && $mainreply eq "re:main" && ![llength $errors] && $before eq $after ? 0 : 1}]
