"""Real Kafka bugs, on the release before the fix and the release with it.

    python benchmarks/known_bugs.py [--runs 3] [--bugs KAFKA-19522,KAFKA-18991]
        [--before VERSION] [--after VERSION] [--workdir DIR]

For each bug, runs its scenario N times on each release as a user types it
(a working directory with the default relative store) and prints one row per
release: runs, runs whose verdict found the bug's anomaly, its count over all
runs, other bad anomalies, and the time per run.

    KAFKA-19522  fenced-last-leader: a fenced last known leader is elected
                 (canElectLastKnownLeader lacks a negation in 4.0.x; 4.0.0 and
                 4.0.2's bytecode both have it; fixed in 4.1.0); 4.0.2 vs 4.1.1
    KAFKA-18991  bounce-leader mixes, idempotent acks=all on 12 partitions: a
                 follower truncating committed records on a stale fetch response
                 (replica-divergence; fixed in 4.0.1); 4.0.0 vs 4.0.2. A race.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HARNESS = str(Path(sys.executable).with_name("harness"))
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from elr_harness.nemesis.faults import bounce_leader  # noqa: E402
from elr_harness.nemesis.registry import plan_or_none  # noqa: E402
from elr_harness.soak.plan import PlanEntry, flag_value, read_plan  # noqa: E402


@dataclass(frozen=True)
class KnownBug:
    name: str
    args: tuple[str, ...]
    anomaly: str
    #: a release with the bug, and one with its fix
    before: str
    after: str


def bounces(entry: PlanEntry) -> bool:
    """Whether a plan entry's runs bounce leaders (its nemesis holds the kind)."""
    plan = plan_or_none(flag_value(list(entry.args), "--nemesis") or "none")
    return plan is not None and bounce_leader.PACKAGE.name in plan.faults


BUGS = {
    "KAFKA-19522": KnownBug("KAFKA-19522", ("--nemesis", "fenced-last-leader"),
                            "fenced-leader", "4.0.2", "4.1.1"),
    # the same runs as the soak plan's leader-bounce entry: one copy of its flags
    "KAFKA-18991": KnownBug("KAFKA-18991", next(
        e.args for e in read_plan(REPO / "plans" / "known-bugs.toml") if bounces(e)),
        "replica-divergence", "4.0.0", "4.0.2"),
}


def run_once(bug: KnownBug, version: str, seed: int, workdir: Path) -> dict:
    started = time.monotonic()
    proc = subprocess.run([HARNESS, "run", *bug.args, "--kafka-version", version,
                           "--seed", str(seed)], cwd=workdir, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=1800)
    took = time.monotonic() - started
    run_dir = (workdir / "store" / "latest").resolve()
    row = {"exit": proc.returncode, "seconds": took, "dir": str(run_dir), "found": 0,
           "other": {}}
    results = run_dir / "results.json"
    if results.is_file():
        data = json.loads(results.read_text())
        anomalies = data.get("anomalies", {})
        row["found"] = (anomalies.get(bug.anomaly) or {}).get("bad", 0)
        row["other"] = {n: a["bad"] for n, a in anomalies.items()
                        if a.get("bad") and n != bug.anomaly}
        row["valid"] = data.get("valid")
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bugs", default=",".join(BUGS))
    parser.add_argument("--before", default=None, help="a release with the bug "
                        "(default: the bug's own)")
    parser.add_argument("--after", default=None, help="a release with the fix")
    parser.add_argument("--workdir", type=Path, default=Path.cwd())
    args = parser.parse_args()
    print(f"{'bug':12} {'Kafka':7} {'runs':>4} {'found':>5} {'anomalies':>9}  "
          f"{'s/run':>5}  other bad anomalies")
    for name in args.bugs.split(","):
        bug = BUGS[name]
        for version in (args.before or bug.before, args.after or bug.after):
            rows = [run_once(bug, version, seed, args.workdir) for seed in range(args.runs)]
            found = sum(1 for r in rows if r["found"])
            other: dict[str, int] = {}
            for r in rows:
                for n, c in r["other"].items():
                    other[n] = other.get(n, 0) + c
            print(f"{name:12} {version:7} {len(rows):4} {found:5} "
                  f"{sum(r['found'] for r in rows):9}  "
                  f"{sum(r['seconds'] for r in rows) / len(rows):5.0f}  {other or '-'}",
                  flush=True)
            for r in rows:
                print(f"    exit {r['exit']} valid={r.get('valid')} {r['dir']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
