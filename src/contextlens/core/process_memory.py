"""This process's own resident memory, peak and current, for the figures a job reports.

Linux's ``ru_maxrss`` is not the process's own peak: it is kept across ``fork`` and ``exec``, so
a process spawned by a big parent starts at the parent's peak (a benchmark child spawned after
its parent loaded WordNet reported 600 MiB where /proc said 250; a Ray worker forked from a
raylet forked from a big driver would report the driver's). ``VmHWM`` in /proc is per address
space, reset at ``exec``: the peak of this program alone.
"""

from __future__ import annotations

import resource


def rss_bytes() -> tuple[int, int]:
    """(peak, current) resident memory of this process, bytes: /proc's VmHWM and VmRSS, or
    ``ru_maxrss`` for both where /proc is missing (not Linux)."""
    found: dict[str, int] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmHWM", "VmRSS"):
                    found[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    if len(found) < 2:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux (bytes on macOS: larger)
        return peak, peak
    return max(found["VmHWM"], found["VmRSS"]), found["VmRSS"]
