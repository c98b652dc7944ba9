"""One polling loop for every "wait until this holds, but not for ever".

The harness waits on things it cannot be told about (a broker registering, a
process gone, a report file written, a partition's ISR full): it asks again
every `interval` seconds until the answer is yes or `timeout` seconds have
passed. Written by hand at each place, such loops differed in small ways (is
the condition asked once more at the deadline? does a stop cut the wait
short?); this is the one loop, and each caller says what a timeout means (the
error it raises and its message), since that differs from place to place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float, interval: float,
               stop: threading.Event | None = None, *,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], object] = time.sleep) -> bool:
    """True as soon as `predicate()` is true; False once `timeout` seconds (from
    now, by `clock`) have passed without that, or as soon as `stop` is set.

    The predicate is asked at least once (also with timeout 0) and once more at
    the deadline; between two asks the wait is `interval` seconds, cut short by
    the deadline, and by `stop` when one is given (the wait is then stop.wait, so
    setting it ends the wait at once). Exceptions from the predicate propagate.
    """
    deadline = clock() + timeout
    while True:
        if stop is not None and stop.is_set():
            return False
        if predicate():
            return True
        remaining = deadline - clock()
        if remaining <= 0:
            return False
        pause = min(interval, remaining)
        if stop is not None:
            if stop.wait(pause):
                return False
        else:
            sleep(pause)
