/* The native part of torchscope's analysis (see _native.c): what its files share. */
#ifndef TORCHSCOPE_NATIVE_H
#define TORCHSCOPE_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_native_compat.h"
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *Py_NewRef(PyObject *o) {
    Py_INCREF(o);
    return o;
}
#endif

#define BAIL 1 /* not an input to handle here: the caller runs its Python twin */
#define ERR -1 /* a Python exception is set */

/* A number as Python holds it: an int (kept only below 2**53, where a double is exact and
 * compares as Python compares int with float) or a float. */
typedef struct {
    int is_int;
    long long i;
    double d;
} Num;

#define EXACT (1LL << 53)

static inline double as_double(const Num *n) { return n->is_int ? (double)n->i : n->d; }

static inline Num sub(const Num *a, const Num *b) {
    Num r = {0, 0, 0.0};
    if (a->is_int && b->is_int) {
        r.is_int = 1;
        r.i = a->i - b->i;
        r.d = (double)r.i;
    } else {
        r.d = as_double(a) - as_double(b);
    }
    return r;
}

static inline Num add(const Num *a, const Num *b) {
    Num r = {0, 0, 0.0};
    if (a->is_int && b->is_int) {
        r.is_int = 1;
        r.i = a->i + b->i;
        r.d = (double)r.i;
    } else {
        r.d = as_double(a) + as_double(b);
    }
    return r;
}

/* Python's ``a <= b`` for two numbers that are exact as doubles or are ints. */
static inline int num_le(const Num *a, const Num *b) {
    if (a->is_int && b->is_int) return a->i <= b->i;
    return as_double(a) <= as_double(b);
}

static inline int in_range(const Num *n) {
    double d = as_double(n);
    return -1e18 < d && d < 1e18;
}

static inline int too_big(const Num *n) { return n->is_int && (n->i >= EXACT || n->i <= -EXACT); }

/* A tuple subclass instance, as tuple.__new__(type, items) makes it (steals the items). */
static inline PyObject *new_tuple(PyTypeObject *type, PyObject **items, Py_ssize_t n) {
#ifdef Py_LIMITED_API
    /* The stable ABI cannot see a tuple's insides (3.14's hash cache): tuple.__new__ makes
     * it, a call per tuple; only a model other than torch's own (a test's) comes here. */
    PyObject *plain = PyTuple_New(n), *t = NULL;
    if (plain == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(items[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(plain, i, items[i]);
    PyObject *make = PyObject_GetAttrString((PyObject *)&PyTuple_Type, "__new__");
    if (make != NULL) t = PyObject_CallFunctionObjArgs(make, (PyObject *)type, plain, NULL);
    Py_XDECREF(make);
    Py_DECREF(plain);
    return t;
#else
    PyObject *t = type->tp_alloc(type, n);
    if (t == NULL) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(items[i]);
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030E0000
    ((PyTupleObject *)t)->ob_hash = -1;
#endif
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, items[i]);
    return t;
#endif
}

/* Reads a Python int or float into a Num; BAIL for other objects and ints beyond 2**53. */
static inline int num_from(PyObject *o, Num *n) {
    if (PyFloat_CheckExact(o)) {
        n->is_int = 0;
        n->d = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (!PyLong_CheckExact(o)) return BAIL;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return BAIL;
    }
    if (v >= EXACT || v <= -EXACT) return BAIL;
    n->is_int = 1;
    n->i = v;
    n->d = (double)v;
    return 0;
}

static inline PyObject *num_obj(const Num *n) {
    return n->is_int ? PyLong_FromLongLong(n->i) : PyFloat_FromDouble(n->d);
}

/* Store (_native_store.c): the temporary file the args bytes are set aside in. */
/* The four types are heap types (PyType_FromSpec at import: what the stable ABI allows),
 * none of them but MemoryEvent made from Python. */
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
#define NO_NEW (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION)
#else
#define NO_NEW Py_TPFLAGS_DEFAULT /* 3.9: tp_new is cleared after the type is made */
#endif
extern PyType_Spec StoreSpec, SpanSpec, MemEventSpec, ArgsSpec;
extern PyTypeObject *StoreType;
typedef struct {
    PyObject_HEAD
    PyObject *file, *name; /* the Python file object (held open) and its name */
    int fd;
    char *buf;                  /* what was put and not yet written out */
    Py_ssize_t used, flushed;   /* bytes in buf; bytes in the file before them */
    char *block;                /* the last block read back */
    Py_ssize_t block_at, block_len;
    int id;                     /* its slot in the table of Stores (store_of) */
} Store;
enum { MAX_STORES = 1 << 16 };
PyObject *store_new(PyObject *file);
/* The Store of an id (borrowed). */
Store *store_of(int id);
/* Appends p[0:n]; its offset, or -1 with OSError (the disk is full). */
Py_ssize_t store_put(Store *s, const char *p, Py_ssize_t n);
/* The n bytes at off: in the buffer or the block last read back (valid until the next
 * call), or read into `into` (n bytes of room); NULL with OSError. */
const char *store_get(Store *s, Py_ssize_t off, Py_ssize_t n, char *into);

/* Span (_native_span.c): one complete event, its fields inline. */
extern PyTypeObject *SpanType;
/* A Span; its args the store's bytes at off, len (store not NULL), else empty. NULL with
 * no exception set: a number beyond what a Span holds (the caller hands the trace back). */
PyObject *span_make(const Num *start, const Num *end, PyObject *name, long track,
                    PyObject *store, Py_ssize_t off, Py_ssize_t len, PyObject *corr);
/* The empty args of a span without them (configure's). */
void span_set_empty(PyObject *empty);
/* A Span's start, end and track, read without making objects. */
int span_fields(PyObject *span, Num *start, Num *end, long long *track);

/* MemoryEvent (_native_memory.c): one [memory] event, its fields inline. */
extern PyTypeObject *MemEventType;

/* Args (_native_args.c): an event's args object, read back and decoded when first read. */
extern PyTypeObject *ArgsType;
typedef struct {
    PyObject_HEAD
    PyObject *store; /* the Store its bytes are in */
    Py_ssize_t off, len;
    PyObject *dict; /* decoded, on first read */
} Args;
PyObject *args_new(PyObject *store, Py_ssize_t off, Py_ssize_t len);
void args_set_decoder(PyObject *decode);

/* A cursor over JSON bytes (the reader: _native_json.h). */
typedef struct {
    const char *p, *end;
} Cur;

/* Skips JSON whitespace; a byte above ' ' (every token's first) stops it at once. */
#define WS(cur)                                                                           \
    while ((cur)->p < (cur)->end && (unsigned char)*(cur)->p <= ' ' &&                    \
           (*(cur)->p == ' ' || *(cur)->p == '\n' || *(cur)->p == '\r' || *(cur)->p == '\t')) \
    (cur)->p++


/* JSON values as stdlib json decodes them (_native_decode.c); NULL with *status BAIL (no
 * exception: ask stdlib json) or ERR (an exception is set). */
PyObject *json_value(const char *p, Py_ssize_t n, int *status);
/* The value of p[0:n]: json_value's, else fallback(memoryview) (stdlib json's decoder). */
PyObject *json_decode(const char *p, Py_ssize_t n, PyObject *fallback);
PyObject *native_loads(PyObject *module, PyObject *arg);

PyObject *native_configure(PyObject *module, PyObject *consts);
PyObject *native_scan_stream(PyObject *module, PyObject *args);
PyObject *native_merge(PyObject *module, PyObject *pairs); /* _native_merge.c */
PyObject *native_nest(PyObject *module, PyObject *args);

#endif
