/*
 * tclnats_py._tclcross: the crossing between Tcl and Python, through the Tcl
 * C API directly.
 *
 * Two entries:
 *   - as a Python extension module: the type Interp wraps a Tcl_Interp* with
 *     the small interface tclnats_py.tclface.bridge drives (call, eval,
 *     createcommand, deletecommand, splitlist, getboolean, setvar, unsetvar),
 *     converting values the way tkinter does, so the bridge runs unchanged
 *     on an interpreter that tkinter created (Interp.from_address) and on one
 *     that loaded the package with Tcl's [load];
 *   - TclnatsCross_TclInit, called by the Tcl extension (tclload.c) from
 *     [load]: it starts CPython when the process has none (stock tclsh, wish,
 *     a C program that embeds Tcl) or joins the running one (tkinter), and
 *     installs the Tcl face into the loading interpreter.
 *
 * The GIL is held only while Python code runs: a Tcl command made here takes
 * it on entry and gives it back on return; a Python call into Tcl gives it
 * up for the duration.  Each Tcl thread that loads the package keeps one
 * Python thread state for its lifetime, released when the thread exits.
 * TclnatsCross_TclInit runs under one process-wide lock (start_lock), so
 * that Tcl threads whose first commands come at the same moment start
 * CPython once and install the bridge one after the other.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <tcl.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <sched.h>
#include <pthread.h>
#define NATSCODEC_API static
#include "natscodec.c"   /* the spin back-off of await_var */

#define TCLNATS_ASSOC "tclnats_py::interp"

static PyObject *TclError;             /* tclnats_py._tclcross.TclError */
static PyTypeObject InterpType;
static int embedded = 0;               /* 1: CPython was started by us */

/* Tcl object types, looked up once (NULL where this Tcl has no such type) */
static const Tcl_ObjType *t_bytearray, *t_boolean, *t_booleanString, *t_double,
    *t_int, *t_wideInt, *t_bignum, *t_list, *t_string;
static int types_ready = 0;

static void
init_types(void)
{
    if (types_ready)
        return;
    t_bytearray = Tcl_GetObjType("bytearray");
    t_boolean = Tcl_GetObjType("boolean");
    t_booleanString = Tcl_GetObjType("booleanString");
    t_double = Tcl_GetObjType("double");
    t_int = Tcl_GetObjType("int");
    t_wideInt = Tcl_GetObjType("wideInt");
    t_bignum = Tcl_GetObjType("bignum");
    t_list = Tcl_GetObjType("list");
    t_string = Tcl_GetObjType("string");
    types_ready = 1;
}

typedef struct {
    PyObject_HEAD
    Tcl_Interp *interp;
    Tcl_ThreadId thread;
    int deleted;
    PyObject *on_delete;   /* called (no arguments) when the interpreter goes */
} InterpObject;

/* ------------------------------------------------------------ conversions */

/* A Tcl string (Tcl's internal UTF-8: NUL as C0 80, characters beyond the
 * BMP as surrogate pairs) as a Python str.  The common case decodes
 * directly; anything else goes through Tcl's own UTF-16 view, so nothing is
 * lost. */
static PyObject *
str_from_obj(Tcl_Obj *obj)
{
    int len;
    const char *s;
    PyObject *r;

    if (obj->typePtr == t_bytearray && obj->bytes == NULL) {
        /* a pure byte array: each byte is the character of that code
         * (what its string form would say), without making that form */
        int n;
        unsigned char *b = Tcl_GetByteArrayFromObj(obj, &n);
        return PyUnicode_DecodeLatin1((const char *)b, n, NULL);
    }
    s = Tcl_GetStringFromObj(obj, &len);
    r = PyUnicode_DecodeUTF8(s, len, NULL);
    if (r != NULL)
        return r;
    PyErr_Clear();
    {
        int n;
        Tcl_UniChar *u = Tcl_GetUnicodeFromObj(obj, &n);
        int order = -1;  /* little endian: Tcl_UniChar is native (x86, arm) */
#if defined(WORDS_BIGENDIAN)
        order = 1;
#endif
        if (sizeof(Tcl_UniChar) == 2)
            return PyUnicode_DecodeUTF16((const char *)u, (Py_ssize_t)n * 2, "surrogatepass", &order);
        return PyUnicode_DecodeUTF32((const char *)u, (Py_ssize_t)n * 4, "surrogatepass", &order);
    }
}

static PyObject *tuple_of(Tcl_Interp *interp, Tcl_Obj **items, int n, int as_str);

/* A Tcl value as tkinter (wantobjects) gives it: bytes, bool, int, float,
 * tuple, else str. */
static PyObject *
from_obj(Tcl_Interp *interp, Tcl_Obj *obj)
{
    const Tcl_ObjType *t = obj->typePtr;

    if (t == NULL)
        return str_from_obj(obj);
    if (t == t_bytearray) {
        int n;
        unsigned char *b = Tcl_GetByteArrayFromObj(obj, &n);
        return PyBytes_FromStringAndSize((const char *)b, n);
    }
    if (t == t_boolean || (t_booleanString && t == t_booleanString)) {
        int v;
        if (Tcl_GetBooleanFromObj(NULL, obj, &v) == TCL_OK)
            return PyBool_FromLong(v);
    }
    if (t == t_int || (t_wideInt && t == t_wideInt)) {
        Tcl_WideInt w;
        if (Tcl_GetWideIntFromObj(NULL, obj, &w) == TCL_OK)
            return PyLong_FromLongLong((long long)w);
    }
    if (t_bignum && t == t_bignum) {
        PyObject *s = str_from_obj(obj);
        PyObject *r;
        if (s == NULL)
            return NULL;
        r = PyLong_FromUnicodeObject(s, 10);
        Py_DECREF(s);
        return r;
    }
    if (t == t_double) {
        double d;
        if (Tcl_GetDoubleFromObj(NULL, obj, &d) == TCL_OK)
            return PyFloat_FromDouble(d);
    }
    if (t == t_list) {
        int n;
        Tcl_Obj **items;
        if (Tcl_ListObjGetElements(NULL, obj, &n, &items) != TCL_OK)
            return str_from_obj(obj);
        return tuple_of(interp, items, n, 0);
    }
    return str_from_obj(obj);
}

/* Tcl list elements as a tuple: each converted by from_obj, or (as_str)
 * always as str */
static PyObject *
tuple_of(Tcl_Interp *interp, Tcl_Obj **items, int n, int as_str)
{
    int i;
    PyObject *tup = PyTuple_New(n);
    if (tup == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *v = as_str ? str_from_obj(items[i]) : from_obj(interp, items[i]);
        if (v == NULL) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, v);
    }
    return tup;
}

static Tcl_Obj *
str_to_obj(PyObject *s)
{
    Py_ssize_t n;
    const char *u;

    if (PyUnicode_IS_ASCII(s))
        return Tcl_NewStringObj((const char *)PyUnicode_DATA(s), (int)PyUnicode_GET_LENGTH(s));
    if (PyUnicode_KIND(s) != PyUnicode_4BYTE_KIND) {
        u = PyUnicode_AsUTF8AndSize(s, &n);
        if (u != NULL && memchr(u, 0, (size_t)n) == NULL)
            return Tcl_NewStringObj(u, (int)n);
        if (u == NULL)
            PyErr_Clear();   /* lone surrogates: the UTF-16 path keeps them */
    }
    {
        /* NUL or characters beyond the BMP: through UTF-16, as Tcl 8.6 keeps them */
        PyObject *b = PyUnicode_AsEncodedString(s, "utf-16-le", "surrogatepass");
        Tcl_Obj *o;
        if (b == NULL)
            return NULL;
        if (sizeof(Tcl_UniChar) == 2) {
            o = Tcl_NewUnicodeObj((const Tcl_UniChar *)PyBytes_AS_STRING(b),
                                  (int)(PyBytes_GET_SIZE(b) / 2));
        } else {
            o = Tcl_NewStringObj(PyUnicode_AsUTF8(s), -1);
        }
        Py_DECREF(b);
        return o;
    }
}

/* Any other value: its str(), as tkinter does */
static Tcl_Obj *
via_str(PyObject *v)
{
    PyObject *s = PyObject_Str(v);
    Tcl_Obj *o;
    if (s == NULL)
        return NULL;
    o = str_to_obj(s);
    Py_DECREF(s);
    return o;
}

/* A Python value as a Tcl value, as tkinter converts call arguments. */
static Tcl_Obj *
to_obj(PyObject *v)
{
    if (PyUnicode_CheckExact(v))
        return str_to_obj(v);
    if (PyBytes_Check(v))
        return Tcl_NewByteArrayObj((const unsigned char *)PyBytes_AS_STRING(v),
                                   (int)PyBytes_GET_SIZE(v));
    if (PyBool_Check(v))
        return Tcl_NewBooleanObj(v == Py_True);
    if (PyLong_CheckExact(v) || PyLong_Check(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        if (!overflow)
            return Tcl_NewWideIntObj((Tcl_WideInt)x);
        return via_str(v);   /* beyond 64 bits: Tcl reads it as a bignum */
    }
    if (PyFloat_Check(v))
        return Tcl_NewDoubleObj(PyFloat_AS_DOUBLE(v));
    if (PyTuple_Check(v) || PyList_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v), i;
        PyObject **items = PySequence_Fast_ITEMS(v);
        Tcl_Obj *list = Tcl_NewListObj(0, NULL);
        for (i = 0; i < n; i++) {
            Tcl_Obj *o = to_obj(items[i]);
            if (o == NULL) {
                Tcl_DecrRefCount(list);
                return NULL;
            }
            Tcl_ListObjAppendElement(NULL, list, o);
        }
        return list;
    }
    if (PyUnicode_Check(v))
        return str_to_obj(v);
    if (PyByteArray_Check(v))
        return Tcl_NewByteArrayObj((const unsigned char *)PyByteArray_AS_STRING(v),
                                   (int)PyByteArray_GET_SIZE(v));
    if (PyObject_CheckBuffer(v)) {
        /* a memoryview or another buffer: its bytes, read in place */
        Py_buffer view;
        Tcl_Obj *o;
        if (PyObject_GetBuffer(v, &view, PyBUF_SIMPLE) != 0)
            return NULL;
        o = Tcl_NewByteArrayObj((const unsigned char *)view.buf, (int)view.len);
        PyBuffer_Release(&view);
        return o;
    }
    return via_str(v);
}

/* ------------------------------------------------------------ waiting for a reply */

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
 * in the event loop only: 10, then 20, 40 ... up to 1000 calls while misses
 * follow one another; a reply caught in time starts over (per connection).
 */
typedef struct {
    int skip;
    int misses;
} AwaitSkip;

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
        a->skip = 0;
        a->misses = 0;
        Tcl_SetHashValue(e, a);
    }
    return (AwaitSkip *)Tcl_GetHashValue(e);
}

static int
WaitCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    SpinState *st = (SpinState *)cd;
    Tcl_Namespace *ns = Tcl_GetCurrentNamespace(interp);
    Tcl_Obj *rid, *var = NULL, *value;
    int code = TCL_OK, n;
    Tcl_Obj **items;

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
        if (value == NULL && Tcl_GetCharLength(objv[2]) > 0) {
            AwaitSkip *a = await_skip(st, ns);
            if (a->skip > 0) {
                a->skip--;
            } else {
                Tcl_Obj *bv = Tcl_GetVar2Ex(interp, "::tclnats::await_us", NULL, TCL_GLOBAL_ONLY);
                Tcl_WideInt budget = 0;
                if (bv != NULL && Tcl_GetWideIntFromObj(NULL, bv, &budget) == TCL_OK && budget > 0) {
                    /* the sockets and their readable handlers: [array get ::tclnats::sockets] */
                    Tcl_Obj *cmd[3], *socks, **pairs;
                    int np;
                    cmd[0] = Tcl_NewStringObj("array", 5);
                    cmd[1] = Tcl_NewStringObj("get", 3);
                    cmd[2] = Tcl_NewStringObj("::tclnats::sockets", -1);
                    for (n = 0; n < 3; n++)
                        Tcl_IncrRefCount(cmd[n]);
                    code = Tcl_EvalObjv(interp, 3, cmd, TCL_EVAL_GLOBAL);
                    for (n = 0; n < 3; n++)
                        Tcl_DecrRefCount(cmd[n]);
                    if (code != TCL_OK)
                        goto done;
                    socks = Tcl_GetObjResult(interp);
                    Tcl_IncrRefCount(socks);
                    Tcl_ResetResult(interp);
                    if (Tcl_ListObjGetElements(NULL, socks, &np, &pairs) == TCL_OK) {
                        value = await_var(interp, st, var, budget, np - np % 2, pairs, 0);
                        if (value != NULL) {
                            a->misses = 0;
                            st->caught++;
                        } else {
                            int m = a->misses;
                            a->skip = (10 << m) < 1000 ? (10 << m) : 1000;
                            a->misses = m < 7 ? m + 1 : 7;
                            st->missed++;
                        }
                    }
                    Tcl_DecrRefCount(socks);
                }
            }
        }
        while (value == NULL) {
            /* vwait, as nats::_coroVwait outside a coroutine */
            Tcl_Obj *cmd[2];
            cmd[0] = Tcl_NewStringObj("vwait", 5);
            cmd[1] = var;
            Tcl_IncrRefCount(cmd[0]);
            Tcl_IncrRefCount(var);
            code = Tcl_EvalObjv(interp, 2, cmd, TCL_EVAL_GLOBAL);
            Tcl_DecrRefCount(cmd[0]);
            Tcl_DecrRefCount(var);
            if (code != TCL_OK)
                goto done;
            value = Tcl_ObjGetVar2(interp, var, NULL, TCL_GLOBAL_ONLY);
        }
        /* take it out of the variable */
        Tcl_IncrRefCount(value);
        Tcl_UnsetVar2(interp, Tcl_GetString(var), NULL, TCL_GLOBAL_ONLY);
        Tcl_ResetResult(interp);
        if (Tcl_ListObjGetElements(interp, value, &n, &items) != TCL_OK) {
            Tcl_DecrRefCount(value);
            code = TCL_ERROR;
            goto done;
        }
        {
            int kind = -1;
            if (n > 0)
                Tcl_GetIntFromObj(NULL, items[0], &kind);
            if (kind == 2 && n > 1) {
                /* the operation goes on with another request */
                Tcl_DecrRefCount(rid);
                rid = items[1];
                Tcl_IncrRefCount(rid);
                Tcl_DecrRefCount(value);
                continue;
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
        }
        Tcl_DecrRefCount(value);
        break;
    }
done:
    Tcl_DecrRefCount(rid);
    if (var != NULL)
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

/*
 * ::tclnats::r reply
 *
 * Unpacks the reply of a Python command of the bridge: {0 result} returns
 * the result, {1 errorCode message} throws (the proc it replaces, without
 * a proc frame per call).
 */
static int
ReplyCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    int n, kind = -1;
    Tcl_Obj **items;

    if (objc != 2) {
        Tcl_WrongNumArgs(interp, 1, objv, "reply");
        return TCL_ERROR;
    }
    if (Tcl_ListObjGetElements(interp, objv[1], &n, &items) != TCL_OK)
        return TCL_ERROR;
    if (n > 0 && Tcl_GetIntFromObj(NULL, items[0], &kind) == TCL_OK && kind == 0) {
        if (n > 1)
            Tcl_SetObjResult(interp, items[1]);
        return TCL_OK;
    }
    if (n > 1)
        Tcl_SetObjErrorCode(interp, items[1]);
    if (n > 2)
        Tcl_SetObjResult(interp, items[2]);
    return TCL_ERROR;
}

/* ------------------------------------------------------------ the publish and read fast paths */

/* tclfast.c: ::tclnats::_fastpub_new, the C method publish and the reader */
int TclnatsFast_Init(Tcl_Interp *interp);
void TclnatsFast_ReportError(Tcl_Interp *interp, int code);

/* ------------------------------------------------------------ running the deliveries of a read */

/*
 * ::tclnats::_run_deliveries items
 *
 * items: what a connection's reader returned for one read, five words per
 * delivery: kind callback a b c.  Each runs at level #0 as
 * `uplevel #0 [list {*}$callback $a $b]` (kind 2) or `... $a $b $c` (any
 * other kind), in order; a delivery that does not return normally is
 * reported as `after 0 [list return -options $opts $result]` does (a
 * background error once the current event is done), and the next ones run.
 * The same as the Tcl loop it replaces in ::nats::_on_readable, without a
 * list, an uplevel and a catch per message.
 */
#define DELIVERY_WORDS 16

static int
RunDeliveriesCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    int n, i, j;
    Tcl_Obj **items, **held;

    if (objc != 2) {
        Tcl_WrongNumArgs(interp, 1, objv, "items");
        return TCL_ERROR;
    }
    if (Tcl_ListObjGetElements(interp, objv[1], &n, &items) != TCL_OK)
        return TCL_ERROR;
    if (n == 0)
        return TCL_OK;
    /* the callbacks must not see these go: hold every word */
    held = (Tcl_Obj **)ckalloc(sizeof(Tcl_Obj *) * (size_t)n);
    for (i = 0; i < n; i++) {
        held[i] = items[i];
        Tcl_IncrRefCount(held[i]);
    }
    for (i = 0; i + 4 < n; i += 5) {
        int kind = 0, nw, m, code;
        Tcl_Obj **words;
        Tcl_Obj *small[DELIVERY_WORDS], **argv = small;
        if (Tcl_GetIntFromObj(NULL, held[i], &kind) != TCL_OK)
            kind = 0;
        if (Tcl_ListObjGetElements(interp, held[i + 1], &nw, &words) != TCL_OK) {
            Tcl_BackgroundException(interp, TCL_ERROR);
            Tcl_ResetResult(interp);
            continue;
        }
        m = nw + (kind == 2 ? 2 : 3);
        if (m > DELIVERY_WORDS)
            argv = (Tcl_Obj **)ckalloc(sizeof(Tcl_Obj *) * (size_t)m);
        for (j = 0; j < nw; j++)
            argv[j] = words[j];
        argv[nw] = held[i + 2];
        argv[nw + 1] = held[i + 3];
        if (kind != 2)
            argv[nw + 2] = held[i + 4];
        for (j = 0; j < m; j++)
            Tcl_IncrRefCount(argv[j]);
        code = Tcl_EvalObjv(interp, m, argv, TCL_EVAL_GLOBAL);
        if (code != TCL_OK)
            TclnatsFast_ReportError(interp, code);   /* after 0 [list return -options $opts $result] */
        for (j = 0; j < m; j++)
            Tcl_DecrRefCount(argv[j]);
        if (argv != small)
            ckfree((char *)argv);
        Tcl_ResetResult(interp);
    }
    for (i = 0; i < n; i++)
        Tcl_DecrRefCount(held[i]);
    ckfree((char *)held);
    return TCL_OK;
}

/* ------------------------------------------------------------ the Interp type */

static int
usable(InterpObject *self)
{
    if (self->deleted || self->interp == NULL) {
        PyErr_SetString(TclError, "the Tcl interpreter has been deleted");
        return 0;
    }
    if (Tcl_GetCurrentThread() != self->thread) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a Tcl interpreter can only be used from the thread that created it");
        return 0;
    }
    return 1;
}

static PyObject *
tcl_error(Tcl_Interp *interp)
{
    PyObject *msg = from_obj(interp, Tcl_GetObjResult(interp));
    if (msg != NULL && !PyUnicode_Check(msg)) {
        Py_SETREF(msg, PyObject_Str(msg));
    }
    if (msg != NULL) {
        PyErr_SetObject(TclError, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

static PyObject *
Interp_call(InterpObject *self, PyObject *args)
{
    Tcl_Obj *small[16];
    Tcl_Obj **objv = small;
    Py_ssize_t n, i;
    int code;
    PyObject *res = NULL;
    Tcl_Interp *interp = self->interp;

    if (!usable(self))
        return NULL;
    /* tkinter: call(("cmd", "arg")) is call("cmd", "arg") */
    if (PyTuple_GET_SIZE(args) == 1 && PyTuple_Check(PyTuple_GET_ITEM(args, 0)))
        args = PyTuple_GET_ITEM(args, 0);
    n = PyTuple_GET_SIZE(args);
    if (n == 0) {
        PyErr_SetString(PyExc_TypeError, "call() needs a command");
        return NULL;
    }
    if (n > 16) {
        objv = (Tcl_Obj **)PyMem_Malloc(sizeof(Tcl_Obj *) * (size_t)n);
        if (objv == NULL)
            return PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        objv[i] = to_obj(PyTuple_GET_ITEM(args, i));
        if (objv[i] == NULL) {
            while (--i >= 0)
                Tcl_DecrRefCount(objv[i]);
            goto done;
        }
        Tcl_IncrRefCount(objv[i]);
    }
    /* no Tcl_Preserve: an interpreter cannot delete itself while it
     * evaluates, and its deletion by another one is reported through
     * interp_deleted before Tcl frees it */
    Py_BEGIN_ALLOW_THREADS
    code = Tcl_EvalObjv(interp, (int)n, objv, TCL_EVAL_DIRECT | TCL_EVAL_GLOBAL);
    Py_END_ALLOW_THREADS
    if (self->deleted)
        PyErr_SetString(TclError, "the Tcl interpreter was deleted during the call");
    else if (code == TCL_ERROR)
        tcl_error(interp);
    else
        res = from_obj(interp, Tcl_GetObjResult(interp));
    for (i = 0; i < n; i++)
        Tcl_DecrRefCount(objv[i]);
done:
    if (objv != small)
        PyMem_Free(objv);
    return res;
}

static PyObject *
Interp_eval(InterpObject *self, PyObject *arg)
{
    Py_ssize_t n;
    const char *s;
    int code;
    PyObject *res = NULL;
    Tcl_Obj *script;
    Tcl_Interp *interp = self->interp;

    if (!usable(self))
        return NULL;
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "eval() takes a str");
        return NULL;
    }
    s = PyUnicode_AsUTF8AndSize(arg, &n);
    if (s == NULL)
        return NULL;
    script = Tcl_NewStringObj(s, (int)n);
    Tcl_IncrRefCount(script);
    Tcl_Preserve(interp);
    Py_BEGIN_ALLOW_THREADS
    code = Tcl_EvalObjEx(interp, script, TCL_EVAL_GLOBAL);
    Py_END_ALLOW_THREADS
    if (code == TCL_ERROR)
        tcl_error(interp);
    else
        res = str_from_obj(Tcl_GetObjResult(interp));
    Tcl_Release(interp);
    Tcl_DecrRefCount(script);
    return res;
}

/* A Tcl command that calls a Python callable.  Arguments arrive as str (as
 * with tkinter); the return value is converted with to_obj.  The GIL is taken
 * for the call only.  An exception becomes a Tcl error with its message, and
 * its traceback is written to stderr: nothing is dropped. */
typedef struct {
    PyObject *func;
    Tcl_Interp *interp;
} CmdData;

static int
PyCmd(ClientData cd, Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
{
    CmdData *data = (CmdData *)cd;
    PyGILState_STATE st;
    PyObject *args = NULL, *res = NULL;
    int i, code = TCL_OK;
    st = PyGILState_Ensure();

    args = PyTuple_New(objc - 1);
    if (args == NULL)
        goto error;
    for (i = 1; i < objc; i++) {
        PyObject *s = str_from_obj(objv[i]);
        if (s == NULL)
            goto error;
        PyTuple_SET_ITEM(args, i - 1, s);
    }
    res = PyObject_Call(data->func, args, NULL);
    if (res == NULL)
        goto error;
    if (res != Py_None) {
        Tcl_Obj *o = to_obj(res);
        if (o == NULL)
            goto error;
        Tcl_SetObjResult(interp, o);
    }
    goto out;
error:
    {
        PyObject *type, *value, *tb, *msg;
        const char *text = NULL;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        msg = value ? PyObject_Str(value) : NULL;
        if (msg != NULL)
            text = PyUnicode_AsUTF8(msg);
        if (text == NULL) {
            PyErr_Clear();
            text = "(no message)";
        }
        code = TCL_ERROR;
        if (type != NULL && PyErr_GivenExceptionMatches(type, TclError)) {
            /* the command's own Tcl error (a usage error, say): as it is */
            Tcl_SetObjResult(interp, Tcl_NewStringObj(text, -1));
            if (strncmp(text, "wrong # args", 12) == 0)
                Tcl_SetErrorCode(interp, "TCL", "WRONGARGS", NULL);
            Py_XDECREF(msg);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            goto out;
        }
        Tcl_SetObjResult(interp, Tcl_ObjPrintf("Python error in %s: %s: %s",
                                               Tcl_GetString(objv[0]),
                                               type ? ((PyTypeObject *)type)->tp_name : "?",
                                               text));
        Tcl_SetErrorCode(interp, "PYTHON", type ? ((PyTypeObject *)type)->tp_name : "?", NULL);
        Py_XDECREF(msg);
        PyErr_Restore(type, value, tb);
        PyErr_WriteUnraisable(data->func);
    }
out:
    Py_XDECREF(args);
    Py_XDECREF(res);
    PyGILState_Release(st);
    return code;
}

static void
PyCmdDelete(ClientData cd)
{
    CmdData *data = (CmdData *)cd;
    PyGILState_STATE st;
    if (!Py_IsInitialized())
        return;
    st = PyGILState_Ensure();
    Py_XDECREF(data->func);
    PyMem_Free(data);
    PyGILState_Release(st);
}

static PyObject *
Interp_createcommand(InterpObject *self, PyObject *args)
{
    const char *name;
    PyObject *func;
    CmdData *data;

    if (!PyArg_ParseTuple(args, "sO:createcommand", &name, &func))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "command not callable");
        return NULL;
    }
    if (!usable(self))
        return NULL;
    data = (CmdData *)PyMem_Malloc(sizeof(CmdData));
    if (data == NULL)
        return PyErr_NoMemory();
    Py_INCREF(func);
    data->func = func;
    data->interp = self->interp;
    if (Tcl_CreateObjCommand(self->interp, name, PyCmd, data, PyCmdDelete) == NULL) {
        Py_DECREF(func);
        PyMem_Free(data);
        return tcl_error(self->interp);
    }
    Py_RETURN_NONE;
}

static PyObject *
Interp_deletecommand(InterpObject *self, PyObject *args)
{
    const char *name;
    int r;
    if (!PyArg_ParseTuple(args, "s:deletecommand", &name))
        return NULL;
    if (!usable(self))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    r = Tcl_DeleteCommand(self->interp, name);
    Py_END_ALLOW_THREADS
    if (r != 0) {
        PyErr_SetString(TclError, "can't delete Tcl command");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
Interp_splitlist(InterpObject *self, PyObject *arg)
{
    Tcl_Obj *o;
    int n;
    Tcl_Obj **items;
    PyObject *tup = NULL;

    if (PyTuple_Check(arg)) {
        Py_INCREF(arg);
        return arg;
    }
    if (PyList_Check(arg))
        return PyList_AsTuple(arg);
    if (!usable(self))
        return NULL;
    o = to_obj(arg);
    if (o == NULL)
        return NULL;
    Tcl_IncrRefCount(o);
    if (Tcl_ListObjGetElements(self->interp, o, &n, &items) != TCL_OK) {
        tcl_error(self->interp);
        goto out;
    }
    tup = tuple_of(self->interp, items, n, 1);
out:
    Tcl_DecrRefCount(o);
    return tup;
}

static PyObject *
Interp_getboolean(InterpObject *self, PyObject *arg)
{
    Tcl_Obj *o;
    int v, r;
    if (PyBool_Check(arg) || PyLong_Check(arg))
        return PyBool_FromLong(PyObject_IsTrue(arg));
    if (!usable(self))
        return NULL;
    o = to_obj(arg);
    if (o == NULL)
        return NULL;
    Tcl_IncrRefCount(o);
    r = Tcl_GetBooleanFromObj(self->interp, o, &v);
    Tcl_DecrRefCount(o);
    if (r != TCL_OK)
        return tcl_error(self->interp);
    return PyBool_FromLong(v);
}

/* setvar(name, value): a global (or namespace-qualified) variable, array
 * elements as name(key); traces on it run */
static PyObject *
Interp_setvar(InterpObject *self, PyObject *args)
{
    PyObject *name, *value;
    Tcl_Obj *n, *v, *r;
    if (!PyArg_ParseTuple(args, "UO:setvar", &name, &value))
        return NULL;
    if (!usable(self))
        return NULL;
    n = str_to_obj(name);
    if (n == NULL)
        return NULL;
    Tcl_IncrRefCount(n);
    v = to_obj(value);
    if (v == NULL) {
        Tcl_DecrRefCount(n);
        return NULL;
    }
    Tcl_IncrRefCount(v);
    Py_BEGIN_ALLOW_THREADS
    r = Tcl_ObjSetVar2(self->interp, n, NULL, v, TCL_GLOBAL_ONLY | TCL_LEAVE_ERR_MSG);
    Py_END_ALLOW_THREADS
    Tcl_DecrRefCount(n);
    Tcl_DecrRefCount(v);
    if (r == NULL)
        return tcl_error(self->interp);
    Py_RETURN_NONE;
}

static PyObject *
Interp_interpaddr(InterpObject *self, PyObject *unused)
{
    return PyLong_FromVoidPtr(self->interp);
}

static PyObject *
Interp_deleted(InterpObject *self, PyObject *unused)
{
    return PyBool_FromLong(self->deleted);
}

static void
interp_deleted(ClientData cd, Tcl_Interp *interp)
{
    InterpObject *self = (InterpObject *)cd;
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject *cb = self->on_delete;
    self->deleted = 1;
    self->on_delete = NULL;
    if (cb != NULL) {
        PyObject *r = PyObject_CallNoArgs(cb);
        if (r == NULL)
            PyErr_WriteUnraisable(cb);
        Py_XDECREF(r);
        Py_DECREF(cb);
    }
    self->interp = NULL;
    Py_DECREF(self);   /* the reference the interpreter held */
    PyGILState_Release(st);
}

/* The one Interp object of a Tcl interpreter (made on first use). */
static InterpObject *
interp_object(Tcl_Interp *interp)
{
    InterpObject *self = (InterpObject *)Tcl_GetAssocData(interp, TCLNATS_ASSOC, NULL);
    if (self != NULL && !self->deleted) {
        Py_INCREF(self);
        return self;
    }
    init_types();
    self = PyObject_New(InterpObject, &InterpType);
    if (self == NULL)
        return NULL;
    self->interp = interp;
    self->thread = Tcl_GetCurrentThread();
    self->deleted = 0;
    self->on_delete = NULL;
    Py_INCREF(self);   /* held by the interpreter until it is deleted */
    Tcl_SetAssocData(interp, TCLNATS_ASSOC, NULL, self);
    Tcl_CallWhenDeleted(interp, interp_deleted, self);
    {
        SpinState *st = (SpinState *)ckalloc(sizeof(SpinState));
        st->refs = 3;
        st->caught = st->missed = 0;
        natscodec_spin_init(&st->spin);
        st->skips_ready = 0;
        Tcl_CreateObjCommand(interp, "::tclnats::_await", AwaitCmd, (ClientData)st, SpinStateFree);
        Tcl_CreateObjCommand(interp, "::tclnats::_wait", WaitCmd, (ClientData)st, SpinStateFree);
        Tcl_CreateObjCommand(interp, "::tclnats::_wait_stats", WaitStatsCmd, (ClientData)st, SpinStateFree);
        Tcl_CreateObjCommand(interp, "::tclnats::r", ReplyCmd, NULL, NULL);
        Tcl_CreateObjCommand(interp, "::tclnats::_run_deliveries", RunDeliveriesCmd, NULL, NULL);
        if (TclnatsFast_Init(interp) != TCL_OK)
            Tcl_ResetResult(interp);   /* no TclOO stubs: the Tcl methods serve */
    }
    return self;
}

static PyObject *
Interp_from_address(PyObject *cls, PyObject *arg)
{
    Tcl_Interp *interp = (Tcl_Interp *)PyLong_AsVoidPtr(arg);
    if (interp == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "no interpreter at address 0");
        return NULL;
    }
    if (tclStubsPtr == NULL && Tcl_InitStubs(interp, "8.6", 0) == NULL) {
        PyErr_SetString(TclError, "tclnats_py needs Tcl 8.6");
        return NULL;
    }
    return (PyObject *)interp_object(interp);
}

static PyObject *
Interp_set_on_delete(InterpObject *self, PyObject *cb)
{
    Py_XSETREF(self->on_delete, cb == Py_None ? NULL : Py_NewRef(cb));
    Py_RETURN_NONE;
}

static void
Interp_dealloc(InterpObject *self)
{
    Py_XDECREF(self->on_delete);
    PyObject_Free(self);
}

/* ------------------------------------------------------------ channel I/O of the bridge */

/*
 * A connection's writes to its socket channel, through Tcl's
 * channel API: the same bytes as [puts -nonewline] and [flush] (the
 * channel's stacked transforms and TLS take part as with those), without a
 * command evaluated each time and without a Tcl object in between.
 *
 *   chan_write(name, data) -> bytes left in the channel's output buffers
 *                             ([puts -nonewline] then [chan pending output])
 *   chan_flush(name)       -> the same after a flush (non-blocking: what the
 *                             kernel does not take now stays buffered)
 *
 * A failure raises TclError with the message those commands give (error
 * writing "sock5": broken pipe) and the POSIX name of the error as its
 * attribute posix (EPIPE).
 */
static Tcl_Channel
io_channel(InterpObject *self, const char *name, int want)
{
    int mode = 0;
    Tcl_Channel chan;
    if (!usable(self))
        return NULL;
    chan = Tcl_GetChannel(self->interp, name, &mode);
    if (chan == NULL) {
        tcl_error(self->interp);
        return NULL;
    }
    if (!(mode & want)) {
        PyErr_Format(TclError, "channel \"%s\" wasn't opened for %s", name,
                     want == TCL_READABLE ? "reading" : "writing");
        return NULL;
    }
    return chan;
}

static PyObject *
io_error(const char *what, const char *name, int err)
{
    PyObject *msg, *exc, *posix;
    Tcl_SetErrno(err);
    msg = PyUnicode_FromFormat("error %s \"%s\": %s", what, name, Tcl_ErrnoMsg(err));
    if (msg == NULL)
        return NULL;
    exc = PyObject_CallOneArg(TclError, msg);
    Py_DECREF(msg);
    if (exc == NULL)
        return NULL;
    posix = PyUnicode_FromString(Tcl_ErrnoId());
    if (posix == NULL || PyObject_SetAttrString(exc, "posix", posix) < 0) {
        Py_XDECREF(posix);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(posix);
    PyErr_SetObject(TclError, exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *
Interp_chan_write(InterpObject *self, PyObject *args)
{
    const char *name;
    Py_buffer data;
    Tcl_Channel chan;
    int n, err = 0, pending = 0;

    if (!PyArg_ParseTuple(args, "sy*:chan_write", &name, &data))
        return NULL;
    chan = io_channel(self, name, TCL_WRITABLE);
    if (chan == NULL || data.len > INT_MAX) {
        if (chan != NULL)
            PyErr_SetString(PyExc_OverflowError, "chan_write: too many bytes at once");
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    n = data.len ? Tcl_Write(chan, (const char *)data.buf, (int)data.len) : 0;
    if (n < 0)
        err = Tcl_GetErrno();
    else
        pending = Tcl_OutputBuffered(chan);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (n < 0)
        return io_error("writing", name, err);
    return PyLong_FromLong(pending);
}

static PyObject *
Interp_chan_flush(InterpObject *self, PyObject *args)
{
    const char *name;
    Tcl_Channel chan;
    int r, err = 0, pending = 0;

    if (!PyArg_ParseTuple(args, "s:chan_flush", &name))
        return NULL;
    chan = io_channel(self, name, TCL_WRITABLE);
    if (chan == NULL)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    r = Tcl_Flush(chan);
    if (r != TCL_OK)
        err = Tcl_GetErrno();
    else
        pending = Tcl_OutputBuffered(chan);
    Py_END_ALLOW_THREADS
    if (r != TCL_OK)
        return io_error("flushing", name, err);
    return PyLong_FromLong(pending);
}

static PyMethodDef Interp_methods[] = {
    {"call", (PyCFunction)Interp_call, METH_VARARGS, "call(cmd, *args): run a Tcl command, tkinter's conversions"},
    {"eval", (PyCFunction)Interp_eval, METH_O, "eval(script) -> str"},
    {"createcommand", (PyCFunction)Interp_createcommand, METH_VARARGS, "createcommand(name, func)"},
    {"deletecommand", (PyCFunction)Interp_deletecommand, METH_VARARGS, "deletecommand(name)"},
    {"splitlist", (PyCFunction)Interp_splitlist, METH_O, "splitlist(value) -> tuple of str"},
    {"getboolean", (PyCFunction)Interp_getboolean, METH_O, "getboolean(value) -> bool"},
    {"setvar", (PyCFunction)Interp_setvar, METH_VARARGS, "setvar(name, value)"},
    {"chan_write", (PyCFunction)Interp_chan_write, METH_VARARGS,
     "chan_write(channel, data) -> bytes left in its output buffers"},
    {"chan_flush", (PyCFunction)Interp_chan_flush, METH_VARARGS,
     "chan_flush(channel) -> bytes left in its output buffers"},
    {"interpaddr", (PyCFunction)Interp_interpaddr, METH_NOARGS, "address of the Tcl_Interp"},
    {"deleted", (PyCFunction)Interp_deleted, METH_NOARGS, "True once Tcl deleted the interpreter"},
    {"set_on_delete", (PyCFunction)Interp_set_on_delete, METH_O, "callable run when the interpreter is deleted"},
    {"from_address", (PyCFunction)Interp_from_address, METH_O | METH_CLASS,
     "the Interp of the Tcl_Interp at an address (tkinter's interpaddr())"},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject InterpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._tclcross.Interp",
    .tp_basicsize = sizeof(InterpObject),
    .tp_dealloc = (destructor)Interp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A Tcl interpreter, driven through the Tcl C API.",
    .tp_methods = Interp_methods,
};

/* ------------------------------------------------------------ module */

static PyObject *
mod_embedded(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(embedded);
}

static PyObject *
mod_noop(PyObject *m, PyObject *args)
{
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"embedded", mod_embedded, METH_NOARGS, "True when CPython was started by Tcl's [load]"},
    {"noop", mod_noop, METH_VARARGS, "does nothing (crossing cost measurements)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "tclnats_py._tclcross",
    "The crossing between Tcl and Python through the Tcl C API.", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__tclcross(void)
{
    PyObject *m;
    if (PyType_Ready(&InterpType) < 0)
        return NULL;
    m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    if (TclError == NULL) {
        TclError = PyErr_NewExceptionWithDoc("tclnats_py._tclcross.TclError",
                                             "An error reported by Tcl.", NULL, NULL);
        if (TclError == NULL)
            return NULL;
    }
    Py_INCREF(TclError);
    PyModule_AddObject(m, "TclError", TclError);
    Py_INCREF(&InterpType);
    PyModule_AddObject(m, "Interp", (PyObject *)&InterpType);
    return m;
}

/* ------------------------------------------------------------ from Tcl's [load] */

typedef struct {
    int pinned;              /* this thread keeps a Python thread state */
    PyThreadState *saved;
} ThreadData;
static Tcl_ThreadDataKey thread_key;

static void
thread_exit(ClientData unused)
{
    ThreadData *td = (ThreadData *)Tcl_GetThreadData(&thread_key, sizeof(ThreadData));
    if (!td->pinned || !Py_IsInitialized())
        return;
    td->pinned = 0;
    /* take the GIL with this thread's state, then drop that state */
    PyEval_RestoreThread(td->saved);
    PyGILState_Release(PyGILState_UNLOCKED);
}

static void
tcl_exit(ClientData unused)
{
    /* Tcl's [exit]: flush what Python code wrote and run Python's atexit
     * functions; the process ends right after, so CPython is not finalised */
    PyGILState_STATE st;
    if (!Py_IsInitialized())
        return;
    st = PyGILState_Ensure();
    if (PyRun_SimpleString(
            "import atexit, sys\n"
            "atexit._run_exitfuncs()\n"
            "for _f in (sys.stdout, sys.stderr):\n"
            "    try:\n"
            "        _f and _f.flush()\n"
            "    except Exception as _e:\n"
            "        pass\n") != 0)
        PyErr_Clear();
    PyGILState_Release(st);
}

static int
start_python(Tcl_Interp *interp, const char *program)
{
    PyConfig config;
    PyStatus status;

    PyConfig_InitIsolatedConfig(&config);
    /* no site: the Tcl face needs the folder that holds tclnats_py and the
     * install's own site-packages (its dependencies, e.g. nkeys), which
     * TclnatsCross_TclInit puts on sys.path; site's .pth files (editable
     * finders, certificate hooks) would cost tens of ms and MB at each
     * start.  TCLNATS_PYTHON_SITE=1 brings site back for whoever needs it. */
    {
        const char *env = getenv("TCLNATS_PYTHON_SITE");
        config.site_import = (env != NULL && strcmp(env, "1") == 0);
    }
    config.install_signal_handlers = 0;   /* signals stay the host's */
    config.parse_argv = 0;
    config.buffered_stdio = 1;
    if (program != NULL && *program) {
        status = PyConfig_SetBytesString(&config, &config.program_name, program);
        if (PyStatus_Exception(status))
            goto fail;
    }
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status))
        goto fail;
    PyConfig_Clear(&config);
    embedded = 1;
    Tcl_CreateExitHandler(tcl_exit, NULL);
    PyEval_SaveThread();   /* the GIL is taken per crossing from now on */
    return TCL_OK;
fail:
    PyConfig_Clear(&config);
    Tcl_SetObjResult(interp, Tcl_ObjPrintf(
        "tclnats_py: could not start Python (%s%s%s); reinstall tclnats_py with the "
        "Python you want to serve Tcl (python3 -m pip install tclnats_py)",
        status.func ? status.func : "", status.func ? ": " : "",
        status.err_msg ? status.err_msg : "unknown error"));
    Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
    return TCL_ERROR;
}

/* the Python exception as the interpreter's error, with its traceback */
static int
python_failed(Tcl_Interp *interp, const char *what)
{
    PyObject *type, *value, *tb, *tbmod, *lines, *text = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    tbmod = PyImport_ImportModule("traceback");
    if (tbmod != NULL) {
        lines = PyObject_CallMethod(tbmod, "format_exception", "OOO",
                                    type ? type : Py_None, value ? value : Py_None, tb ? tb : Py_None);
        if (lines != NULL) {
            PyObject *sep = PyUnicode_FromString("");
            text = PyUnicode_Join(sep, lines);
            Py_DECREF(sep);
            Py_DECREF(lines);
        }
        Py_DECREF(tbmod);
    }
    if (text == NULL)
        PyErr_Clear();
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("tclnats_py: %s: %s", what,
                                           text ? PyUnicode_AsUTF8(text) : "(no details)"));
    Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return TCL_ERROR;
}

/*
 * One lock for the whole process around TclnatsCross_TclInit: every Tcl
 * interpreter of every thread (main, Thread and tpool workers, children)
 * comes through here, and this library is loaded once per process, so the
 * first caller starts CPython (Py_InitializeFromConfig may run only once,
 * and not while another thread is in it: two at once crashed in
 * init_fs_encoding or importlib) while the others wait, then each installs
 * the bridge in turn (no two threads importing tclnats_py's modules for the
 * first time at once).  It is taken without the GIL: a Tcl command reaches
 * ::tclnats::_start only from Tcl code, and every crossing gives the GIL up
 * while Tcl code runs, so no thread holding the GIL waits for it.
 * Recursive: the bridge's set-up runs Tcl code, which could start another
 * interpreter of the same thread.
 */
static pthread_once_t start_lock_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t start_lock;

static void
start_lock_init(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&start_lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

static int cross_init(Tcl_Interp *interp, const char *sitedir, const char *program);

/*
 * Called by the Tcl extension's Tclnats_Init.  sitedir is the folder that
 * holds the tclnats_py package; program is the Python executable to start
 * (a venv's python when the package lives in one), NULL to join a running
 * CPython only.
 */
__attribute__((visibility("default"))) int
TclnatsCross_TclInit(Tcl_Interp *interp, const char *sitedir, const char *program)
{
    int code;
    if (Tcl_InitStubs(interp, "8.6", 0) == NULL)
        return TCL_ERROR;
    pthread_once(&start_lock_once, start_lock_init);
    pthread_mutex_lock(&start_lock);
    code = cross_init(interp, sitedir, program);
    pthread_mutex_unlock(&start_lock);
    return code;
}

/* TclnatsCross_TclInit's work, under start_lock */
static int
cross_init(Tcl_Interp *interp, const char *sitedir, const char *program)
{
    PyGILState_STATE st;
    ThreadData *td;
    InterpObject *obj;
    PyObject *mod, *r;
    int pin, code = TCL_OK;

    if (!Py_IsInitialized()) {
        if (start_python(interp, program) != TCL_OK)
            return TCL_ERROR;
    } else {
        const char *v = Py_GetVersion();
        char want[16];
        snprintf(want, sizeof want, "%d.%d.", PY_MAJOR_VERSION, PY_MINOR_VERSION);
        if (strncmp(v, want, strlen(want)) != 0) {
            Tcl_SetObjResult(interp, Tcl_ObjPrintf(
                "tclnats_py was built for Python %d.%d but this process runs Python %.10s; "
                "install tclnats_py with this Python", PY_MAJOR_VERSION, PY_MINOR_VERSION, v));
            Tcl_SetErrorCode(interp, "NATS", "ErrPython", NULL);
            return TCL_ERROR;
        }
    }
    td = (ThreadData *)Tcl_GetThreadData(&thread_key, sizeof(ThreadData));
    /* a Tcl thread that Python does not know yet keeps one thread state */
    pin = !td->pinned && PyGILState_GetThisThreadState() == NULL;
    st = PyGILState_Ensure();
    if (sitedir != NULL && *sitedir) {
        /* the folder that holds tclnats_py goes first on sys.path; with site
         * (a host Python, or TCLNATS_PYTHON_SITE=1) its .pth files processed
         * (site.addsitedir); without it, the bridge's install_loaded adds the
         * install's site-packages as site would, minus the .pth files */
        PyObject *globals = PyDict_New();
        PyObject *d = PyUnicode_DecodeFSDefault(sitedir);
        if (globals != NULL && d != NULL
                && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0
                && PyDict_SetItemString(globals, "sitedir", d) == 0) {
            r = PyRun_String(
                "import sys\n"
                "if sys.flags.no_site:\n"
                "    if sitedir in sys.path:\n"
                "        sys.path.remove(sitedir)\n"
                "    sys.path.insert(0, sitedir)\n"
                "elif sitedir not in sys.path:\n"
                "    import site\n"
                "    site.addsitedir(sitedir)\n"
                "    sys.path.remove(sitedir)\n"
                "    sys.path.insert(0, sitedir)\n",
                Py_file_input, globals, globals);
            Py_XDECREF(r);
        }
        Py_XDECREF(globals);
        Py_XDECREF(d);
    }
    if (PyErr_Occurred()) {
        code = python_failed(interp, "could not set up sys.path");
        goto out;
    }
    mod = PyImport_ImportModule("tclnats_py.tclface.bridge");
    if (mod == NULL) {
        code = python_failed(interp, "could not import tclnats_py");
        goto out;
    }
    obj = interp_object(interp);
    if (obj == NULL) {
        Py_DECREF(mod);
        code = python_failed(interp, "could not wrap the interpreter");
        goto out;
    }
    r = PyObject_CallMethod(mod, "install_loaded", "O", (PyObject *)obj);
    Py_DECREF(obj);
    Py_DECREF(mod);
    if (r == NULL) {
        code = python_failed(interp, "could not install the Tcl face");
        goto out;
    }
    Py_DECREF(r);
out:
    if (pin && code == TCL_OK) {
        /* keep this thread's state (and its threading.local data) until the
         * Tcl thread exits; give up the GIL */
        td->pinned = 1;
        td->saved = PyEval_SaveThread();
        Tcl_CreateThreadExitHandler(thread_exit, NULL);
    } else {
        PyGILState_Release(st);
    }
    return code;
}
