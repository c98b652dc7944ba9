"""`harness run` end to end on real containers and real Kafka."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checker_agreement import assert_reference_agrees
from scenario_runs import MECHANICS_RATE

from elr_harness.core.fault_meanings import ENDED_BY
from elr_harness.core.history import RESTORED_BY_SELF, restores

pytestmark = pytest.mark.integration


def _harness(*args: str, store: Path, timeout_s: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elr_harness.cli", *args, "--store", str(store)],
                          capture_output=True, text=True, timeout=timeout_s)


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def test_run_without_faults_records_a_complete_valid_history(tmp_path):
    proc = _harness("run", "--nemesis", "none", "--time-limit", "20", "--name", "it-run",
                    "--subnet", "10.213.154.0/24", store=tmp_path)
    run_dir = (tmp_path / "latest").resolve()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    history = _history(run_dir)
    assert [e["index"] for e in history] == list(range(len(history)))
    assert all(a["time"] <= b["time"] for a, b in zip(history, history[1:], strict=False))

    open_ops: dict[int, dict] = {}
    completions = 0
    for e in history:
        if e["f"] != "send":
            continue
        if e["type"] == "invoke":
            assert e["process"] not in open_ops, "one operation in flight per process"
            open_ops[e["process"]] = e
        else:
            invoke = open_ops.pop(e["process"])
            assert invoke["value"] == e["value"]
            completions += 1
    assert not open_ops, "every send invoke has exactly one completion"
    assert completions > 1000

    acked_all = {e["value"]: (e["partition"], e["offset"]) for e in history
                 if e["f"] == "send" and e["type"] == "ok" and e["acks"] == "all"}
    assert acked_all and all(off is not None for _, off in acked_all.values())
    assert not [e for e in history if e["f"] == "send" and e["acks"] == "all"
                and e["type"] != "invoke" and e["type"] != "ok"], "no faults: all acks=all ok"

    final = {}
    for e in history:
        if e["f"] == "poll" and e.get("final") and e["type"] == "ok":
            for partition, offset, value in e["records"]:
                final[value] = (partition, offset)
    assert {p for e in history if e["f"] == "poll" and e.get("final") and e["type"] == "ok"
            for p in e["high_watermark"]} == {"0", "1", "2"}
    for value, where in acked_all.items():
        assert final.get(value) == where, f"acks=all value {value} not at {where} in final reads"

    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True, results["reason"]
    test = json.loads((run_dir / "test.json").read_text())
    assert test["elr_enabled"] is True and test["nodes"]["broker-1"]["id"] == 1
    assert (run_dir / "report.html").stat().st_size > 10_000
    assert json.loads((run_dir / "nodes" / "controller-1" / "metadata-log.json").read_text())
    assert_reference_agrees(run_dir)


def _unhealed_faults(history: list[dict]) -> list[str]:
    """Faults in force at the end of the history (FORMATS.md, ENDED_BY: a partition,
    controller-partition or isolate-from-controllers lasts until a heal of its
    nodes, a kill, controller-kill, stop or page-cache-loss until a start of the
    node, a pause until a resume)."""
    in_force: set[tuple[str, str]] = set()
    for e in history:
        if e["f"] != "fault" or e["type"] != "ok":
            continue
        kind, nodes = e["fault"], set(e["nodes"])
        ends = ENDED_BY.get(kind)
        if kind in RESTORED_BY_SELF:  # a config or feature change, until its restore
            target = (kind, str(e["detail"].get(RESTORED_BY_SELF[kind])))
            in_force = in_force - {target} if restores(kind, e["detail"]) else in_force | {target}
        elif ends is not None:
            in_force = {(k, n) for k, n in in_force if not (k in ends and n in nodes)}
        else:
            in_force |= {(kind, n) for n in nodes}
    return sorted(f"{kind}:{node}" for kind, node in in_force)


def test_random_mix_of_all_faults_heals_everything(tmp_path):
    """A seeded mix of every fault kind runs each kind, ends with each fault undone,
    the cluster recovered and complete final reads; with ELR on and page-cache
    losses kept within the fault budget, Kafka keeps its promises: valid, exit 0."""
    # one round of the rotation holds every kind once, in a seeded order: 2 x 3 s per
    # kind, a slow network held 6-15 s, a disk fault 6-12 s and its broker's restart,
    # a min ISR or feature change and its restore. --rounds 1 ends the run once that
    # round is played (at --interval 3 on a quiet machine the fourteenth kind, seed 3:
    # slow-network, came at 99 s); the 200 s limit only caps it, twice that for a
    # loaded host
    proc = _harness("run", "--nemesis", "all", "--rounds", "1", "--time-limit", "200",
                    "--interval", "3", "--rate", MECHANICS_RATE,
                    "--seed", "3", "--name", "it-mix", "--subnet", "10.213.155.0/24",
                    store=tmp_path)
    run_dir = (tmp_path / "latest").resolve()
    test = json.loads((run_dir / "test.json").read_text())
    assert "error" not in test and (run_dir / "results.json").exists(), (
        f"{test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    injected = test["nemesis_result"]["injected"]
    # every kind but the one asked for by name (bounce-leader), written out
    every = {"partition", "kill", "stop", "pause", "page-cache-loss", "controller-kill",
             "controller-partition", "isolate-from-controllers", "disk-fault", "slow-network",
             "min-isr-change", "feature-change", "reassign", "one-way-partition"}
    assert set(injected) == set(every), f"kinds never injected: " \
        f"{sorted(set(every) - set(injected))}"
    assert len(injected) == len(every), f"one round: each kind once, {injected}"
    recorded = {e["fault"] for e in _history(run_dir) if e["f"] == "fault" and e["type"] == "ok"}
    assert every <= recorded, recorded  # each kind is recorded under its own name
    history = _history(run_dir)
    assert not _unhealed_faults(history), _unhealed_faults(history)
    assert test["recovered"] is True and test["final_reads"]["complete"] is True
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True, results["reason"]
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the schedule it played, as a file that plays it again (#55): a step per fault the
    # mix made, on the node its line names (a cut: exactly the cut its line records), each ended
    from elr_harness.nemesis.schedule.file import parse_schedule

    played = parse_schedule((run_dir / "schedule.toml").read_text(), "schedule.toml")
    made = [line for line in history if line["f"] == "fault" and line["type"] == "ok"
            and line["detail"].get("mix") and line["fault"] in every
            and not restores(line["fault"], line["detail"])]
    steps = [s for s in played.steps if s.fault]
    assert [s.fault for s in steps] == [line["fault"] for line in made]
    for step, line in zip(steps, made, strict=True):
        if step.cut is not None:  # a partition's grudge, or whom a one-way cut made deaf
            shape = line["detail"].get("grudge") or {line["nodes"][0]: line["detail"]["from"]}
            assert {n: set(p) for n, p in step.cut.items()} == \
                {n: set(p) for n, p in shape.items()}, (step, line)
        else:
            assert step.target in line["nodes"] or step.target == line["detail"]["role"], (
                step, line)
    ended = {s.end for s in played.steps if s.end}
    assert ended <= {s.name for s in steps} and len(ended) >= len(steps) - 2, played.steps
    assert_reference_agrees(run_dir)


def test_a_guided_run_reaches_what_its_rounds_aimed_at_and_stays_valid(tmp_path):
    """--nemesis guided on real Kafka: its rounds aim at states the soak (here
    --reached) has not reached, every fault line of a round names its aim, each
    aim a round saw is one the checker counts, the run ends healed, and with the
    fault budget kept Kafka keeps its promise: valid, exit 0."""
    reached = "isr-below-min-isr,elr-not-empty,min-isr-change-with-elr"
    # --rounds 4: the run ends once four rounds are played (on a quiet machine the
    # fourth ended 121 s into the workload); the 200 s limit only caps it
    proc = _harness("run", "--nemesis", "guided", "--rounds", "4", "--time-limit", "200",
                    "--seed", "2", "--rate", MECHANICS_RATE,
                    "--reached", reached, "--name", "it-guided", "--subnet",
                    "10.213.95.0/24", store=tmp_path)
    run_dir = (tmp_path / "latest").resolve()
    test = json.loads((run_dir / "test.json").read_text())
    assert "error" not in test and (run_dir / "results.json").exists(), (
        f"{test.get('error')}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    guided = test["nemesis_result"]["guided"]
    rounds = guided["rounds"]
    assert guided["reached_before"] == reached.split(",")
    assert 3 <= len(rounds) <= 4, rounds
    assert not {r["aim"] for r in rounds} & set(reached.split(",")), "aimed at a state reached"
    history = _history(run_dir)
    for line in history:
        if line["f"] == "fault" and (line.get("detail") or {}).get("step") != "final-heal":
            assert line["detail"].get("aim") in {r["aim"] for r in rounds}, line
    results = json.loads((run_dir / "results.json").read_text())
    for done in rounds:
        if done["reached"]:
            assert results["coverage"][done["aim"]]["count"] > 0, (done, results["coverage"])
    assert sum(r["reached"] for r in rounds) >= 2, rounds
    assert not _unhealed_faults(history), _unhealed_faults(history)
    assert test["recovered"] is True and test["final_reads"]["complete"] is True
    assert results["valid"] is True, results["reason"]
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the schedule it played, as a file that plays it again (#55): each fault of the
    # history made by a step naming the node it was made on, on as many brokers
    from elr_harness.nemesis.schedule.file import parse_schedule

    played = parse_schedule((run_dir / "schedule.toml").read_text(), "schedule.toml")
    assert played.needs.brokers == test["config"]["cluster"]["brokers"] == 4
    made = {(s.fault, s.target) for s in played.steps if s.fault and s.target and
            s.target.startswith(("broker-", "controller-"))}
    faulted = {(line["fault"], node) for line in history if line["f"] == "fault"
               and line["type"] == "ok" for node in line["nodes"]}
    # a line that only ends a fault (a resume before a kill: the injector's thaw) is
    # part of its step's act, not a step of its own
    only_ends = {kind.value for kind in ENDED_BY if kind not in ENDED_BY[kind]}
    away = {(line["fault"], line["nodes"][0]) for line in history if line["f"] == "fault"
            and line["type"] == "ok" and line["fault"] not in only_ends
            and line["detail"].get("step", "").endswith((" away", " down"))
            and len(line["nodes"]) == 1}
    assert made and made <= faulted and away <= made, (made, faulted, away)
    assert_reference_agrees(run_dir)
