"""A Ctrl-C during an import that cannot take it is held and raised after it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import HANG_SECONDS

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV, timeout=HANG_SECONDS)


def test_a_ctrl_c_inside_the_block_is_raised_after_it_not_inside():
    script = (
        "import os, signal, threading, time\n"
        "from contextlens.core.held_interrupts import held_interrupts\n"
        "threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "try:\n"
        "    with held_interrupts():\n"
        "        time.sleep(0.8)  # stands for torch's C++ import\n"
        "        print('block finished', flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('raised after the block')\n"
        "print('handler restored', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    done = _run(script)
    assert done.stdout.splitlines() == ["block finished", "raised after the block", "handler restored True"]


def test_no_ctrl_c_no_interrupt_and_other_threads_hold_nothing():
    script = (
        "import signal, threading\n"
        "from contextlens.core.held_interrupts import held_interrupts\n"
        "with held_interrupts():\n"
        "    pass\n"
        "seen = []\n"
        "def other():\n"
        "    with held_interrupts():\n"
        "        seen.append(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
        "t = threading.Thread(target=other); t.start(); t.join()\n"
        "print('ok', seen)\n"
    )
    assert _run(script).stdout.strip() == "ok [True]"
