"""What transactions cost: the transactions per second each transactional client
makes on the default topology without faults, and the Spark check of a history
with transactions against a plain one of the same size.

    python benchmarks/transactions.py --name NAME --subnet CIDR [--store DIR]
        [--time-limit 60] [--lines 10000,1000000] [--repeats 2] [--dir DIR]
        [--skip-runs] [--skip-checks]

Throughput (Docker, a real cluster): `harness run --workload plain,txn --nemesis
none --time-limit N --txn-client java|librdkafka`, each client twice: at the
default txn_rate (WorkloadConfig: 20 transactions/s over all the transactional
producers) and with the cap lifted (a --config file whose [workload] sets
txn_rate = 0, unbounded). From each run's history.jsonl: the txn ok completions
(committed, and aborted on purpose) over the workload phase's seconds
(test.json's phases), and over the span the transactional producers were busy
(first txn invoke to last txn completion: the Java client's JVM starts a few
seconds into the phase), each also per transactional producer (txn_producers);
and results.json's `transactions` tally (the run's own check).

Check cost (Spark, no cluster): synthetic histories (tests/synthetic.py) of each
size, plain and with transactions (all VALID with no anomaly, so the comparison
is fair), and plain with as many clients as the txn history (its transactional
producers and read_committed consumer as plain ones: the txn history's extra
consumer reads every record once more, so that row tells the transactions' own
cost from the extra reads'), checked in this one process by elr_harness.checker.check.check_history
on one SparkSession, started once as the soak starts its own and warmed by a
check of the smallest pair first. The Parquet cache is removed before each check,
so the JSON conversion is timed as in a run's first check; the checker's own
phases (load: the conversion; plan; checks) are read from its debug log. Each size is checked
plain, txn, plain-clients, then in the reverse order (--repeats 2; a load drifting
on a shared machine hits all alike); the ratio is the mean txn check over the
mean plain check (and over plain-clients'), with a target of at most 1.5.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic generator lives with the tests

from synthetic import SyntheticSpec, ensure_run_dir  # noqa: E402

from elr_harness.core.config import CheckerConfig, WorkloadConfig, cache_dir  # noqa: E402

TARGET_RATIO = 1.5
CLIENTS = ("java", "librdkafka")
#: The --config file that lifts the transactions' rate cap (0: unbounded).
UNLIMITED_TOML = "[workload]\ntxn_rate = 0\n"


# -- throughput ---------------------------------------------------------------------


def _latest(store: Path) -> Path | None:
    link = store / "latest"
    return link.resolve() if link.is_symlink() else None


def harness_run(args: argparse.Namespace, client: str, unlimited: bool,
                config_file: Path) -> tuple[Path | None, int, float]:
    """One `harness run`; (its run folder or None, exit code, wall seconds)."""
    cmd = [sys.executable, "-m", "elr_harness.cli", "run", "--workload", "plain,txn",
           "--nemesis", "none", "--time-limit", str(args.time_limit),
           "--txn-client", client, "--store", str(args.store)]
    if args.name:
        cmd += ["--name", args.name]
    if args.subnet:
        cmd += ["--subnet", args.subnet]
    if unlimited:
        cmd += ["--config", str(config_file)]
    before = _latest(args.store)
    log = args.store / f"bench-{client}-{'unlimited' if unlimited else 'default'}.log"
    print(f"$ {' '.join(cmd[2:])}  (output: {log})", flush=True)
    started = time.monotonic()
    with log.open("w") as out:
        code = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                              check=False).returncode
    wall = time.monotonic() - started
    after = _latest(args.store)
    if after is None or after == before or not (after / "history.jsonl").exists():
        print(f"  no new run folder (exit {code}); the log's end:", flush=True)
        print("  " + "\n  ".join(log.read_text(errors="replace").splitlines()[-15:]))
        return None, code, wall
    return after, code, wall


def txn_figures(run_dir: Path, time_limit: float) -> dict:
    """Transactions per second of one run, from its history, test.json and results."""
    test = json.loads((run_dir / "test.json").read_text())
    workload = (test.get("config") or {}).get("workload") or {}
    producers = int(workload.get("txn_producers") or WorkloadConfig().txn_producers)
    rate = workload.get("txn_rate", WorkloadConfig().txn_rate)
    seconds = next((p["duration_s"] for p in test.get("phases") or []
                    if p.get("name", "").startswith("workload")), time_limit)
    oks = 0
    first = last = None
    with (run_dir / "history.jsonl").open("rb") as lines:
        for raw in lines:
            if b'"f":"txn"' not in raw:
                continue
            op = json.loads(raw)
            if op["type"] == "invoke":
                first = op["time"] if first is None else first
                continue
            last = op["time"]
            oks += op["type"] == "ok"
    busy = (last - first) / 1e9 if first is not None and last is not None else 0.0
    results_path = run_dir / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    tally = results.get("transactions") or []
    return {"producers": producers, "rate": rate, "workload_s": seconds, "txn_ok": oks,
            "per_s": oks / seconds if seconds else 0.0,
            "busy_s": busy, "busy_per_s": oks / busy if busy else 0.0,
            "tally": {k: sum(row.get(k, 0) for row in tally)
                      for k in ("committed", "aborted_on_purpose", "failed", "unknown")},
            "protocol": ",".join(sorted({row.get("protocol", "?") for row in tally})) or "-",
            "valid": results.get("valid", "not checked")}


def throughput(args: argparse.Namespace) -> list[dict]:
    args.store.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "unlimited.toml"
        config_file.write_text(UNLIMITED_TOML)
        for client in CLIENTS:
            for unlimited in (False, True):
                run_dir, code, wall = harness_run(args, client, unlimited, config_file)
                row = {"client": client, "cap": "none" if unlimited else "default",
                       "exit": code, "wall_s": round(wall), "run": str(run_dir)}
                if run_dir is not None:
                    row.update(txn_figures(run_dir, args.time_limit))
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def print_throughput(rows: list[dict]) -> None:
    print()
    print("transactions per second (txn ok completions: committed and aborted on "
          "purpose), no faults")
    print(f"{'client':<12}{'txn_rate':>9}{'prod':>5}{'work s':>8}{'txn ok':>8}"
          f"{'txn/s':>8}{'/prod':>7}{'busy s':>8}{'txn/s':>8}{'/prod':>7}  "
          f"{'committed/aborted/failed/unknown':<34}{'protocol':<12}verdict")
    for r in rows:
        if "txn_ok" not in r:
            print(f"{r['client']:<12}{r['cap']:>9}  no run (exit {r['exit']}): {r['run']}")
            continue
        rate = "0 (none)" if not r["rate"] else f"{r['rate']:g}"
        t = r["tally"]
        tally = f"{t['committed']}/{t['aborted_on_purpose']}/{t['failed']}/{t['unknown']}"
        print(f"{r['client']:<12}{rate:>9}{r['producers']:>5}{r['workload_s']:>8.1f}"
              f"{r['txn_ok']:>8}{r['per_s']:>8.1f}{r['per_s'] / r['producers']:>7.1f}"
              f"{r['busy_s']:>8.1f}{r['busy_per_s']:>8.1f}"
              f"{r['busy_per_s'] / r['producers']:>7.1f}  {tally:<34}{r['protocol']:<12}"
              f"{r['valid']}")
    print("work s: the workload phase; busy s: first txn invoke to last txn completion; "
          "/prod: per transactional producer")


# -- check cost ---------------------------------------------------------------------

#: The histories each size is checked as: plain (the synthetic default), with
#: transactions, and plain with as many clients as the txn one.
KINDS = ("plain", "txn", "plain-clients")


def _spec(kind: str, lines: int) -> SyntheticSpec:
    """The synthetic spec of a kind: the txn history adds transactional producers and
    read_committed consumers to the default's; plain-clients has as many plain
    ones instead, so that only the transactions differ."""
    base = SyntheticSpec(lines=lines, seed=1)
    if kind == "txn":
        return SyntheticSpec(lines=lines, seed=1, transactions=True)
    if kind == "plain-clients":
        return SyntheticSpec(lines=lines, seed=1,
                             producers=base.producers + base.txn_producers,
                             consumers=base.consumers + base.read_committed_consumers)
    return base


#: The phases the checker logs at debug level ("<phase> took <s>s"), in order.
PHASES = ("load", "plan", "checks")


class _PhaseLog(logging.Handler):
    """The seconds of each phase of the checks since the last reset."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s took %.2fs" and len(record.args or ()) == 2:
            phase, seconds = record.args
            self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds


PHASE_LOG = _PhaseLog()


def timed_check(run_dir: Path, config: CheckerConfig) -> tuple[float, dict, dict]:
    """check_history on the warm session, the Parquet cache removed first: wall
    seconds, results, seconds per phase."""
    from elr_harness.checker.check import check_history

    shutil.rmtree(run_dir / "history.parquet", ignore_errors=True)
    test = json.loads((run_dir / "test.json").read_text())
    PHASE_LOG.seconds = {}
    started = time.monotonic()
    results = check_history(run_dir / "history.jsonl", test, config)
    return time.monotonic() - started, results, dict(PHASE_LOG.seconds)


def _verdict(results: dict) -> str:
    counts = {k: v["count"] for k, v in (results.get("anomalies") or {}).items()}
    return f"{results.get('valid')}" + (f" {counts}" if counts else "")


def check_cost(args: argparse.Namespace) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor

    from elr_harness.checker.spark import get_spark

    checker_log = logging.getLogger("elr_harness.checker.check")
    checker_log.setLevel(logging.DEBUG)
    checker_log.addHandler(PHASE_LOG)
    args.dir.mkdir(parents=True, exist_ok=True)
    sizes = [int(n) for n in args.lines.split(",") if n]
    histories = {}
    for n in sizes:
        for kind in KINDS:
            histories[(n, kind)] = ensure_run_dir(args.dir, f"{kind}-{n}-lines",
                                                  _spec(kind, n))
    config = CheckerConfig()
    # one session for every check, with the JIT of a long-lived JVM (as the soak's)
    started = time.monotonic()
    with ThreadPoolExecutor(1, thread_name_prefix="bench-spark-start") as pool:
        pool.submit(get_spark, config, config.quick_jit_below_bytes).result()
    print(f"Spark session started in {time.monotonic() - started:.1f}s", flush=True)
    for kind in ("plain", "txn"):  # warm-up: each kind's plans and code once
        seconds, results, _ = timed_check(histories[(min(sizes), kind)], config)
        print(f"warm-up {kind} {min(sizes):,}: {seconds:.1f}s {_verdict(results)}", flush=True)
    order = []
    for i in range(args.repeats):
        order += [KINDS, KINDS[::-1]][i % 2]
    rows = []
    for n in sizes:
        times: dict[str, list[float]] = {kind: [] for kind in KINDS}
        phases: dict[str, dict[str, float]] = {kind: {} for kind in KINDS}
        verdicts: dict[str, str] = {}
        for kind in order:
            seconds, results, spent = timed_check(histories[(n, kind)], config)
            times[kind].append(seconds)
            for phase, s in spent.items():
                phases[kind][phase] = phases[kind].get(phase, 0.0) + s
            verdicts[kind] = _verdict(results)
            shown = ", ".join(f"{p} {spent.get(p, 0.0):.1f}s" for p in PHASES)
            print(f"check {kind:<5} {n:>9,} lines: {seconds:6.1f}s ({shown}) "
                  f"{verdicts[kind]}", flush=True)
        for kind in KINDS:
            path = histories[(n, kind)] / "history.jsonl"
            with path.open("rb") as f:
                lines = sum(1 for _ in f)
            rows.append({"size": n, "kind": kind, "lines": lines,
                         "mb": path.stat().st_size / 2**20, "times": times[kind],
                         "mean": sum(times[kind]) / len(times[kind]),
                         "phases": {p: phases[kind].get(p, 0.0) / len(times[kind])
                                    for p in PHASES},
                         "verdict": verdicts[kind]})
    return rows


def print_check_cost(rows: list[dict]) -> None:
    print()
    print("Spark check of a synthetic history: plain against with transactions "
          "(one warm session, Parquet cache removed before each check)")
    print(f"{'size':>10}  {'kind':<14}{'lines':>11}{'MB':>8}  {'check s (each)':<22}"
          f"{'mean s':>8}{'txn/this':>10}{'load':>8}{'plan':>7}{'checks':>8}  verdict")
    txn = {r["size"]: r["mean"] for r in rows if r["kind"] == "txn"}
    for r in rows:
        each = ", ".join(f"{t:.1f}" for t in r["times"])
        ratio = ""
        if r["kind"] != "txn" and txn.get(r["size"]) and r["mean"]:
            value = txn[r["size"]] / r["mean"]
            ratio = f"{value:.2f} {'ok' if value <= TARGET_RATIO else 'OVER'}"
        spent = r["phases"]
        print(f"{r['size']:>10,}  {r['kind']:<14}{r['lines']:>11,}{r['mb']:>8.1f}  "
              f"{each:<22}{r['mean']:>8.1f}{ratio:>10}{spent['load']:>8.1f}"
              f"{spent['plan']:>7.1f}{spent['checks']:>8.1f}  {r['verdict']}")
    print(f"target: a txn check costs at most {TARGET_RATIO}x a plain one of the same size "
          "(txn/this: the txn check's mean over this row's); plain: the synthetic default "
          "(3 producers, 2 consumers); plain-clients: as many clients as the txn history "
          "(its transactional producers and read_committed consumer as plain ones); "
          "load, plan, checks: the checker's phases (mean s; load is the conversion)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", help="cluster name of the runs (harness run --name)")
    parser.add_argument("--subnet", help="the runs' Docker subnet (harness run --subnet)")
    parser.add_argument("--store", type=Path, default=ROOT / "store",
                        help="where the runs are kept (harness run --store)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds of workload per run")
    parser.add_argument("--lines", default="10000,1000000",
                        help="sizes of the synthetic histories checked, in lines")
    parser.add_argument("--repeats", type=int, default=2,
                        help="checks of each history (order plain, txn, txn, plain, ...)")
    parser.add_argument("--dir", type=Path, default=cache_dir() / "txn-bench",
                        help="where the synthetic histories are generated once")
    parser.add_argument("--skip-runs", action="store_true", help="no cluster runs")
    parser.add_argument("--skip-checks", action="store_true", help="no check timings")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    runs = [] if args.skip_runs else throughput(args)
    checks = [] if args.skip_checks else check_cost(args)
    if runs:
        print_throughput(runs)
    if checks:
        print_check_cost(checks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
