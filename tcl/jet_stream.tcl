# JetStream, Key-Value and ordered consumers: the public shape of nats-tcl
# 3.2.1 (JsAPI.md, KvAPI.md). The JetStream API itself is spoken by
# tclnats_py/tclface/js/; these classes hold the Tcl-visible state, wait for
# results (vwait, or yield in a coroutine) and own their children.

oo::class create ::nats::jet_stream {
    variable Conn ConnNs Js Timeout ApiPrefix Domain Trace ChildrenRef AsyncFull StallWait

    constructor {conn timeout apiPrefix domain trace {maxPending 4000} {stallWait 200}} {
        set Conn $conn
        set Js ""
        array set ChildrenRef {}
        set AsyncFull 0
        set StallWait $stallWait
        set ConnNs [info object namespace $conn]
        set Js [::tclnats::r [[set ${ConnNs}::Py] js_new [self namespace] $timeout $apiPrefix $domain $trace \
                                  $maxPending $stallWait]]
        set Timeout $timeout
        set Trace $trace
        set Domain $domain
        set ApiPrefix [::tclnats::r [$Js api_prefix]]
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
    # run an operation of the Python side and wait for its result
    method Call {args} {
        ${ConnNs}::my WaitRequest [::tclnats::r [$Js {*}$args]]
    }
    method api_prefix {} { return $ApiPrefix }
    method timeout {} { return $Timeout }

    method publish {subject message args} {
        if {![llength $args]} {
            # the common form: synchronous, no options
            return [${ConnNs}::my WaitRequest [::tclnats::r [$Js publish $subject $message]]]
        }
        if {"-ttl" in $args || "-expected_last_subject_seq_subject" in $args} {
            my PublishLevel $args
        }
        set async [::nats::_has_option $args -callback]
        if {$async && $AsyncFull} {
            my StallWait
        }
        set rid [::tclnats::r [$Js publish $subject $message {*}$args]]
        if {$async} {
            return $rid
        }
        ${ConnNs}::my WaitRequest $rid
    }
    method publish_msg {msg args} {
        if {"-ttl" in $args || "-expected_last_subject_seq_subject" in $args} {
            my PublishLevel $args
        }
        set async [::nats::_has_option $args -callback]
        if {$async && $AsyncFull} {
            my StallWait
        }
        set rid [::tclnats::r [$Js publish_msg $msg {*}$args]]
        if {$async} {
            return $rid
        }
        ${ConnNs}::my WaitRequest $rid
    }
    # options of a publish that need a newer server than 2.10 (ADR-44): its
    # JetStream API level is asked once (ErrServerTooOld when too old)
    method PublishLevel {options} {
        foreach {opt feature} {-ttl msg_ttl -expected_last_subject_seq_subject expected_last_subject_seq_subject} {
            if {[::nats::_has_option $options $opt]} {
                my RequireLevel $feature
            }
        }
    }
    method RequireLevel {feature} {
        set rid [::tclnats::r [$Js require_level $feature]]
        if {$rid ne ""} {
            ${ConnNs}::my WaitRequest $rid
        }
    }
    # -publish_async_max_pending publishes with a callback wait for their
    # ack (AsyncFull is 1): wait in the event loop (or yield inside a
    # coroutine) for one of them to end, at most -publish_async_stall_wait
    # ms; still full then, the publish throws ErrTooManyStalledMsgs
    method StallWait {} {
        set var [my varname AsyncFull]
        set timer [after $StallWait [list set $var 0]]
        while {$AsyncFull} {
            nats::_coroVwait $var
        }
        after cancel $timer
    }
    method fetch {stream consumer args} {
        set rid [::tclnats::r [$Js fetch $stream $consumer {*}$args]]
        if {[::nats::_has_option $args -callback]} {
            # the fetch ID is an object that lives while the pull request runs
            return [nats::AsyncPullRequest new $Js $rid]
        }
        set req [nats::SyncPullRequest new $Js $rid]
        try {
            return [${ConnNs}::my WaitRequest $rid]
        } trap {NATS ErrTimeout} {err opts} {
            if {$err ne "Connection lost"} {
                # closed since the pull ended: ErrTimeout "Connection lost" or ErrConnectionClosed
                ::tclnats::r [$Js fetch_gone]
                # a wrong stream or consumer shows up as a timeout: report the real cause
                my consumer_info $stream $consumer
            }
            return -options $opts $err
        } finally {
            $req destroy
        }
    }
    # the old name of fetch
    method consume {args} {
        my fetch {*}$args
    }
    method cancel_pull_request {fetchID} {
        # a fetch that has ended (its object goes away once its callbacks ran) is no longer valid
        if {![info object isa object $fetchID] || ![info object isa typeof $fetchID ::nats::AsyncPullRequest]
                || ![$fetchID active]} {
            throw [list NATS ErrInvalidArg] "Invalid fetch ID $fetchID"
        }
        $fetchID destroy
        return
    }
    method ack {message} { ::tclnats::r [$Js ack $message]; return }
    method ack_sync {message} { my Call ack_sync $message }
    method nak {message args} { ::tclnats::r [$Js nak $message {*}$args]; return }
    method term {message} { ::tclnats::r [$Js term $message]; return }
    method in_progress {message} { ::tclnats::r [$Js in_progress $message]; return }

    method add_stream {stream args} { my Call add_stream $stream {*}$args }
    method update_stream {stream args} { my Call update_stream $stream {*}$args }
    method add_stream_from_json {json_config} { my Call add_stream_from_json $json_config }
    method delete_stream {stream} { my Call delete_stream $stream }
    method purge_stream {stream args} { my Call purge_stream $stream {*}$args }
    method stream_info {stream} { my Call stream_info $stream }
    method stream_names {args} { my Call stream_names {*}$args }
    method add_consumer {stream args} { my Call add_consumer $stream {*}$args }
    method update_consumer {stream args} { my Call update_consumer $stream {*}$args }
    method add_pull_consumer {stream consumer args} { my Call add_pull_consumer $stream $consumer {*}$args }
    method add_push_consumer {stream consumer deliverSubject args} {
        my Call add_push_consumer $stream $consumer $deliverSubject {*}$args
    }
    method add_consumer_from_json {stream consumer jsonConfig} {
        my Call add_consumer_from_json $stream $consumer $jsonConfig
    }
    method delete_consumer {stream consumer} { my Call delete_consumer $stream $consumer }
    method unpin_consumer {stream consumer group} { my Call unpin_consumer $stream $consumer $group }
    method consumer_info {stream consumer} { my Call consumer_info $stream $consumer }
    method consumer_names {stream} { my Call consumer_names $stream }
    method pause_consumer {stream consumer args} { my Call pause_consumer $stream $consumer {*}$args }
    method resume_consumer {stream consumer} { my Call resume_consumer $stream $consumer }
    method reset_consumer {stream consumer args} { my Call reset_consumer $stream $consumer {*}$args }
    method stream_msg_get {stream args} { my Call stream_msg_get $stream {*}$args }
    method stream_direct_get {stream args} { my Call stream_direct_get $stream {*}$args }
    method publish_schedule {subject message args} { my Call publish_schedule $subject $message {*}$args }
    method publish_batch {msgs args} { my Call publish_batch $msgs {*}$args }
    method counter_add {stream subject delta} { my Call counter_add $stream $subject $delta }
    method counter_get {stream subject} { my Call counter_get $stream $subject }
    method stream_msg_delete {stream args} { my Call stream_msg_delete $stream {*}$args }
    method account_info {} { my Call account_info }

    method ordered_consumer {stream args} {
        if {[llength $args] % 2} {
            throw {NATS ErrInvalidArg} "Missing value for option [lindex $args end]"
        }
        set post true
        if {[::nats::_has_option $args -post]} {
            set post [dict get $args -post]
        }
        set cons [nats::ordered_consumer new $Conn [self] $Js $stream {*}$args]
        if {$post} {
            set ChildrenRef($cons) ""
        }
        return $cons
    }

    method bind_kv_bucket {bucket} {
        my NewKv [my Call bind_kv_bucket $bucket]
    }
    method create_kv_bucket {bucket args} {
        my NewKv [my Call create_kv_bucket $bucket {*}$args]
    }
    method create_kv_aggregate {bucket writable originList args} {
        my NewKv [my Call create_kv_aggregate $bucket $writable $originList {*}$args]
    }
    method create_kv_mirror {mirrorName origin args} {
        my Call create_kv_mirror $mirrorName $origin {*}$args
        return
    }
    method NewKv {kvCmd} {
        set kv [nats::key_value new $Conn [self] $kvCmd]
        set ChildrenRef($kv) ""
        return $kv
    }
    # Object Store (not in nats-tcl; ADR-20, like nats::key_value)
    method create_object_store {bucket args} {
        my NewObjectStore [my Call create_object_store $bucket {*}$args]
    }
    method bind_object_store {bucket} {
        my NewObjectStore [my Call bind_object_store $bucket]
    }
    method NewObjectStore {cmd} {
        set obs [nats::object_store new $Conn [self] $cmd]
        set ChildrenRef($obs) ""
        return $obs
    }
    method delete_object_store {bucket} { my Call delete_object_store $bucket }
    method object_store_names {} { my Call object_store_names }
    method delete_kv_bucket {bucket} { my Call delete_kv_bucket $bucket }
    method kv_buckets {} { my Call kv_buckets }
    method empty_kv_bucket {bucket} { my Call empty_kv_bucket $bucket }

    # ADR-6 "filename safe" names for streams and consumers
    method CheckFilenameSafe {str} {
        ::tclnats::r [$Js check_filename_safe $str]
    }
}

# A pull request in progress (see fetch). The asynchronous one is the fetch
# ID: destroying it cancels the pull; it destroys itself when the pull ends.
::oo::class create ::nats::AsyncPullRequest {
    variable Js Rid
    constructor {js rid} {
        set Js $js
        set Rid $rid
        ::tclnats::r [$Js pull_object $Rid [self]]
    }
    destructor {
        catch {$Js cancel_pull_request $Rid}
    }
    method active {} {
        ::tclnats::r [$Js pull_active $Rid]
    }
}
::oo::class create ::nats::SyncPullRequest {
    variable Js Rid
    constructor {js rid} {
        set Js $js
        set Rid $rid
    }
}

# Recreating an ordered push consumer (ADR-17), shared by nats::ordered_consumer
# and nats::kv_watcher: Py is the Python object that keeps its sequences.
oo::class create ::nats::_ResettingConsumer {
    variable Py ConnNs
    # no heartbeat for 3 intervals: drop the subscription and recreate
    method MissingHb {} {
        ::tclnats::r [$Py missing_hb]
        my Reset ErrConsumerNotActive
    }
    # recreate the push consumer from the last stream sequence seen; like
    # nats-tcl this waits for the JetStream reply (in a nested event loop)
    method Reset {errCode} {
        set rid [::tclnats::r [$Py reset_begin $errCode]]
        if {$rid eq ""} {
            return
        }
        try {
            ${ConnNs}::my WaitRequest $rid
        } trap NATS {err opts} {
            ::tclnats::r [$Py reset_failed [lindex [dict get $opts -errorcode] 1] $err]
        }
        return
    }
}

::oo::class create ::nats::ordered_consumer {
    mixin ::nats::_ResettingConsumer
    variable Conn ConnNs JsObj Py Name RetryInterval last_error

    constructor {conn jsObj js stream args} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set JsObj $jsObj
        set Py ""
        set Name ""
        set RetryInterval 10000
        set last_error ""
        lassign [::tclnats::r [$js ordered_consumer $stream [self] [self namespace] {*}$args]] Py rid
        ${ConnNs}::my WaitRequest $rid
    }
    destructor {
        if {$Py ne ""} {
            catch {$Py destroy}
        }
        catch {$JsObj releaseRef [self]}
    }
    # every pushed message passes here: a method of the class, not of the
    # mixin, so that an object-level method can wrap it (and call next)
    method OnMsg {subj msg reply} {
        ::tclnats::r [$Py on_msg $msg]
        return
    }
    method info {} {
        ::tclnats::r [$Py info]
    }
    method name {} {
        return $Name
    }
}

oo::class create ::nats::key_value {
    variable Conn ConnNs Js Kv

    constructor {conn jsObj kvCmd} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Js $jsObj
        set Kv $kvCmd
    }
    destructor {
        catch {$Js releaseRef [self]}
        catch {$Kv destroy}
    }
    method Call {args} {
        ${ConnNs}::my WaitRequest [::tclnats::r [$Kv {*}$args]]
    }
    method get {key args} { ${ConnNs}::my WaitRequest [::tclnats::r [$Kv get $key {*}$args]] }
    method get_value {key args} { dict get [my get $key {*}$args] value }
    method get_many {keys} {
        if {![llength $keys]} {
            return {}
        }
        my Call get_many $keys
    }
    method put {key value} { ${ConnNs}::my WaitRequest [::tclnats::r [$Kv put $key $value]] }
    method create {key value args} { my Call create $key $value {*}$args }
    method update {key value revision} { my Call update $key $value $revision }
    method delete {key {revision ""}} { my Call delete $key $revision; return }
    method purge {key args} { my Call purge $key {*}$args; return }
    method revert {key revision} {
        my put $key [dict get [my get $key -revision $revision] value]
    }
    method status {} { my Call status }
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
        dict get [my status] bucket
    }
    method JsObj {} {
        return $Js
    }
}

# nats::object_store: an Object Store bucket (ADR-20), in the spirit of nats::key_value.
#   put name data ?-description text? ?-chunk_size bytes?  -> object info (dict)
#   get name -> the data (digest checked, links followed); info name; list; delete name;
#   add_link name targetName; status
oo::class create ::nats::object_store {
    variable Conn ConnNs Js Obs

    constructor {conn jsObj cmd} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Js $jsObj
        set Obs $cmd
    }
    destructor {
        catch {$Js releaseRef [self]}
        catch {$Obs destroy}
    }
    method Call {args} {
        ${ConnNs}::my WaitRequest [::tclnats::r [$Obs {*}$args]]
    }
    method put {name data args} { my Call put $name $data {*}$args }
    method get {name} { my Call get $name }
    method info {name} { my Call info $name }
    method list {} { my Call list }
    method delete {name} { my Call delete $name; return }
    method add_link {name target} { my Call add_link $name $target }
    method status {} { my Call status }
    # -callback gets each object's info, then "" at the end of the current
    # ones, then every change; options -include_history -updates_only -ignore_deletes
    method watch {args} {
        set w [nats::kv_watcher new $Conn $Obs > {*}$args]
        $Js addRef $w
        return $w
    }
}

oo::class create ::nats::kv_watcher {
    mixin ::nats::_ResettingConsumer
    variable Conn ConnNs Py InitDone Name RetryInterval last_error Info

    constructor {conn kvCmd key_pattern args} {
        set Conn $conn
        set ConnNs [info object namespace $conn]
        set Py ""
        set InitDone false
        set Name ""
        set RetryInterval 10000
        set last_error ""
        set array ""
        if {[llength $args] % 2} {
            throw {NATS ErrInvalidArg} "Missing value for option [lindex $args end]"
        }
        if {[::nats::_has_option $args -values_array]} {
            set array [dict get $args -values_array]
            dict unset args -values_array
            # the array lives in the caller's namespace or is global, as with [trace]
            set full [uplevel 2 [list namespace which -variable $array]]
            if {$full eq ""} {
                set full [uplevel 2 [list namespace current]]::$array
                if {[string match ::::* $full]} {
                    set full [string range $full 2 end]
                }
            }
            set array $full
        }
        lassign [::tclnats::r [$kvCmd watch $key_pattern [self] [self namespace] $array {*}$args]] Py rid
        set Info [${ConnNs}::my WaitRequest $rid]
    }
    destructor {
        if {$Py ne ""} {
            catch {$Py destroy}
        }
    }
    method OnMsg {subj msg reply} {
        ::tclnats::r [$Py on_msg $msg]
        return
    }
    # collect keys or history until the initial data is complete
    method Gather {what} {
        ::tclnats::r [$Py gather $what]
        set timeout [::tclnats::r [$Py timeout]]
        set timer [after $timeout [list set [self namespace]::InitDone timeout]]
        while {$InitDone eq "false"} {
            ::nats::_coroVwait [my varname InitDone]
        }
        after cancel $timer
        if {$InitDone eq "timeout"} {
            throw {NATS ErrTimeout} "Timeout while gathering $what in bucket [::tclnats::r [$Py bucket]]"
        }
        ::tclnats::r [$Py results]
    }
    # the ordered consumer behind the watcher: this object carries its
    # last_error and name
    method consumer {} {
        return [self]
    }
    method name {} {
        return $Name
    }
    method info {} {
        ::tclnats::r [$Py info]
    }
}

# ---------------------------------------------------------------- namespace commands
proc ::nats::_has_option {args_list opt} {
    foreach {k v} $args_list {
        if {$k eq $opt} {
            return 1
        }
    }
    return 0
}
proc ::nats::metadata {msg} {
    if {[catch {dict get $msg reply} reply] || [catch {dict get $msg subject} subject]} {
        throw {NATS ErrNotJSMessage} "Not a JetStream message: a nats::msg dict expected"
    }
    ::tclnats::r [::tclnats::_metadata $reply $subject]
}
proc ::nats::make_stream_source args {
    ::tclnats::r [::tclnats::_make_stream_source {*}$args]
}
proc ::nats::make_subject_transform args {
    ::tclnats::r [::tclnats::_make_subject_transform {*}$args]
}
proc ::nats::make_republish {args} {
    ::tclnats::r [::tclnats::_make_republish {*}$args]
}
proc ::nats::make_kv_origin {args} {
    ::tclnats::r [::tclnats::_make_kv_origin {*}$args]
}
namespace eval ::nats {
    namespace export metadata make_stream_source make_subject_transform make_republish make_kv_origin
}
