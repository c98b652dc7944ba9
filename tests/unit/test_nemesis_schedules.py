"""Schedules compose: phases in order, overlaps at once on disjoint resources."""

from __future__ import annotations

import threading
import time

import pytest

from elr_harness.core.errors import BadInput
from elr_harness.nemesis.registry import parse_nemesis
from elr_harness.nemesis.schedule.compose import Mix, Overlap, Phases, Quiet, Recovery


class FakeMix:
    """Stands in for RandomMix: records when it ran and what it 'injected'."""

    def __init__(self, kinds, stop, log, hold_s=0.2):
        self.kinds, self.stop, self.log, self.hold_s = kinds, stop, log, hold_s

    def run(self, deadline):
        self.log.append(("start", self.kinds, time.monotonic()))
        self.stop.wait(self.hold_s)
        self.log.append(("end", self.kinds, time.monotonic()))
        return list(self.kinds)


def _mix(kinds, log):
    return Mix(tuple(kinds), lambda k, stop: FakeMix(k, stop, log))


def test_phases_run_in_order_and_collect_what_was_injected():
    log, result = [], {}
    Phases([_mix(["kill"], log), Quiet(0.05), _mix(["partition"], log)]).run(
        time.monotonic() + 10, threading.Event(), result)
    assert [(e[0], e[1]) for e in log] == [("start", ("kill",)), ("end", ("kill",)),
                                           ("start", ("partition",)), ("end", ("partition",))]
    assert result["injected"] == ["kill", "partition"]


def test_phases_stop_at_the_deadline():
    log, result = [], {}
    Phases([Quiet(0.3), _mix(["kill"], log)]).run(time.monotonic() + 0.1, threading.Event(),
                                                    result)
    assert log == [] and "injected" not in result


def test_overlapping_mixes_run_at_the_same_time():
    log, result = [], {}
    Overlap([_mix(["partition"], log), _mix(["kill", "pause"], log)]).run(
        time.monotonic() + 10, threading.Event(), result)
    starts = [e[2] for e in log if e[0] == "start"]
    ends = [e[2] for e in log if e[0] == "end"]
    assert len(starts) == 2 and max(starts) < min(ends), "both were in force at once"
    assert sorted(result["injected"]) == ["kill", "partition", "pause"]


@pytest.mark.parametrize("groups", [
    (["partition"], ["controller-partition"]),       # both cut the network: a heal undoes both
    (["kill"], ["pause"]),                           # a start would revive what the other paused
    (["page-cache-loss"], ["controller-kill"]),
])
def test_overlapping_schedules_on_one_resource_are_refused(groups):
    with pytest.raises(ValueError, match="both act on the"):
        Overlap([_mix(g, []) for g in groups])


def test_the_command_line_spells_overlaps_with_plus():
    plan = parse_nemesis("partition,isolate-from-controllers+kill,pause")
    assert plan.groups == (("partition", "isolate-from-controllers"), ("kill", "pause"))
    assert plan.faults == ("partition", "isolate-from-controllers", "kill", "pause")
    assert plan.test_name == "partition-isolate-from-controllers+kill-pause"
    assert parse_nemesis("kill,pause").groups == (("kill", "pause"),)
    assert parse_nemesis("unclean-last-replica").groups == ()


@pytest.mark.parametrize("text, name", [
    ("all", "all"),
    (" all ", "all"),
    ("all,bounce-leader", "all-bounce-leader"),
    ("partition,controller-partition+kill,bounce-leader",
     "partition-controller-partition+kill-bounce-leader"),
    ("kill, pause,kill", "kill-pause"),
    ("unclean-last-replica", "unclean-last-replica"),
    ("none", "none"),
])
def test_the_test_name_is_the_nemesis_as_typed_so_all_stays_short(text, name):
    """The store's folder: `all` is `all`, not every kind joined (about 100
    characters); a `+` mix stays readable."""
    assert parse_nemesis(text).test_name == name


def test_the_test_name_of_all_is_short_whatever_the_registry_holds():
    plan = parse_nemesis("all")
    assert len(plan.faults) > 5 and plan.test_name == "all"


@pytest.mark.parametrize("text, message", [
    ("partition+controller-partition", "both act on the network"),
    ("kill+", "an empty mix"),
    ("kill+none", "'none', 'guided' and scenarios cannot be mixed"),
    ("kill+unclean-last-replica", "'none', 'guided' and scenarios cannot be mixed"),
    ("kill+guided", "'none', 'guided' and scenarios cannot be mixed"),
    ("kill+bogus", "unknown nemesis 'bogus'"),
])
def test_a_bad_overlap_is_refused_by_name(text, message):
    with pytest.raises(BadInput, match=message):
        parse_nemesis(text)


def test_bounce_leader_is_asked_for_by_name_not_by_all():
    """bounce-leader changes the cluster's config (preferred leader election every
    5 s), so `all` leaves it out and `all,bounce-leader` adds it."""
    from elr_harness.nemesis.faults import FAULT_KINDS
    from elr_harness.nemesis.registry import parse_nemesis

    assert "bounce-leader" in FAULT_KINDS
    assert "bounce-leader" not in parse_nemesis("all").faults
    assert parse_nemesis("all").faults == tuple(k for k in FAULT_KINDS if k != "bounce-leader")
    assert "reassign" in parse_nemesis("all").faults
    assert parse_nemesis("all,bounce-leader").faults[-1] == "bounce-leader"


def test_a_bounce_leader_mix_shortens_the_preferred_leader_check(tmp_path):
    from elr_harness.cli.main import build_parser
    from elr_harness.run.config import run_configs
    from elr_harness.run.flags import given_flags

    parser = build_parser()
    for nemesis, interval in (("bounce-leader,kill", 5), ("kill", 300)):
        argv = ["run", "--nemesis", nemesis, "--store", str(tmp_path)]
        args = parser.parse_args(argv)
        args.given = given_flags(parser, argv)
        cluster = run_configs(args)[0]
        assert cluster.timings.leader_imbalance_check_interval_s == interval


def test_recovery_waits_for_the_cluster_whole_then_the_quiet_spell() -> None:

    asked: list[float] = []
    started = time.monotonic()

    def recovered() -> bool:
        asked.append(time.monotonic() - started)
        return len(asked) >= 3  # whole at the third look

    result: dict = {}
    Recovery(recovered, timeout_s=5.0, poll_s=0.05, seconds=0.2).run(
        time.monotonic() + 10, threading.Event(), result)
    took = time.monotonic() - started
    assert result["recovered_before_heal"] is True and len(asked) == 3
    assert 0.1 + 0.2 <= took < 1.5  # two polls, then the quiet spell


def test_recovery_that_never_comes_is_bounded_and_noted() -> None:

    result: dict = {}
    started = time.monotonic()
    Recovery(lambda: False, timeout_s=0.3, poll_s=0.05, seconds=0.1).run(
        time.monotonic() + 10, threading.Event(), result)
    assert result["recovered_before_heal"] is False
    assert 0.4 <= time.monotonic() - started < 2.0


def test_a_stop_ends_the_recovery_wait_at_once() -> None:

    stop = threading.Event()
    stop.set()
    started = time.monotonic()
    result: dict = {}
    Recovery(lambda: False, timeout_s=30, poll_s=0.05, seconds=30).run(
        time.monotonic() + 60, stop, result)
    assert time.monotonic() - started < 1.0 and result["recovered_before_heal"] is False
