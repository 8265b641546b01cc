/* Store: where a trace's args bytes are set aside while the trace is analysed.
 *
 * The bytes of each span's args object (about a quarter of a trace's JSON) are appended to
 * a temporary file (ingest/fast.py makes it, already unlinked) through a buffer of a
 * megabyte, and each Args keeps only its offset and length: the process holds none of
 * them, whatever the trace's size, and reads one back (pread) when an analysis stage asks
 * for that event's args. The operating system's page cache, not the process, keeps what
 * was written; the file goes when the last Args into it does. */
#include "_native.h"

#include <errno.h>
#include <unistd.h>

enum { STORE_BUFFER = 1 << 20, READ_BLOCK = 1 << 16 };

/* The Stores alive, by id: a Span names its Store in 16 bits of a word instead of a
 * pointer (_native_span.c), and holds a reference to it all the same. */
static Store *table[MAX_STORES];

Store *store_of(int id) { return table[id]; }

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

/* Reads n bytes at off into `into`; 0, or ERR with OSError. */
static int read_at(Store *s, Py_ssize_t off, Py_ssize_t n, char *into) {
    Py_ssize_t done = 0;
    while (done < n) {
        ssize_t got = pread(s->fd, into + done, (size_t)(n - done), off + done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got == 0) errno = EIO; /* the file is shorter than what was written */
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, s->name);
            return ERR;
        }
        done += got;
    }
    return 0;
}

/* Args are mostly read in the order they were written (a stage walks one kind's spans by
 * index), so a read brings in the 64 KiB block around them: the next ones are there. */
const char *store_get(Store *s, Py_ssize_t off, Py_ssize_t n, char *into) {
    if (off >= s->flushed) return s->buf + (off - s->flushed); /* not written out yet */
    if (off >= s->block_at && off + n <= s->block_at + s->block_len)
        return s->block + (off - s->block_at);
    if (n > READ_BLOCK) return read_at(s, off, n, into) < 0 ? NULL : into;
    if (s->block == NULL && (s->block = PyMem_Malloc(READ_BLOCK)) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t at = off; /* args written in one piece are never split across flushes */
    Py_ssize_t len = s->flushed - at < READ_BLOCK ? s->flushed - at : READ_BLOCK;
    s->block_len = 0;
    if (read_at(s, at, len, s->block) < 0) return NULL;
    s->block_at = at;
    s->block_len = len;
    return s->block + (off - at);
}

static void store_dealloc(PyObject *self) {
    Store *s = (Store *)self;
    PyMem_Free(s->buf);
    PyMem_Free(s->block);
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
    if (s->id >= 0 && table[s->id] == s) table[s->id] = NULL;
    free_instance(self);
}

/* A free id, or -1 with RuntimeError. */
static int free_id(void) {
    static int next;
    for (int k = 0; k < MAX_STORES; k++) {
        int id = (next + k) % MAX_STORES;
        if (table[id] == NULL) {
            next = (id + 1) % MAX_STORES;
            return id;
        }
    }
    PyErr_Format(PyExc_RuntimeError, "more than %d traces are held at once", MAX_STORES);
    return -1;
}

PyObject *store_new(PyObject *file) {
    PyObject *fd = PyObject_CallMethod(file, "fileno", NULL);
    if (fd == NULL) return NULL;
    int no = PyLong_AsLong(fd);
    Py_DECREF(fd);
    if (no < 0 && PyErr_Occurred()) return NULL;
    PyObject *name = PyObject_GetAttrString(file, "name");
    if (name == NULL) return NULL;
    Store *s = PyObject_New(Store, StoreType);
    if (s == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    s->file = Py_NewRef(file);
    s->name = name;
    s->fd = no;
    s->id = -1;
    s->flushed = s->used = 0;
    s->block = NULL;
    s->block_at = s->block_len = 0;
    s->buf = PyMem_Malloc(STORE_BUFFER);
    if (s->buf == NULL) {
        Py_DECREF(s);
        return PyErr_NoMemory();
    }
    if ((s->id = free_id()) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    table[s->id] = s;
    return (PyObject *)s;
}

static PyType_Slot store_slots[] = {
    {Py_tp_dealloc, store_dealloc},
    {Py_tp_doc, "The temporary file a trace's args bytes are set aside in (_native_store.c)."},
    {0, NULL},
};

PyType_Spec StoreSpec = {"torchscope.ingest._native.Store", sizeof(Store), 0, NO_NEW, store_slots};
PyTypeObject *StoreType;
