# cython: language_level=3, boundscheck=False, wraparound=False
"""The leader's fsync loop in C, run by kraftd.shell.raft.syncthread on its own thread (contract there).

``serve(req_fd, done_fd)`` never holds the GIL while it waits or syncs: it reads 16-byte requests (fd, target)
from ``req_fd``, fsyncs ``fd``, and writes a 40-byte answer (fd, target, errno or 0, CLOCK_MONOTONIC ns at the
start and at the end of the fsync) to ``done_fd``; it returns when ``req_fd`` reaches end of file or either pipe fails.
"""

from libc.stdint cimport int64_t
from libc.errno cimport errno, EINTR
from posix.unistd cimport read, write, fsync
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef int _full(int fd, char* buf, int size, bint reading) noexcept nogil:
    cdef int done = 0
    cdef Py_ssize_t n
    while done < size:
        if reading:
            n = read(fd, buf + done, size - done)
        else:
            n = write(fd, buf + done, size - done)
        if n < 0:
            if errno == EINTR:
                continue
            return -1
        if n == 0:
            return -1
        done += <int>n
    return 0


def serve(int req_fd, int done_fd) -> None:
    cdef int64_t req[2]
    cdef int64_t out[5]
    cdef int rc
    cdef timespec ts
    with nogil:
        while True:
            if _full(req_fd, <char*>req, 16, True) != 0:
                break
            clock_gettime(CLOCK_MONOTONIC, &ts)
            out[3] = <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec
            rc = fsync(<int>req[0])
            out[2] = 0
            if rc != 0:
                out[2] = errno
            clock_gettime(CLOCK_MONOTONIC, &ts)
            out[0] = req[0]
            out[1] = req[1]
            out[4] = <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec
            if _full(done_fd, <char*>out, 40, False) != 0:
                break
