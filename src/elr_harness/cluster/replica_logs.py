"""Each replica's own log, read from its segment files.

After the final reads (cluster healed and quiet) every broker's segment files
of the run's topics are read (cluster.record_batches; where a segment holds
what that reader does not know, Kafka's own `DumpLogSegments --deep-iteration
--print-data-log` reads them, one JVM per broker) into HISTORY.md's `replica`
lines: offsets, values and the leader epoch of each record's batch, and the
replica's checkpointed high watermark (replication-offset-checkpoint). A
consumer reads only the leader; this is how replicas that silently diverged
(KAFKA-18991) are seen at all.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from elr_harness.cluster import kraft
from elr_harness.cluster.node import Node
from elr_harness.cluster.record_batches import UnreadableSegment, read_segment

_FILE = re.compile(r"^Dumping (?P<path>\S+)$")
_BATCH = re.compile(r"^baseOffset: \d+ lastOffset: \d+ .*?partitionLeaderEpoch: (?P<epoch>-?\d+) "
                    r".*?isControl: (?P<control>true|false)")
_OFFSET = re.compile(r"^\| offset: (?P<offset>\d+) ")
_PAYLOAD = re.compile(r" payload: ?(?P<payload>.*)$")
_SEGMENT_DIR = re.compile(r"/(?P<topic>[^/]+)-(?P<partition>\d+)/\d+\.log$")
_INTEGER = re.compile(r"-?\d+")


def _value(text: str) -> int | None:
    """A record's value as the replica lines hold it: an integer when its text (spaces
    around it aside) is one, else None."""
    text = text.strip()
    return int(text) if _INTEGER.fullmatch(text) else None


@dataclass
class ReplicaLog:
    topic: str
    partition: int
    records: list[list]  # [offset, value (int or None), leader epoch]
    high_watermark: int | None = None
    #: one past the last offset in the files, control records included
    log_end_offset: int = 0


def parse_replica_dump(output: str) -> dict[tuple[str, int], ReplicaLog]:
    """Records per partition of a --deep-iteration --print-data-log dump of
    segment files; control batches (transaction markers) are left out."""
    logs: dict[tuple[str, int], ReplicaLog] = {}
    current: ReplicaLog | None = None
    epoch, control = -1, False
    for line in output.splitlines():
        if match := _FILE.match(line):
            where = _SEGMENT_DIR.search(match["path"])
            if where is None:
                current = None
                continue
            key = (where["topic"], int(where["partition"]))
            current = logs.setdefault(key, ReplicaLog(key[0], key[1], []))
        elif match := _BATCH.match(line):
            epoch, control = int(match["epoch"]), match["control"] == "true"
        elif (match := _OFFSET.match(line)) and current is not None:
            offset = int(match["offset"])
            current.log_end_offset = max(current.log_end_offset, offset + 1)
            payload = _PAYLOAD.search(line)
            if not control and payload is not None:
                current.records.append([offset, _value(payload["payload"]), epoch])
    return logs


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """replication-offset-checkpoint: a version line, a count, `topic partition offset`."""
    lines = text.splitlines()[2:]
    found = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].lstrip("-").isdigit():
            found[(parts[0], int(parts[1]))] = int(parts[2])
    return found


def replica_logs(node: Node, log_dirs: Sequence[str], topics: Sequence[str], dump_class: str,
                 timeout_s: float) -> list[ReplicaLog]:
    """Every replica of `topics` this broker holds, from its own files in any of its
    log dirs (each dir has its own high-watermark checkpoint): read in Python, or,
    where a segment holds what that reader does not know, by Kafka's dump tool."""
    patterns = " ".join(f"{shlex.quote(log_dir)}/{shlex.quote(t)}-*/*.log"
                        for log_dir in log_dirs for t in topics)
    listing = node.exec(f"ls {patterns} 2>/dev/null")
    segments = sorted(listing.output.splitlines()) if listing.ok else []
    if not segments:
        return []
    try:
        logs = read_segments((path, node.read_file(path)) for path in segments)
    except UnreadableSegment:
        logs = parse_replica_dump(dump_segments(node, segments, dump_class, timeout_s))
    marks: dict[tuple[str, int], int] = {}
    for log_dir in log_dirs:
        checkpoint = node.exec(["cat", f"{log_dir}/replication-offset-checkpoint"])
        marks.update(parse_checkpoint(checkpoint.output) if checkpoint.ok else {})
    for key, log in logs.items():
        log.high_watermark = marks.get(key)
    return [logs[k] for k in sorted(logs)]


def dump_segments(node: Node, segments: Sequence[str], dump_class: str,
                  timeout_s: float) -> str:
    """Kafka's own dump of segment files, records and payloads: one JVM."""
    result = node.exec(
        kraft.tool_command("256m", dump_class, "--deep-iteration", "--print-data-log",
                           "--files", ",".join(segments)),
        timeout_s=timeout_s)
    if not result.ok:
        raise RuntimeError(f"{node.spec.name}: DumpLogSegments failed: {result.output[-300:]}")
    return result.output


def read_segments(files: Iterable[tuple[str, bytes]]) -> dict[tuple[str, int], ReplicaLog]:
    """Records per partition of segment files (path, bytes), in the paths' order, read
    as parse_replica_dump reads Kafka's dump of them: control batches and records
    without a value left out of the records but not of the log end offset, a value
    an integer when its text is one."""
    logs: dict[tuple[str, int], ReplicaLog] = {}
    for path, data in files:
        where = _SEGMENT_DIR.search(path)
        if where is None:
            continue
        key = (where["topic"], int(where["partition"]))
        log = logs.setdefault(key, ReplicaLog(key[0], key[1], []))
        for record in read_segment(data):
            log.log_end_offset = max(log.log_end_offset, record.offset + 1)
            if not record.control and record.value is not None:
                log.records.append([record.offset,
                                    _value(record.value.decode("utf-8", "replace")),
                                    record.leader_epoch])
    return logs
