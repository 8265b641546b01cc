/* _native.merge: the union of (start, end) pairs sorted by start, as intervals._merge makes
 * it: the same comparisons (Python's, done on doubles where both sides are floats or ints
 * below 2**53, where that is exact) and the very start and end objects of the pairs. */
#include "_native.h"

/* Python's a OP b, for the numbers the traces hold without a Python call. */
static int compare(PyObject *a, PyObject *b, int op) {
    Num x, y;
    if (num_from(a, &x) == 0 && num_from(b, &y) == 0) {
        double u = as_double(&x), v = as_double(&y);
        return op == Py_LE ? u <= v : u > v;
    }
    PyErr_Clear();
    return PyObject_RichCompareBool(a, b, op);
}

/* The two items of one pair (new references), unpacked as ``s, e = pair`` would. */
static int unpack2(PyObject *pair, PyObject **s, PyObject **e) {
    if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
        *s = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        *e = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        return 0;
    }
    PyObject *seq = PySequence_Tuple(pair);
    if (seq == NULL) return -1;
    if (PyTuple_GET_SIZE(seq) != 2) {
        PyErr_Format(PyExc_ValueError, "expected 2 values to unpack, got %zd",
                     PyTuple_GET_SIZE(seq));
        Py_DECREF(seq);
        return -1;
    }
    *s = Py_NewRef(PyTuple_GET_ITEM(seq, 0));
    *e = Py_NewRef(PyTuple_GET_ITEM(seq, 1));
    Py_DECREF(seq);
    return 0;
}

static int flush(PyObject *starts, PyObject *ends, PyObject *lo, PyObject *hi) {
    return PyList_Append(starts, lo) < 0 || PyList_Append(ends, hi) < 0 ? -1 : 0;
}

PyObject *native_merge(PyObject *Py_UNUSED(module), PyObject *pairs) {
    PyObject *it = PyObject_GetIter(pairs), *starts = PyList_New(0), *ends = PyList_New(0);
    PyObject *lo = NULL, *hi = NULL, *pair, *s, *e;
    int ok = it != NULL && starts != NULL && ends != NULL;
    while (ok && (pair = PyIter_Next(it)) != NULL) {
        ok = unpack2(pair, &s, &e) == 0;
        Py_DECREF(pair);
        if (!ok) break;
        if (lo == NULL) {
            lo = s;
            hi = e;
            continue;
        }
        int within = compare(s, hi, Py_LE), longer = within > 0 ? compare(e, hi, Py_GT) : 0;
        ok = within >= 0 && longer >= 0;
        if (ok && within) {
            if (longer) Py_SETREF(hi, Py_NewRef(e));
        } else if (ok) {
            ok = flush(starts, ends, lo, hi) == 0;
            Py_SETREF(lo, Py_NewRef(s));
            Py_SETREF(hi, Py_NewRef(e));
        }
        Py_DECREF(s);
        Py_DECREF(e);
    }
    ok = ok && !PyErr_Occurred() && (lo == NULL || flush(starts, ends, lo, hi) == 0);
    Py_XDECREF(it);
    Py_XDECREF(lo);
    Py_XDECREF(hi);
    if (!ok) {
        Py_XDECREF(starts);
        Py_XDECREF(ends);
        return NULL;
    }
    return Py_BuildValue("(NN)", starts, ends);
}
