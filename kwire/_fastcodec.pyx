# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled codec engine: encodes and decodes generated message classes from their ``FIELDS`` metadata.

Built by setup.py when Cython and a C compiler are present; ``kwire.fastpath`` installs it into the
generated classes, and the pure-Python generated code stays the reference and the fallback.

Contracts:
1. Same bytes, same objects: for every input the pure-Python writer accepts, ``encode`` returns the same
   bytes; for every input the pure-Python reader accepts, ``decode`` returns an equal object.
2. Anything unusual falls back: any exception raised here (bad values, wrong types, unknown tagged fields
   to write, out-of-range numbers, malformed input) makes the caller rerun the pure-Python method, so
   errors, their types and their texts are always the pure path's. This engine therefore only has to be
   right on the success path and must never succeed where the pure path fails.
3. A program is built once per (class, version) from ``FIELDS`` (Kafka's MessageDataGenerator rules, see
   codegen/lower.py 1-7): regular fields in spec order, then the tag section in flexible versions.
4. Decoded objects are allocated without ``__init__`` and every slot is stored, as the pure readers do.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.long cimport PyLong_AsLongLong, PyLong_FromLong, PyLong_FromLongLong
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    int _PyBytes_Resize(PyObject** string, Py_ssize_t newsize) except -1
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except NULL
    bint PyLong_CheckExact(object o)
    bint PyLong_Check(object o)
    bint PyFloat_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    bint PyList_CheckExact(object o)
    unsigned long long PyLong_AsUnsignedLongLongMask(object o) except? -1
    object PyFloat_FromDouble(double v)
    object PyList_New(Py_ssize_t n)

cdef extern from *:
    """
    #include "structmember.h"
    /* A new, zero-filled instance of a heap type (no __init__; slots start NULL), as object.__new__. */
    static PyObject* kf_alloc(PyObject* cls) {
        return ((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, 0);
    }
    /* Byte offset of a __slots__ member, or -1 when d is not an object slot descriptor. */
    static Py_ssize_t kf_slot_offset(PyObject* d) {
        if (Py_TYPE(d) != &PyMemberDescr_Type) return -1;
        PyMemberDef* m = ((PyMemberDescrObject*)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return -1;
        return m->offset;
    }
    /* Borrowed slot value (NULL when unset). */
    static PyObject* kf_slot_get(PyObject* o, Py_ssize_t off) {
        return *(PyObject**)((char*)o + off);
    }
    static void kf_slot_set(PyObject* o, Py_ssize_t off, PyObject* v) {
        PyObject** p = (PyObject**)((char*)o + off);
        PyObject* old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
    }
    static void kf_list_set(PyObject* l, Py_ssize_t i, PyObject* v) {
        Py_INCREF(v);
        PyList_SET_ITEM(l, i, v);
    }
    static PyTypeObject* kf_type(PyObject* o) { return Py_TYPE(o); }
    /* 16 big-endian bytes of a non-negative int below 2**128 (a UUID's .int); -1 with OverflowError else. */
    static int kf_uuid_bytes(PyObject* n, unsigned char* out) {
    #if PY_VERSION_HEX >= 0x030D0000
        return _PyLong_AsByteArray((PyLongObject*)n, out, 16, 0, 0, 1);
    #else
        return _PyLong_AsByteArray((PyLongObject*)n, out, 16, 0, 0);
    #endif
    }
    """
    object kf_alloc(object cls)
    Py_ssize_t kf_slot_offset(object d)
    PyObject* kf_slot_get(object o, Py_ssize_t off)
    void kf_slot_set(object o, Py_ssize_t off, object v)
    void kf_list_set(object l, Py_ssize_t i, object v)
    void* kf_type(object o)
    int kf_uuid_bytes(object n, unsigned char* out) except -1


class Bail(Exception):
    """Internal: this engine declines an input; the caller reruns the pure-Python method (contract 2)."""


# ---- field kinds and default kinds ----------------------------------------------------------------------
cdef enum:
    K_BOOL = 0
    K_INT8 = 1
    K_INT16 = 2
    K_UINT16 = 3
    K_INT32 = 4
    K_UINT32 = 5
    K_INT64 = 6
    K_FLOAT64 = 7
    K_UUID = 8
    K_STRING = 9
    K_BYTES = 10
    K_STRUCT = 11
    K_ARRAY = 12

_KINDS = {
    "bool": K_BOOL, "int8": K_INT8, "int16": K_INT16, "uint16": K_UINT16, "int32": K_INT32,
    "uint32": K_UINT32, "int64": K_INT64, "float64": K_FLOAT64, "uuid": K_UUID, "string": K_STRING,
    "bytes": K_BYTES, "records": K_BYTES,
}
cdef int[9] _SIZES = [1, 1, 2, 2, 4, 4, 8, 8, 16]

cdef enum:
    D_NONE = 0    # default None: non-default iff not None
    D_LEN = 1     # arrays, bytes, records: non-default iff None or non-empty
    D_BOOL = 2    # non-default iff truthiness differs
    D_STRUCT = 3  # field by field, plus unknown tagged fields
    D_EQ = 4      # non-default iff !=

# Set by kwire.fastpath: the UUID cache and constructor shared with the pure readers.
cdef dict _UUID_CACHE = {}
cdef object _uuid_from_bytes = None
cdef object _UUID_TYPE = None
cdef long fallbacks = 0


def configure(dict uuid_cache, uuid_from_bytes, uuid_type):
    global _UUID_CACHE, _uuid_from_bytes, _UUID_TYPE
    _UUID_CACHE = uuid_cache
    _uuid_from_bytes = uuid_from_bytes
    _UUID_TYPE = uuid_type


def fallback_count():
    """How many calls the engine declined so far (each reran the pure-Python method)."""
    return fallbacks


# ---- default values (per struct class, every field regardless of version) ---------------------------
cdef class Dflt:
    cdef object attr
    cdef Py_ssize_t off
    cdef int dkind
    cdef object value        # the default (shared when immutable; a list/struct is rebuilt per use)
    cdef bint fresh_list     # value is [] (a new list per decoded object)
    cdef bint same_is_default  # immutable value equal to itself: ``x is value`` means x is the default
    cdef Defaults sub        # D_STRUCT


cdef class Defaults:
    cdef object cls
    cdef tuple items         # Dflt for every field
    cdef Py_ssize_t unk_off


cdef dict _DEFAULTS = {}


cdef Py_ssize_t _offset(object cls, str attr) except -2:
    d = cls.__dict__.get(attr)
    if d is None:
        return -1
    return kf_slot_offset(d)


cdef Defaults defaults_of(object cls):
    cdef Defaults ds = _DEFAULTS.get(cls)
    if ds is not None:
        return ds
    ds = Defaults()
    ds.cls = cls
    ds.unk_off = _offset(cls, "unknown_tagged_fields")
    if ds.unk_off < 0:
        raise Bail("no slot")
    probe = cls()
    items = []
    cdef Dflt it
    for fi in cls.FIELDS:
        it = Dflt()
        it.attr = fi.attr
        it.off = _offset(cls, fi.attr)
        if it.off < 0:
            raise Bail("no slot")
        v = getattr(probe, fi.attr)
        it.value = v
        if v is None:
            it.dkind = D_NONE
        elif fi.struct is not None and not fi.type.startswith("[]"):
            if type(v) is not fi.struct:
                raise Bail("unexpected struct default")
            it.dkind = D_STRUCT
            it.sub = defaults_of(fi.struct)
        elif fi.type.startswith("[]") or fi.type in ("bytes", "records"):
            if type(v) is list:
                if v:
                    raise Bail("non-empty default list")
                it.fresh_list = True
            elif type(v) is not bytes:
                raise Bail("unexpected default")
            it.dkind = D_LEN
        elif fi.type == "bool":
            it.dkind = D_BOOL
        else:
            it.dkind = D_EQ
        it.same_is_default = it.dkind != D_STRUCT and type(v) in (int, bool, str, bytes, type(None), _UUID_TYPE)
        items.append(it)
    ds.items = tuple(items)
    _DEFAULTS[cls] = ds  # only complete tables are shared
    return ds


cdef object make_default(Dflt it):
    if it.dkind == D_STRUCT:
        return new_default(it.sub)
    if it.fresh_list:
        return []
    return it.value


cdef object new_default(Defaults ds):
    obj = kf_alloc(ds.cls)
    cdef Dflt it
    for it in ds.items:
        kf_slot_set(obj, it.off, make_default(it))
    kf_slot_set(obj, ds.unk_off, [])
    return obj


cdef inline object get_attr(object obj, object attr, Py_ssize_t off, void* cls):
    """``obj.<attr>``: straight from the slot when obj is exactly the generated class."""
    cdef PyObject* v
    if kf_type(obj) == cls:
        v = kf_slot_get(obj, off)
        if v == NULL:
            raise Bail("unset slot")
        return <object>v
    return getattr(obj, attr)


cdef bint nondefault(object x, Dflt it) except -1:
    """Kafka writes a tagged field only when it differs from its default (codegen/names.py nondefault)."""
    cdef Dflt g
    cdef Defaults ds
    if it.same_is_default and x is it.value:
        return False
    if it.dkind == D_NONE:
        return x is not None
    if it.dkind == D_LEN:
        return x is None or len(x) != 0
    if it.dkind == D_BOOL:
        return bool(x) != bool(it.value)
    if it.dkind == D_STRUCT:
        if x is None:
            return True
        ds = it.sub
        for g in ds.items:
            if nondefault(get_attr(x, g.attr, g.off, <void*>ds.cls), g):
                return True
        return bool(get_attr(x, "unknown_tagged_fields", ds.unk_off, <void*>ds.cls))
    return x != it.value


# ---- programs -------------------------------------------------------------------------------------------
cdef class Field:
    cdef object attr
    cdef Py_ssize_t off
    cdef int kind
    cdef int elem            # element kind of an array
    cdef bint nullable
    cdef bint compact
    cdef int tag
    cdef Prog sub            # struct / struct-array element program
    cdef Dflt dflt


cdef class Prog:
    cdef object cls
    cdef void* clsp
    cdef bint flexible
    cdef tuple regular       # Field, spec order
    cdef tuple tagged        # Field, ascending tag
    cdef dict by_tag         # tag -> Field
    cdef frozenset invalid   # tags of known fields not tagged in this version
    cdef tuple absent_checks # Dflt of non-ignorable fields absent in this version (must hold defaults)
    cdef tuple absent        # Dflt of every field absent in this version (decode sets them)
    cdef Py_ssize_t unk_off
    cdef Py_ssize_t size_hint  # the last encoding's size: the next buffer starts that big (no regrowth)


cdef bint _in(object rng, int v):
    return rng is not None and rng[0] <= v <= rng[1]


cdef Prog build_prog(object cls, int v, bint flexible, dict memo):
    key = (cls, v)
    cdef Prog pr = memo.get(key)
    if pr is not None:
        return pr
    cdef Defaults ds = defaults_of(cls)
    pr = Prog()
    memo[key] = pr
    pr.cls = cls
    pr.clsp = <void*>cls
    pr.flexible = flexible
    pr.unk_off = ds.unk_off
    regular, tagged, checks, absent, invalid = [], [], [], [], []
    cdef Field f
    cdef int i = 0
    for fi in cls.FIELDS:
        it = ds.items[i]
        i += 1
        if not _in(fi.versions, v):
            absent.append(it)
            if not fi.ignorable:
                checks.append(it)
            if fi.tag is not None:
                invalid.append(fi.tag)
            continue
        f = Field()
        f.attr = fi.attr
        f.off = (<Dflt>it).off
        f.dflt = it
        f.nullable = _in(fi.nullable_versions, v)
        # a field-level flexibleVersions override decides compactness on its own (codegen/lower_base.compact)
        f.compact = flexible and (not fi.flexible_override or _in(fi.flexible_versions, v))
        t = fi.type
        if t.startswith("[]"):
            f.kind = K_ARRAY
            e = t[2:]
            if fi.struct is not None:
                f.elem = K_STRUCT
                f.sub = build_prog(fi.struct, v, flexible, memo)
            elif e in _KINDS:
                f.elem = _KINDS[e]
            else:
                raise Bail(f"unknown element type {e}")
        elif fi.struct is not None:
            f.kind = K_STRUCT
            f.sub = build_prog(fi.struct, v, flexible, memo)
        elif t in _KINDS:
            f.kind = _KINDS[t]
        else:
            raise Bail(f"unknown type {t}")
        if _in(fi.tagged_versions, v):
            if not flexible or fi.tag is None:
                raise Bail("tagged field outside flexible versions")
            f.tag = fi.tag
            tagged.append(f)
        else:
            f.tag = -1
            if fi.tag is not None:
                invalid.append(fi.tag)
            regular.append(f)
    tagged.sort(key=lambda x: (<Field>x).tag)
    pr.regular = tuple(regular)
    pr.tagged = tuple(tagged)
    pr.by_tag = {(<Field>x).tag: x for x in tagged}
    pr.invalid = frozenset(invalid)
    pr.absent_checks = tuple(checks)
    pr.absent = tuple(absent)
    return pr


# ---- encoding -------------------------------------------------------------------------------------------
cdef struct Out:
    PyObject* obj    # the bytes object being filled (owned)
    char* p
    Py_ssize_t n
    Py_ssize_t cap


cdef int out_init(Out* o, Py_ssize_t cap) except -1:
    b = PyBytes_FromStringAndSize(NULL, cap)
    Py_INCREF(b)
    o.obj = <PyObject*>b
    o.p = PyBytes_AS_STRING(b)
    o.n = 0
    o.cap = cap
    return 0


cdef void out_free(Out* o):
    Py_XDECREF(o.obj)
    o.obj = NULL


cdef int out_grow(Out* o, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap = o.cap * 2
    if cap < o.n + need + 256:
        cap = o.n + need + 256
    _PyBytes_Resize(&o.obj, cap)
    o.p = PyBytes_AS_STRING(<object>o.obj)
    o.cap = cap
    return 0


cdef inline char* room(Out* o, Py_ssize_t k) except NULL:
    if o.n + k > o.cap:
        out_grow(o, k)
    cdef char* at = o.p + o.n
    o.n += k
    return at


cdef object out_finish(Out* o):
    if o.n != o.cap:
        _PyBytes_Resize(&o.obj, o.n)
    res = <object>o.obj
    Py_DECREF(res)
    o.obj = NULL
    return res


cdef inline void be16(char* p, uint16_t v):
    p[0] = <char>(v >> 8)
    p[1] = <char>v


cdef inline void be32(char* p, uint32_t v):
    p[0] = <char>(v >> 24)
    p[1] = <char>(v >> 16)
    p[2] = <char>(v >> 8)
    p[3] = <char>v


cdef inline void be64(char* p, uint64_t v):
    be32(p, <uint32_t>(v >> 32))
    be32(p + 4, <uint32_t>v)


cdef int put_uvarint(Out* o, uint64_t v) except -1:
    if v > 0xFFFFFFFF:
        raise Bail("uvarint out of range")
    cdef char* at
    if v < 0x80:
        at = room(o, 1)
        at[0] = <char>v
        return 0
    while v >= 0x80:
        at = room(o, 1)
        at[0] = <char>((v & 0x7F) | 0x80)
        v >>= 7
    at = room(o, 1)
    at[0] = <char>v
    return 0


cdef inline int put_byte(Out* o, int b) except -1:
    cdef char* at = room(o, 1)
    at[0] = <char>b
    return 0


cdef int64_t as_int(object x, int64_t lo, int64_t hi) except? -1:
    if not PyLong_Check(x):
        raise Bail("not an int")
    cdef int64_t v = PyLong_AsLongLong(x)
    if v < lo or v > hi:
        raise Bail("out of range")
    return v


cdef int put_fixed(Out* o, int kind, object x) except -1:
    cdef char* at
    cdef double dv
    cdef uint64_t bits
    if kind == K_INT32:
        be32(room(o, 4), <uint32_t>as_int(x, -2147483648, 2147483647))
    elif kind == K_INT16:
        be16(room(o, 2), <uint16_t>as_int(x, -32768, 32767))
    elif kind == K_INT64:
        if not PyLong_Check(x):
            raise Bail("not an int")
        be64(room(o, 8), <uint64_t>PyLong_AsLongLong(x))
    elif kind == K_INT8:
        put_byte(o, <int>as_int(x, -128, 127))
    elif kind == K_BOOL:
        if x is True:
            put_byte(o, 1)
        elif x is False:
            put_byte(o, 0)
        else:
            raise Bail("not a bool")
    elif kind == K_UINT16:
        be16(room(o, 2), <uint16_t>as_int(x, 0, 65535))
    elif kind == K_UINT32:
        be32(room(o, 4), <uint32_t>as_int(x, 0, 4294967295))
    elif kind == K_FLOAT64:
        if not PyFloat_CheckExact(x):
            raise Bail("not a float")
        dv = PyFloat_AS_DOUBLE(x)
        memcpy(&bits, &dv, 8)
        be64(room(o, 8), bits)
    elif kind == K_UUID:
        if type(x) is not _UUID_TYPE:
            raise Bail("not a UUID")
        n = x.int
        if not PyLong_CheckExact(n):
            raise Bail("bad UUID")
        kf_uuid_bytes(n, <unsigned char*>room(o, 16))
    else:
        raise Bail("not fixed")
    return 0


cdef int put_len(Out* o, Py_ssize_t n, bint compact, bint short) except -1:
    if compact:
        if n < 127:
            put_byte(o, <int>(n + 1))
        else:
            put_uvarint(o, <uint64_t>(n + 1))
    elif short:
        be16(room(o, 2), <uint16_t>n)
    else:
        if n > 2147483647:
            raise Bail("too long")
        be32(room(o, 4), <uint32_t>n)
    return 0


cdef int put_string(Out* o, object x, bint compact) except -1:
    if not PyUnicode_CheckExact(x):
        raise Bail("not a str")
    cdef Py_ssize_t n
    cdef const char* s = PyUnicode_AsUTF8AndSize(x, &n)
    if n > 32767:
        raise Bail("string too long")
    put_len(o, n, compact, True)
    memcpy(room(o, n), s, n)
    return 0


cdef int put_bytes(Out* o, object x, bint compact) except -1:
    if not PyBytes_CheckExact(x):
        raise Bail("not bytes")
    cdef Py_ssize_t n = PyBytes_GET_SIZE(x)
    put_len(o, n, compact, False)
    memcpy(room(o, n), PyBytes_AS_STRING(x), n)
    return 0


cdef int put_value(Out* o, Field f, object x, bint in_tag) except -1:
    cdef int k = f.kind
    cdef Py_ssize_t n, i
    cdef PyObject* e
    if k <= K_UUID:
        return put_fixed(o, k, x)
    if x is None:
        if not f.nullable:
            raise Bail("None in a non-nullable field")
        if k == K_STRUCT:
            put_byte(o, 0 if in_tag else 0xFF)
        elif f.compact:
            put_byte(o, 0)
        elif k == K_STRING:
            be16(room(o, 2), 0xFFFF)
        else:
            be32(room(o, 4), 0xFFFFFFFF)
        return 0
    if k == K_STRUCT:
        if f.nullable:
            put_byte(o, 1)
        return put_struct(o, f.sub, x)
    if k == K_STRING:
        return put_string(o, x, f.compact)
    if k == K_BYTES:
        return put_bytes(o, x, f.compact)
    # arrays
    if not PyList_CheckExact(x):
        raise Bail("not a list")
    n = PyList_GET_SIZE(x)
    put_len(o, n, f.compact, False)
    k = f.elem
    if k == K_STRUCT:
        for i in range(n):
            put_struct(o, f.sub, <object>PyList_GET_ITEM(x, i))
    elif k <= K_UUID:
        for i in range(n):
            put_fixed(o, k, <object>PyList_GET_ITEM(x, i))
    elif k == K_STRING:
        for i in range(n):
            put_string(o, <object>PyList_GET_ITEM(x, i), f.compact)
    else:
        for i in range(n):
            put_bytes(o, <object>PyList_GET_ITEM(x, i), f.compact)
    return 0


cdef int put_struct(Out* o, Prog pr, object obj) except -1:
    cdef Field f
    cdef Dflt it
    cdef Out sub
    cdef void* clsp = pr.clsp
    for it in pr.absent_checks:
        if nondefault(get_attr(obj, it.attr, it.off, clsp), it):
            raise Bail("non-default absent field")
    for f in pr.regular:
        put_value(o, f, get_attr(obj, f.attr, f.off, clsp), False)
    unk = get_attr(obj, "unknown_tagged_fields", pr.unk_off, clsp)
    if type(unk) is not list or PyList_GET_SIZE(unk) != 0:
        raise Bail("unknown tagged fields are written by the pure path")
    if not pr.flexible:
        return 0
    if not pr.tagged:
        return put_byte(o, 0)
    cdef Py_ssize_t count = 0
    for f in pr.tagged:
        if nondefault(get_attr(obj, f.attr, f.off, clsp), f.dflt):
            count += 1
    put_uvarint(o, <uint64_t>count)
    if count == 0:
        return 0
    for f in pr.tagged:
        x = get_attr(obj, f.attr, f.off, clsp)
        if not nondefault(x, f.dflt):
            continue
        out_init(&sub, 64)
        try:
            put_value(&sub, f, x, True)
            put_uvarint(o, <uint64_t>f.tag)
            put_uvarint(o, <uint64_t>sub.n)
            memcpy(room(o, sub.n), sub.p, sub.n)
        finally:
            out_free(&sub)
    return 0


cpdef bytes encode(Prog pr, object obj):
    cdef Out o
    out_init(&o, pr.size_hint if pr.size_hint > 64 else 64)
    try:
        put_struct(&o, pr, obj)
        pr.size_hint = o.n if o.n < 65536 else 65536  # larger ones grow by realloc (no copy of big chunks)
        return out_finish(&o)
    finally:
        out_free(&o)


# ---- decoding -------------------------------------------------------------------------------------------
cdef struct In:
    const uint8_t* d
    Py_ssize_t n
    Py_ssize_t p


cdef inline const uint8_t* take(In* r, Py_ssize_t k) except NULL:
    if k < 0 or k > r.n - r.p:
        raise Bail("truncated")
    cdef const uint8_t* at = r.d + r.p
    r.p += k
    return at


cdef inline uint32_t ld32(const uint8_t* a):
    return (<uint32_t>a[0] << 24) | (<uint32_t>a[1] << 16) | (<uint32_t>a[2] << 8) | a[3]


cdef inline uint64_t ld64(const uint8_t* a):
    return (<uint64_t>ld32(a) << 32) | ld32(a + 4)


cdef int64_t get_uvarint(In* r) except? -1:
    """Kafka's unsigned varint: one to five bytes, the fifth without a continuation bit."""
    cdef int64_t v = 0
    cdef int shift = 0
    cdef uint8_t b
    for shift in range(0, 35, 7):
        b = take(r, 1)[0]
        v |= (<int64_t>(b & 0x7F)) << shift
        if b < 0x80:
            return v
    raise Bail("varint too long")


cdef object get_fixed(In* r, int kind):
    cdef const uint8_t* a
    cdef uint64_t bits
    cdef double dv
    if kind == K_INT32:
        return PyLong_FromLong(<int32_t>ld32(take(r, 4)))
    if kind == K_INT16:
        a = take(r, 2)
        return PyLong_FromLong(<int16_t>((a[0] << 8) | a[1]))
    if kind == K_INT64:
        return PyLong_FromLongLong(<int64_t>ld64(take(r, 8)))
    if kind == K_INT8:
        return PyLong_FromLong(<signed char>take(r, 1)[0])
    if kind == K_BOOL:
        return take(r, 1)[0] != 0
    if kind == K_UINT16:
        a = take(r, 2)
        return PyLong_FromLong((a[0] << 8) | a[1])
    if kind == K_UINT32:
        return PyLong_FromLongLong(ld32(take(r, 4)))
    if kind == K_FLOAT64:
        bits = ld64(take(r, 8))
        memcpy(&dv, &bits, 8)
        return PyFloat_FromDouble(dv)
    # uuid: shared instances from the cache the pure readers use
    raw = PyBytes_FromStringAndSize(<const char*>take(r, 16), 16)
    u = _UUID_CACHE.get(raw)
    if u is None:
        u = _uuid_from_bytes(raw)
    return u


cdef int64_t get_len(In* r, bint compact, bint short) except? -2:
    """A length or count; -1 (or any negative) means null."""
    cdef const uint8_t* a
    if compact:
        return get_uvarint(r) - 1
    if short:
        a = take(r, 2)
        return <int16_t>((a[0] << 8) | a[1])
    return <int32_t>ld32(take(r, 4))


cdef object get_blob(In* r, int kind, int64_t ln):
    cdef const uint8_t* a
    if kind == K_STRING:
        if ln > 32767:
            raise Bail("string too long")
        a = take(r, <Py_ssize_t>ln)
        return PyUnicode_DecodeUTF8(<const char*>a, <Py_ssize_t>ln, NULL)
    a = take(r, <Py_ssize_t>ln)
    return PyBytes_FromStringAndSize(<const char*>a, <Py_ssize_t>ln)


cdef object get_value(In* r, Field f, bint in_tag):
    cdef int k = f.kind
    cdef int64_t ln, mk
    cdef Py_ssize_t i
    cdef int size
    if k <= K_UUID:
        return get_fixed(r, k)
    if k == K_STRUCT:
        if f.nullable:
            if in_tag:
                mk = get_uvarint(r)
                if mk == 0:
                    return None
            else:
                if take(r, 1)[0] >= 128:
                    return None
        return get_struct(r, f.sub)
    ln = get_len(r, f.compact, k == K_STRING)
    if ln < 0:
        if f.nullable:
            return None
        raise Bail("null in a non-nullable field")
    if k != K_ARRAY:
        return get_blob(r, k, ln)
    if ln > r.n - r.p:
        raise Bail("array longer than the input")
    k = f.elem
    lst = PyList_New(<Py_ssize_t>ln)
    if k == K_STRUCT:
        for i in range(<Py_ssize_t>ln):
            kf_list_set(lst, i, get_struct(r, f.sub))
    elif k <= K_UUID:
        if k != K_UUID and ln * _SIZES[k] > r.n - r.p:
            raise Bail("array longer than the input")
        for i in range(<Py_ssize_t>ln):
            kf_list_set(lst, i, get_fixed(r, k))
    else:
        for i in range(<Py_ssize_t>ln):
            mk = get_len(r, f.compact, k == K_STRING)
            if mk < 0:
                raise Bail("null array element")
            kf_list_set(lst, i, get_blob(r, k, mk))
    return lst


cdef object get_struct(In* r, Prog pr):
    obj = kf_alloc(pr.cls)
    cdef Field f
    cdef Dflt it
    cdef int64_t nt, tg, sz, te, j
    for f in pr.regular:
        kf_slot_set(obj, f.off, get_value(r, f, False))
    for it in pr.absent:
        kf_slot_set(obj, it.off, make_default(it))
    if not pr.flexible:
        kf_slot_set(obj, pr.unk_off, [])
        return obj
    for f in pr.tagged:
        kf_slot_set(obj, f.off, make_default(f.dflt))
    unk = []
    nt = get_uvarint(r)
    for j in range(nt):
        tg = get_uvarint(r)
        sz = get_uvarint(r)
        if sz > r.n - r.p:
            raise Bail("tagged field longer than the input")
        te = r.p + sz
        fo = pr.by_tag.get(tg) if pr.tagged else None
        if fo is not None:
            f = <Field>fo
            kf_slot_set(obj, f.off, get_value(r, f, True))
            if r.p != te:
                raise Bail("tagged field does not fill its size")
        elif tg in pr.invalid:
            raise Bail("tag not valid in this version")
        else:
            unk.append((tg, PyBytes_FromStringAndSize(<const char*>(r.d + r.p), <Py_ssize_t>sz)))
            r.p = <Py_ssize_t>te
    kf_slot_set(obj, pr.unk_off, unk)
    return obj


cpdef tuple decode(Prog pr, bytes data, Py_ssize_t offset):
    """(object, offset after it) for one message at ``offset`` of ``data``."""
    cdef In r
    r.d = <const uint8_t*>PyBytes_AS_STRING(data)
    r.n = PyBytes_GET_SIZE(data)
    if offset < 0 or offset > r.n:
        raise Bail("offset outside the input")
    r.p = offset
    obj = get_struct(&r, pr)
    return obj, r.p


# ---- per-class codecs and the methods installed into generated classes ------------------------------
cdef class Codec:
    """The compiled programs of one top-level class, built per version on first use."""
    cdef object cls
    cdef int lo
    cdef int hi
    cdef list progs            # index version - lo: Prog, False (declined) or None (not built yet)
    cdef dict memo
    cdef public object pure_encode
    cdef public object pure_write
    cdef public object pure_decode
    cdef public object pure_read

    def __init__(self, cls):
        self.cls = cls
        self.lo = cls.LOWEST_VERSION
        self.hi = cls.HIGHEST_VERSION
        self.progs = [None] * (self.hi - self.lo + 1)
        self.memo = {}

    cdef Prog prog(self, object version):
        if type(version) is not int:
            return None
        cdef Py_ssize_t v = version
        if v < self.lo or v > self.hi:
            return None
        p = self.progs[v - self.lo]
        if p is None:
            low = self.cls.LOWEST_FLEXIBLE_VERSION
            try:
                p = build_prog(self.cls, <int>v, low is not None and v >= low, self.memo)
            except Exception:
                p = False  # this version stays on the pure-Python code
                self.memo = {}  # drop any half-built program
            self.progs[v - self.lo] = p
        return p if p is not False else None

    def supported(self, int version):
        """Whether ``version`` runs compiled (False: this engine declines every call at that version)."""
        return self.prog(version) is not None


cdef dict _CODECS = {}


def register(cls):
    """Create (or return) the codec of a top-level generated class."""
    c = _CODECS.get(cls)
    if c is None:
        c = Codec(cls)
        _CODECS[cls] = c
    return c


cdef Codec codec_of(object t):
    c = _CODECS.get(t)
    if c is None:
        for base in t.__mro__:
            c = _CODECS.get(base)
            if c is not None:
                break
    return c


def fast_encode(self, version):
    """Compiled ``encode``: contract 2, anything declined reruns the pure-Python method."""
    global fallbacks
    cdef Codec c = codec_of(type(self))
    cdef Prog pr = c.prog(version)
    if pr is not None:
        try:
            return encode(pr, self)
        except Exception:
            pass
    fallbacks += 1
    return c.pure_encode(self, version)


def fast_write(self, out, version):
    global fallbacks
    cdef Codec c = codec_of(type(self))
    cdef Prog pr = c.prog(version)
    if pr is not None and type(out) is bytearray:
        try:
            data = encode(pr, self)
        except Exception:
            data = None
        if data is not None:
            out += data
            return
    fallbacks += 1
    c.pure_write(self, out, version)


def fast_decode(cls, data, version):
    global fallbacks
    cdef Codec c = codec_of(cls)
    cdef Prog pr = c.prog(version)
    cdef tuple res
    if pr is not None:
        try:
            raw = data if type(data) is bytes else bytes(data)
            res = decode(pr, raw, 0)
            if res[1] == PyBytes_GET_SIZE(raw):
                return res[0]
        except Exception:
            pass
    fallbacks += 1
    return c.pure_decode(data, version)


def fast_read(cls, data, offset, version):
    global fallbacks
    cdef Codec c = codec_of(cls)
    cdef Prog pr = c.prog(version)
    if pr is not None and type(offset) is int:
        try:
            raw = data if type(data) is bytes else bytes(data)
            return decode(pr, raw, offset)
        except Exception:
            pass
    fallbacks += 1
    return c.pure_read(data, offset, version)
