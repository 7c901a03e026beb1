# Key-Value for the 2.x API (see nats_v2.tcl): nats::key_value, the bucket
# object of nats-tcl 2.0.4's KvAPI.md, and nats::kv_store, the KV API of the
# Aug 2023 JetStream document ($js key_value: the bucket named in each call).
# Both drive the bucket operations of tclnats_py/engine/js/kv.py through
# tclnats_py/tclface/js.py; here are only their Tcl shapes.

oo::class create ::nats::key_value {
    variable Conn ConnNs Js Kv

    constructor {conn jsObj kvCmd} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Js $jsObj
        set Kv $kvCmd
        ::tclnats::r [$Kv generation2]
    }
    destructor {
        catch {$Js releaseRef [self]}
        catch {$Kv destroy}
    }
    method Call {args} {
        ${ConnNs}::my WaitRequest [::tclnats::r [$Kv {*}$args]]
    }
    # 2.x's entry has delta, known only to watchers: empty here
    method get {key args} {
        ::nats::_v2_entry [my Call get $key {*}$args] ""
    }
    method get_value {key args} { dict get [my get $key {*}$args] value }
    method put {key value} { my Call put $key $value }
    method create {key value} { my Call create $key $value }
    method update {key value revision} { my Call update $key $value $revision }
    method delete {key {revision ""}} { my Call delete $key $revision; return }
    method purge {key} { my Call purge $key; return }
    method revert {key revision} {
        my put $key [dict get [my get $key -revision $revision] value]
    }
    method status {} {
        set st [my Call status]
        dict unset st is_compressed
        return $st
    }
    method watch {key_pattern args} {
        set w [nats::kv_watcher new $Conn $Kv $key_pattern {*}$args]
        $Js addRef $w
        return $w
    }
    method keys {} {
        set w [my watch > -meta_only 1 -ignore_deletes 1]
        try {
            set result [[info object namespace $w]::my Gather keys]
        } finally {
            $w destroy
        }
        if {[llength $result] == 0} {
            throw {NATS ErrKeyNotFound} "No keys found in bucket [my BucketName]"
        }
        return $result
    }
    method history {key} {
        set w [my watch $key -include_history true]
        try {
            set result [[info object namespace $w]::my Gather history]
        } finally {
            $w destroy
        }
        if {[llength $result] == 0} {
            throw {NATS ErrKeyNotFound} "Key $key not found in bucket [my BucketName]"
        }
        return $result
    }
    method BucketName {} {
        ::tclnats::r [$Kv bucket]
    }
}

# an entry dict in 2.x's order: ... created delta operation
proc ::nats::_v2_entry {entry delta} {
    set out [dict create]
    foreach k {bucket key value revision created} {
        dict set out $k [dict get $entry $k]
    }
    dict set out delta $delta
    dict set out operation [dict get $entry operation]
    return $out
}
