# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled records-section loops of a v2 batch (the twins of kwire/record_codec.py's hot loops).

Built by setup.py beside kwire/_fastcodec.pyx; ``kwire.record_codec`` uses it when it is present and the
compiled path is selected (kwire/fastpath.py contract 2), and its pure-Python loops stay the reference.

Contracts:
1. Same result: ``encode_values`` returns the bytes the pure ``encode_values`` appends (joined), and
   ``decode_records`` returns records equal to the pure ``decode_records``' for the same input.
2. Decline, never differ: anything outside the common shape (a value that is not exactly ``bytes``, a record
   with headers, a varint over 9 bytes, any length or bound that does not check out) returns ``None`` and the
   caller reruns the pure loop, so errors and their texts are always the pure path's. This code therefore must
   never accept what the pure path rejects: every bound the pure path checks is checked here too, or stricter.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    bint PyBytes_CheckExact(object o)
    bint PyList_CheckExact(object o)

cdef object _BUILDER = None  # record_codec._RecordBuilder: Record's layout twin (record_codec documents it)
cdef object _RECORD = None
cdef object _NEW = object.__new__
cdef tuple _EMPTY = ()


def configure(builder, record):
    """Called once by kwire.record_codec with its Record class and that class's builder twin."""
    global _BUILDER, _RECORD
    _BUILDER = builder
    _RECORD = record


cdef inline Py_ssize_t _zz_len(int64_t v) noexcept:
    cdef uint64_t u = (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)
    cdef Py_ssize_t n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


cdef inline Py_ssize_t _put_zz(unsigned char* p, int64_t v) noexcept:
    cdef uint64_t u = (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)
    cdef Py_ssize_t i = 0
    while u >= 0x80:
        p[i] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        i += 1
    p[i] = <unsigned char>u
    return i + 1


def encode_values(values):
    """Records with offset deltas 0..n-1, timestamp delta 0, null key, no headers; None to decline (2)."""
    if not PyList_CheckExact(values):
        return None
    cdef list vals = <list>values
    cdef Py_ssize_t n = len(vals), i, vlen, body, total = 0
    cdef object v
    for i in range(n):
        v = vals[i]
        if not PyBytes_CheckExact(v):
            return None
        vlen = PyBytes_GET_SIZE(v)
        body = 4 + _zz_len(i) + _zz_len(vlen) + vlen  # attributes, ts delta, key length -1, header count
        total += _zz_len(body) + body
    out = PyBytes_FromStringAndSize(NULL, total)
    cdef unsigned char* p = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t pos = 0
    for i in range(n):
        v = vals[i]
        vlen = PyBytes_GET_SIZE(v)
        body = 4 + _zz_len(i) + _zz_len(vlen) + vlen
        pos += _put_zz(p + pos, body)
        p[pos] = 0  # attributes
        p[pos + 1] = 0  # timestamp delta 0
        pos += 2
        pos += _put_zz(p + pos, i)
        p[pos] = 1  # key length -1 (null key)
        pos += 1
        pos += _put_zz(p + pos, vlen)
        memcpy(p + pos, PyBytes_AS_STRING(v), vlen)
        pos += vlen
        p[pos] = 0  # header count
        pos += 1
    return out


cdef inline bint _get_zz(const unsigned char* d, Py_ssize_t* pos, Py_ssize_t limit, int64_t* out) noexcept:
    """A zigzag varint at pos[0] whose bytes all lie below ``limit``; False (decline) otherwise."""
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef Py_ssize_t p = pos[0]
    cdef unsigned char b
    while shift < 63:
        if p >= limit:
            return False
        b = d[p]
        p += 1
        raw |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            out[0] = <int64_t>(raw >> 1) ^ -(<int64_t>(raw & 1))
            pos[0] = p
            return True
        shift += 7
    return False


cdef bint _scan(const unsigned char* d, Py_ssize_t* at, Py_ssize_t n, int64_t* f) noexcept:
    """One record at at[0] with no headers: f = [timestamp delta, offset delta, key position, key length (-1
    null), value position, value length (-1 null)]; at[0] moves past it. False (decline) on anything else."""
    cdef Py_ssize_t pos = at[0], end
    cdef int64_t size, kl, vl
    if not _get_zz(d, &pos, n, &size) or size < 6 or size > n - pos:
        return False
    end = pos + size
    pos += 1  # attributes (unused)
    if not _get_zz(d, &pos, end, &f[0]) or not _get_zz(d, &pos, end, &f[1]) or pos >= end:
        return False
    if d[pos] == 1:
        kl = -1
        pos += 1
    elif not _get_zz(d, &pos, end, &kl) or kl < 0 or kl > end - pos:
        return False
    f[2] = pos
    f[3] = kl
    if kl > 0:
        pos += kl
    if not _get_zz(d, &pos, end, &vl) or vl < -1 or vl > end - pos:
        return False
    f[4] = pos
    f[5] = vl
    if vl > 0:
        pos += vl
    if pos + 1 != end or d[pos] != 0:  # headers, or fields that do not end where the record does
        return False
    at[0] = end
    return True


cdef inline object _slice(const unsigned char* d, int64_t pos, int64_t length):
    if length < 0:
        return None
    return PyBytes_FromStringAndSize(<const char*>d + pos, length)


cdef Py_ssize_t _section_size(object data, Py_ssize_t count):
    """The byte size of a section the loops below may read, or -1 to decline: only exact ``bytes``, and a
    count no larger than the bytes (every record takes at least one)."""
    if not PyBytes_CheckExact(data):
        return -1
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    return n if 0 <= count <= n else -1


def decode_records(data, Py_ssize_t count):
    """The records of a section holding exactly ``count`` records without headers; None to decline (2)."""
    cdef Py_ssize_t n = _section_size(data, count)
    if n < 0 or _BUILDER is None:
        return None
    cdef const unsigned char* d = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t pos = 0, i
    cdef int64_t f[6]
    cdef list out = [None] * count
    cdef object r
    builder, record, new = _BUILDER, _RECORD, _NEW
    for i in range(count):
        if not _scan(d, &pos, n, f):
            return None
        r = new(builder)
        r.offset_delta = f[1]
        r.timestamp_delta = f[0]
        r.key = _slice(d, f[2], f[3])
        r.value = _slice(d, f[4], f[5])
        r.headers = _EMPTY
        r.__class__ = record
        out[i] = r
    if pos != n:
        return None
    return tuple(out)


def record_values(data, Py_ssize_t count, int first_byte):
    """(offset delta, value) of the records whose value starts with ``first_byte``; None to decline (2)."""
    cdef Py_ssize_t n = _section_size(data, count)
    if n < 0:
        return None
    cdef const unsigned char* d = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t pos = 0, i
    cdef int64_t f[6]
    cdef list out = []
    for i in range(count):
        if not _scan(d, &pos, n, f):
            return None
        if f[5] > 0 and d[f[4]] == first_byte:
            out.append((f[1], PyBytes_FromStringAndSize(<const char*>d + f[4], f[5])))
    if pos != n:
        return None
    return out
