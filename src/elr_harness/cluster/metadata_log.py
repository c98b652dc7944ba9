"""The controllers' `__cluster_metadata` log, decoded by Kafka's own tool.

Kafka's DumpLogSegments with --cluster-metadata-decoder prints every record
as `| offset: N CreateTime: T ... payload: {json}`; this turns that into the
JSON array of docs/FORMATS.md, so the report can show every ISR/ELR/leader
change the controller made. NO_OP_RECORDs (heartbeats of the quorum) are
left out: they say nothing and are most of the log.
"""

from __future__ import annotations

import json
import re
import shlex

from elr_harness.cluster import kraft
from elr_harness.cluster.node import ExecResult, Node, exec_answered
from elr_harness.core.errors import HarnessError

_RECORD = re.compile(
    r"^\| offset: (?P<offset>\d+) CreateTime: (?P<time>-?\d+) .*?"
    r"(?:payload: (?P<payload>\{.*\})|(?P<control>\w+): (?P<control_data>\{.*\})"
    r"|controlType: (?P<control_type>\w+)\(\d+\))\s*$"
)
SKIPPED_TYPES = {"NO_OP_RECORD"}


def parse_dump(output: str, node_name: str) -> list[dict]:
    """Records of a DumpLogSegments --cluster-metadata-decoder output, in log order.

    A control record is `LeaderChange: {...}` from 4.1 on, and only
    `controlType: LEADER_CHANGE(2)` in 4.0.x (kept, with empty data)."""
    records = []
    for line in output.splitlines():
        match = _RECORD.match(line)
        if not match:
            continue
        offset, created = int(match["offset"]), int(match["time"])
        if match["payload"]:
            try:
                payload = json.loads(match["payload"])
            except json.JSONDecodeError:
                continue
            if payload.get("type") in SKIPPED_TYPES:
                continue
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": payload.get("type"), "version": payload.get("version"),
                            "data": payload.get("data", {})})
        elif match["control_type"]:
            # 4.0.x names a control record's type without decoding it
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": match["control_type"], "version": None, "data": {}})
        else:
            try:
                data = json.loads(match["control_data"])
            except json.JSONDecodeError:
                continue
            records.append({"node": node_name, "offset": offset, "timestamp_ms": created,
                            "type": _control_type(match["control"]),
                            "version": data.get("version"), "data": data})
    return records


def _control_type(name: str) -> str:
    """`LeaderChange` -> `LEADER_CHANGE`, in the style of the metadata record types."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


#: Kafka's log dump tool, where releases keep it (newest first): Java from 4.2,
#: Scala before (KafkaDistribution.main_class picks the one a release has).
DUMP_LOG_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")


def _segments(node: Node, partition_dir: str, lost_output_retries: int) -> list[str]:
    """The metadata log's segment files. A controller always has one: a listing
    that printed none is asked again, lost_output_retries times (the Docker engine
    loses a short command's output now and then under load, moby/moby#27289: a CI
    run failed on an empty listing of a live controller)."""
    # the folder quoted, only the *.log glob left to the shell
    listing = f"ls {shlex.quote(partition_dir)}/*.log"

    def segments(result: ExecResult) -> list[str]:
        return sorted(line for line in result.output.splitlines() if line.endswith(".log"))

    listed = exec_answered(node, listing, lambda r: r.ok and bool(segments(r)),
                           lost_output_retries)
    found = segments(listed)
    if listed.ok and found:
        return found
    tries = 1 + lost_output_retries
    said = listed.output.strip()[-300:]
    raise HarnessError(f"{node.spec.name}: no metadata log segments in {partition_dir} "
                       f"({tries} listings; the last exited {listed.exit_code}"
                       + (f": {said}" if said else "") + ")")


def decode_metadata_log(node: Node, metadata_dir: str, timeout_s: float,
                        dump_class: str = DUMP_LOG_CLASSES[-1],
                        lost_output_retries: int = 3) -> list[dict]:
    """Decode every segment of a controller's metadata log, in offset order."""
    partition_dir = f"{metadata_dir}/__cluster_metadata-0"
    segments = _segments(node, partition_dir, lost_output_retries)
    result = node.exec(
        kraft.tool_command("256m", dump_class, "--cluster-metadata-decoder",
                           "--files", ",".join(segments)),
        timeout_s=timeout_s)
    if not result.ok:
        raise HarnessError(f"{node.spec.name}: DumpLogSegments failed: {result.output[-500:]}")
    return parse_dump(result.output, node.spec.name)
