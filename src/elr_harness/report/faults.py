"""Fault lines of the history paired into intervals a plot can shade.

FORMATS.md: a fault is in force from its `ok` (or `info`: it may have half
happened) until its opposite acts on the same nodes: `partition`,
`controller-partition` and `isolate-from-controllers` until `heal`,
`kill`/`controller-kill`/`stop`/`page-cache-loss` until `start`, `pause` and
`bounce-leader` until `resume` (harness.core.fault_meanings.ENDED_BY). A config or
feature change (`min-isr-change`, `feature-change`) lasts until the line of its
own kind with `restore: true` for the same target (its topic, null for the
cluster default; its feature: RESTORED_BY_SELF), and is labelled by that target
and its `from`->`to`. A fault never ended is drawn to the end of the run and
marked as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import RESTORED_BY_SELF, restores

#: Which fault kind ends which: opposite -> kinds it ends (the contract's table).
ENDS: dict[str, tuple[str, ...]] = {str(end): tuple(map(str, ended))
                                    for end, ended in ENDED_BY.items()}

#: Kinds that last until an opposite ends them.
LASTING_KINDS = frozenset(kind for kinds in ENDS.values() for kind in kinds)


#: The detail key naming what a self-restored kind changed (its topic, its feature).
TARGET_KEYS: dict[str, str] = {str(kind): key for kind, key in RESTORED_BY_SELF.items()}


def describe(step: str | None, kind: str, nodes: tuple[str, ...],
             what: str | None = None) -> str:
    """'T2 page-cache-loss broker-1': how plots and tables name a fault; `what`
    stands for the nodes of a change to a topic or the cluster."""
    prefix = f"{step} " if step else ""
    return f"{prefix}{kind} {what or (','.join(nodes) if nodes else 'all')}"


def changed(kind: str, detail: dict[str, Any]) -> str | None:
    """'elr-test 2->1', 'cluster default 2->3': what a config or feature change
    changed (None for other kinds)."""
    key = TARGET_KEYS.get(kind)
    if key is None:
        return None
    target = detail.get(key)
    return (f"{'cluster default' if target is None else target} "
            f"{detail.get('from')}->{detail.get('to')}")


@dataclass
class FaultEvent:
    """One fault completion as the history recorded it."""

    index: int
    time_s: float
    kind: str
    nodes: tuple[str, ...]
    type: str
    detail: dict[str, Any]

    @property
    def step(self) -> str | None:
        step = self.detail.get("step")
        return str(step) if step is not None else None

    @property
    def target(self) -> Any:
        """What a config or feature change acts on (its topic or feature)."""
        key = TARGET_KEYS.get(self.kind)
        return None if key is None else self.detail.get(key)


@dataclass
class FaultBand:
    """A fault in force from start_s to end_s (end_s None: never ended in the history)."""

    kind: str
    nodes: tuple[str, ...]
    start_s: float
    end_s: float | None
    step: str | None
    uncertain: bool
    start_index: int
    end_index: int | None = None
    ended_by: str | None = None
    open_nodes: set[str] = field(default_factory=set)
    #: A config or feature change: what it changed ('elr-test 2->1').
    what: str | None = None
    target: Any = None
    #: How plots draw it: its kind's colour as test.json gives it (None: unknown).
    colour: str | None = None

    @property
    def label(self) -> str:
        return describe(self.step, self.kind, self.nodes, self.what)

    @property
    def lasting(self) -> bool:
        """False for a kind that nothing ends (drawn as a mark at its time)."""
        return self.kind in LASTING_KINDS


#: A colour test.json may give a kind: `#rrggbb`, nothing else reaches the plots.
_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")


def fault_colours(test: dict[str, Any] | None) -> dict[str, str]:
    """Each recorded kind's colour from test.json's `fault_colours` (the run writes
    them from its kinds' modules; the report never reads the nemesis): only
    `#rrggbb` values of string keys; an older run's test.json has none."""
    given = (test or {}).get("fault_colours")
    if not isinstance(given, dict):
        return {}
    return {kind: colour for kind, colour in given.items()
            if isinstance(kind, str) and isinstance(colour, str) and _COLOUR.fullmatch(colour)}


def coloured(bands: list[FaultBand], colours: dict[str, str]) -> list[FaultBand]:
    for band in bands:
        band.colour = colours.get(band.kind)
    return bands


def pair_faults(events: list[FaultEvent]) -> list[FaultBand]:
    """Bands for every fault that took effect, each ended by the first opposite on its nodes."""
    bands: list[FaultBand] = []
    open_bands: list[FaultBand] = []
    for ev in sorted(events, key=lambda e: (e.time_s, e.index)):
        if ev.type not in ("ok", "info"):
            continue
        if restores(ev.kind, ev.detail):
            _restore(open_bands, ev)
            continue
        ended_kinds = () if ev.kind in TARGET_KEYS else ENDS.get(ev.kind, ())
        if ended_kinds:
            for band in list(open_bands):
                if band.kind not in ended_kinds:
                    continue
                # An opposite with no nodes (e.g. heal everything) ends every such band.
                if ev.nodes and band.nodes:
                    band.open_nodes -= set(ev.nodes)
                else:
                    band.open_nodes.clear()
                if not band.open_nodes:
                    band.end_s = ev.time_s
                    band.end_index = ev.index
                    band.ended_by = describe(ev.step, ev.kind, ev.nodes)
                    open_bands.remove(band)
            continue
        band = FaultBand(
            kind=ev.kind,
            nodes=ev.nodes,
            start_s=ev.time_s,
            end_s=None,
            step=ev.step,
            uncertain=ev.type == "info",
            start_index=ev.index,
            open_nodes=set(ev.nodes),
            what=changed(ev.kind, ev.detail),
            target=ev.target,
        )
        if ev.kind in LASTING_KINDS:
            bands.append(band)
            open_bands.append(band)
        else:
            # A kind nothing ends (unknown to this report): a zero-length mark.
            band.end_s = ev.time_s
            band.end_index = ev.index
            bands.append(band)
    return bands


def _restore(open_bands: list[FaultBand], ev: FaultEvent) -> None:
    """A restoring change ends the open change of its kind on the same target."""
    for band in list(open_bands):
        if band.kind == ev.kind and band.target == ev.target:
            band.end_s = ev.time_s
            band.end_index = ev.index
            band.ended_by = describe(ev.step, ev.kind, ev.nodes, changed(ev.kind, ev.detail))
            open_bands.remove(band)
