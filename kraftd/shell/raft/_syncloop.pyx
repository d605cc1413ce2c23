# cython: language_level=3, boundscheck=False, wraparound=False
"""The leader's fsync loop in C, run by kraftd.shell.raft.syncthread on its own thread (contract there).

``serve(req_fd, done_fd, batch_wait=False)`` never holds the GIL while it waits or syncs: it reads 16-byte
requests (fd, target) from ``req_fd``, fsyncs ``fd``, and writes a 40-byte answer (fd, target, errno or 0,
CLOCK_MONOTONIC ns at the start and at the end of the fsync) to ``done_fd``; it returns when ``req_fd`` reaches end
of file or either pipe fails. With ``batch_wait`` (syncthread contract 4) the thread waits for each request as
SCHED_BATCH and syncs as SCHED_OTHER; it returns whether it could switch (False: it ran as it was).
"""

from libc.stdint cimport int64_t
from libc.errno cimport errno, EINTR
from posix.unistd cimport read, write, fsync
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef extern from *:
    """
    #include <sched.h>
    /* syncthread contract 4: SCHED_BATCH (1) or SCHED_OTHER (0) for the calling thread; -1 where unsupported */
    static int kraftd_sched_batch(int on) {
    #ifdef SCHED_BATCH
        struct sched_param p;
        p.sched_priority = 0;
        return sched_setscheduler(0, on ? SCHED_BATCH : SCHED_OTHER, &p);
    #else
        (void)on;
        return -1;
    #endif
    }
    """
    int kraftd_sched_batch(int on) nogil


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


def serve(int req_fd, int done_fd, bint batch_wait=False) -> bool:
    cdef int64_t req[2]
    cdef int64_t out[5]
    cdef int rc
    cdef timespec ts
    cdef bint switch = batch_wait and kraftd_sched_batch(1) == 0
    with nogil:
        while True:
            if _full(req_fd, <char*>req, 16, True) != 0:
                break
            if switch:
                kraftd_sched_batch(0)  # woken without preempting the loop's thread; the fsync's own wake-up may
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
            if switch:
                kraftd_sched_batch(1)
    return switch
