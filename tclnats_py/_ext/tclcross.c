/*
 * tclnats_py._tclcross: the crossing between Tcl and Python, through the Tcl
 * C API directly.
 *
 * Two entries:
 *   - as a Python extension module (this file): the type Interp wraps a
 *     Tcl_Interp* with the small interface tclnats_py.tclface.bridge drives
 *     (call, eval, createcommand, deletecommand, splitlist, getboolean,
 *     setvar, chan_write, chan_flush), converting values the way tkinter
 *     does, so the bridge runs unchanged on an interpreter that tkinter
 *     created (Interp.from_address) and on one that loaded the package with
 *     Tcl's [load];
 *   - TclnatsCross_TclInit (tclcross_embed.c), called by the Tcl extension
 *     (tclload.c) from [load]: it starts CPython when the process has none or
 *     joins the running one, and installs the Tcl face into the loading
 *     interpreter.
 *
 * tclcross.h lists the files of the module and what each holds.
 */
#include "tclcross.h"

PyObject *TclError;

static PyObject *
mod_embedded(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(unused))
{
    return PyBool_FromLong(embedded);
}

static PyObject *
mod_noop(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(args))
{
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"embedded", mod_embedded, METH_NOARGS, "True when CPython was started by Tcl's [load]"},
    {"noop", mod_noop, METH_VARARGS, "does nothing (crossing cost measurements)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tclnats_py._tclcross",
    .m_doc = "The crossing between Tcl and Python through the Tcl C API.",
    .m_size = -1,
    .m_methods = module_methods,
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
