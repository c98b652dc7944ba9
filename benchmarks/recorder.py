"""What recording costs: harness producers (acks=1, every send recorded) against a
bare confluent-kafka loop with the same concurrency on the same cluster.

    python benchmarks/recorder.py [--bootstrap host:port,...] [--duration 10]

Both sides keep the same number of sends in flight (one per logical process,
the same processes per client thread) with no rate limit, on one fresh topic,
each for the same total time in alternating halves (bare, recorded, recorded,
bare) so a load drifting on a shared machine hits both alike. The target is
recorded >= 0.8 x bare. Without --bootstrap the brokers come from
`harness cluster status`.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from elr_harness.core.config import WorkloadConfig
from elr_harness.workloads.client_conf import producer_conf
from elr_harness.workloads.producers import PartitionChooser, ProducerClient, RateLimiter
from elr_harness.workloads.recorder import HistoryRecorder
from elr_harness.workloads.stats import StatsCollector

TARGET_RATIO = 0.8


def bootstrap_from_status() -> list[str]:
    out = subprocess.run(["harness", "cluster", "status"], capture_output=True, text=True,
                         timeout=60).stdout
    found = re.search(r"bootstrap:\s*(\S+)", out)
    if not found:
        sys.exit("no cluster is up: run `harness cluster up` or pass --bootstrap")
    return found.group(1).split(",")


def create_topic(bootstrap: list[str], partitions: int) -> str:
    name = f"bench-recorder-{time.monotonic_ns()}"
    admin = AdminClient({"bootstrap.servers": ",".join(bootstrap)})
    brokers = len(admin.list_topics(timeout=10).brokers)
    for future in admin.create_topics([NewTopic(name, partitions, min(3, brokers))]).values():
        future.result(60)
    time.sleep(2)  # let every broker learn the new leaders
    return name


def bare_ops(bootstrap: list[str], topic: str, partitions: int, clients: int, slots: int,
             duration_s: float, config: WorkloadConfig) -> tuple[float, float]:
    """(sends/s, CPU seconds) of plain acks=1 clients: produce, poll, count, nothing else."""
    deadline = time.monotonic() + duration_s
    oks = [0] * clients

    def client(number: int) -> None:
        producer = Producer(producer_conf(bootstrap, "1", config))
        free = list(range(slots))
        values = itertools.count(number * 10**9)
        turn = itertools.count(number)

        def delivered(slot: int, err: object, _msg: object) -> None:
            free.append(slot)
            if err is None and time.monotonic() <= deadline:
                oks[number] += 1

        while time.monotonic() < deadline:
            while free:
                slot = free.pop()
                producer.produce(topic, value=str(next(values)).encode("ascii"),
                                 partition=next(turn) % partitions,
                                 on_delivery=functools.partial(delivered, slot))
            producer.poll(0.1)
        producer.flush(10)

    started = time.process_time()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(oks) / duration_s, time.process_time() - started


def recorded_ops(bootstrap: list[str], topic: str, partitions: int, clients: int, slots: int,
                 duration_s: float, config: WorkloadConfig,
                 history: Path) -> tuple[float, float]:
    """(sends/s, CPU seconds) of the harness's acks=1 producers, every send recorded."""
    stop = threading.Event()
    recorder = HistoryRecorder(history, flush_interval_s=config.recorder_flush_interval_s)
    deadline = time.monotonic() + duration_s
    values = itertools.count()
    producers = [
        ProducerClient(name=str(n), bootstrap=bootstrap, acks="1", slots=slots,
                       chooser=PartitionChooser([(topic, p) for p in range(partitions)],
                                                "round-robin", random.Random(n), start=n),
                       values=values, recorder=recorder, stats=StatsCollector(),
                       limiter=RateLimiter(0), config=config, stop=stop, deadline=deadline)
        for n in range(clients)]
    started = time.process_time()
    for p in producers:
        p.start()
    for p in producers:
        p.join()
    recorder.close()
    cpu_s = time.process_time() - started
    limit_ns = int(duration_s * 1e9)
    oks = 0
    with history.open() as lines:
        for line in lines:
            op = json.loads(line)
            if op["type"] == "ok" and op["time"] <= limit_ns:
                oks += 1
    return oks / duration_s, cpu_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="host:port,... (default: harness cluster status)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per side")
    parser.add_argument("--clients", type=int, default=2, help="producer client threads")
    parser.add_argument("--processes-per-client", type=int, default=8,
                        help="sends in flight per client (one per logical process)")
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    bootstrap = args.bootstrap.split(",") if args.bootstrap else bootstrap_from_status()
    config = WorkloadConfig(rate=0, acks=("1",), producers=1)
    topic = create_topic(bootstrap, args.partitions)
    shape = (bootstrap, topic, args.partitions, args.clients, args.processes_per_client)
    print(f"topic {topic}: {args.clients} clients x {args.processes_per_client} processes, "
          f"acks=1, {args.duration:.0f} s per side")
    bare_ops(*shape, 2.0, config)  # warm-up: connections, metadata, the brokers' JIT
    # Each side runs twice for half the time, in the order bare, recorded,
    # recorded, bare: a load that drifts on a shared machine hits both alike.
    half = args.duration / 2
    cpu = {"bare": 0.0, "recorded": 0.0}

    with tempfile.TemporaryDirectory() as tmp:
        histories = iter([Path(tmp) / "history-1.jsonl", Path(tmp) / "history-2.jsonl"])
        bare = recorded = 0.0
        for side in ("bare", "recorded", "recorded", "bare"):
            if side == "bare":
                rate, cpu_s = bare_ops(*shape, half, config)
                bare += rate / 2
            else:
                rate, cpu_s = recorded_ops(*shape, half, config, next(histories))
                recorded += rate / 2
            cpu[side] += cpu_s
    ratio = recorded / bare if bare else float("nan")
    print(f"bare confluent-kafka loop: {bare:10.0f} sends/s")
    print(f"harness, recorded:         {recorded:10.0f} sends/s")
    verdict = "meets" if ratio >= TARGET_RATIO else "misses"
    print(f"ratio recorded/bare:       {ratio:10.2f}  ({verdict} the {TARGET_RATIO} target)")
    for side, rate in (("bare", bare), ("recorded", recorded)):
        if rate:  # CPU of this process (librdkafka's threads included) per send
            per_send_us = cpu[side] / (rate * args.duration) * 1e6
            print(f"CPU per send, {side + ':':9}   {per_send_us:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
