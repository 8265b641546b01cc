/* _native.scan_stream: the event array scanned as the trace is read (fast.py).
 *
 * It reads the array from read(n), a piece at a time (a plain file's bytes or a gzip
 * stream's, inflating), through a window of about a megabyte that is reused, and copies
 * each span's args (a quarter of the bytes) out to a temporary file (_native_store.c): the
 * document is never held whole, nor are the args. The same events give the same spans at every piece size
 * (test_ingest_stream cuts events at every byte).
 */
#include "_native_scan.h"

static int window_reserve(Window *w, Py_ssize_t cap) {
    if (cap <= w->cap) return 0;
    if (cap < 2 * w->cap) cap = 2 * w->cap;
    char *buf = PyMem_Realloc(w->buf, (size_t)cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return ERR;
    }
    w->buf = buf;
    w->cap = cap;
    return 0;
}

/* Appends the next piece of the stream to the window (eof when it is empty); 0 or ERR. */
static int window_read(Window *w) {
    Py_ssize_t want = w->cap - w->len > w->low ? w->cap - w->len : w->low;
    PyObject *piece = PyObject_CallFunction(w->read, "n", want);
    if (piece == NULL) return ERR;
    if (!PyBytes_Check(piece)) {
        PyErr_Format(PyExc_TypeError, "scan_stream: read() gave %S, not bytes",
                     (PyObject *)Py_TYPE(piece));
        Py_DECREF(piece);
        return ERR;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(piece);
    int st = window_reserve(w, w->len + n);
    if (st == 0) {
        memcpy(w->buf + w->len, PyBytes_AS_STRING(piece), (size_t)n);
        w->len += n;
        w->eof = n == 0;
    }
    Py_DECREF(piece);
    return st;
}

/* Moves the window's bytes from *keep on to its start and reads until at least need of
 * them (or half the window, whichever is more) are there, or the stream ends; cur and
 * *keep follow the move. */
int window_fill(Window *w, Cur *cur, const char **keep, Py_ssize_t need) {
    Py_ssize_t from = *keep - w->buf, at = cur->p - w->buf;
    memmove(w->buf, w->buf + from, (size_t)(w->len - from));
    w->len -= from;
    if (window_reserve(w, need) < 0) return ERR;
    Py_ssize_t target = need > w->cap / 2 ? need : w->cap / 2;
    while (!w->eof && w->len < target) {
        if (window_read(w) < 0) return ERR;
    }
    *keep = w->buf;
    cur->p = w->buf + (at - from);
    cur->end = w->buf + w->len;
    return 0;
}

/* An Args over a copy of p[0:n] set aside in the scan's Store. */
PyObject *make_args(Ctx *c, const char *p, Py_ssize_t n) {
    Py_ssize_t off = store_put((Store *)c->store, p, n);
    return off < 0 ? NULL : args_new(c->store, off, n);
}

PyObject *native_scan_stream(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *read, *sink, *file, *window = Py_None;
    Py_buffer first;
    Py_ssize_t low = 1 << 16;
    if (!PyArg_ParseTuple(args, "Oy*OO|nO:scan_stream", &read, &first, &sink, &file, &low,
                          &window))
        return NULL;
    /* A window of 16 × low (1 MiB), refilled to half of it when low is left. */
    Window w = {read, NULL, 0, 0, low < 1 ? 1 : low > WINDOW_MOST ? WINDOW_MOST : low, 0};
    Ctx c;
    if (scan_open(&c, sink, window, file) < 0) {
        PyBuffer_Release(&first);
        return NULL;
    }
    if (window_reserve(&w, 16 * w.low + first.len) < 0) {
        PyBuffer_Release(&first);
        PyMem_Free(w.buf);
        return scan_close(&c, ERR, NULL, NULL);
    }
    memcpy(w.buf, first.buf, (size_t)first.len);
    w.len = first.len;
    PyBuffer_Release(&first);
    Cur cur = {w.buf, w.buf + w.len};
    State s;
    int st = scan_array(&c, &s, &cur, &w);
    PyObject *rest = st == 0 ? PyBytes_FromStringAndSize(cur.p, cur.end - cur.p) : NULL;
    PyObject *out = scan_close(&c, st, &s, rest);
    PyMem_Free(w.buf);
    return out;
}
