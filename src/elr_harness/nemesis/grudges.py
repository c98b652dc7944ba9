"""Network partition shapes, as grudges: node -> the nodes it no longer hears.

Pure functions over node names, so the shapes are testable without a
cluster. Every grudge made here is symmetric (if a drops b, b drops a); the
injector also installs both directions, so a grudge given by hand cuts both
ways too.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence

Grudge = dict[str, list[str]]


def _symmetric(pairs: Iterable[tuple[str, str]]) -> Grudge:
    grudge: dict[str, set[str]] = {}
    for a, b in pairs:
        if a == b:
            continue
        grudge.setdefault(a, set()).add(b)
        grudge.setdefault(b, set()).add(a)
    return {node: sorted(peers) for node, peers in sorted(grudge.items())}


def isolate(node: str, nodes: Sequence[str]) -> Grudge:
    """One node cut off from every other node."""
    return _symmetric((node, other) for other in nodes if other != node)


def isolate_all(isolated: Sequence[str], nodes: Sequence[str]) -> Grudge:
    """Each of `isolated` cut off from every other node (also from each other)."""
    return _symmetric((a, b) for a in isolated for b in nodes if a != b)


def split(minority: Sequence[str], nodes: Sequence[str]) -> Grudge:
    """Two sides that cannot hear each other; each side stays connected inside."""
    side = set(minority)
    return _symmetric((a, b) for a in side for b in nodes if b not in side)


def majority_minority(nodes: Sequence[str], rng: random.Random) -> Grudge:
    shuffled = list(nodes)
    rng.shuffle(shuffled)
    return split(shuffled[: len(nodes) // 2], nodes)


def ring(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Each node hears only its two neighbours on a shuffled ring."""
    order = list(nodes)
    rng.shuffle(order)
    n = len(order)
    neighbours = {order[i]: {order[(i - 1) % n], order[(i + 1) % n]} for i in range(n)}
    return _symmetric((a, b) for a in order for b in order
                      if b != a and b not in neighbours[a])


def bridge(nodes: Sequence[str], rng: random.Random) -> Grudge:
    """Two halves that hear only one bridge node in the middle."""
    order = list(nodes)
    rng.shuffle(order)
    middle = len(order) // 2
    left, bridge_node, right = order[:middle], order[middle], order[middle + 1:]
    del bridge_node  # the bridge hears everyone
    return _symmetric((a, b) for a in left for b in right)


def from_controllers(brokers: Sequence[str], controllers: Sequence[str]) -> Grudge:
    """Brokers cut off from the controllers only (they still hear each other)."""
    return _symmetric((b, c) for b in brokers for c in controllers)
