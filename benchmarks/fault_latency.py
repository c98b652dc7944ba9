"""Fault latency: from the nemesis deciding to the fault in force.

For each kind the injector times invoke -> ok: the iptables rules installed
on every node of the grudge, the Kafka process gone (kill, stop), SIGSTOP
delivered (pause), the page cache dropped and the layer remounted. Prints
p50/p99 per kind over N rounds against a real cluster.

    python benchmarks/fault_latency.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from cluster.cluster import Cluster
from cluster.docker_backend import connect
from harness.core.config import ClusterConfig
from nemesis import grudges
from nemesis.faults import FaultInjector
from nemesis.pagecache import PageCacheLayer
from workloads.recorder import HistoryRecorder


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    layer = PageCacheLayer()
    cluster = Cluster(ClusterConfig(name="bench-faults", subnet="10.213.92.0/24"),
                      log=lambda m: None, client=connect(), broker_storage=layer)
    with tempfile.TemporaryDirectory() as tmp:
        recorder = HistoryRecorder(Path(tmp) / "history.jsonl")
        try:
            cluster.up()
            injector = FaultInjector(cluster, recorder, layer)
            nodes = sorted(cluster.nodes)
            broker = cluster.brokers[0].spec.name
            for _ in range(args.rounds):
                injector.partition(grudges.isolate(broker, nodes))
                injector.heal()
                injector.pause(broker)
                injector.resume(broker)
                injector.kill(broker)
                injector.start(broker)
                injector.page_cache_loss(broker)
                injector.start(broker)
                cluster.wait_ready(120)
        finally:
            recorder.close()
            cluster.down(quiet=True)
    print(f"{'fault':<18}{'n':>4}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for kind, values in sorted(injector.latencies.items()):
        ms = [v * 1000 for v in values]
        print(f"{kind:<18}{len(ms):>4}{percentile(ms, 0.5):>10.0f}{percentile(ms, 0.99):>10.0f}"
              f"{statistics.mean(ms):>10.0f}")


if __name__ == "__main__":
    main()
