"""The KIP-966 headline, seed by seed: unclean-last-replica with ELR off and on.

    python benchmarks/scenario_verdicts.py --seeds 1-10 [--elr off,on] [--workdir DIR]
        [--kafka-versions 4.1.1,4.3.1,latest]
    python benchmarks/scenario_verdicts.py --summarize RUN_DIR...

Runs `harness run --nemesis unclean-last-replica` once per seed and ELR
setting (about 2 minutes each) as a user types it: in a working directory
(the current one by default), with the default relative store, then prints one
row per run from its test.json and results.json: the verdict, lost writes by
acks level, lost committed reads, the bytes L's page-cache loss dropped at T2,
who was in the ELR after T1, who led after T4 (B is the ELR member, L the last
ISR member), and the sends recorded as CLIENT_RESENT. The expectation: ELR off
is invalid with acks=all lost-write > 0 whenever L's page-cache loss dropped
bytes, ELR on is valid with no acks=all lost-write and no lost-committed-read,
B leads after T4 with ELR on and L with ELR off.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from elr_harness.core.history import Fault  # noqa: E402

#: How a page-cache loss's lines spell their kind (a fast test before parsing one).
LOSS = f'"{Fault.PAGE_CACHE_LOSS}"'.encode()


def seeds_of(text: str) -> list[int]:
    """--seeds words ("0-4,7") as the seeds they name."""
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        seeds.extend(range(int(low), int(high or low) + 1))
    return seeds


#: The environment's console script: the README's `harness`.
HARNESS = str(Path(sys.executable).with_name("harness"))


def run_one(elr: str, seed: int, workdir: Path, version: str | None = None) -> Path:
    """One scenario run from workdir with the default (relative) store; its run
    directory (the store's latest)."""
    pinned = ["--kafka-version", version] if version else []
    subprocess.run([HARNESS, "run", "--nemesis", "unclean-last-replica", "--elr", elr,
                    "--seed", str(seed), *pinned],
                   cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=1800)
    return (workdir / "store" / "latest").resolve()


def summarize(run_dir: Path) -> dict:
    """The facts issue 5 asks for, read from one run directory."""
    test = json.loads((run_dir / "test.json").read_text())
    row = {"dir": str(run_dir), "elr": "on" if test["elr_enabled"] else "off",
           "seed": test["seed"], "error": test.get("error"),
           "kafka": test.get("kafka_version"), "wall_s": test.get("duration_s"),
           "metadata_log": any(run_dir.glob("nodes/controller-*/metadata-log.json"))}
    results_path = run_dir / "results.json"
    if not results_path.exists():
        return {**row, "verdict": "no verdict"}
    results = json.loads(results_path.read_text())
    anomalies = results["anomalies"]
    steps = {s["step"]: s for s in test.get("nemesis_result", {}).get("steps", [])}
    observed = {k: s.get("observed") or {} for k, s in steps.items()}
    resent, dropped = 0, 0
    with open(run_dir / "history.jsonl", "rb") as history:
        for line in history:
            if b'"CLIENT_RESENT"' in line:
                resent += 1
            elif LOSS in line:
                op = json.loads(line)
                if op["type"] == "ok" and op.get("fault") == Fault.PAGE_CACHE_LOSS:
                    dropped += int(op.get("detail", {}).get("total_bytes_dropped", 0))
    verdict = {True: "valid", False: "invalid"}.get(results["valid"], str(results["valid"]))
    by_acks = anomalies.get("lost-write", {}).get("by_acks", {})
    return {**row, "verdict": verdict,
            "lost_all": by_acks.get("all", 0), "lost_1": by_acks.get("1", 0),
            "lost_0": by_acks.get("0", 0), "dropped": dropped,
            "sends": results.get("checked", {}).get("sends"),
            "lost_committed_read": anomalies.get("lost-committed-read", {}).get("count", 0),
            "bad": results["bad_anomaly_types"],
            "L": observed.get("setup", {}).get("leader"),
            "elr_after_T1": observed.get("T1", {}).get("elr"),
            "leader_after_T4": observed.get("T4", {}).get("leader"),
            "client_resent": resent}


def expected(row: dict) -> bool:
    """Issue 5's expectation for one run."""
    if row.get("verdict") in (None, "no verdict"):
        return False
    if row["elr"] == "off":
        lost = row["lost_all"] > 0 or row["dropped"] == 0
        return (row["verdict"] == ("invalid" if row["lost_all"] else "valid") and lost
                and row["leader_after_T4"] == row["L"])
    b = (row["elr_after_T1"] or [None])[0]
    return (row["verdict"] == "valid" and row["lost_all"] == 0
            and row["lost_committed_read"] == 0 and b is not None
            and row["leader_after_T4"] == b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--elr", default="off,on")
    parser.add_argument("--workdir", type=Path, default=Path.cwd(),
                        help="where to run (its ./store is the runs' store)")
    parser.add_argument("--summarize", nargs="*", type=Path, metavar="RUN_DIR")
    parser.add_argument("--kafka-versions", default="",
                        help="comma list of --kafka-version values (default: the harness's)")
    args = parser.parse_args()
    if args.summarize is not None:
        dirs = args.summarize
    else:
        args.workdir.mkdir(parents=True, exist_ok=True)
        versions = [v for v in args.kafka_versions.split(",") if v] or [None]
        dirs = [run_one(elr, seed, args.workdir, version) for version in versions
                for elr in args.elr.split(",") for seed in seeds_of(args.seeds)]
    rows = [summarize(d) for d in dirs]
    print(f"{'kafka':<7}{'wall s':>7} {'mlog':<5}{'elr':<4}{'seed':>5}  {'verdict':<10}"
          f"{'sends':>7}{'lost all/1/0':>16}"
          f"{'dropped B':>11}{'lost-c-read':>12}"
          f"{'L':>3}{'ELR@T1':>8}{'leader@T4':>10}{'resent':>8}  as expected")
    for r in rows:
        lost = f"{r.get('lost_all', '-')}/{r.get('lost_1', '-')}/{r.get('lost_0', '-')}"
        print(f"{str(r.get('kafka')):<7}{str(r.get('wall_s')):>7} "
              f"{'yes' if r.get('metadata_log') else 'no':<5}{r['elr']:<4}{r['seed']:>5}  "
              f"{r['verdict']:<10}{str(r.get('sends', '-')):>7}"
              f"{lost:>16}{str(r.get('dropped', '-')):>11}"
              f"{r.get('lost_committed_read', '-'):>12}{str(r.get('L', '-')):>3}"
              f"{str(r.get('elr_after_T1', '-')):>8}{str(r.get('leader_after_T4', '-')):>10}"
              f"{r.get('client_resent', '-'):>8}  {'yes' if expected(r) else 'NO'}"
              + (f"  bad: {','.join(r['bad'])}" if r.get("bad") else "")
              + (f"  error: {r['error']}" if r.get("error") else ""))
    for elr in ("off", "on"):
        mine = [r for r in rows if r["elr"] == elr]
        if mine:
            print(f"ELR {elr}: {sum(expected(r) for r in mine)} of {len(mine)} as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
