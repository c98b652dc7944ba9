"""junit.xml of a soak, in the layout CI systems read (Jenkins' and GitHub's JUnit
reporters, Ant's junit schema): one testcase per run, classname = plan entry,
name = seed and Kafka release; an invalid run is a <failure>, a harness error or
an interrupted run an <error>, an unknown verdict <skipped> with its reason."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from elr_harness.report.atomic import write_atomically

#: What XML 1.0 cannot hold at all, not even escaped (control characters but tab
#: and newlines, lone surrogates, U+FFFE/U+FFFF): a run's error or an entry's
#: name with one would make junit.xml a file no CI parser reads.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """str(value) with every character XML cannot hold shown as \\xNN."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m[0]):02x}", str(value))


def junit_xml(state: dict[str, Any]) -> str:
    """The XML text; every text and attribute from soak.json passes xml_text."""
    return _sanitized(_junit_xml(state))


def _sanitized(element: ET.Element) -> str:
    for node in element.iter():
        node.attrib = {key: xml_text(value) for key, value in node.attrib.items()}
        if node.text is not None:
            node.text = xml_text(node.text)
    ET.indent(element)
    return ET.tostring(element, encoding="unicode", xml_declaration=True) + "\n"


def _junit_xml(state: dict[str, Any]) -> ET.Element:
    runs = state["runs"]
    count = {status: sum(r["status"] == status for r in runs)
             for status in ("invalid", "error", "interrupted", "unknown")}
    suites = ET.Element("testsuites", name="elr-harness soak")
    suite = ET.SubElement(suites, "testsuite", {
        "name": "elr-harness soak", "tests": str(len(runs)),
        "failures": str(count["invalid"]),
        "errors": str(count["error"] + count["interrupted"]),
        "skipped": str(count["unknown"]),
        "time": f"{sum(r['duration_s'] for r in runs):.1f}",
        "timestamp": state["started_at"].replace("+00:00", ""),
    })
    properties = ET.SubElement(suite, "properties")
    for name, value in (("command", state["command"]),
                        ("stopped_because", state.get("stopped_because") or "running"),
                        *_coverage_properties(state)):
        ET.SubElement(properties, "property", name=name, value=str(value))
    for run in runs:
        version = run.get("kafka_version") or run["kafka_version_requested"]
        case = ET.SubElement(suite, "testcase", {
            "classname": run["entry"], "name": f"seed {run['seed']} kafka {version}",
            "time": f"{run['duration_s']:.1f}"})
        evidence = f"reproduce: {run['reproduce']}\n" + (
            f"report: {run['report']}\n" if run.get("report") else "") + (
            f"run directory: {run['run_dir']}\n" if run.get("run_dir") else "") + (
            f"log: {run['log']}\n")
        status = run["status"]
        if status == "invalid":
            bad = run.get("bad_anomalies") or {}
            message = ", ".join(f"{n} {name}" for name, n in bad.items()) or run.get("reason")
            ET.SubElement(case, "failure", message=str(message), type="invalid").text = \
                f"{run.get('reason')}\n{evidence}"
        elif status in ("error", "interrupted"):
            ET.SubElement(case, "error", message=str(run.get("error") or run.get("reason")),
                          type=status).text = evidence
        elif status == "unknown":
            ET.SubElement(case, "skipped", message=str(run.get("reason") or "unknown"))
        ET.SubElement(case, "system-out").text = evidence
    return suites


def _coverage_properties(state: dict[str, Any]) -> list[tuple[str, str]]:
    """soak.json's KIP-966 state coverage as properties: per state, how many runs
    reached it (and which, by run number), and the states no run reached."""
    coverage = state.get("coverage")
    if not isinstance(coverage, dict):
        return []
    out = [("coverage.checked_runs", str(coverage.get("checked_runs", 0)))]
    for name, entry in (coverage.get("states") or {}).items():
        runs = entry.get("runs") or []
        out.append((f"coverage.{name}", f"{len(runs)} runs"
                    + (f" ({', '.join(str(i + 1) for i in runs)})" if runs else "")))
    out.append(("coverage.unreached", ", ".join(coverage.get("unreached") or []) or "none"))
    return out


def write_junit(state: dict[str, Any], path: Path) -> None:
    write_atomically(path, junit_xml(state))
