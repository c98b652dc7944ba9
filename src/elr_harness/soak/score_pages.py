"""What a mutation score shows (#54): the tally, junit.xml (a surviving mutant is a
failure, a control run that is not valid an error) and index.html (a mutant x
entry grid, each cell linked to its run's report). Read from score.json alone."""

from __future__ import annotations

import html
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

#: The plain release: every entry runs on it too, and must stay valid.
CONTROL = "control"


def score_key(target: str, entry: str) -> str:
    """A cell's key in score.json: the target (CONTROL or a mutant) and the entry."""
    return f"{target} / {entry}"


def tally(state: dict[str, Any]) -> dict[str, Any]:
    """Killed and surviving mutants (of those whose every run is done), and the
    entries where the control was not valid: a kill there does not count."""
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    control_bad = [e for e in entries
                   if cells.get(score_key(CONTROL, e), {}).get("verdict") not in (None, "valid")]
    killed, survived, pending = [], [], []
    for mutant in state["mutants"]:
        mine = [cells.get(score_key(mutant, e)) for e in entries]
        kills = [e for e, c in zip(entries, mine, strict=True)
                 if c and c["verdict"] == "invalid" and e not in control_bad]
        if kills:
            killed.append(mutant)
        elif all(mine):
            survived.append(mutant)
        else:
            pending.append(mutant)
    return {"mutants": len(state["mutants"]), "killed": len(killed), "killed_by": killed,
            "survived": survived, "pending": pending, "control_bad": control_bad}


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
    suite = ET.Element("testsuite", name="mutants", tests=str(len(state["mutants"]) +
                                                             len(entries)))
    failures = errors = 0
    for entry in entries:
        cell = cells.get(score_key(CONTROL, entry))
        case = ET.SubElement(suite, "testcase", classname=f"{CONTROL}", name=entry)
        if cell is None:
            ET.SubElement(case, "skipped", message="not run yet")
        elif cell["verdict"] != "valid":
            errors += 1
            ET.SubElement(case, "error", message=f"the release's run was {cell['verdict']}: "
                          f"{', '.join(cell['bad']) or 'no bad anomaly'}")
    for mutant in state["mutants"]:
        case = ET.SubElement(suite, "testcase", classname="mutant", name=mutant)
        runs = [cells.get(score_key(mutant, e)) for e in entries]
        said = "; ".join(f"{e}: {c['verdict'] if c else 'not run'}"
                         for e, c in zip(entries, runs, strict=True))
        if mutant in tallied["survived"]:
            failures += 1
            ET.SubElement(case, "failure", message=f"survived every entry ({said})")
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
td.invalid { background: #fde0dc; } td.valid { background: #e6f4ea; }
td.error, td.unknown { background: #fff4ce; } td.none { color: #888; }
small { color: #555; }
"""


def _page(score_dir: Path, state: dict[str, Any]) -> str:
    cells, entries = state["cells"], [e["name"] for e in state["plan"]]
    tallied = tally(state)
    esc = html.escape
    rows = []
    for target in [CONTROL, *state["mutants"]]:
        tds = []
        for entry in entries:
            cell = cells.get(score_key(target, entry))
            if cell is None:
                tds.append('<td class="none">not run</td>')
                continue
            text = esc(cell["verdict"])
            if cell.get("report") and Path(cell["report"]).is_file():
                link = os.path.relpath(cell["report"], score_dir)
                text = f'<a href="{esc(link)}">{text}</a>'
            bad = f"<br><small>{esc(', '.join(cell['bad']))}</small>" if cell["bad"] else ""
            first = (f"<br><small>first INVALID at {cell['first_invalid_s']} s</small>"
                     if cell.get("first_invalid_s") is not None else "")
            tds.append(f'<td class="{esc(cell["verdict"])}">{text}{bad}{first}</td>')
        fate = ("control" if target == CONTROL else "killed" if target in tallied["killed_by"]
                else "survived" if target in tallied["survived"] else "pending")
        rows.append(f"<tr><th>{esc(target)}<br><small>{fate}</small></th>{''.join(tds)}</tr>")
    head = "".join(f"<th>{esc(e)}</th>" for e in entries)
    control = (f"; control not valid in: {esc(', '.join(tallied['control_bad']))}"
               if tallied["control_bad"] else "")
    return (f"<!doctype html><meta charset=utf-8><title>mutation score</title>"
            f"<style>{_STYLE}</style><h1>Mutation score: {tallied['killed']} of "
            f"{tallied['mutants']} mutants killed</h1><p>Kafka "
            f"{esc(state['kafka_version'])}; survived: "
            f"{esc(', '.join(tallied['survived']) or 'none')}"
            f"{control}"
            f"</p><table><tr><th></th>{head}</tr>{''.join(rows)}</table>\n")
