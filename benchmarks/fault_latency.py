"""Fault latency: from the nemesis deciding to the fault in force.

For each kind the injector times invoke -> ok: the iptables rules installed
on every node of the grudge, the Kafka process gone (kill, stop), SIGSTOP
delivered (pause), the page cache dropped and the layer remounted. Prints
p50/p99 per kind over N rounds against a real cluster: Docker containers by
default, the hosts of a nodes file over SSH (--nodes-file), or six sshd-only
containers made for the benchmark and reached over SSH alone (--ssh-containers,
tests/sshd_hosts.py), so the two backends' latencies compare on one machine.

    python benchmarks/fault_latency.py [--rounds N] [--nodes-file F | --ssh-containers]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.docker_backend import connect
from elr_harness.cluster.nodes_file import with_nodes_file
from elr_harness.core.config import ClusterConfig
from elr_harness.nemesis import grudges
from elr_harness.nemesis.injector import FaultInjector
from elr_harness.nemesis.pagecache.control import PageCacheLayer
from elr_harness.workloads.recorder import HistoryRecorder


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(config: ClusterConfig, rounds: int) -> FaultInjector:
    """Up a cluster, inject every kind `rounds` times, tear it down; the injector
    holds the latencies."""
    layer = PageCacheLayer()
    cluster = Cluster(config, log=lambda m: None, broker_storage=layer)
    with tempfile.TemporaryDirectory() as tmp:
        recorder = HistoryRecorder(Path(tmp) / "history.jsonl")
        try:
            cluster.up()
            injector = FaultInjector(cluster, recorder, layer)
            nodes = sorted(cluster.nodes)
            broker = cluster.brokers[0].spec.name
            for _ in range(rounds):
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
    return injector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("--nodes-file", type=Path, default=None,
                       help="real hosts over SSH (docs/SSH.md)")
    hosts.add_argument("--ssh-containers", action="store_true",
                       help="six sshd-only containers, reached over SSH")
    args = parser.parse_args()
    with ExitStack() as stack:
        config = ClusterConfig(name="bench-faults", subnet="10.213.92.0/24")
        nodes_file = args.nodes_file
        if args.ssh_containers:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
            from sshd_hosts import sshd_hosts

            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            made = stack.enter_context(sshd_hosts(connect(), folder, "bench-faults-ssh",
                                                  "10.213.112.0/24"))
            nodes_file = made.nodes_file("hosts.yaml", accept_new=True)
        if nodes_file is not None:
            config = with_nodes_file(config, nodes_file)
        injector = measure(config, args.rounds)
    backend = "docker" if nodes_file is None else "ssh"
    print(f"backend: {backend}, {args.rounds} rounds")
    print(f"{'fault':<18}{'n':>4}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for kind, values in sorted(injector.latencies.items()):
        ms = [v * 1000 for v in values]
        print(f"{kind:<18}{len(ms):>4}{percentile(ms, 0.5):>10.0f}{percentile(ms, 0.99):>10.0f}"
              f"{statistics.mean(ms):>10.0f}")


if __name__ == "__main__":
    main()
