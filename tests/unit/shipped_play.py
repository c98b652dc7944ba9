"""A scripted scenario's shipped file played on a unit test's model, as `harness run
--nemesis NAME` plays it (nemesis.schedule.played, its lines carrying the bare step names):
made fast (the warm-up a full ISR, holds and waits short), its steps' outcomes as
the run's nemesis_result has them."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fakes import FakeObserver

from elr_harness.core.config import ScenarioTimings
from elr_harness.nemesis.schedule.file import parse_schedule, shipped_schedules
from elr_harness.nemesis.schedule.played import Played
from elr_harness.nemesis.targets import Topology

FAST = ScenarioTimings(registration_poll_s=0.01, controller_poll_s=0.01)


def fast_text(name: str, within_s: float = 0.2, hold_s: float = 0.05) -> str:
    """The shipped file with its warm-up a full ISR, its holds and its waits short."""
    text = shipped_schedules()[name].read_text()
    text = text.replace('until = "high-watermark at least 300"', 'until = "isr full"')
    text = re.sub(r"hold_s = \d+", f"hold_s = {hold_s}", text)
    return re.sub(r"within_s = \d+", f"within_s = {within_s}", text)


@dataclass
class Outcome:
    step: str
    reached: bool
    observed: dict[str, Any]
    watched: dict[str, Any] = field(default_factory=dict)


def scenario_player(name: str, injector: Any, observer: FakeObserver, min_isr: int = 2,
                    within_s: float = 0.2, stop: threading.Event | None = None) -> Played:
    """The shipped file `name` (made fast) as its scenario's run plays it."""
    played = Played(parse_schedule(fast_text(name, within_s), f"{name}.toml"), injector,
                    observer, "t", 7, 3, min_isr, log=lambda _m: None,
                    topology=Topology.of(injector.cluster.nodes.values()),
                    active_controller=lambda: None, start_within_s=0.2, timings=FAST,
                    scenario=name)
    played.stop_event = stop or threading.Event()
    return played


def play_scenario(played: Played) -> list[Outcome]:
    """Play it to its end; its steps as nemesis_result.steps has them."""
    result: dict[str, Any] = {}
    played.run(time.monotonic() + 600, played.stop_event, result)
    return [Outcome(**o) for o in result["steps"]]
