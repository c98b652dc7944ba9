"""Issue #53's table: elr-downgrade, release by release and seed by seed.

    python benchmarks/elr_downgrade.py --seeds 0-4 --kafka-versions 4.4.0,4.1.1
        [--workdir DIR] [--name NAME --subnet CIDR]
    python benchmarks/elr_downgrade.py --seeds 0-3 --kafka-versions dist:FIX_DIR
    python benchmarks/elr_downgrade.py --summarize RUN_DIR... [--records]

Runs `harness run --nemesis elr-downgrade` once per release and seed, one after
another, as a user types it (a working directory, the default relative store),
then prints one row per run from its test.json, results.json, history.jsonl
and the controller's decoded metadata log (nodes/controller-*/metadata-log.json):

- the variant the seed picked and the verdict with its bad anomalies;
- LKE@0: the LastKnownELR the observer saw at ELR feature level 0 after the
  partition had changed at that level (the checker's elr-while-disabled
  stretch rule, docs/CHECKING.md), or "-" when never;
- stale: whether the second spell's election (step S4) chose a broker other
  than the last leader, and which;
- the acks=all writes lost;
- the leaderless spells of partition 0 (observe lines with leader -1, from the
  first to the first that names a leader again), each with its length and the
  part of it with every replica unfenced, and whether it ended before the run's
  heal (an operator's act: the scenario's own restart or the final heal).

`--records` also prints the controller's PARTITION_RECORD and
PARTITION_CHANGE_RECORDs of partition 0, its FEATURE_LEVEL_RECORDs of
eligible.leader.replicas.version and the replicas' registrations, in log order.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from scenario_verdicts import seeds_of  # the same --seeds words (0-4,7)

ELR_FEATURE = "eligible.leader.replicas.version"
HARNESS = [sys.executable, "-m", "elr_harness.cli"]


def run_one(seed: int, version: str, workdir: Path, extra: list[str]) -> Path:
    """One run from workdir with the default (relative) store; its run directory.
    `version` is a release, or `dist:DIR` for a built Kafka (`--kafka-dist DIR`: a
    candidate fix of `harness mutants fix`)."""
    if version.startswith("dist:"):
        dist = version.removeprefix("dist:")
        target, label = ["--kafka-dist", dist], Path(dist).name
    else:
        target, label = ["--kafka-version", version], version
    log = workdir / f"elr-downgrade-{label}-seed{seed}.log"
    with log.open("w") as out:
        subprocess.run([*HARNESS, "run", "--nemesis", "elr-downgrade", "--seed", str(seed),
                        *target, *extra],
                       cwd=workdir, stdout=out, stderr=subprocess.STDOUT, timeout=3600)
    return (workdir / "store" / "latest").resolve()


def _history(run_dir: Path) -> list[dict]:
    with (run_dir / "history.jsonl").open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _changed(first: dict, obs: dict) -> bool:
    """The checker's notion of a change within a level-0 stretch."""
    def same(key: str, as_set: bool) -> bool:
        a, b = first.get(key), obs.get(key)
        return (set(a or []) == set(b or [])) if as_set else a == b
    replicas = first.get("replicas") is None or obs.get("replicas") is None or same(
        "replicas", True)
    return not (same("leader", False) and same("leader_epoch", False) and same("isr", True)
                and replicas)


def lke_at_level_0(observations: list[dict]) -> list[list[int]]:
    """The LastKnownELRs seen at level 0 after a change at level 0, in order."""
    seen: list[list[int]] = []
    first, changed = None, False
    for obs in observations:
        if obs.get("elr_feature") != 0:
            first, changed = None, False
            continue
        if first is None:
            first = obs
        changed = changed or _changed(first, obs)
        lke = obs.get("last_known_elr") or []
        if changed and lke and (not seen or seen[-1] != lke):
            seen.append(lke)
    return seen


def leaderless_spells(observations: list[dict], heal_time: int | None) -> list[dict]:
    """Each spell of leader -1: its length, how long every replica was unfenced in
    it, and whether it ended before the heal."""
    spells, current = [], None
    for obs in observations:
        if obs["leader"] == -1:
            if current is None:
                current = {"from": obs["time"], "all_up_from": None}
            fenced = obs.get("fenced")
            replicas = obs.get("replicas") or []
            if (fenced is not None and replicas and not set(replicas) & set(fenced)
                    and current["all_up_from"] is None):
                current["all_up_from"] = obs["time"]
        elif current is not None:
            current["to"] = obs["time"]
            spells.append(current)
            current = None
    if current is not None:  # never led again: measured to the last observation
        current["to"], current["ended"] = observations[-1]["time"], False
        spells.append(current)
    out = []
    for spell in spells:
        end = spell["to"]
        up = spell["all_up_from"]
        out.append({
            "s": round((end - spell["from"]) / 1e9, 1),
            "all_up_s": None if up is None else round((end - up) / 1e9, 1),
            "at_s": round(spell["from"] / 1e9, 1), "ended": spell.get("ended", True),
            "before_heal": heal_time is None or end < heal_time})
    return out


def summarize(run_dir: Path) -> dict:
    test = json.loads((run_dir / "test.json").read_text())
    steps = {s["step"]: s for s in test.get("nemesis_result", {}).get("steps", [])}
    # a release's source is "maven:<version>"; a built Kafka's is its folder
    dist = test.get("kafka_dist") or ""
    kafka = (f"{Path(dist).name} (--kafka-dist)" if dist and not dist.startswith("maven:")
             else test.get("kafka_version"))
    row = {"dir": str(run_dir), "kafka": kafka, "seed": test["seed"],
           "variant": steps.get("setup", {}).get("observed", {}).get("variant"),
           "error": test.get("error") or test.get("nemesis_result", {}).get("error")}
    results_path = run_dir / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else None
    row["verdict"] = ("no verdict" if results is None else
                      {True: "valid", False: "INVALID"}.get(results["valid"],
                                                          str(results["valid"])))
    row["bad"] = [] if results is None else [
        f"{name} {results['anomalies'][name]['count']}" for name in results["bad_anomaly_types"]]
    by_acks = {} if results is None else results["anomalies"].get("lost-write", {}).get(
        "by_acks", {})
    row["lost_all"] = by_acks.get("all", 0)
    history = _history(run_dir)
    topic = next(iter(test["topics"]))
    observations = [e for e in history if e["f"] == "observe" and e["topic"] == topic
                    and e["partition"] == 0 and "source" not in e]
    row["lke_at_0"] = lke_at_level_0(observations)
    s4 = steps.get("S4", {}).get("observed", {})
    row["stale"] = (None if "stale_leader_elected" not in s4 else
                    (s4["leader"] if s4["stale_leader_elected"] else False))
    row["last_leader"] = s4.get("last_leader")
    heal = next((e["time"] for e in history if e["f"] == "fault" and e["type"] == "invoke"
                 and e.get("detail", {}).get("step") == "final-heal"), None)
    row["spells"] = leaderless_spells(observations, heal)
    row["steps"] = {k: v.get("reached") for k, v in steps.items()}
    return row


def records(run_dir: Path) -> list[str]:
    """The controller's records of partition 0 and of the ELR feature, in log order,
    each with its time in seconds since the run started (test.json's second)."""
    test = json.loads((run_dir / "test.json").read_text())
    start = datetime.fromisoformat(test["started_at"]).timestamp() * 1000
    logs = sorted(run_dir.glob("nodes/controller-*/metadata-log.json"))
    if not logs:
        return ["(no metadata log)"]
    log = json.loads(logs[0].read_text())
    topic = next(iter(test["topics"]))
    names = {r["data"].get("topicId"): r["data"].get("name") for r in log
             if r["type"] == "TOPIC_RECORD"}
    brokers = {n["id"] for n in test["nodes"].values() if n.get("role") == "broker"}
    out = []
    for r in log:
        kind, data = r["type"], r["data"]
        mine = (kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
                and names.get(data.get("topicId")) == topic and data.get("partitionId") == 0)
        feature = kind == "FEATURE_LEVEL_RECORD" and data.get("name") == ELR_FEATURE
        broker = kind in ("REGISTER_BROKER_RECORD",) and data.get("brokerId") in brokers
        fence = (kind == "BROKER_REGISTRATION_CHANGE_RECORD" and "fenced" in data
                 and data.get("brokerId") in brokers)
        if not (mine or feature or broker or fence):
            continue
        shown = {k: v for k, v in data.items() if k not in (
            "topicId", "directories", "endPoints", "features", "logDirs", "incarnationId",
            "rack", "isMigratingZkBroker", "cordonedLogDirs")}
        out.append(f"{r['offset']:>5} {(r['timestamp_ms'] - start) / 1000:>7.1f}s "
                   f"{kind} {json.dumps(shown)}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--kafka-versions", default="4.4.0,4.1.1",
                        help="releases, comma-separated; dist:DIR for a built Kafka "
                             "(a fix of `harness mutants fix`)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd())
    parser.add_argument("--name")
    parser.add_argument("--subnet")
    parser.add_argument("--summarize", nargs="*", type=Path, metavar="RUN_DIR")
    parser.add_argument("--records", action="store_true")
    args = parser.parse_args()
    if args.summarize is not None:
        dirs = args.summarize
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        extra = [*(["--name", args.name] if args.name else []),
                 *(["--subnet", args.subnet] if args.subnet else [])]
        dirs = [run_one(seed, version, args.workdir, extra)
                for version in args.kafka_versions.split(",") for seed in seeds_of(args.seeds)]
    for run_dir in dirs:
        r = summarize(run_dir)
        lke = ",".join(str(x) for x in r["lke_at_0"]) or "-"
        stale = "-" if r["stale"] is None else (f"yes: {r['stale']} (last leader "
                                                f"{r['last_leader']})" if r["stale"] else "no")
        spells = "; ".join(
            f"{s['s']} s from {s['at_s']} s"
            + (f" ({s['all_up_s']} s with every replica up)" if s["all_up_s"] else "")
            + ("" if s["ended"] else " [never led again to the run's last observation]")
            + ("" if s["before_heal"] or not s["ended"] else " [ended after the heal]")
            for s in r["spells"])
        print(f"{r['kafka']} seed {r['seed']} {r['variant']}: {r['verdict']}"
              f" [{', '.join(r['bad'])}] LKE@0 {lke}; stale leader: {stale}; "
              f"acks=all lost {r['lost_all']}; leaderless: {spells or 'never'}"
              + (f"; error: {r['error']}" if r["error"] else "")
              + f"; steps not reached: {[k for k, v in r['steps'].items() if not v]}"
              + f"\n    {r['dir']}")
        if args.records:
            for line in records(run_dir):
                print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
