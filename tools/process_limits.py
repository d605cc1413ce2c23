"""The process's open-files limit, raised by the long-running entry points (``kraftd start``, ``kraft-swarm``).

Contract 1: :func:`raise_open_files_limit` sets the soft ``RLIMIT_NOFILE`` to the hard one, as the JVM does for
Kafka's controllers at start-up (HotSpot's ``-XX:+MaxFDLimit``, on by default), so that a controller has the
descriptors its connections (a thousand brokers, its peers, the admin clients) and its segments need wherever a
login session leaves the soft limit at 1,024 while allowing more. It returns the (before, after) soft limits, or
None where there is no such limit to raise (not POSIX, or the hard limit is already the soft one).
"""

from __future__ import annotations


def raise_open_files_limit() -> tuple[int, int] | None:
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == soft or (hard != resource.RLIM_INFINITY and hard < soft):
        return None
    target = hard
    if (
        hard == resource.RLIM_INFINITY
    ):  # Linux refuses an infinite RLIMIT_NOFILE: take the kernel's own ceiling
        try:
            with open("/proc/sys/fs/nr_open") as f:
                target = int(f.read())
        except (OSError, ValueError):
            return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        return None
    return soft, target
