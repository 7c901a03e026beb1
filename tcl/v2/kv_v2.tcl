# Key-Value for the 2.x API (see nats_v2.tcl): nats::key_value, the bucket
# object of nats-tcl 2.0.4's KvAPI.md, and nats::kv_store, the KV API of the
# Aug 2023 JetStream document ($js key_value: the bucket named in each call).
# Both drive the bucket operations of tclnats_py/engine/js/kv.py through
# tclnats_py/tclface/js/kv.py; here are only their Tcl shapes.

# 2.0.4's nats::key_value is 3.2.1's class (tcl/jet_stream.tcl, sourced
# before this file) with the 2.x shapes below: entries with delta, a status
# without is_compressed, its bucket name known without a status call.
oo::define ::nats::key_value {
    constructor {conn jsObj kvCmd} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Js $jsObj
        set Kv $kvCmd
        ::tclnats::r [$Kv generation2]
    }
    # 2.x's entry has delta, known only to watchers: empty here
    method get {key args} {
        ::nats::_v2_entry [my Call get $key {*}$args] ""
    }
    method status {} {
        set st [my Call status]
        dict unset st is_compressed
        return $st
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

# The KV API of the Aug 2023 JetStream document: [$js key_value ?-timeout
# ms? ?-check_bucket bool? ?-read_only bool?]. Every call names its bucket.
# Errors: KeyNotFound, BucketNotFound, WrongLastSequence, KvReadOnly (that
# document's codes, without Err), besides the core and JetStream ones.
# Entries: value bucket key operation revision created.
oo::class create ::nats::kv_store {
    variable Conn ConnNs JsObj Js Timeout CheckBucket ReadOnly Watches

    constructor {conn jsObj js timeout checkBucket readOnly} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set JsObj $jsObj
        set Timeout $timeout
        set CheckBucket $checkBucket
        set ReadOnly $readOnly
        # the context of every call: the JetStream one with this object's timeout
        set Js [::tclnats::r [$js with_timeout $timeout]]
        array set Watches {}
    }
    destructor {
        foreach w [array names Watches] {
            catch {$w destroy}
        }
        catch {$JsObj releaseRef [self]}
        catch {$Js destroy}
    }

    # ------------------------------------------------------------ helpers
    # run a call, with the codes of this API
    method Wait {rid} {
        try {
            return [${ConnNs}::my WaitRequest $rid]
        } trap {NATS ErrKeyNotFound} err {
            throw {NATS KeyNotFound} $err
        } trap {NATS ErrBucketNotFound} err {
            throw {NATS BucketNotFound} $err
        } trap {NATS BucketNotFound} err {
            throw {NATS BucketNotFound} $err
        } trap {NATS ErrStreamNotFound} err {
            throw {NATS BucketNotFound} $err
        } trap {NATS ErrWrongLastSequence} err {
            throw {NATS WrongLastSequence} $err
        }
    }
    method Writable {} {
        if {$ReadOnly} {
            throw {NATS KvReadOnly} "KV has been created in read-only mode"
        }
    }
    method CheckBucketName {bucket} {
        ::tclnats::r [$Js check_kv_bucket $bucket]
    }
    # options of a call: {name default ...} -> values in the caller's
    # variables; anything else is ErrInvalidArg
    method Options {argList spec} {
        if {[llength $argList] % 2} {
            throw {NATS ErrInvalidArg} "Missing value for option [lindex $argList end]"
        }
        foreach {name def} $spec {
            upvar 1 $name v_$name
            set v_$name $def
        }
        foreach {k v} $argList {
            set name [string trimleft $k -]
            if {![dict exists $spec $name]} {
                throw {NATS ErrInvalidArg} "Unknown option $k"
            }
            if {$name eq "timeout" && (![string is entier -strict $v] || $v <= 0)} {
                throw {NATS ErrBadTimeout} "Invalid value for the timeout option $name : $v"
            }
            if {$name in {check_bucket include_history updates_only headers_only ignore_deletes}
                    && ![string is boolean -strict $v]} {
                throw {NATS ErrInvalidArg} "Invalid value for the bool option $name : $v"
            }
            set v_$name $v
        }
    }
    # an optional key before the options: {key rest}
    method KeyAndOptions {argList} {
        if {[llength $argList] % 2} {
            return [list [lindex $argList 0] [lrange $argList 1 end]]
        }
        return [list "" $argList]
    }
    # the engine's bucket handle for one call (the caller destroys it):
    # bound (stream info asked, mirrors known) or, without -check_bucket, made locally
    method Handle {bucket check {timeout ""}} {
        my CheckBucketName $bucket
        set js $Js
        if {$timeout ne ""} {
            set js [::tclnats::r [$Js with_timeout $timeout]]
        }
        try {
            if {[string is true -strict $check]} {
                return [my Wait [::tclnats::r [$js bind_kv_bucket $bucket]]]
            }
            return [::tclnats::r [$js kv_unchecked $bucket]]
        } finally {
            if {$timeout ne ""} {
                $js destroy
            }
        }
    }
    method WithHandle {bucket check script} {
        set kv [my Handle $bucket $check]
        try {
            return [uplevel 1 [list apply [list {kv} $script [namespace current]] $kv]]
        } finally {
            $kv destroy
        }
    }
    method Entry {e} {
        ::nats::_kv2023_entry $e
    }

    # ------------------------------------------------------------ keys
    method get {bucket key args} {
        my Options $args {revision ""}
        set kv [my Handle $bucket $CheckBucket]
        try {
            set opts [expr {$revision eq "" ? {} : [list -revision $revision]}]
            ::tclnats::r [$kv generation2]
            return [my Entry [my Wait [::tclnats::r [$kv get $key {*}$opts]]]]
        } finally {
            $kv destroy
        }
    }
    method put {bucket key value args} {
        my Writable
        my Options $args [list check_bucket $CheckBucket]
        set kv [my Handle $bucket $check_bucket]
        try {
            return [my Wait [::tclnats::r [$kv put $key $value]]]
        } finally {
            $kv destroy
        }
    }
    method create {bucket key value args} {
        my Writable
        my Options $args [list check_bucket $CheckBucket]
        set kv [my Handle $bucket $check_bucket]
        try {
            return [my Wait [::tclnats::r [$kv create $key $value]]]
        } finally {
            $kv destroy
        }
    }
    # note the order: the revision before the value
    method update {bucket key revision value args} {
        my Writable
        my Options $args [list check_bucket $CheckBucket]
        set kv [my Handle $bucket $check_bucket]
        try {
            return [my Wait [::tclnats::r [$kv update $key $value $revision]]]
        } finally {
            $kv destroy
        }
    }
    # with a key: a DEL marker; without: the bucket goes
    method del {bucket args} {
        my Writable
        lassign [my KeyAndOptions $args] key args
        my Options $args [list check_bucket $CheckBucket]
        if {$key eq ""} {
            my CheckBucketName $bucket
            my Wait [::tclnats::r [$Js delete_kv_bucket $bucket]]
            return
        }
        set kv [my Handle $bucket $check_bucket]
        try {
            my Wait [::tclnats::r [$kv delete $key]]
        } finally {
            $kv destroy
        }
        return
    }
    method purge {bucket key args} {
        my Writable
        my Options $args [list check_bucket $CheckBucket]
        set kv [my Handle $bucket $check_bucket]
        try {
            return [my Wait [::tclnats::r [$kv purge_ack $key]]]
        } finally {
            $kv destroy
        }
    }
    method revert {bucket key revision args} {
        my Writable
        my Options $args [list check_bucket $CheckBucket]
        set value [dict get [my get $bucket $key -revision $revision] value]
        my put $bucket $key $value -check_bucket $check_bucket
    }

    # ------------------------------------------------------------ watching
    # every entry of the key (or of all keys), oldest first; empty when none
    method history {bucket args} {
        lassign [my KeyAndOptions $args] key args
        my Options $args [list timeout $Timeout check_bucket $CheckBucket]
        if {$key eq ""} {
            set key >
        }
        my Gather $bucket $key history $timeout $check_bucket -include_history true
    }
    # the keys of the bucket (deleted ones left out); empty when none
    method keys {bucket args} {
        my Options $args [list timeout $Timeout]
        my Gather $bucket > keys $timeout $CheckBucket -meta_only true -ignore_deletes true
    }
    method Gather {bucket key what timeout check args} {
        set kv [my Handle $bucket $check $timeout]
        try {
            ::tclnats::r [$kv generation2]
            set w [nats::kv_watcher new $Conn $kv $key {*}$args]
            try {
                set result [[info object namespace $w]::my Gather $what]
            } finally {
                $w destroy
            }
        } trap {NATS BucketNotFound} err {
            throw {NATS BucketNotFound} $err
        } finally {
            $kv destroy
        }
        if {$what eq "history"} {
            return [lmap e $result {my Entry $e}]
        }
        return $result
    }
    # returns a watch ID; the callback gets {status msg}: {"" entry},
    # {end_of_initial_data ""}, {error text} and {ok ""} once it works again
    method watch {bucket args} {
        lassign [my KeyAndOptions $args] key args
        if {$key eq ""} {
            set key >
        }
        my Options $args [list callback "" include_history false updates_only false headers_only false \
                              ignore_deletes false idle_heartbeat 5000 check_bucket $CheckBucket]
        if {$callback eq ""} {
            throw {NATS ErrInvalidArg} "Callback option should be specified"
        }
        if {![string is entier -strict $idle_heartbeat] || $idle_heartbeat <= 0} {
            throw {NATS ErrInvalidArg} "Invalid value for the option idle_heartbeat : $idle_heartbeat"
        }
        set kv [my Handle $bucket $check_bucket]
        ::tclnats::r [$kv generation2]
        set state [nats::_kv2023_watch new $callback $kv]
        try {
            set w [nats::kv_watcher new $Conn $kv $key -callback [list $state deliver] \
                       -include_history $include_history -updates_only $updates_only \
                       -meta_only $headers_only -ignore_deletes $ignore_deletes -idle_heartbeat $idle_heartbeat]
        } on error {err opts} {
            $state destroy
            if {[lindex [dict get $opts -errorcode] 1] in {ErrStreamNotFound BucketNotFound ErrBucketNotFound}} {
                throw {NATS BucketNotFound} "Bucket $bucket not found"
            }
            return -options $opts $err
        }
        $state watching $w
        set Watches($w) $state
        return $w
    }
    method unwatch {watchID} {
        if {![info exists Watches($watchID)]} {
            throw {NATS ErrInvalidArg} "There is no watch with that id"
        }
        set state $Watches($watchID)
        unset Watches($watchID)
        catch {$watchID destroy}
        $state destroy
        return
    }

    # ------------------------------------------------------------ buckets
    method add {bucket args} {
        my Writable
        my CheckBucketName $bucket
        if {[llength $args] % 2} {
            throw {NATS ErrInvalidArg} "Missing value for option [lindex $args end]"
        }
        set known {-history -storage -ttl -max_value_size -max_bucket_size -mirror_name -mirror_domain}
        foreach {k v} $args {
            if {$k ni $known} {
                throw {NATS ErrInvalidArg} "Unknown option $k. Should be one of $known"
            }
            if {$k eq "-history" && (![string is entier -strict $v] || $v < 1 || $v > 64)} {
                throw {NATS ErrInvalidArg} "history must be between 1 and 64"
            }
        }
        set kv [my Wait [::tclnats::r [$Js create_kv_bucket $bucket {*}$args]]]
        if {$kv ne ""} {
            $kv destroy
        }
        return [::nats::_v2_stream_info [my Wait [::tclnats::r [$Js stream_info KV_$bucket]]]]
    }
    method info {bucket} {
        my CheckBucketName $bucket
        set si [my Wait [::tclnats::r [$Js stream_info KV_$bucket]]]
        set config [dict get $si config]
        set info [dict create bucket $bucket stream KV_$bucket storage [dict get $config storage] \
                      history [dict get $config max_msgs_per_subject] ttl [dict get $config max_age] \
                      max_value_size [dict get $config max_msg_size] max_bucket_size [dict get $config max_bytes]]
        if {[dict exists $si mirror]} {
            dict set info mirror [dict get $si mirror]
        }
        dict set info created [nats::isotime_to_msec [dict get $si created]]
        dict set info values_stored [dict get $si state messages]
        dict set info bytes_stored [dict get $si state bytes]
        dict set info backing_store JetStream
        dict set info store_config $config
        dict set info store_state [dict get $si state]
        return $info
    }
    method ls {} {
        my Wait [::tclnats::r [$Js kv_buckets]]
    }
}

# one watch of nats::kv_store: the engine's entries to the 2023 callback
oo::class create ::nats::_kv2023_watch {
    variable Callback Kv Watcher Failed
    constructor {callback kv} {
        set Callback $callback
        set Kv $kv
        set Watcher ""
        set Failed 0
    }
    destructor {
        if {$Watcher ne ""} {
            catch {trace remove variable [info object namespace $Watcher]::last_error write [list [self] error]}
        }
        catch {$Kv destroy}
    }
    method watching {w} {
        set Watcher $w
        trace add variable [info object namespace $w]::last_error write [list [self] error]
    }
    # the watcher's consumer failed (its last_error set): tell the user once
    method error {args} {
        set err [set [info object namespace $Watcher]::last_error]
        if {$err eq ""} {
            return
        }
        set Failed 1
        after 0 [list {*}$Callback error [dict get $err errorMessage]]
    }
    method deliver {entry} {
        if {$Failed} {
            set Failed 0
            {*}$Callback ok {}
        }
        if {$entry eq ""} {
            {*}$Callback end_of_initial_data {}
            return
        }
        {*}$Callback {} [::nats::_kv2023_entry $entry]
    }
}

proc ::nats::_kv2023_entry {e} {
    dict create value [dict get $e value] bucket [dict get $e bucket] key [dict get $e key] \
        operation [dict get $e operation] revision [dict get $e revision] created [dict get $e created]
}
