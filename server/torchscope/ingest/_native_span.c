/* Span: one complete event as the C scanner keeps it, in 64 bytes.
 *
 * The same fields as ingest/model.py's Span (start, end, name, track, args, correlation),
 * read the same ways (attributes, indices 0-5, unpacking, ==), but held inline instead of
 * as a tuple of objects: the times as doubles (flagged when the trace wrote ints, which
 * are handed back as ints), the track and an int correlation as integers, and the args as
 * an offset into the trace's Store (_native_store.c, named by its id), made into an Args
 * when read. A tuple with its two floats, correlation int and Args took about 200 bytes per
 * span; a trace of 10M events has about 6M spans. No garbage-collector header: what a Span
 * refers to (a str, the Store, decoded JSON) cannot refer back to it. It pickles as the
 * NamedTuple, its args as their dict. */
#include "_native.h"
#include "_native_record.h"

enum { INT_START = 1, INT_END = 2, INT_CORR = 4, STORED_ARGS = 8 };
#define OFF_LIMIT ((Py_ssize_t)1 << 40)

typedef struct {
    PyObject_HEAD
    double start, end;
    PyObject *name;
    union {
        PyObject *corr; /* the correlation object */
        int64_t corr_i; /* with INT_CORR: the correlation, an int */
    };
    uint64_t off : 40, store : 16, flags : 8; /* STORED_ARGS: the args at off in Store store */
    int32_t len, track;
} Span; /* 64 bytes: a pymalloc size class, with no padding to round up */

static PyObject *g_empty; /* the args of a span without them */

void span_set_empty(PyObject *empty) {
    Py_XINCREF(empty);
    Py_XSETREF(g_empty, empty);
}

PyObject *span_make(const Num *start, const Num *end, PyObject *name, long track,
                    PyObject *store, Py_ssize_t off, Py_ssize_t len, PyObject *corr) {
    if (len > INT32_MAX || track > INT32_MAX || off >= OFF_LIMIT) return NULL;
    Span *s = PyObject_New(Span, SpanType);
    if (s == NULL) return NULL;
    s->start = start->is_int ? (double)start->i : start->d;
    s->end = end->is_int ? (double)end->i : end->d;
    s->flags = (uint64_t)((start->is_int ? INT_START : 0) | (end->is_int ? INT_END : 0));
    s->name = Py_NewRef(name);
    s->track = (int32_t)track;
    s->off = (uint64_t)off;
    s->len = (int32_t)len;
    s->store = 0;
    if (store != NULL) {
        Py_INCREF(store); /* released in span_dealloc, through the table */
        s->store = (uint64_t)((Store *)store)->id;
        s->flags |= STORED_ARGS;
    }
    int overflow = 0;
    long long v = PyLong_CheckExact(corr) ? PyLong_AsLongLongAndOverflow(corr, &overflow) : 0;
    if (PyLong_CheckExact(corr) && !overflow && !(v == -1 && PyErr_Occurred())) {
        s->corr_i = v;
        s->flags |= INT_CORR;
    } else {
        PyErr_Clear();
        s->corr = Py_NewRef(corr);
    }
    return (PyObject *)s;
}

static void span_dealloc(PyObject *self) {
    Span *s = (Span *)self;
    Py_XDECREF(s->name);
    if (s->flags & STORED_ARGS) Py_DECREF((PyObject *)store_of((int)s->store));
    if (!(s->flags & INT_CORR)) Py_XDECREF(s->corr);
    free_instance(self);
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
        if (s->flags & STORED_ARGS) return args_new((PyObject *)store_of((int)s->store), s->off, s->len);
        return g_empty != NULL ? Py_NewRef(g_empty) : PyDict_New();
    default:
        return s->flags & INT_CORR ? PyLong_FromLongLong(s->corr_i) : Py_NewRef(s->corr);
    }
}

/* Pickled as ingest/model.py's Span, the NamedTuple the reference reader makes. */
static PyObject *as_named_tuple(PyObject *Py_UNUSED(self)) {
    PyObject *model = PyImport_ImportModule("torchscope.ingest.model");
    if (model == NULL) return NULL;
    PyObject *type = PyObject_GetAttrString(model, "Span");
    Py_DECREF(model);
    return type;
}

RECORD_METHODS(span, field, as_named_tuple,
               "Span(start=%r, end=%r, name=%r, track=%r, args=%r, correlation=%r)")

static PyGetSetDef span_getset[] = {
    {"start", span_get_0, NULL, NULL, NULL},  {"end", span_get_1, NULL, NULL, NULL},
    {"name", span_get_2, NULL, NULL, NULL},   {"track", span_get_3, NULL, NULL, NULL},
    {"args", span_get_4, NULL, NULL, NULL},   {"correlation", span_get_5, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot span_slots[] = {
    {Py_tp_dealloc, span_dealloc},
    {Py_tp_doc, "One complete event, its fields inline (ingest/model.py's Span, compact)."},
    {Py_tp_getset, span_getset},
    RECORD_TYPE_SLOTS(span),
    {0, NULL},
};

PyType_Spec SpanSpec = {"torchscope.ingest._native.Span", sizeof(Span), 0, NO_NEW, span_slots};
PyTypeObject *SpanType;

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
