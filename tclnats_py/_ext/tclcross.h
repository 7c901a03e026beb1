/*
 * tclcross.h: what the C files of the Python extension module
 * tclnats_py._tclcross share (private to them; tclload.c, the Tcl
 * extension, uses none of it).
 *
 *   tclcross.c          the module: PyInit__tclcross, TclError
 *   tclcross_convert.c  Tcl values <-> Python values, as tkinter converts them
 *   tclcross_interp.c   the Interp type: Python calling Tcl, Tcl commands
 *                       that call Python, errors crossing either way, each
 *                       interpreter's state and the C commands made for it
 *                       (::tclnats::r, ::tclnats::_run_deliveries)
 *   tclcross_chan.c     the bridge's writes to its socket channels
 *   tclcross_wait.c     the waits of synchronous calls: ::tclnats::_await,
 *                       ::tclnats::_wait, ::tclnats::_wait_stats
 *   tclcross_embed.c    TclnatsCross_TclInit, from Tcl's [load]: starting or
 *                       joining CPython, Tcl threads and the GIL
 *   tclfast.c           the Tcl face's publish and read paths in C
 */
#ifndef TCLNATS_TCLCROSS_H
#define TCLNATS_TCLCROSS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <tcl.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    PyObject_HEAD
    Tcl_Interp *interp;
    Tcl_ThreadId thread;
    int deleted;
    PyObject *on_delete;   /* called (no arguments) when the interpreter goes */
} InterpObject;

/* tclcross.c */
extern PyObject *TclError;             /* tclnats_py._tclcross.TclError */

/* tclcross_convert.c */
void init_types(void);
PyObject *str_from_obj(Tcl_Obj *obj);
PyObject *from_obj(Tcl_Interp *interp, Tcl_Obj *obj);
PyObject *tuple_of(Tcl_Interp *interp, Tcl_Obj **items, int n, int as_str);
Tcl_Obj *str_to_obj(PyObject *s);
Tcl_Obj *to_obj(PyObject *v);

/* tclcross_interp.c */
extern PyTypeObject InterpType;
int usable(InterpObject *self);
PyObject *tcl_error(Tcl_Interp *interp);
InterpObject *interp_object(Tcl_Interp *interp);

/* tclcross_chan.c: methods of Interp */
PyObject *Interp_chan_write(InterpObject *self, PyObject *args);
PyObject *Interp_chan_flush(InterpObject *self, PyObject *args);

/* tclcross_wait.c: the commands of one interpreter */
void wait_commands_create(Tcl_Interp *interp);

/* tclcross_embed.c */
extern int embedded;                   /* 1: CPython was started by us */
EXPORT int TclnatsCross_TclInit(Tcl_Interp *interp, const char *sitedir, const char *program);

/* tclfast.c: ::tclnats::_fastpub_new, the C method publish and the reader */
int TclnatsFast_Init(Tcl_Interp *interp);
void TclnatsFast_ReportError(Tcl_Interp *interp, int code);

#endif
