"""CheckerConfig.jvm_nice: the soak checks a run while the next one records, its
checker's JVM at a lower priority (checkers/spark.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from checkers.spark import _lower_priority


def test_every_thread_of_the_launched_jvm_gets_the_nice_value():
    """Linux keeps a nice value per thread: all of them, not only the first."""
    code = ("import threading, time; [threading.Thread(target=time.sleep, args=(30,), "
            "daemon=True).start() for _ in range(3)]; print('ready', flush=True); "
            "time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        _lower_priority(proc, 10)
        tasks = os.listdir(f"/proc/{proc.pid}/task")
        assert len(tasks) == 4
        assert {os.getpriority(os.PRIO_PROCESS, int(t)) for t in tasks} == {10}
    finally:
        proc.kill()
        proc.wait()


def test_a_jvm_already_gone_is_left_as_it_is():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    _lower_priority(proc, 10)  # ended: its pid may be another's by now, so not touched
    _lower_priority(None, 10)
