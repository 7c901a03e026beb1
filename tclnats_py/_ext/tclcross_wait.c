/*
 * tclcross_wait.c: the waits of synchronous calls of the Tcl face, made for
 * each interpreter (wait_commands_create): ::tclnats::_await,
 * ::tclnats::_wait and ::tclnats::_wait_stats, which share one SpinState.
 */
#include "tclcross.h"
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <sched.h>
#define NATSCODEC_API static
#include "natscodec.c"   /* the spin back-off of await_var */

/*
 * ::tclnats::_await varName budgetMicroseconds ?channel handler ...?
 *
 * A synchronous call is about to vwait until varName exists (the driver
 * writes the call's result there).  Its reply comes on one of this interpreter's NATS
 * sockets (the responder may be another connection of the same
 * interpreter): first wait for it here, for at most the budget, with
 * poll(2) on those sockets (and Tcl's input buffers), running a socket's
 * readable handler (a command prefix) whenever it has data.  Returns 1 when
 * the variable is settled, 0 when the budget ran out or no channel is left
 * (the caller then vwaits as usual, and every other event source is
 * served).  With Tcl's threaded notifier each event-loop turn hands over to
 * the notifier thread and back; a reply that arrives within the budget costs
 * no turn.  An error in a handler is reported as a background error.
 *
 * With ::tclnats::spin_us set (microseconds, unset or 0: off), the first
 * part of the budget polls without sleeping: a reply that comes within it
 * is seen at once, without the wake-up of a sleeping thread (costly on
 * virtual machines), at the price of that much CPU while waiting; between
 * two polls it yields the CPU (sched_yield) to any thread waiting for it
 * (on two cores, the server's second thread would otherwise wait for the
 * spin to end: with the yield, 1-8 of 2,000 KV gets missed the spin instead
 * of 46-177).  When replies stop coming within it (a busy machine, a slow
 * responder), the spinning backs off (SpinState).
 */
#define AWAIT_MAX 64

static long long
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* the busy-poll phase adapts, per interpreter, by natscodec.h's spin
 * back-off (the asyncio face's too) */
typedef struct {
    natscodec_spin spin;    /* the busy-poll phase (_wait_stats -spin) */
    int refs;               /* commands using it */
    Tcl_WideInt caught, missed;   /* _wait's pre-waits (_wait_stats) */
    int skips_ready;
    Tcl_HashTable skips;    /* connection namespace -> AwaitSkip (_wait) */
} SpinState;

static void
SpinStateFree(ClientData cd)
{
    SpinState *st = (SpinState *)cd;
    if (--st->refs > 0)
        return;
    if (st->skips_ready) {
        Tcl_HashSearch search;
        Tcl_HashEntry *e;
        for (e = Tcl_FirstHashEntry(&st->skips, &search); e != NULL; e = Tcl_NextHashEntry(&search))
            ckfree((char *)Tcl_GetHashValue(e));
        Tcl_DeleteHashTable(&st->skips);
    }
    ckfree((char *)cd);
}

/* wait for var on the sockets of objv (channel handler pairs), at most
 * budget microseconds; its value once it is set, NULL when the budget ran
 * out or no channel is left.  check_first 0: the caller has just seen that
 * var is not set. */
static Tcl_Obj *
await_var(Tcl_Interp *interp, SpinState *spin_state, Tcl_Obj *var, Tcl_WideInt budget,
          int objc, Tcl_Obj *const objv[], int check_first)
{
    long long deadline, spin_until = 0;
    int npairs, i, spun = 0;
    Tcl_Obj *done = NULL;

    npairs = objc / 2;
    if (npairs > AWAIT_MAX)
        npairs = AWAIT_MAX;
    deadline = now_us() + budget;
    {
        Tcl_Obj *sv = Tcl_GetVar2Ex(interp, "::tclnats::spin_us", NULL, TCL_GLOBAL_ONLY);
        Tcl_WideInt spin = 0;
        if (sv != NULL && Tcl_GetWideIntFromObj(NULL, sv, &spin) == TCL_OK && spin > 0) {
            if (natscodec_spin_should_try(&spin_state->spin)) {
                spin_until = now_us() + (spin < budget ? spin : budget);
                spun = 1;
            }
        }
    }
    for (i = 0; i < objc; i++)
        Tcl_IncrRefCount(objv[i]);
    if (check_first)
        done = Tcl_ObjGetVar2(interp, var, NULL, TCL_GLOBAL_ONLY);
    while (done == NULL) {
        struct pollfd pfd[AWAIT_MAX];
        int which[AWAIT_MAX];
        int n = 0, ready = -1, r;
        long long left = deadline - now_us();
        if (left <= 0)
            break;
        for (i = 0; i < npairs; i++) {
            ClientData handle;
            Tcl_Channel chan = Tcl_GetChannel(interp, Tcl_GetString(objv[2 * i]), NULL);
            if (chan == NULL || Tcl_GetChannelHandle(chan, TCL_READABLE, &handle) != TCL_OK)
                continue;
            if (Tcl_InputBuffered(chan) > 0) {
                ready = i;
                break;
            }
            pfd[n].fd = (int)(intptr_t)handle;
            pfd[n].events = POLLIN;
            pfd[n].revents = 0;
            which[n++] = i;
        }
        Tcl_ResetResult(interp);
        if (ready < 0) {
            struct timespec ts;
            if (n == 0)
                break;
            if (spin_until > 0 && now_us() < spin_until) {
                ts.tv_sec = 0;
                ts.tv_nsec = 0;
                r = ppoll(pfd, n, &ts, NULL);
                if (r == 0) {
                    /* the CPU to any thread that waits for it here: the
                     * server's (its garbage collector, a second goroutine),
                     * a responder in another thread of this process */
                    sched_yield();
                    continue;
                }
            } else {
                ts.tv_sec = left / 1000000;
                ts.tv_nsec = (left % 1000000) * 1000;
                r = ppoll(pfd, n, &ts, NULL);
            }
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            for (i = 0; i < n; i++) {
                if (pfd[i].revents) {
                    ready = which[i];
                    break;
                }
            }
            if (ready < 0)
                break;
        }
        if (Tcl_EvalObjEx(interp, objv[1 + 2 * ready], TCL_EVAL_GLOBAL) != TCL_OK) {
            Tcl_BackgroundException(interp, TCL_ERROR);
            break;
        }
        done = Tcl_ObjGetVar2(interp, var, NULL, TCL_GLOBAL_ONLY);
    }
    for (i = 0; i < objc; i++)
        Tcl_DecrRefCount(objv[i]);
    if (spun) {
        if (done != NULL && now_us() <= spin_until)
            natscodec_spin_caught(&spin_state->spin);
        else
            natscodec_spin_missed(&spin_state->spin);
    }
    return done;
}

static int
AwaitCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    Tcl_WideInt budget;
    int done;

    if (objc < 3 || (objc - 3) % 2 != 0) {
        Tcl_WrongNumArgs(interp, 1, objv, "varName budgetMicroseconds ?channel handler ...?");
        return TCL_ERROR;
    }
    if (Tcl_GetWideIntFromObj(interp, objv[2], &budget) != TCL_OK)
        return TCL_ERROR;
    done = await_var(interp, (SpinState *)cd, objv[1], budget, objc - 3, objv + 3, 1) != NULL;
    Tcl_SetObjResult(interp, Tcl_NewBooleanObj(done));
    return TCL_OK;
}

/*
 * ::tclnats::_wait rid sock
 *
 * The wait of a synchronous call outside a coroutine, run from a method of
 * its connection object (whose namespace is the current one): the driver
 * writes the call's result into results(rid) of that namespace, as
 * {0 value}, {1 errorCode message} or {2 nextRid} (the operation goes on
 * with another request: wait for that one).  Waits as _await does (the
 * sockets of ::tclnats::sockets, at most ::tclnats::await_us, when the
 * connection has a socket), then with [vwait]; takes the result out of the
 * variable and returns the value or throws the error.  When a call's reply
 * does not come within the budget, the next calls of that connection wait
 * in the event loop only, by the spin's back-off (natscodec.h, one
 * natscodec_spin per connection): one late reply changes nothing, after two
 * in a row 10 calls skip the pre-wait, then 20, 40 ... up to 1000 while
 * misses follow one another; a reply caught in time starts over.
 */
typedef natscodec_spin AwaitSkip;

static AwaitSkip *
await_skip(SpinState *st, Tcl_Namespace *ns)
{
    int isNew;
    Tcl_HashEntry *e;
    if (!st->skips_ready) {
        Tcl_InitHashTable(&st->skips, TCL_ONE_WORD_KEYS);
        st->skips_ready = 1;
    }
    e = Tcl_CreateHashEntry(&st->skips, (const char *)ns, &isNew);
    if (isNew) {
        AwaitSkip *a = (AwaitSkip *)ckalloc(sizeof(AwaitSkip));
        natscodec_spin_init(a);
        Tcl_SetHashValue(e, a);
    }
    return (AwaitSkip *)Tcl_GetHashValue(e);
}

/* the sockets and their readable handlers, [array get ::tclnats::sockets],
 * in *socks (held) when the code is TCL_OK */
static int
nats_sockets(Tcl_Interp *interp, Tcl_Obj **socks)
{
    Tcl_Obj *cmd[3];
    int code, n;

    cmd[0] = Tcl_NewStringObj("array", 5);
    cmd[1] = Tcl_NewStringObj("get", 3);
    cmd[2] = Tcl_NewStringObj("::tclnats::sockets", -1);
    for (n = 0; n < 3; n++)
        Tcl_IncrRefCount(cmd[n]);
    code = Tcl_EvalObjv(interp, 3, cmd, TCL_EVAL_GLOBAL);
    for (n = 0; n < 3; n++)
        Tcl_DecrRefCount(cmd[n]);
    if (code != TCL_OK)
        return code;
    *socks = Tcl_GetObjResult(interp);
    Tcl_IncrRefCount(*socks);
    Tcl_ResetResult(interp);
    return TCL_OK;
}

/* _wait's wait for var on the sockets, at most ::tclnats::await_us, unless
 * the back-off of the connection (namespace ns) skips it; *value: the
 * variable's value once it is set within that time */
static int
wait_on_sockets(Tcl_Interp *interp, SpinState *st, Tcl_Namespace *ns, Tcl_Obj *var, Tcl_Obj **value)
{
    AwaitSkip *a = await_skip(st, ns);
    Tcl_Obj *bv, *socks, **pairs;
    Tcl_WideInt budget = 0;
    int code, np;

    if (!natscodec_spin_should_try(a))
        return TCL_OK;
    bv = Tcl_GetVar2Ex(interp, "::tclnats::await_us", NULL, TCL_GLOBAL_ONLY);
    if (bv == NULL || Tcl_GetWideIntFromObj(NULL, bv, &budget) != TCL_OK || budget <= 0)
        return TCL_OK;
    code = nats_sockets(interp, &socks);
    if (code != TCL_OK)
        return code;
    if (Tcl_ListObjGetElements(NULL, socks, &np, &pairs) == TCL_OK) {
        *value = await_var(interp, st, var, budget, np - np % 2, pairs, 0);
        if (*value != NULL) {
            natscodec_spin_caught(a);
            st->caught++;
        } else {
            natscodec_spin_missed(a);
            st->missed++;
        }
    }
    Tcl_DecrRefCount(socks);
    return TCL_OK;
}

/* vwait, as nats::_coroVwait outside a coroutine, until var is set
 * (*value, NULL on entry unless it is set already) */
static int
vwait_var(Tcl_Interp *interp, Tcl_Obj *var, Tcl_Obj **value)
{
    while (*value == NULL) {
        Tcl_Obj *cmd[2];
        int code;
        cmd[0] = Tcl_NewStringObj("vwait", 5);
        cmd[1] = var;
        Tcl_IncrRefCount(cmd[0]);
        Tcl_IncrRefCount(var);
        code = Tcl_EvalObjv(interp, 2, cmd, TCL_EVAL_GLOBAL);
        Tcl_DecrRefCount(cmd[0]);
        Tcl_DecrRefCount(var);
        if (code != TCL_OK)
            return code;
        *value = Tcl_ObjGetVar2(interp, var, NULL, TCL_GLOBAL_ONLY);
    }
    return TCL_OK;
}

/* A call's result, taken out of its variable var: {0 value} returns the
 * value, {1 errorCode message} the error; {2 nextRid} puts nextRid in *rid
 * (the operation goes on with another request) and returns TCL_CONTINUE. */
static int
take_result(Tcl_Interp *interp, Tcl_Obj *var, Tcl_Obj *value, Tcl_Obj **rid)
{
    int code = TCL_OK, n, kind = -1;
    Tcl_Obj **items;

    Tcl_IncrRefCount(value);
    Tcl_UnsetVar2(interp, Tcl_GetString(var), NULL, TCL_GLOBAL_ONLY);
    Tcl_ResetResult(interp);
    if (Tcl_ListObjGetElements(interp, value, &n, &items) != TCL_OK) {
        Tcl_DecrRefCount(value);
        return TCL_ERROR;
    }
    if (n > 0)
        Tcl_GetIntFromObj(NULL, items[0], &kind);
    if (kind == 2 && n > 1) {
        Tcl_DecrRefCount(*rid);
        *rid = items[1];
        Tcl_IncrRefCount(*rid);
        Tcl_DecrRefCount(value);
        return TCL_CONTINUE;
    }
    if (kind == 0) {
        if (n > 1)
            Tcl_SetObjResult(interp, items[1]);
    } else {
        /* as ::tclnats::r: {1 errorCode message} */
        if (n > 1)
            Tcl_SetObjErrorCode(interp, items[1]);
        if (n > 2)
            Tcl_SetObjResult(interp, items[2]);
        code = TCL_ERROR;
    }
    Tcl_DecrRefCount(value);
    return code;
}

static int
WaitCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    SpinState *st = (SpinState *)cd;
    Tcl_Namespace *ns = Tcl_GetCurrentNamespace(interp);
    Tcl_Obj *rid, *var = NULL, *value;
    int code;

    if (objc != 3) {
        Tcl_WrongNumArgs(interp, 1, objv, "rid sock");
        return TCL_ERROR;
    }
    rid = objv[1];
    Tcl_IncrRefCount(rid);
    for (;;) {
        if (var != NULL)
            Tcl_DecrRefCount(var);
        var = Tcl_ObjPrintf("%s::results(%s)", ns->fullName, Tcl_GetString(rid));
        Tcl_IncrRefCount(var);
        value = Tcl_ObjGetVar2(interp, var, NULL, TCL_GLOBAL_ONLY);
        code = TCL_OK;
        if (value == NULL && Tcl_GetCharLength(objv[2]) > 0)
            code = wait_on_sockets(interp, st, ns, var, &value);
        if (code == TCL_OK)
            code = vwait_var(interp, var, &value);
        if (code != TCL_OK)
            break;
        code = take_result(interp, var, value, &rid);
        if (code != TCL_CONTINUE)
            break;
    }
    Tcl_DecrRefCount(rid);
    Tcl_DecrRefCount(var);
    return code;
}

/*
 * ::tclnats::_wait_stats ?namespace?
 *
 * For tests: without an argument, {caught missed}: the waits of _wait whose
 * result came within the budget on the sockets, and those that gave up to
 * the event loop, since the last call (which starts the counts again); with
 * a connection object's namespace, {skip misses} of its back-off; with
 * -spin, {caught missed skipped} of the busy-poll phase (await_var) since
 * the last such call: replies seen while spinning, spins that ran out, and
 * waits that did not spin (its back-off); the back-off starts over.
 */
static int
WaitStatsCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    SpinState *st = (SpinState *)cd;
    Tcl_Obj *out[2];
    if (objc > 2) {
        Tcl_WrongNumArgs(interp, 1, objv, "?namespace?");
        return TCL_ERROR;
    }
    if (objc == 2 && strcmp(Tcl_GetString(objv[1]), "-spin") == 0) {
        Tcl_Obj *sp[3];
        sp[0] = Tcl_NewWideIntObj(st->spin.caught);
        sp[1] = Tcl_NewWideIntObj(st->spin.missed);
        sp[2] = Tcl_NewWideIntObj(st->spin.skipped);
        natscodec_spin_init(&st->spin);
        Tcl_SetObjResult(interp, Tcl_NewListObj(3, sp));
        return TCL_OK;
    }
    if (objc == 2) {
        Tcl_Namespace *ns = Tcl_FindNamespace(interp, Tcl_GetString(objv[1]), NULL, TCL_LEAVE_ERR_MSG);
        AwaitSkip *a;
        if (ns == NULL)
            return TCL_ERROR;
        a = await_skip(st, ns);
        out[0] = Tcl_NewIntObj(a->skip);
        out[1] = Tcl_NewIntObj(a->misses);
    } else {
        out[0] = Tcl_NewWideIntObj(st->caught);
        out[1] = Tcl_NewWideIntObj(st->missed);
        st->caught = st->missed = 0;
    }
    Tcl_SetObjResult(interp, Tcl_NewListObj(2, out));
    return TCL_OK;
}

/* the waiting commands of a new interpreter, with their shared state */
void
wait_commands_create(Tcl_Interp *interp)
{
    SpinState *st = (SpinState *)ckalloc(sizeof(SpinState));
    st->refs = 3;
    st->caught = st->missed = 0;
    natscodec_spin_init(&st->spin);
    st->skips_ready = 0;
    Tcl_CreateObjCommand(interp, "::tclnats::_await", AwaitCmd, (ClientData)st, SpinStateFree);
    Tcl_CreateObjCommand(interp, "::tclnats::_wait", WaitCmd, (ClientData)st, SpinStateFree);
    Tcl_CreateObjCommand(interp, "::tclnats::_wait_stats", WaitStatsCmd, (ClientData)st, SpinStateFree);
}
