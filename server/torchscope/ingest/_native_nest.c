/* _native.nest: who contains whom on each CPU thread, the sweep of nesting.build_nesting.
 *
 * The same items (thread, start, -end, rank, index), sorted in the same order, swept with
 * the same stack, and the same numbers written: op self times stay ints where the spans'
 * times are ints, as Python's arithmetic keeps them. The links go straight into the
 * caller's int32 arrays, which must all be -1 on entry (nesting._unlinked); the self times
 * are written to their list only at the end. An input it does not take (BAIL: a span time
 * that is not an int below 2**53 or a float, a track that is not an int in [0, 65536), a
 * mask of the runtime calls that is not a byte per call, a self time beyond 2**53 part way)
 * leaves the arrays all -1 and the list as it was, and the Python sweep runs instead.
 */
#include "_native.h"


enum { R_ANN = 0, R_PY = 1, R_OP = 2, R_RT = 3 }; /* sort rank at equal (start, end) */

/* 24 bytes: a 10M-event trace has 4M of them, and every page of them is a page fault. The
 * times are doubles (exact: an int time is below 2**53), with whether each was an int. */
typedef struct {
    double start, end;
    int32_t index;
    uint16_t track; /* a thread's track index: BAIL past 65535 (no trace has that many) */
    uint8_t rank;
    uint8_t ints; /* INT_START | INT_END: which times the trace wrote as ints */
} Item;

enum { I_START = 1, I_END = 2 };
#define MAX_TRACKS 65536

static inline Num num_of(double d, int is_int) {
    Num n = {is_int, is_int ? (long long)d : 0, d};
    return n;
}

static inline int cmp_items(const Item *a, const Item *b) {
    if (a->track != b->track) return a->track < b->track ? -1 : 1;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end > b->end ? -1 : 1; /* longest first: -end ascending */
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Merges the sorted runs items[lo, mid) and items[mid, hi) in place, through tmp, which
 * holds the shorter of the two (no two items compare equal: (rank, index) is unique). */
static void merge_runs(Item *items, Item *tmp, Py_ssize_t lo, Py_ssize_t mid, Py_ssize_t hi) {
    if (mid - lo <= hi - mid) { /* the left run to tmp, merged forwards */
        Py_ssize_t n = mid - lo, i = 0, j = mid, k = lo;
        memcpy(tmp, &items[lo], (size_t)n * sizeof(Item));
        while (i < n && j < hi) items[k++] = cmp_items(&items[j], &tmp[i]) < 0 ? items[j++] : tmp[i++];
        while (i < n) items[k++] = tmp[i++];
    } else { /* the right run to tmp, merged backwards */
        Py_ssize_t n = hi - mid, i = mid - 1, j = n - 1, k = hi - 1;
        memcpy(tmp, &items[mid], (size_t)n * sizeof(Item));
        while (i >= lo && j >= 0) items[k--] = cmp_items(&tmp[j], &items[i]) < 0 ? items[i--] : tmp[j--];
        while (j >= 0) items[k--] = tmp[j--];
    }
}

/* Sorts items (already grouped by thread, see collect) by cmp_items in time linear in n for
 * the input it gets: each thread's items are four runs already in order (each kind's spans
 * are sorted by start), which a natural merge sort joins in two passes. qsort would take
 * n log n, which shows at 10M events. tmp holds n / 2 + 1 items. */
static void sort_items(Item *items, Item *tmp, Py_ssize_t n) {
    for (;;) { /* one pass merges neighbouring runs pairwise; done when one run is left */
        Py_ssize_t runs = 0, lo = 0;
        while (lo < n) {
            Py_ssize_t mid = lo + 1, hi;
            while (mid < n && cmp_items(&items[mid - 1], &items[mid]) <= 0) mid++;
            hi = mid < n ? mid + 1 : n;
            while (hi < n && cmp_items(&items[hi - 1], &items[hi]) <= 0) hi++;
            if (mid < hi) merge_runs(items, tmp, lo, mid, hi);
            runs++;
            lo = hi;
        }
        if (runs <= 1) return;
    }
}

/* One span's item; BAIL unless it is a Span, or a tuple with numbers at 0, 1 and an int
 * track at 3. */
static int item_of(PyObject *span, int rank, Py_ssize_t index, Item *it) {
    Num start, end;
    long long t;
    if (index > INT32_MAX) return BAIL;
    if (Py_IS_TYPE(span, SpanType)) {
        span_fields(span, &start, &end, &t);
    } else {
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) < 4) return BAIL;
        PyObject *track = PyTuple_GET_ITEM(span, 3);
        if (!PyLong_CheckExact(track)) return BAIL;
        t = PyLong_AsLongLong(track);
        if (t == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return BAIL;
        }
        if (num_from(PyTuple_GET_ITEM(span, 0), &start) ||
            num_from(PyTuple_GET_ITEM(span, 1), &end))
            return BAIL;
    }
    if (t < 0 || t >= MAX_TRACKS) return BAIL;
    it->start = start.d;
    it->end = end.d;
    it->ints = (uint8_t)((start.is_int ? I_START : 0) | (end.is_int ? I_END : 0));
    it->track = (uint16_t)t;
    it->index = (int32_t)index;
    it->rank = (uint8_t)rank;
    return 0;
}

/* Every item, in two passes over the spans: the first counts each thread's items (at[t + 1]),
 * the second puts each at its thread's next slot, so that the items come grouped by thread
 * (in the order ann, python, op, runtime within one) with no second copy to sort them
 * there. wanted: the runtime calls to take (a byte each, nonzero: take), or NULL: all. */
static int visit(PyObject *lists[4], const char *wanted, Item *items, Py_ssize_t *at) {
    Item it;
    for (int rank = 0; rank < 4; rank++) {
        PyObject *spans = lists[rank];
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); i++) {
            if (rank == R_RT && wanted != NULL && !wanted[i]) continue;
            if (item_of(PyList_GET_ITEM(spans, i), rank, i, &it)) return BAIL;
            if (items == NULL) at[it.track + 1]++;
            else items[at[it.track]++] = it;
        }
    }
    return 0;
}

static int collect(PyObject *lists[4], const char *wanted, Item *items, Py_ssize_t *at) {
    if (visit(lists, wanted, NULL, at)) return BAIL;
    for (Py_ssize_t t = 1; t <= MAX_TRACKS; t++) at[t] += at[t - 1];
    return visit(lists, wanted, items, at);
}

typedef struct {
    double end;
    int32_t op, ann, py;
} Frame;

/* The outputs: the links straight into the caller's int32 arrays (all -1 on entry, so -1
 * where nothing encloses; -1 again if the sweep hands the spans back), the self times as C
 * numbers written back to their list at the end. */
enum { OP_PARENT, OP_ANN, OP_PY, RT_OP, RT_ANN, RT_PY, ANN_PARENT, ANN_OP, ANN_PY, PY_PARENT,
       N_LINKS };

enum { SELF_SET = 1, SELF_INT = 2 };

typedef struct {
    int32_t *link[N_LINKS];
    double *self; /* exact: an int self time beyond 2**53 BAILs */
    uint8_t *self_flags; /* SELF_SET once a child was taken off; SELF_INT: an int */
} Out;

#define SET(which, i, v) (out->link[which][i] = (v))

/* The sweep (over 60 lines, as build_nesting's is: one loop, every event once). */
static int sweep(const Item *items, Py_ssize_t n, double tol, Frame *stack, Out *out) {
    const Frame bottom = {Py_HUGE_VAL, -1, -1, -1};
    Py_ssize_t depth = 0;
    Frame top = bottom;
    long thread = 0;
    int started = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Item *it = &items[k];
        if (!started || it->track != thread) {
            started = 1;
            thread = it->track;
            depth = 0;
            top = bottom;
        }
        double start = it->start, end = it->end;
        while (depth > 0 && (top.end <= start || end > top.end + tol)) {
            depth--;
            top = depth > 0 ? stack[depth - 1] : bottom;
        }
        int32_t i = it->index;
        Frame next = top;
        next.end = end;
        switch (it->rank) {
        case R_OP: {
            SET(OP_PARENT, i, top.op);
            SET(OP_ANN, i, top.ann);
            SET(OP_PY, i, top.py);
            if (top.op >= 0) {
                Num e = num_of(end, it->ints & I_END), b = num_of(start, it->ints & I_START);
                Num len = sub(&e, &b);
                uint8_t flags = out->self_flags[top.op];
                Num self = num_of(out->self[top.op], flags & SELF_INT);
                self = sub(&self, &len);
                if (too_big(&self)) return BAIL;
                out->self[top.op] = self.d;
                out->self_flags[top.op] = (uint8_t)(SELF_SET | (self.is_int ? SELF_INT : 0));
            }
            next.op = i;
            stack[depth++] = top = next;
            break;
        }
        case R_RT:
            SET(RT_OP, i, top.op);
            SET(RT_ANN, i, top.ann);
            SET(RT_PY, i, top.py);
            break;
        case R_ANN:
            SET(ANN_PARENT, i, top.ann);
            SET(ANN_OP, i, top.op);
            SET(ANN_PY, i, top.py);
            next.ann = i;
            stack[depth++] = top = next;
            break;
        default:
            SET(PY_PARENT, i, top.py);
            next.py = i;
            stack[depth++] = top = next;
        }
    }
    return 0;
}

/* The self times into their list (the links are already in their arrays). */
static int write_back(PyObject *self_list, Out *out) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self_list); i++) {
        uint8_t flags = out->self_flags[i];
        if (!(flags & SELF_SET)) continue;
        Num n = num_of(out->self[i], flags & SELF_INT);
        PyObject *v = num_obj(&n);
        if (v == NULL || PyList_SetItem(self_list, i, v) < 0) return ERR;
    }
    return 0;
}

/* Everything allocated for one call, freed together. */
typedef struct {
    Item *items, *tmp;
    Frame *stack;
    Py_ssize_t *at; /* per thread, its first item (collect) */
    Out out;
} Work;

static void work_free(Work *w) {
    PyMem_Free(w->items);
    PyMem_Free(w->tmp);
    PyMem_Free(w->stack);
    PyMem_Free(w->at);
    PyMem_Free(w->out.self);
    PyMem_Free(w->out.self_flags);
}

static int work_alloc(Work *w, Py_ssize_t n_items, Py_buffer links[N_LINKS], Py_ssize_t n_ops) {
    w->items = PyMem_Malloc((n_items + 1) * sizeof(Item));
    w->tmp = PyMem_Malloc((n_items / 2 + 1) * sizeof(Item));
    w->stack = PyMem_Malloc((n_items + 1) * sizeof(Frame)); /* only its depth is touched */
    w->at = PyMem_Calloc(MAX_TRACKS + 1, sizeof(Py_ssize_t));
    int ok = w->items != NULL && w->tmp != NULL && w->stack != NULL && w->at != NULL;
    for (int i = 0; i < N_LINKS; i++) w->out.link[i] = (int32_t *)links[i].buf;
    w->out.self = PyMem_Malloc((n_ops + 1) * sizeof(double));
    w->out.self_flags = PyMem_Calloc(n_ops + 1, 1);
    ok = ok && w->out.self != NULL && w->out.self_flags != NULL;
    if (!ok) PyErr_NoMemory();
    return ok ? 0 : ERR;
}

/* Whether every link in the array is -1 (none yet, as nesting._unlinked makes them). */
static int unlinked(const Py_buffer *view) {
    const int32_t *v = (const int32_t *)view->buf;
    for (Py_ssize_t i = 0; i < view->len / (Py_ssize_t)sizeof(int32_t); i++)
        if (v[i] != -1) return 0;
    return 1;
}

/* Each link array the sweep writes must be int32, as long as the spans it indexes, and
 * all -1. */
static int sizes_match(PyObject *spans[4], Py_buffer views[N_LINKS], PyObject *self_list) {
    static const int of[N_LINKS] = {R_OP, R_OP, R_OP, R_RT, R_RT, R_RT, R_ANN, R_ANN, R_ANN,
                                    R_PY};
    for (int i = 0; i < N_LINKS; i++)
        if (views[i].itemsize != sizeof(int32_t) || views[i].format == NULL ||
            strcmp(views[i].format, "i") != 0 ||
            views[i].len != PyList_GET_SIZE(spans[of[i]]) * (Py_ssize_t)sizeof(int32_t) ||
            !unlinked(&views[i]))
            return 0;
    return PyList_GET_SIZE(self_list) == PyList_GET_SIZE(spans[R_OP]);
}

static void release(Py_buffer views[N_LINKS], int n) {
    for (int i = 0; i < n; i++) PyBuffer_Release(&views[i]);
}

/* The op self times to start from (their durations), as doubles with whether each is an int. */
static int read_self(PyObject *self_list, Out *out) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self_list); i++) {
        Num n;
        if (num_from(PyList_GET_ITEM(self_list, i), &n)) return BAIL;
        out->self[i] = n.d;
        out->self_flags[i] = n.is_int ? SELF_INT : 0;
    }
    return 0;
}

/* The runtime calls' mask (a byte per call), or NULL for None; BAIL for any other object or
 * a length that is not the calls'. */
static int mask_of(PyObject *wanted, Py_ssize_t n_rt, Py_buffer *view, const char **mask) {
    *mask = NULL;
    if (wanted == Py_None) return 0;
    if (PyObject_GetBuffer(wanted, view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return BAIL;
    }
    if (view->len != n_rt) {
        PyBuffer_Release(view);
        return BAIL;
    }
    *mask = (const char *)view->buf;
    return 0;
}

static int nest_into(PyObject *spans[4], const char *mask, Py_buffer views[N_LINKS],
                     PyObject *self_list, double tol) {
    Py_ssize_t n_rt = PyList_GET_SIZE(spans[R_RT]);
    if (mask != NULL) {
        Py_ssize_t taken = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans[R_RT]); i++) taken += mask[i] != 0;
        n_rt = taken;
    }
    Py_ssize_t n = PyList_GET_SIZE(spans[R_ANN]) + PyList_GET_SIZE(spans[R_PY]) +
                   PyList_GET_SIZE(spans[R_OP]) + n_rt;
    Work w;
    memset(&w, 0, sizeof(w));
    int st = work_alloc(&w, n, views, PyList_GET_SIZE(self_list));
    if (st == 0) st = read_self(self_list, &w.out);
    if (st == 0) st = collect(spans, mask, w.items, w.at);
    if (st == 0) {
        sort_items(w.items, w.tmp, n);
        st = sweep(w.items, n, tol, w.stack, &w.out);
        if (st == BAIL) /* a self time beyond 2**53, part way: the links as they came */
            for (int i = 0; i < N_LINKS; i++) memset(views[i].buf, 0xff, (size_t)views[i].len);
    }
    if (st == 0) st = write_back(self_list, &w.out);
    work_free(&w);
    return st;
}

PyObject *native_nest(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *spans[4], *wanted, *links[N_LINKS], *self_list;
    Py_buffer views[N_LINKS], mask_view;
    const char *mask;
    double tol;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O(OO!OOOOOOOOO)d:nest", &PyList_Type, &spans[R_ANN],
                          &PyList_Type, &spans[R_PY], &PyList_Type, &spans[R_OP], &PyList_Type,
                          &spans[R_RT], &wanted, &links[OP_PARENT], &PyList_Type, &self_list,
                          &links[OP_ANN], &links[OP_PY], &links[RT_OP], &links[RT_ANN],
                          &links[RT_PY], &links[ANN_PARENT], &links[ANN_OP], &links[ANN_PY],
                          &links[PY_PARENT], &tol))
        return NULL;
    for (int i = 0; i < N_LINKS; i++) {
        if (PyObject_GetBuffer(links[i], &views[i], PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
            release(views, i);
            return NULL;
        }
    }
    if (!sizes_match(spans, views, self_list) ||
        mask_of(wanted, PyList_GET_SIZE(spans[R_RT]), &mask_view, &mask)) {
        release(views, N_LINKS);
        Py_RETURN_NONE;
    }
    int st = nest_into(spans, mask, views, self_list, tol);
    if (mask != NULL) PyBuffer_Release(&mask_view);
    release(views, N_LINKS);
    if (st == ERR) return NULL;
    if (st == BAIL) Py_RETURN_NONE;
    Py_RETURN_TRUE;
}
