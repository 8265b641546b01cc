/* Store: where a trace's args bytes are set aside while the trace is analysed.
 *
 * The bytes of each span's args object (about two fifths of a trace's JSON) are appended to
 * a temporary file (ingest/fast.py makes it, already unlinked) through a buffer of a
 * megabyte, and each Args keeps only its offset and length: the process holds none of
 * them, whatever the trace's size, and reads one back (pread) when an analysis stage asks
 * for that event's args. The operating system's page cache, not the process, keeps what
 * was written; the file goes when the last Args into it does. */
#include "_native.h"

#include <errno.h>
#include <unistd.h>

enum { STORE_BUFFER = 1 << 20 };

/* Writes the buffer out; 0, or ERR with OSError naming the file. */
static int store_flush(Store *s) {
    Py_ssize_t done = 0;
    while (done < s->used) {
        ssize_t n = pwrite(s->fd, s->buf + done, (size_t)(s->used - done), s->flushed + done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, s->name);
            return ERR;
        }
        done += n;
    }
    s->flushed += s->used;
    s->used = 0;
    return 0;
}

Py_ssize_t store_put(Store *s, const char *p, Py_ssize_t n) {
    if (s->used + n > STORE_BUFFER && store_flush(s) < 0) return -1;
    if (n > STORE_BUFFER) { /* longer than the buffer: straight to the file */
        s->used = n;
        char *keep = s->buf;
        s->buf = (char *)p;
        int st = store_flush(s);
        s->buf = keep;
        return st < 0 ? -1 : s->flushed - n;
    }
    memcpy(s->buf + s->used, p, (size_t)n);
    s->used += n;
    return s->flushed + s->used - n;
}

const char *store_get(Store *s, Py_ssize_t off, Py_ssize_t n, char *into) {
    if (off >= s->flushed) return s->buf + (off - s->flushed); /* not written out yet */
    Py_ssize_t done = 0;
    while (done < n) {
        ssize_t got = pread(s->fd, into + done, (size_t)(n - done), off + done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0) errno = EIO; /* the file is shorter than what was written */
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, s->name);
            return NULL;
        }
        done += got;
    }
    return into;
}

static void store_dealloc(PyObject *self) {
    Store *s = (Store *)self;
    PyMem_Free(s->buf);
    if (s->file != NULL) { /* closing it frees the disk space */
        PyObject *type, *value, *tb; /* it may go while an exception is on its way */
        PyErr_Fetch(&type, &value, &tb);
        PyObject *done = PyObject_CallMethod(s->file, "close", NULL);
        if (done == NULL) PyErr_WriteUnraisable(self);
        Py_XDECREF(done);
        Py_DECREF(s->file);
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(s->name);
    Py_TYPE(self)->tp_free(self);
}

PyObject *store_new(PyObject *file) {
    PyObject *fd = PyObject_CallMethod(file, "fileno", NULL);
    if (fd == NULL) return NULL;
    int no = PyLong_AsLong(fd);
    Py_DECREF(fd);
    if (no < 0 && PyErr_Occurred()) return NULL;
    PyObject *name = PyObject_GetAttrString(file, "name");
    if (name == NULL) return NULL;
    Store *s = PyObject_New(Store, &StoreType);
    if (s == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    s->file = Py_NewRef(file);
    s->name = name;
    s->fd = no;
    s->flushed = s->used = 0;
    s->buf = PyMem_Malloc(STORE_BUFFER);
    if (s->buf == NULL) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    return (PyObject *)s;
}

PyTypeObject StoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "torchscope.ingest._native.Store",
    .tp_basicsize = sizeof(Store),
    .tp_dealloc = store_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The temporary file a trace's args bytes are set aside in (_native_store.c).",
};
