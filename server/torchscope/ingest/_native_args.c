/* Args: one event's "args" object, left as its bytes until it is read.
 *
 * A read-only Mapping over bytes set aside in the trace's Store (_native_store.c): on first
 * use it reads them back and decodes the JSON object (_native_decode.c, else the stdlib
 * json decoder configure() was given), and keeps the dict; most events' args are never
 * read. One small object per event, and no garbage-collector header: the dict it may hold
 * is decoded JSON, which cannot refer back to it, so it is never part of a cycle. */
#include "_native.h"
#include "_native_json.h"

enum { STACK_ROOM = 2048 };

static PyObject *g_decode; /* the stdlib json decoder configure() was given */

void args_set_decoder(PyObject *decode) {
    Py_XINCREF(decode);
    Py_XSETREF(g_decode, decode);
}

PyObject *args_new(PyObject *store, Py_ssize_t off, Py_ssize_t len) {
    Args *a = PyObject_New(Args, ArgsType);
    if (a == NULL) return NULL;
    a->store = Py_NewRef(store);
    a->off = off;
    a->len = len;
    a->dict = NULL;
    return (PyObject *)a;
}

static void args_dealloc(PyObject *self) {
    Args *a = (Args *)self;
    Py_XDECREF(a->store);
    Py_XDECREF(a->dict);
    free_instance(self);
}

/* The args' bytes, read into `stack` (STACK_ROOM bytes) or, when longer, into *heap (to
 * free); NULL with an exception. */
static const char *args_bytes(const Args *a, char *stack, char **heap) {
    char *into = stack;
    *heap = NULL;
    if (a->len > STACK_ROOM) {
        into = *heap = PyMem_Malloc((size_t)a->len);
        if (into == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    return store_get((Store *)a->store, a->off, a->len, into);
}

/* The decoded dict (borrowed), or NULL with the decoder's exception. */
static PyObject *decoded(Args *a) {
    if (a->dict != NULL) return a->dict;
    char stack[STACK_ROOM], *heap;
    const char *p = args_bytes(a, stack, &heap);
    PyObject *d = p == NULL ? NULL : json_decode(p, a->len, g_decode);
    PyMem_Free(heap);
    if (d != NULL && !PyDict_Check(d)) { /* cannot be: scan() made Args only for objects */
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "Args: the args bytes are not a JSON object");
        return NULL;
    }
    a->dict = d;
    return d;
}

static Py_ssize_t args_len(PyObject *self) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? -1 : PyDict_GET_SIZE(d);
}

static PyObject *args_getitem(PyObject *self, PyObject *key) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? NULL : PyObject_GetItem(d, key);
}

static int args_contains(PyObject *self, PyObject *key) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? -1 : PyDict_Contains(d, key);
}

static PyObject *args_iter(PyObject *self) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? NULL : PyObject_GetIter(d);
}

/* As LazyArgs.__eq__: equal to a mapping with the same items. */
static PyObject *args_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    PyObject *d = decoded((Args *)self);
    if (d == NULL) return NULL;
    if (Py_IS_TYPE(other, ArgsType)) {
        other = decoded((Args *)other);
        if (other == NULL) return NULL;
    }
    if (PyDict_Check(other) || !PyMapping_Check(other) || PyUnicode_Check(other) ||
        PyTuple_Check(other) || PyList_Check(other))
        return PyObject_RichCompare(d, other, op);
    PyObject *items = PyMapping_Items(other), *as_dict = NULL;
    if (items != NULL) {
        as_dict = PyDict_New();
        if (as_dict != NULL && PyDict_MergeFromSeq2(as_dict, items, 1) < 0) Py_CLEAR(as_dict);
        Py_DECREF(items);
    }
    if (as_dict == NULL) return NULL;
    PyObject *out = PyObject_RichCompare(d, as_dict, op);
    Py_DECREF(as_dict);
    return out;
}

static PyObject *args_repr(PyObject *self) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? NULL : PyUnicode_FromFormat("Args(%R)", d);
}

static PyObject *args_get(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc < 1 || argc > 2) {
        PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
        return NULL;
    }
    PyObject *d = decoded((Args *)self);
    if (d == NULL) return NULL;
    PyObject *v = PyDict_GetItemWithError(d, argv[0]);
    if (v == NULL && PyErr_Occurred()) return NULL;
    return Py_NewRef(v != NULL ? v : argc == 2 ? argv[1] : Py_None);
}

#define DICT_VIEW(name)                                                                   \
    static PyObject *args_##name(PyObject *self, PyObject *Py_UNUSED(ignored)) {          \
        PyObject *d = decoded((Args *)self);                                              \
        return d == NULL ? NULL : PyObject_CallMethod(d, #name, NULL);                    \
    }
DICT_VIEW(keys)
DICT_VIEW(items)
DICT_VIEW(values)

/* Pickled (and copied) as its dict: readers take any mapping. */
static PyObject *args_reduce(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *d = decoded((Args *)self);
    return d == NULL ? NULL : Py_BuildValue("(O(O))", (PyObject *)&PyDict_Type, d);
}

static PyObject *args_raw(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    Args *a = (Args *)self;
    char stack[STACK_ROOM], *heap;
    const char *p = args_bytes(a, stack, &heap);
    PyObject *out = p == NULL ? NULL : PyBytes_FromStringAndSize(p, a->len);
    PyMem_Free(heap);
    return out;
}

/* The raw bytes of "Input Dims", "Input type" and "Concrete Inputs" (b"" when absent; the
 * last of a repeated key, as stdlib json keeps it); None for an escaped key, which the
 * decoder alone reads right. */
static PyObject *args_shapes(PyObject *self, PyObject *Py_UNUSED(ignored)) {
    static const char *const keys[3] = {"Input Dims", "Input type", "Concrete Inputs"};
    Args *a = (Args *)self;
    char stack[STACK_ROOM], *heap;
    const char *p = args_bytes(a, stack, &heap), *at[3];
    Py_ssize_t len[3];
    PyObject *out;
    if (p == NULL)
        out = NULL;
    else if (object_fields(p, a->len, keys, 3, at, len) != 0)
        out = Py_NewRef(Py_None);
    else
        out = Py_BuildValue("(y#y#y#)", at[0], len[0], at[1], len[1], at[2], len[2]);
    PyMem_Free(heap);
    return out;
}

static PyMethodDef args_methods[] = {
    {"get", (PyCFunction)(void (*)(void))args_get, METH_FASTCALL, "As dict.get."},
    {"keys", args_keys, METH_NOARGS, "As dict.keys."},
    {"items", args_items, METH_NOARGS, "As dict.items."},
    {"values", args_values, METH_NOARGS, "As dict.values."},
    {"__reduce__", args_reduce, METH_NOARGS, NULL},
    {"raw", args_raw, METH_NOARGS, "The JSON bytes of the object, copied out."},
    {"shapes", args_shapes, METH_NOARGS,
     "The raw bytes of Input Dims, Input type and Concrete Inputs (see lazyjson.shapes_key)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot args_slots[] = {
    {Py_tp_dealloc, args_dealloc},
    {Py_tp_repr, args_repr},
    {Py_mp_length, args_len},
    {Py_mp_subscript, args_getitem},
    {Py_sq_contains, args_contains},
    {Py_tp_hash, PyObject_HashNotImplemented},
    {Py_tp_doc, "An event's args object, decoded from the trace bytes when first read."},
    {Py_tp_richcompare, args_richcompare},
    {Py_tp_iter, args_iter},
    {Py_tp_methods, args_methods},
    {0, NULL},
};

PyType_Spec ArgsSpec = {"torchscope.ingest._native.Args", sizeof(Args), 0, NO_NEW, args_slots};
PyTypeObject *ArgsType;
