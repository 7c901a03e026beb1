/*
 * tclcross_interp.c: the type Interp, a Tcl_Interp* with the small
 * interface tclnats_py.tclface.bridge drives (call, eval, createcommand,
 * deletecommand, splitlist, getboolean, setvar, the channel writes of
 * tclcross_chan.c), and the Tcl commands that call Python.  The GIL is held
 * only while Python code runs: a Tcl command made here takes it on entry and
 * gives it back on return; a Python call into Tcl gives it up for the
 * duration.  Errors cross both ways: a Tcl error becomes TclError with Tcl's
 * message, a Python exception a Tcl error with an error code.
 *
 * Each Tcl interpreter has one Interp object (interp_object), made on first
 * use together with the C commands the Tcl face calls in that interpreter.
 */
#include "tclcross.h"
#include <string.h>

#define TCLNATS_ASSOC "tclnats_py::interp"

int
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

PyObject *
tcl_error(Tcl_Interp *interp)
{
    PyObject *msg = from_obj(interp, Tcl_GetObjResult(interp));
    if (msg != NULL && !PyUnicode_Check(msg))
        Py_SETREF(msg, PyObject_Str(msg));
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
Interp_interpaddr(InterpObject *self, PyObject *Py_UNUSED(unused))
{
    return PyLong_FromVoidPtr(self->interp);
}

static PyObject *
Interp_deleted(InterpObject *self, PyObject *Py_UNUSED(unused))
{
    return PyBool_FromLong(self->deleted);
}

/* ------------------------------------------------------------ the C commands of an interpreter */

/*
 * ::tclnats::r reply
 *
 * Unpacks the reply of a Python command of the bridge: {0 result} returns
 * the result, {1 errorCode message} throws (the proc it replaces, without
 * a proc frame per call).
 */
static int
ReplyCmd(ClientData Py_UNUSED(cd), Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
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
RunDeliveriesCmd(ClientData Py_UNUSED(cd), Tcl_Interp *interp, int objc, Tcl_Obj *const objv[])
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

/* ------------------------------------------------------------ the Interp of an interpreter */

static void
interp_deleted(ClientData cd, Tcl_Interp *Py_UNUSED(interp))
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
InterpObject *
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
    wait_commands_create(interp);
    Tcl_CreateObjCommand(interp, "::tclnats::r", ReplyCmd, NULL, NULL);
    Tcl_CreateObjCommand(interp, "::tclnats::_run_deliveries", RunDeliveriesCmd, NULL, NULL);
    if (TclnatsFast_Init(interp) != TCL_OK)
        Tcl_ResetResult(interp);   /* no TclOO stubs: the Tcl methods serve */
    return self;
}

static PyObject *
Interp_from_address(PyObject *Py_UNUSED(cls), PyObject *arg)
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

PyTypeObject InterpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tclnats_py._tclcross.Interp",
    .tp_basicsize = sizeof(InterpObject),
    .tp_dealloc = (destructor)Interp_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A Tcl interpreter, driven through the Tcl C API.",
    .tp_methods = Interp_methods,
};
