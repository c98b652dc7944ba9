"""One way to act on every node at once.

A cluster's nodes are set up, probed and cleaned one action per node; run one
after another, each waits for the last (a Kafka format is a JVM start, an SSH
host a round trip). Here every action runs in its own thread, all are waited
for, and only then is an error raised: the first in the items' order, so the
same failure is reported whichever thread was slowest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def at_once(action: Callable[[T], R], items: Sequence[T],
            tolerate: type[Exception] | None = None) -> list[R | Exception]:
    """action(item) for every item at once, the results in the items' order; the first
    error (in that order) is raised unless it is of the `tolerate` kind, which is
    returned in its result's place."""
    with ThreadPoolExecutor(max_workers=max(len(items), 1)) as pool:
        futures = [pool.submit(action, item) for item in items]
    results: list[R | Exception] = []
    for future in futures:
        error = future.exception()
        if error is None:
            results.append(future.result())
        elif tolerate is not None and isinstance(error, tolerate):
            results.append(error)
        else:
            raise error
    return results
