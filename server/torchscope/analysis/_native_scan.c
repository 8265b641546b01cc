/* _native.scan: the event array of a Kineto trace, normalised in one C pass.
 *
 * The native twin of fastload.accept_all over msgspec-decoded events (see fastload.py):
 * it fills an EventSink's lists with exactly the spans, tracks, thread names and [memory]
 * events that path makes (test_analysis_native holds the two equal), without building a
 * struct per event first. It takes a strict subset of JSON: any document it is not sure to
 * read exactly as msgspec does (escaped keys, surrogate escapes, integers beyond 2**53,
 * nesting deeper than 64, invalid UTF-8 in a field that is read, a field of an odd type,
 * invalid JSON anywhere) makes scan() return None, and the caller reads it the msgspec way,
 * which then keeps its own behaviour (skips, errors, the stdlib fallback).
 *
 * An event's "args" object is never decoded here: the span holds an Args over its bytes
 * in the trace (_native_args.c).
 */
#include "_native_scan.h"

PyObject *id_obj(const Id *id) {
    if (id->type == V_INT) return PyLong_FromLongLong(id->i);
    if (id->type == V_STR) {
        Py_INCREF(id->str->str);
        return id->str->str;
    }
    Py_RETURN_NONE;
}

static int same_id(const Id *a, const Id *b) {
    int ta = a->type == V_ABSENT ? V_NULL : a->type, tb = b->type == V_ABSENT ? V_NULL : b->type;
    if (ta != tb) return 0;
    if (ta == V_INT) return a->i == b->i;
    if (ta == V_STR) return a->str == b->str;
    return 1;
}

PyObject *pair(const Event *ev) {
    PyObject *pid = id_obj(&ev->pid), *tid = id_obj(&ev->tid);
    if (pid == NULL || tid == NULL) {
        Py_XDECREF(pid);
        Py_XDECREF(tid);
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, pid, tid);
    Py_DECREF(pid);
    Py_DECREF(tid);
    return key;
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
    if ((ph & F_I) && (name & F_MEMORY)) return memory_event(c, ev);
    return 0;
}


/* The args object of a span and its correlation (new references); BAIL/ERR, or 2: skip
 * the event (args neither an object nor null, which msgspec's _Head refuses). */
static int span_args(Ctx *c, const Event *ev, PyObject **args, PyObject **corr) {
    *args = NULL;
    *corr = NULL;
    if (ev->args == NULL || ev->args[0] == 'n') {
        *args = Py_NewRef(c->empty);
        *corr = Py_NewRef(Py_None);
        return 0;
    }
    if (ev->args[0] != '{') return 2;
    if (ev->corr == NULL) {
        *corr = Py_NewRef(Py_None);
    } else {
        Cur cc = {ev->corr, ev->corr + ev->corr_len};
        Num num;
        if (read_number(&cc, &num) == 0 && num.is_int && cc.p == cc.end) {
            *corr = PyLong_FromLongLong(num.i);
        } else {
            *corr = json_decode(ev->corr, ev->corr_len, c->decode_any);
            if (*corr == NULL) {
                PyErr_Clear();
                return BAIL;
            }
        }
        if (*corr == NULL) return ERR;
    }
    *args = make_args(c, ev->args, ev->args_len);
    return *args == NULL ? ERR : 0;
}

/* The track of a span's thread or stream, added on first sight. */
static long track_of(Ctx *c, State *s, const Event *ev, int kind, PyObject *args) {
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
        if (idx == NULL || k == NULL || PyDict_SetItem(c->track_ids, key, idx) < 0 ||
            PyList_Append(c->track_keys, key) < 0 || PyList_Append(c->track_kinds, k) < 0 ||
            PyList_Append(c->track_first_args, args) < 0)
            track = -1;
        Py_XDECREF(idx);
        Py_XDECREF(k);
    }
    Py_DECREF(key);
    if (track >= 0) {
        s->last_track = track;
        s->last_pid = ev->pid;
        s->last_tid = ev->tid;
    }
    return track;
}

/* One complete ("X") event, as fastload.accept_all takes it; 0, BAIL or ERR. */
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
    int kind = ev->cat->kind;
    if (kind < 0) return 0;
    if (ev->name == NULL || !ev->has_ts || !s->has_origin) {
        s->skipped++;
        return 0;
    }
    Num start = sub(&ev->ts, &s->origin), end;
    if (ev->has_dur) {
        end = add(&start, &ev->dur);
    } else {
        end.is_int = 0;
        end.d = as_double(&start) + 0.0;
    }
    if (too_big(&start) || too_big(&end)) return BAIL;
    PyObject *args, *corr;
    int st = span_args(c, ev, &args, &corr);
    if (st == 2) {
        s->skipped++;
        return 0;
    }
    if (st) {
        Py_XDECREF(args);
        Py_XDECREF(corr);
        return st;
    }
    if (!(in_range(&start) && num_le(&start, &end) && as_double(&end) < 1e18)) {
        Py_DECREF(args);
        Py_DECREF(corr);
        s->skipped++;
        return 0;
    }
    int cat = ev->cat->flags, name = ev->name->flags;
    if (kind == c->op_kind) {
        if (cat & F_LEGACY) {
            s->legacy = 1;
            if (name & F_ANN_PREFIX) kind = c->ann_kind;
        } else if (name & F_MARKER) {
            kind = c->ann_kind;
        }
    } else if (cat & F_LEGACY) {
        s->legacy = 1;
    }
    if (name & F_OVERHEAD) kind = c->overhead_kind;
    long track = track_of(c, s, ev, kind, args);
    if (track < 0) {
        Py_DECREF(args);
        Py_DECREF(corr);
        return ERR;
    }
    PyObject *items[6] = {num_obj(&start), num_obj(&end), Py_NewRef(ev->name->str),
                          PyLong_FromLong(track), args, corr};
    for (int i = 0; i < 6; i++) {
        if (items[i] == NULL) {
            for (int j = 0; j < 6; j++) Py_XDECREF(items[j]);
            return ERR;
        }
    }
    PyObject *span = new_tuple((PyTypeObject *)c->span_type, items, 6);
    if (span == NULL) return ERR;
    st = PyList_Append(c->lists[kind], span) < 0 ? ERR : 0;
    Py_DECREF(span);
    return st;
}

/* ---------------------------------------------------------------- scan() */

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

static int unpack(Ctx *c, PyObject *sink, PyObject *consts) {
    PyObject *lists = PyObject_GetAttrString(sink, "lists");
    if (lists == NULL) return ERR;
    int ok = PyList_Check(lists) && PyList_GET_SIZE(lists) == 12;
    for (int i = 0; ok && i < 12; i++) {
        c->lists[i] = PyList_GET_ITEM(lists, i);
        ok = PyList_Check(c->lists[i]);
    }
    Py_DECREF(lists); /* the sink keeps them alive */
    if (!ok) {
        PyErr_SetString(PyExc_TypeError, "sink.lists: 12 lists expected");
        return ERR;
    }
    struct { const char *name; PyObject **slot; } attrs[] = {
        {"track_ids", &c->track_ids}, {"track_kinds", &c->track_kinds},
        {"track_keys", &c->track_keys}, {"track_first_args", &c->track_first_args},
        {"thread_names", &c->thread_names}, {"memory_raw", &c->memory_raw},
    };
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
        PyObject *v = PyObject_GetAttrString(sink, attrs[i].name);
        if (v == NULL) return ERR;
        *attrs[i].slot = v;
        Py_DECREF(v); /* borrowed from the sink, which outlives the scan */
    }
    if (!PyArg_ParseTuple(consts, "O!O!OO!OO!O!OO!iii:consts", &PyDict_Type, &c->category_kind,
                          &PyFrozenSet_Type, &c->legacy_cats, &c->ann_prefixes,
                          &PyUnicode_Type, &c->marker, &c->overhead_names, &PyType_Type,
                          &c->span_type, &PyDict_Type, &c->empty,
                          &c->unset, &PyType_Type, &c->memory_type, &c->op_kind, &c->ann_kind,
                          &c->overhead_kind))
        return ERR;
    return 0;
}


/* scan()'s answer for a document read whole: (origin, skipped, not_events, legacy, where,
 * memory), where (stolen) just past the array (scan: an offset; scan_stream: the bytes
 * read after it), memory the MemoryEvents or None (then they are in memory_raw). */
static PyObject *finish(Ctx *c, const State *s, PyObject *where) {
    PyObject *memory;
    if (where == NULL) return NULL;
    if (c->mem_simple) {
        memory = memory_events(c, s);
    } else {
        int st = memory_raw(c);
        if (st == BAIL) {
            Py_DECREF(where);
            Py_RETURN_NONE;
        }
        memory = st == ERR ? NULL : Py_NewRef(Py_None);
    }
    PyObject *origin = s->has_origin ? num_obj(&s->origin) : Py_NewRef(Py_None);
    if (memory == NULL || origin == NULL) {
        Py_XDECREF(memory);
        Py_XDECREF(origin);
        Py_DECREF(where);
        return NULL;
    }
    return Py_BuildValue("(NLLONN)", origin, s->skipped, s->not_events,
                         s->legacy ? Py_True : Py_False, where, memory);
}

int scan_open(Ctx *c, PyObject *sink, PyObject *consts, PyObject *decode_any) {
    memset(c, 0, sizeof(*c));
    c->decode_any = decode_any;
    c->mem_simple = 1;
    args_set_decoder(decode_any);
    return unpack(c, sink, consts);
}

PyObject *scan_close(Ctx *c, int st, const State *s, PyObject *where) {
    PyObject *out = st == 0 ? finish(c, s, where) : st == BAIL ? Py_NewRef(Py_None) : NULL;
    table_free(&c->table);
    PyMem_Free(c->mem);
    Py_XDECREF(c->arena); /* the Args made keep their blocks */
    return out;
}

PyObject *native_scan(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *data, *sink, *consts, *decode_any;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OnnOOO:scan", &data, &lo, &hi, &sink, &consts, &decode_any))
        return NULL;
    Ctx c;
    if (scan_open(&c, sink, consts, decode_any) < 0) return NULL;
    Pin *pin = PyObject_New(Pin, &PinType);
    if (pin == NULL) return NULL;
    if (PyObject_GetBuffer(data, &pin->view, PyBUF_SIMPLE) < 0) {
        PyObject_Free(pin);
        return NULL;
    }
    c.pin = (PyObject *)pin;
    PyObject *out;
    const char *buf = pin->view.buf;
    if (lo < 0 || hi > pin->view.len || lo >= hi) {
        out = scan_close(&c, BAIL, NULL, NULL);
    } else {
        Cur cur = {buf + lo, buf + hi};
        State s;
        int st = scan_array(&c, &s, &cur, NULL);
        out = scan_close(&c, st, &s, st == 0 ? PyLong_FromSsize_t(cur.p - buf) : NULL);
    }
    Py_DECREF(pin); /* the Args made keep it */
    return out;
}
