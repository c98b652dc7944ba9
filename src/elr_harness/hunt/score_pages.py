"""What a mutation score shows (#54, #62): each cell's outcome, the tally, junit.xml
(a surviving mutant is a failure, a control run that cried wolf an error) and
index.html (a target x entry grid, each cell linked to its run's report). Read
from score.json alone.

A mutant's run has four outcomes: killed (INVALID, the control valid in every one
of its runs of that entry and seed), survived (VALID, its faults played),
inconclusive (no verdict, or a nemesis that skipped or stopped: nothing was
tested; the reason is kept) and flaky control (INVALID where the control was
INVALID too: no kill). The score is killed / (killed + survived); the control's
INVALID runs, over its conclusive ones, are the plan's false-alarm rate."""

from __future__ import annotations

import html
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

#: The plain release: every entry runs on it too (CONTROL_RUNS times), and must
#: stay valid.
CONTROL = "control"
#: Runs of each entry on the control: one flaky INVALID of the plan on plain Kafka
#: would otherwise count as a kill, and its rate would be unknown.
CONTROL_RUNS = 3

KILLED, SURVIVED, INCONCLUSIVE, FLAKY_CONTROL = (
    "killed", "survived", "inconclusive", "flaky control")


def score_key(target: str, entry: str) -> str:
    """A cell's key in score.json: the target (CONTROL or a mutant) and the entry."""
    return f"{target} / {entry}"


def control_target(number: int) -> str:
    """The control's `number`th run of an entry (from 1) as a target name: the first
    is CONTROL itself."""
    return CONTROL if number == 1 else f"{CONTROL} #{number}"


def control_keys(entry: str) -> list[str]:
    return [score_key(control_target(n), entry) for n in range(1, CONTROL_RUNS + 1)]


def inconclusive_reason(cell: dict[str, Any]) -> str | None:
    """Why a run says nothing, or None: it ended without a verdict (an error, an
    unknown verdict, outlived its bound), or it was VALID with a nemesis that
    skipped or stopped (it tested less than its plan: no survival). An INVALID
    stands however much was played: the checker found what it found."""
    if cell.get("verdict") not in ("valid", "invalid"):
        return cell.get("timed_out") or f"no verdict ({cell.get('verdict')})"
    return cell.get("unplayed") if cell["verdict"] == "valid" else None


def control_outcome(cell: dict[str, Any]) -> str:
    """A control run: valid, a false alarm (INVALID on the release), or inconclusive."""
    if inconclusive_reason(cell) is not None:
        return INCONCLUSIVE
    return "valid" if cell["verdict"] == "valid" else "false alarm"


def _control(cells: dict[str, Any], entry: str) -> dict[str, Any]:
    said = [control_outcome(cells[k]) for k in control_keys(entry) if k in cells]
    runs, conclusive = len(said), sum(o != INCONCLUSIVE for o in said)
    alarms = said.count("false alarm")
    status = ("false alarm" if alarms else "pending" if runs < CONTROL_RUNS
              else "inconclusive" if conclusive < CONTROL_RUNS else "clean")
    return {"runs": runs, "conclusive": conclusive, "invalid": alarms, "status": status}


def cell_outcome(cell: dict[str, Any], control: dict[str, Any]) -> str:
    """A mutant's run, beside its entry's control (_control)."""
    if inconclusive_reason(cell) is not None:
        return INCONCLUSIVE
    if cell["verdict"] == "valid":
        return SURVIVED
    if control["status"] == "false alarm":
        return FLAKY_CONTROL
    # a kill needs every control run of the entry done and valid
    return KILLED if control["status"] == "clean" else INCONCLUSIVE


def tally(state: dict[str, Any]) -> dict[str, Any]:
    """Each cell's outcome; killed, surviving and inconclusive mutants (of those
    whose every run is done); the score; the control's false alarms."""
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    rules = state.get("rules") or {}
    controls = {e: _control(cells, e) for e in entries}
    outcomes: dict[str, str] = {}
    killed, survived, undecided, pending = [], [], [], []
    for mutant in state["mutants"]:
        mine = {e: cells.get(score_key(mutant, e)) for e in entries}
        got = {e: cell_outcome(c, controls[e]) for e, c in mine.items() if c is not None}
        outcomes.update({score_key(mutant, e): o for e, o in got.items()})
        if KILLED in got.values():
            killed.append(mutant)
        elif len(got) < len(entries):
            pending.append(mutant)
        elif SURVIVED in got.values():
            survived.append(mutant)
        else:  # every run inconclusive or beside a control that cried wolf
            undecided.append(mutant)
    outcomes.update({key: control_outcome(cells[key]) for entry in entries
                     for key in control_keys(entry) if key in cells})
    control_runs = sum(c["conclusive"] for c in controls.values())
    alarms = sum(c["invalid"] for c in controls.values())
    decided = len(killed) + len(survived)
    return {"mutants": len(state["mutants"]), "killed": len(killed), "killed_by": killed,
            "survived": survived, "inconclusive": undecided, "pending": pending,
            "score": round(len(killed) / decided, 4) if decided else None,
            "control": controls,
            "control_bad": [e for e, c in controls.items() if c["status"] == "false alarm"],
            "false_alarms": alarms, "control_runs": control_runs,
            "false_alarm_rate": round(alarms / control_runs, 4) if control_runs else None,
            "outcomes": outcomes,
            "inconclusive_cells": {
                k: inconclusive_reason(cells[k]) or "the control's runs of this entry are "
                "not all conclusive" for k, o in outcomes.items() if o == INCONCLUSIVE},
            "expected_fired": {m: sorted(e for e in entries if rules.get(m) in (
                (cells.get(score_key(m, e)) or {}).get("bad") or ())) for m in state["mutants"]}}


def score_said(tallied: dict[str, Any]) -> str:
    """The score in words: killed of decided, with what was left out and why."""
    decided = tallied["killed"] + len(tallied["survived"])
    score = f"{tallied['score']:.0%}" if tallied["score"] is not None else "no score"
    rate = (f"{tallied['false_alarms']} of {tallied['control_runs']} control runs INVALID"
            if tallied["control_runs"] else "no conclusive control run")
    return (f"{tallied['killed']} of {decided} decided mutants killed ({score}); "
            f"{len(tallied['inconclusive'])} inconclusive, {len(tallied['pending'])} "
            f"pending, of {tallied['mutants']}; false alarms: {rate}")


def write_pages(score_dir: Path, state: dict[str, Any]) -> None:
    _write(score_dir / "junit.xml", _junit(state))
    _write(score_dir / "index.html", _page(score_dir, state))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _junit(state: dict[str, Any]) -> str:
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    tallied = tally(state)
    suite = ET.Element("testsuite", name="mutants", tests=str(
        len(state["mutants"]) + CONTROL_RUNS * len(entries)))
    failures = errors = 0
    for entry in entries:
        for number in range(1, CONTROL_RUNS + 1):
            key = score_key(control_target(number), entry)
            cell = cells.get(key)
            case = ET.SubElement(suite, "testcase", classname=control_target(number),
                                 name=entry)
            if cell is None:
                ET.SubElement(case, "skipped", message="not run yet")
            elif tallied["outcomes"][key] != "valid":
                errors += 1
                said = (f"inconclusive: {tallied['inconclusive_cells'][key]}"
                        if tallied["outcomes"][key] == INCONCLUSIVE else
                        f"false alarm: the release's run was INVALID: "
                        f"{', '.join(cell['bad']) or 'no bad anomaly'}")
                ET.SubElement(case, "error", message=said)
    for mutant in state["mutants"]:
        case = ET.SubElement(suite, "testcase", classname="mutant", name=mutant)
        said = "; ".join(f"{e}: {tallied['outcomes'].get(score_key(mutant, e), 'not run')}"
                         for e in entries)
        if mutant in tallied["survived"]:
            failures += 1
            ET.SubElement(case, "failure", message=f"survived ({said})")
        elif mutant in tallied["inconclusive"]:
            errors += 1
            ET.SubElement(case, "error", message=f"inconclusive: no run tested it ({said})")
        elif mutant in tallied["pending"]:
            ET.SubElement(case, "skipped", message=f"not every entry run yet ({said})")
        ET.SubElement(case, "system-out").text = said
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top; }
td.killed, td.false-alarm { background: #fde0dc; } td.survived, td.valid { background: #e6f4ea; }
td.inconclusive, td.flaky-control { background: #fff4ce; } td.none { color: #888; }
small { color: #555; }
"""


def _page(score_dir: Path, state: dict[str, Any]) -> str:
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    tallied = tally(state)
    rules = state.get("rules") or {}
    esc = html.escape
    rows = []
    targets = [control_target(n) for n in range(1, CONTROL_RUNS + 1)] + state["mutants"]
    for target in targets:
        tds = []
        for entry in entries:
            key = score_key(target, entry)
            cell = cells.get(key)
            if cell is None:
                tds.append('<td class="none">not run</td>')
                continue
            outcome = tallied["outcomes"][key]
            text = f"{esc(outcome)} <small>({esc(cell['verdict'])})</small>"
            if cell.get("report") and Path(cell["report"]).is_file():
                link = os.path.relpath(cell["report"], score_dir)
                text = f'<a href="{esc(link)}">{text}</a>'
            notes = []
            if cell["bad"]:
                rule = rules.get(target)
                fired = ", ".join(cell["bad"])
                notes.append(f"fired: {esc(fired)}" + (
                    f"; expected {esc(rule)}: {'yes' if rule in cell['bad'] else 'no'}"
                    if rule else ""))
            if cell.get("first_invalid_s") is not None:
                notes.append(f"first INVALID at {cell['first_invalid_s']} s")
            if key in tallied["inconclusive_cells"]:  # its own reason, or its control's
                notes.append(esc(tallied["inconclusive_cells"][key]))
            if cell.get("first_attempt"):
                notes.append(f"re-run; first: {esc(cell['first_attempt'].get('verdict', '?'))}")
            small = "".join(f"<br><small>{n}</small>" for n in notes)
            tds.append(f'<td class="{esc(outcome.replace(" ", "-"))}">{text}{small}</td>')
        fate = ("control" if target not in state["mutants"]
                else "killed" if target in tallied["killed_by"]
                else "survived" if target in tallied["survived"]
                else "inconclusive" if target in tallied["inconclusive"] else "pending")
        rule = f"<br><small>expects {esc(rules[target])}</small>" if target in rules else ""
        rows.append(f"<tr><th>{esc(target)}<br><small>{fate}</small>{rule}</th>"
                    f"{''.join(tds)}</tr>")
    head = "".join(f"<th>{esc(e)}</th>" for e in entries)
    control = (f"<p>Control: false alarm (an INVALID run of the release) in: "
               f"{esc(', '.join(tallied['control_bad']))}; no kill counts there</p>"
               if tallied["control_bad"] else "")
    return (f"<!doctype html><meta charset=utf-8><title>mutation score</title>"
            f"<style>{_STYLE}</style><h1>Mutation score: {tallied['killed']} of "
            f"{tallied['killed'] + len(tallied['survived'])} mutants killed</h1>"
            f"<p>Kafka {esc(state['kafka_version'])}: {esc(score_said(tallied))}; "
            f"survived: {esc(', '.join(tallied['survived']) or 'none')}; inconclusive: "
            f"{esc(', '.join(tallied['inconclusive']) or 'none')}</p>{control}"
            f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>\n")
