# NATS services (ADR-32, what nats.go and nats-py call "micro") for the Tcl face.
#
#   set svc [$conn add_service adder -version 1.0.0 -description "adds" -metadata {team math}]
#   proc add {svc subject msg reply} {
#       lassign [nats::msg data $msg] x y
#       if {![string is integer -strict $x]} {
#           $svc respond_error $msg 400 "x is not a number"
#           return
#       }
#       $svc respond $msg [expr {$x + $y}] -header {Served-By tcl}
#   }
#   $svc add_endpoint add [list add $svc] -subject math.add -metadata {schema "x y"}
#   set v2 [$svc add_group v2 -queue_group workers]
#   $v2 add_endpoint add [list add $svc]          ;# subject v2.add
#   $svc info ; $svc stats                          ;# dicts (ADR-32's JSON as json2dict shows it)
#   $svc stop
#
# An endpoint's callback is called as a subscription callback of nats-tcl
# with -dictmsg true: {*}$callback subject msg reply, where msg is the
# nats::msg dict of the request (nats::msg data $msg, nats::header get $msg
# key ...); answer with $svc respond $msg data ?-header h? or
# $svc respond_error $msg code description ?data?.  A callback that throws is
# counted as an error of its endpoint, logged as a warning, and the requester
# gets an error reply with code 500 and the error message.
#
# The service (checks, subjects, counters, PING/INFO/STATS answers) lives in
# the engine (tclnats_py/engine/micro.py), driven by tclnats_py/tclface/micro.py;
# these classes keep the callbacks and wait in the event loop when the way
# to the socket is full.

oo::define ::nats::connection method add_service {name args} {
    my CheckConnection
    nats::_parse_args $args {
        version str ""
        description str ""
        metadata dict ""
        queue_group str ""
    }
    set svc [::nats::service new [self] $name $version $description $metadata $queue_group]
    set ChildrenRef($svc) ""
    return $svc
}

oo::class create ::nats::service {
    variable Conn ConnNs Svc Callbacks ChildrenRef

    constructor {conn name version description metadata queueGroup} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Svc ""
        array set Callbacks {}
        array set ChildrenRef {}
        set Svc [::tclnats::r [[set ${ConnNs}::Py] service_new [::nats::mymethod Serve] \
                                   $name $version $description $metadata $queueGroup]]
    }
    destructor {
        catch {$Conn releaseRef [self]}
        foreach obj [array names ChildrenRef] {
            catch {$obj destroy}
        }
        if {$Svc ne ""} {
            catch {$Svc destroy}
        }
    }
    method releaseRef {obj} {
        unset -nocomplain ChildrenRef($obj)
    }

    method id {} { ::tclnats::r [$Svc id] }
    method name {} { ::tclnats::r [$Svc name] }

    method add_endpoint {name callback args} {
        my AddEndpoint "" $name $callback $args
    }
    # (also the add_endpoint of the groups: gid is the group's, "" the service itself)
    method AddEndpoint {gid name callback argList} {
        nats::_parse_args $argList {
            subject str ""
            queue_group str ""
            metadata dict ""
        }
        if {$callback eq ""} {
            throw {NATS ErrInvalidArg} "Invalid callback: the command to call with subject msg reply"
        }
        set n [::tclnats::r [$Svc add_endpoint $gid $name $subject $queue_group $metadata]]
        set Callbacks($n) $callback
        return
    }

    method add_group {name args} {
        my AddGroup "" $name $args
    }
    method AddGroup {parent name argList} {
        nats::_parse_args $argList {
            queue_group str ""
        }
        set gid [::tclnats::r [$Svc add_group $parent $name $queue_group]]
        set grp [::nats::service_group new [self] $gid [::tclnats::r [$Svc group_prefix $gid]]]
        set ChildrenRef($grp) ""
        return $grp
    }

    # a request to endpoint n: the user's callback, counted and timed
    method Serve {n subject msg reply} {
        set began [::tclnats::r [$Svc begin $n]]
        if {[catch {uplevel #0 [list {*}$Callbacks($n) $subject $msg $reply]} err] == 1} {
            ::tclnats::r [$Svc failed $n $began $msg $err]
            return
        }
        ::tclnats::r [$Svc end $n $began]
    }

    method respond {msg data args} {
        nats::_parse_args $args {
            header dict ""
        }
        while {![::tclnats::r [$Svc respond $msg $data $header]]} {
            ${ConnNs}::my MakeRoom
        }
        return
    }
    method respond_error {msg code description {data ""}} {
        set counted 1
        while {![::tclnats::r [$Svc respond_error $msg $code $description $data $counted]]} {
            set counted 0
            ${ConnNs}::my MakeRoom
        }
        return
    }

    method info {} { ::tclnats::r [$Svc info] }
    method stats {} { ::tclnats::r [$Svc stats] }
    method reset {} {
        ::tclnats::r [$Svc reset]
        return
    }
    method stopped {} { ::tclnats::r [$Svc stopped] }
    method stop {} {
        ::tclnats::r [$Svc stop]
        return
    }
}

# a group of a service: a subject prefix (and default queue group) for its endpoints
oo::class create ::nats::service_group {
    variable Service Gid Prefix

    constructor {service gid prefix} {
        set Service $service
        set Gid $gid
        set Prefix $prefix
    }
    destructor {
        catch {$Service releaseRef [self]}
    }
    method prefix {} { return $Prefix }
    method add_endpoint {name callback args} {
        [info object namespace $Service]::my AddEndpoint $Gid $name $callback $args
    }
    method add_group {name args} {
        [info object namespace $Service]::my AddGroup $Gid $name $args
    }
}
