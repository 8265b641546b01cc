/* _native.scan_stream's normalising: the event array of a Kineto trace, in one C pass.
 *
 * The fast twin of the reference reader (sink.EventSink over stdlib json, reference.py): it
 * fills an EventSink's lists with exactly the spans, tracks, thread names and [memory]
 * events that reader makes (test_ingest_readers holds the two equal), reading the event
 * model's tables (kineto.py) that configure() was given at import. It takes a strict subset
 * of JSON: any document it is not sure to read exactly as the reference does (escaped keys,
 * surrogate escapes, integers beyond 2**53, nesting deeper than 64, invalid UTF-8 in a
 * field that is read, a field of an odd type, invalid JSON anywhere) makes the scan return
 * None, and the caller reads it the reference way, which words any error.
 *
 * An event's "args" object is never decoded here: its bytes go to the scan's Store
 * (_native_store.c) and the span keeps where (_native_span.c). What the scan is given and
 * hands back (configure, the sink, the window, the answer) is _native_setup.c's.
 */
#include "_native_scan.h"

static int same_id(const Id *a, const Id *b) {
    int ta = a->type == V_ABSENT ? V_NULL : a->type, tb = b->type == V_ABSENT ? V_NULL : b->type;
    if (ta != tb) return 0;
    if (ta == V_INT) return a->i == b->i;
    if (ta == V_STR) return a->str == b->str;
    return 1;
}


static int in_window(const Num *ts, double lo, double hi) {
    double t = as_double(ts);
    return lo <= t && t < hi;
}

static int other_event(Ctx *c, const Event *ev) {
    int ph = ev->ph->flags, name = ev->name ? ev->name->flags : 0;
    if (ev->args == NULL) return 0;
    if ((ph & F_M) && (name & F_THREAD_NAME)) {
        PyObject *a = json_decode(ev->args, ev->args_len, c->decode_any);
        if (a == NULL) {
            PyErr_Clear();
            return BAIL;
        }
        PyObject *label = PyDict_Check(a) ? PyDict_GetItemString(a, "name") : NULL;
        int st = 0;
        if (label != NULL && PyUnicode_Check(label)) {
            PyObject *key = pair(ev);
            st = key == NULL || PyDict_SetItem(c->thread_names, key, label) < 0 ? ERR : 0;
            Py_XDECREF(key);
        }
        Py_DECREF(a);
        return st;
    }
    if ((ph & F_I) && (name & F_MEMORY)) {
        if (c->windowed && !(ev->has_ts && in_window(&ev->ts, c->mem_lo, c->mem_hi))) return 0;
        return memory_event(c, ev);
    }
    return 0;
}


/* The value of one span key (a new reference): an int read here, anything else decoded;
 * None when absent. NULL with BAIL (the decoder left it) or ERR in *st. */
static PyObject *key_value(Ctx *c, const char *p, Py_ssize_t n, int *st) {
    if (p == NULL) return Py_NewRef(Py_None);
    Cur cc = {p, p + n};
    Num num;
    if (read_number(&cc, &num) == 0 && num.is_int && cc.p == cc.end) {
        PyObject *v = PyLong_FromLongLong(num.i);
        if (v == NULL) *st = ERR;
        return v;
    }
    PyObject *v = json_decode(p, n, c->decode_any);
    if (v == NULL) {
        PyErr_Clear();
        *st = BAIL;
    }
    return v;
}

/* The args object of a span and its span keys' values (new references in out[0] and
 * out[1..n_keys]); BAIL/ERR, or 2: skip the event (args neither an object nor null). */
static int span_args(Ctx *c, const Event *ev, PyObject **out) {
    int n = config.n_keys, st = 0;
    for (int k = 0; k <= n; k++) out[k] = NULL;
    if (ev->args != NULL && ev->args[0] != 'n' && ev->args[0] != '{') return 2;
    int absent = ev->args == NULL || ev->args[0] == 'n';
    for (int k = 0; k < n; k++) {
        out[k + 1] = absent ? Py_NewRef(Py_None) : key_value(c, ev->key_at[k], ev->key_len[k], &st);
        if (out[k + 1] == NULL) return st;
    }
    out[0] = absent ? Py_NewRef(c->empty) : make_args(c, ev->args, ev->args_len);
    return out[0] == NULL ? ERR : 0;
}

/* A compact span's args as an Args over its Store bytes (the last put), or the empty dict. */
static PyObject *compact_args(Ctx *c, const Event *ev) {
    if (ev->args == NULL || ev->args[0] == 'n') return Py_NewRef(c->empty);
    return args_new(c->store, c->last_off, ev->args_len);
}

/* The track of a span's thread or stream, added on first sight. */
static long track_of(Ctx *c, State *s, const Event *ev, int kind, PyObject *args) {
    /* args: the span's args object, or NULL for a compact span's (made here, for a new
     * track's first args, from its Store bytes) */
    if (s->last_track >= 0 && same_id(&ev->tid, &s->last_tid) && same_id(&ev->pid, &s->last_pid))
        return s->last_track;
    PyObject *key = pair(ev);
    if (key == NULL) return -1;
    PyObject *found = PyDict_GetItemWithError(c->track_ids, key);
    long track;
    if (found != NULL) {
        track = PyLong_AsLong(found);
    } else if (PyErr_Occurred()) {
        track = -1;
    } else {
        track = (long)PyList_GET_SIZE(c->track_keys);
        PyObject *idx = PyLong_FromLong(track), *k = PyLong_FromLong(kind);
        PyObject *first = args != NULL ? Py_NewRef(args) : compact_args(c, ev);
        if (idx == NULL || k == NULL || first == NULL ||
            PyDict_SetItem(c->track_ids, key, idx) < 0 || PyList_Append(c->track_keys, key) < 0 ||
            PyList_Append(c->track_kinds, k) < 0 || PyList_Append(c->track_first_args, first) < 0)
            track = -1;
        Py_XDECREF(idx);
        Py_XDECREF(k);
        Py_XDECREF(first);
    }
    Py_DECREF(key);
    if (track >= 0) {
        s->last_track = track;
        s->last_pid = ev->pid;
        s->last_tid = ev->tid;
    }
    return track;
}

/* The kind a span is filed under: its category's, with legacy annotations, line markers
 * and profiler overhead told apart by name (sets *legacy for a legacy category). */
static int final_kind(const Ctx *c, const Event *ev, int *legacy) {
    int kind = ev->cat->kind, cat = ev->cat->flags, name = ev->name->flags;
    *legacy = (cat & F_LEGACY) != 0;
    if (kind == c->op_kind && (((cat & F_LEGACY) && (name & F_ANN_PREFIX)) ||
                               (!(cat & F_LEGACY) && (name & F_MARKER))))
        kind = c->ann_kind;
    if (name & F_OVERHEAD) kind = c->overhead_kind;
    return kind;
}

static void drop(PyObject **items, int n) {
    for (int k = 0; k < n; k++) Py_XDECREF(items[k]);
}

/* complete_event's end for a compact Span (_native_span.c): the args bytes set aside in the
 * Store, the one span key (correlation) read; 0, BAIL or ERR. */
static int compact_span(Ctx *c, State *s, const Event *ev, int kind, int legacy, const Num *start,
                        const Num *end) {
    if (ev->args != NULL && ev->args[0] != 'n' && ev->args[0] != '{') {
        s->skipped++; /* args neither an object nor null */
        return 0;
    }
    int absent = ev->args == NULL || ev->args[0] == 'n', st = 0;
    PyObject *corr = absent ? Py_NewRef(Py_None) : key_value(c, ev->key_at[0], ev->key_len[0], &st);
    if (corr == NULL) return st;
    if (!(in_range(start) && num_le(start, end) && as_double(end) < 1e18)) {
        Py_DECREF(corr);
        s->skipped++;
        return 0;
    }
    c->last_off = absent ? 0 : store_put((Store *)c->store, ev->args, ev->args_len);
    long track = c->last_off < 0 ? -1 : track_of(c, s, ev, kind, NULL);
    PyObject *span = track < 0 ? NULL
                     : span_make(start, end, ev->name->str, track, absent ? NULL : c->store,
                                 c->last_off, absent ? 0 : ev->args_len, corr);
    Py_DECREF(corr);
    if (span == NULL) return PyErr_Occurred() ? ERR : BAIL; /* BAIL: beyond a Span */
    s->legacy |= legacy;
    st = PyList_Append(c->lists[kind], span) < 0 ? ERR : 0;
    Py_DECREF(span);
    return st;
}

/* One complete ("X") event, as sink.EventSink.accept takes it; 0, BAIL or ERR. */
static int complete_event(Ctx *c, State *s, const Event *ev) {
    if (ev->has_ts && (too_big(&ev->ts) || (ev->has_dur && too_big(&ev->dur)))) return BAIL;
    if (!s->has_origin && ev->has_ts && in_range(&ev->ts)) {
        s->has_origin = 1;
        s->origin = ev->ts;
    }
    if (ev->cat == NULL) {
        s->skipped++;
        return 0;
    }
    if (ev->cat->kind < 0) return 0;
    if (ev->name == NULL || !ev->has_ts || !s->has_origin) {
        s->skipped++;
        return 0;
    }
    int legacy, kind = final_kind(c, ev, &legacy);
    if (c->windowed && !in_window(&ev->ts, c->lo[kind], c->hi[kind])) return 0;
    Num start = sub(&ev->ts, &s->origin), end;
    if (ev->has_dur) {
        end = add(&start, &ev->dur);
    } else {
        end.is_int = 0;
        end.d = as_double(&start) + 0.0;
    }
    if (too_big(&start) || too_big(&end)) return BAIL;
    if (c->compact) return compact_span(c, s, ev, kind, legacy, &start, &end);
    /* start, end, name, track, args, then one value per span key */
    enum { FIXED = 4 };
    PyObject *items[FIXED + 1 + MAX_SPAN_KEYS];
    int n = FIXED + 1 + config.n_keys;
    int st = span_args(c, ev, items + FIXED);
    if (st == 2) {
        s->skipped++;
        return 0;
    }
    if (st) {
        drop(items + FIXED, n - FIXED);
        return st;
    }
    if (!(in_range(&start) && num_le(&start, &end) && as_double(&end) < 1e18)) {
        drop(items + FIXED, n - FIXED);
        s->skipped++;
        return 0;
    }
    s->legacy |= legacy;
    long track = track_of(c, s, ev, kind, items[FIXED]);
    if (track < 0) {
        drop(items + FIXED, n - FIXED);
        return ERR;
    }
    items[0] = num_obj(&start);
    items[1] = num_obj(&end);
    items[2] = Py_NewRef(ev->name->str);
    items[3] = PyLong_FromLong(track);
    for (int i = 0; i < FIXED; i++) {
        if (items[i] == NULL) {
            drop(items, n);
            return ERR;
        }
    }
    PyObject *span = new_tuple((PyTypeObject *)c->span_type, items, n);
    if (span == NULL) return ERR;
    st = PyList_Append(c->lists[kind], span) < 0 ? ERR : 0;
    Py_DECREF(span);
    return st;
}

/* ---------------------------------------------------------------- the array */

/* read_event, in a streaming scan with the event whole in the window: one that runs into
 * the window's end is read again with twice the bytes (reading has no effect but on the
 * string table, whose entries are the same each time). */
static int read_whole_event(Ctx *c, Cur *cur, Event *ev, Window *w) {
    if (w == NULL) return read_event(c, cur, ev);
    WS(cur); /* the blanks before it, which the comma's next_item may have left at the end */
    while (cur->p == cur->end && !w->eof) {
        const char *at = cur->p;
        if (window_fill(w, cur, &at, w->low) < 0) return ERR;
        WS(cur);
    }
    const char *start = cur->p;
    if (!w->eof && cur->end - start < w->low && window_fill(w, cur, &start, w->low) < 0)
        return ERR;
    int st = read_event(c, cur, ev);
    while (st == BAIL && !w->eof && cur->end - start < WINDOW_MOST) {
        cur->p = start;
        if (window_fill(w, cur, &start, 2 * (cur->end - start)) < 0) return ERR;
        st = read_event(c, cur, ev);
    }
    return st;
}

/* next_item over the array, in a streaming scan with more bytes read where it runs out. */
static int next_event(Cur *cur, Window *w) {
    const char *start = cur->p;
    int st = next_item(cur, ']');
    while (st == BAIL && w != NULL && !w->eof && cur->end - start < WINDOW_MOST) {
        cur->p = start;
        if (window_fill(w, cur, &start, w->low + 2 * (cur->end - start)) < 0) return ERR;
        st = next_item(cur, ']');
    }
    return st;
}

/* The event array at cur->p, read from memory (w NULL) or from a stream's window, with s
 * set up afresh. */
int scan_array(Ctx *c, State *s, Cur *cur, Window *w) {
    memset(s, 0, sizeof(*s));
    s->last_track = -1;
    if (c->preset_origin) {
        s->has_origin = 1;
        s->origin = c->origin0;
    }
    if (cur->p >= cur->end || *cur->p != '[') return BAIL;
    const char *start = cur->p;
    if (w != NULL && !w->eof && window_fill(w, cur, &start, w->low) < 0) return ERR;
    int st = enter(cur, ']'); /* past the end: the caller checks what follows it */
    if (st == 0) return BAIL; /* empty: the caller words it */
    Event ev;
    while (st == MORE) {
        st = read_whole_event(c, cur, &ev, w);
        if (st) return st;
        if (ev.ph == NULL) {
            s->not_events++;
        } else if (ev.ph->flags & F_X) {
            st = complete_event(c, s, &ev);
        } else {
            st = other_event(c, &ev);
        }
        if (st) return st;
        st = next_event(cur, w);
    }
    return st;
}
