/* Span: one complete event as the C scanner keeps it, in 80 bytes.
 *
 * The same fields as ingest/model.py's Span (start, end, name, track, args, correlation),
 * read the same ways (attributes, indices 0-5, unpacking, ==), but held inline instead of
 * as a tuple of objects: the times as doubles (flagged when the trace wrote ints, which
 * are handed back as ints), the track and an int correlation as integers, and the args as
 * an offset into the trace's Store (_native_store.c), made into an Args when read. A tuple
 * with its two floats, correlation int and Args took about 200 bytes per span; a trace of
 * 10M events has about 6M spans. No garbage-collector header: what a Span refers to (a
 * str, the Store, decoded JSON) cannot refer back to it. */
#include "_native.h"
#include "_native_record.h"

enum { INT_START = 1, INT_END = 2, INT_CORR = 4, STORED_ARGS = 8 };

typedef struct {
    PyObject_HEAD
    double start, end;
    PyObject *name;
    PyObject *args; /* the Store (STORED_ARGS: the bytes at off, len) or the args object */
    union {
        PyObject *corr; /* the correlation object */
        int64_t corr_i; /* with INT_CORR: the correlation, an int */
    };
    uint64_t off : 56, flags : 8;
    int32_t len, track;
} Span; /* 80 bytes: what pymalloc hands out for it, with no padding to round up */

static int put_time(PyObject *v, double *d, int32_t *flags, int flag) {
    Num n;
    if (num_from(v, &n) != 0) {
        PyErr_SetString(PyExc_TypeError, "Span: start and end are ints below 2**53 or floats");
        return ERR;
    }
    *d = n.d;
    if (n.is_int) *flags |= flag;
    return 0;
}

static void put_corr(Span *s, PyObject *corr) { /* after the flags are set */
    int overflow = 0;
    long long v = PyLong_CheckExact(corr) ? PyLong_AsLongLongAndOverflow(corr, &overflow) : 0;
    if (PyLong_CheckExact(corr) && !overflow && !(v == -1 && PyErr_Occurred())) {
        s->corr_i = v;
        s->flags |= INT_CORR;
    } else {
        PyErr_Clear();
        s->corr = Py_NewRef(corr);
    }
}

PyObject *span_make(const Num *start, const Num *end, PyObject *name, long track,
                    PyObject *store, Py_ssize_t off, Py_ssize_t len, PyObject *args,
                    PyObject *corr) {
    if (len > INT32_MAX || track > INT32_MAX || off >= ((Py_ssize_t)1 << 56)) {
        PyErr_SetString(PyExc_OverflowError, "Span: an args object over 2 GiB, or 2**31 tracks");
        return NULL;
    }
    Span *s = PyObject_New(Span, &SpanType);
    if (s == NULL) return NULL;
    s->start = start->is_int ? (double)start->i : start->d;
    s->end = end->is_int ? (double)end->i : end->d;
    s->flags = (uint64_t)((start->is_int ? INT_START : 0) | (end->is_int ? INT_END : 0));
    s->name = Py_NewRef(name);
    s->track = (int32_t)track;
    s->off = (uint64_t)off;
    s->len = (int32_t)len;
    if (store != NULL) {
        s->args = Py_NewRef(store);
        s->flags |= STORED_ARGS;
    } else {
        s->args = Py_NewRef(args);
    }
    put_corr(s, corr);
    return (PyObject *)s;
}

/* Span(start, end, name, track, args, correlation=None): as the NamedTuple is built. */
static PyObject *span_new(PyTypeObject *type, PyObject *a, PyObject *kw) {
    static char *kwlist[] = {"start", "end", "name", "track", "args", "correlation", NULL};
    PyObject *start, *end, *name, *track, *args, *corr = Py_None;
    if (!PyArg_ParseTupleAndKeywords(a, kw, "OOOOO|O:Span", kwlist, &start, &end, &name, &track,
                                     &args, &corr))
        return NULL;
    Span *s = (Span *)type->tp_alloc(type, 0);
    if (s == NULL) return NULL;
    int32_t flags = 0;
    s->flags = 0;
    s->name = NULL;
    s->args = NULL;
    s->corr_i = 0;
    s->off = 0;
    s->len = 0;
    long t = PyLong_AsLong(track);
    if ((t == -1 && PyErr_Occurred()) || t < INT32_MIN || t > INT32_MAX) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_OverflowError, "Span: track beyond 2**31");
        }
        s->flags = INT_CORR; /* nothing to release */
        Py_DECREF(s);
        return NULL;
    }
    s->track = (int32_t)t;
    if (put_time(start, &s->start, &flags, INT_START) || put_time(end, &s->end, &flags, INT_END)) {
        s->flags = INT_CORR;
        Py_DECREF(s);
        return NULL;
    }
    s->flags = (uint64_t)flags;
    s->name = Py_NewRef(name);
    s->args = Py_NewRef(args);
    put_corr(s, corr);
    return (PyObject *)s;
}

static void span_dealloc(PyObject *self) {
    Span *s = (Span *)self;
    Py_XDECREF(s->name);
    Py_XDECREF(s->args);
    if (!(s->flags & INT_CORR)) Py_XDECREF(s->corr);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *time_obj(double d, int is_int) {
    return is_int ? PyLong_FromLongLong((long long)d) : PyFloat_FromDouble(d);
}

/* Field i (0-5) as a new reference. */
static PyObject *field(PyObject *self, Py_ssize_t i) {
    Span *s = (Span *)self;
    switch (i) {
    case 0: return time_obj(s->start, s->flags & INT_START);
    case 1: return time_obj(s->end, s->flags & INT_END);
    case 2: return Py_NewRef(s->name);
    case 3: return PyLong_FromLongLong(s->track);
    case 4:
        return s->flags & STORED_ARGS ? args_new(s->args, s->off, s->len) : Py_NewRef(s->args);
    default:
        return s->flags & INT_CORR ? PyLong_FromLongLong(s->corr_i) : Py_NewRef(s->corr);
    }
}

RECORD_METHODS(span, field, "Span(start=%r, end=%r, name=%r, track=%r, args=%r, correlation=%r)")

static PyGetSetDef span_getset[] = {
    {"start", span_get_0, NULL, NULL, NULL},  {"end", span_get_1, NULL, NULL, NULL},
    {"name", span_get_2, NULL, NULL, NULL},   {"track", span_get_3, NULL, NULL, NULL},
    {"args", span_get_4, NULL, NULL, NULL},   {"correlation", span_get_5, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SpanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "torchscope.ingest._native.Span",
    .tp_basicsize = sizeof(Span),
    .tp_dealloc = span_dealloc,
    .tp_repr = span_repr,
    .tp_as_sequence = &span_as_sequence,
    .tp_as_mapping = &span_as_mapping,
    .tp_hash = span_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One complete event, its fields inline (ingest/model.py's Span, compact).",
    .tp_richcompare = span_richcompare,
    .tp_methods = span_methods,
    .tp_getset = span_getset,
    .tp_new = span_new,
};

/* For nest: a Span's start, end (as Nums) and track, without making objects. */
int span_fields(PyObject *o, Num *start, Num *end, long long *track) {
    Span *s = (Span *)o;
    start->is_int = (s->flags & INT_START) != 0;
    start->d = s->start;
    start->i = (long long)s->start;
    end->is_int = (s->flags & INT_END) != 0;
    end->d = s->end;
    end->i = (long long)s->end;
    *track = s->track;
    return 0;
}
