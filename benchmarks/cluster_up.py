"""Time from `cluster up` to ready, with a warm cache and cold.

Warm: the node image and Kafka's jars are already cached. Cold: both are
removed first, so the run includes the debootstrap image build and the Maven
resolution. Prints seconds for each; run as root with a Docker engine.

    python benchmarks/cluster_up.py [--cold] [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

from elr_harness.cluster.cluster import Cluster
from elr_harness.cluster.docker_backend import connect
from elr_harness.cluster.image import image_tag
from elr_harness.core.config import ClusterConfig, cache_dir


def time_up(config: ClusterConfig) -> float:
    cluster = Cluster(config, log=lambda m: None, client=connect())
    started = time.monotonic()
    try:
        cluster.up()
        return time.monotonic() - started
    finally:
        cluster.down(quiet=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="also measure a cold start")
    parser.add_argument("--runs", type=int, default=3, help="warm runs")
    args = parser.parse_args()
    config = ClusterConfig(name="bench-up", subnet="10.213.90.0/24")
    if args.cold:
        client = connect()
        tag = image_tag(config.image)
        if client.images.list(name=tag.split(":")[0]):
            client.images.remove(tag, force=True)
        shutil.rmtree(cache_dir() / "kafka" / f"maven-{config.kafka_version}",
                      ignore_errors=True)
        print(f"cold (image build + Maven + up): {time_up(config):.1f} s")
    warm = [time_up(config) for _ in range(args.runs)]
    print(f"warm up -> ready over {len(warm)} runs: median {statistics.median(warm):.1f} s, "
          f"min {min(warm):.1f} s, max {max(warm):.1f} s")


if __name__ == "__main__":
    main()
