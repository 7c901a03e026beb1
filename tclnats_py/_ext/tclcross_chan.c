/*
 * tclcross_chan.c: a connection's writes to its socket channel, through
 * Tcl's channel API: the same bytes as [puts -nonewline] and [flush] (the
 * channel's stacked transforms and TLS take part as with those), without a
 * command evaluated each time and without a Tcl object in between.  Two
 * methods of Interp:
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
#include "tclcross.h"

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

PyObject *
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

PyObject *
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
