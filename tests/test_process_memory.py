"""A process's reported peak memory is its own, not its parent's."""

from __future__ import annotations

import json
import subprocess
import sys

from contextlens.core.process_memory import rss_bytes

MIB = 1024 * 1024


def test_a_child_of_a_big_process_reports_its_own_peak_not_the_parents():
    # ru_maxrss survives fork + exec on Linux: a child spawned by a process holding 400 MiB
    # started at 400 MiB by that measure (the Ray actors, the benchmark's runs)
    held = bytearray(400 * MIB)
    held[::4096] = b"\x01" * len(held[::4096])  # touch every page: resident, not just reserved
    parent_peak, parent_now = rss_bytes()
    assert parent_now >= 400 * MIB and parent_peak >= parent_now
    code = "import json; from contextlens.core.process_memory import rss_bytes; print(json.dumps(rss_bytes()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    peak, now = json.loads(out)
    assert 0 < now <= peak < 150 * MIB, (peak / MIB, now / MIB)
    del held
