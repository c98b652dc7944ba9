"""The mutation score's bookkeeping (#54), from score.json alone: a mutant is
killed by an INVALID run (not where the control was not valid), survives when all
its runs are done and none is, and junit.xml and index.html say so."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from elr_harness.soak.children import first_invalid_s
from elr_harness.soak.score import CONTROL, read_state, score_key
from elr_harness.soak.score_pages import tally, write_pages


def _cell(verdict: str, bad=(), report=None) -> dict:
    return {"verdict": verdict, "bad": list(bad), "states": [], "seconds": 60.0,
            "first_invalid_s": 12.5 if verdict == "invalid" else None, "report": report}


def _state(cells: dict) -> dict:
    return {"score_version": 1, "kafka_version": "4.4.0", "mutants": ["m1", "m2", "m3", "m4"],
            "seed": 0, "cluster_name": "elr-mutants", "plan": [
                {"name": "a", "args": ["--nemesis", "none"]},
                {"name": "b", "args": ["--nemesis", "kill"]}], "cells": cells}


CELLS = {
    score_key(CONTROL, "a"): _cell("valid"), score_key(CONTROL, "b"): _cell("invalid", ["x"]),
    score_key("m1", "a"): _cell("invalid", ["elr-invariant"]), score_key("m1", "b"): _cell("valid"),
    # m2's only INVALID is where the control was INVALID too: no kill
    score_key("m2", "a"): _cell("valid"), score_key("m2", "b"): _cell("invalid", ["lost-write"]),
    score_key("m3", "a"): _cell("valid"),  # b not run yet
    score_key("m4", "a"): _cell("valid"), score_key("m4", "b"): _cell("error"),
}


def test_a_kill_counts_only_where_the_control_was_valid() -> None:
    tallied = tally(_state(CELLS))
    assert tallied["killed_by"] == ["m1"]
    assert tallied["survived"] == ["m2", "m4"]
    assert tallied["pending"] == ["m3"]
    assert tallied["control_bad"] == ["b"]
    assert (tallied["mutants"], tallied["killed"]) == (4, 1)


def test_junit_fails_a_survivor_and_errors_a_control_that_is_not_valid(tmp_path) -> None:
    write_pages(tmp_path, _state(CELLS))
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert cases[(CONTROL, "b")].find("error") is not None
    assert cases[(CONTROL, "a")].find("error") is None
    assert cases[("mutant", "m1")].find("failure") is None
    assert "survived" in cases[("mutant", "m2")].find("failure").get("message")
    assert cases[("mutant", "m3")].find("skipped") is not None
    assert (suite.get("failures"), suite.get("errors"), suite.get("tests")) == ("2", "1", "6")


def test_the_page_grids_mutants_by_entries_and_links_each_report(tmp_path) -> None:
    report = tmp_path / "runs" / "m1" / "store" / "t" / "1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<p>report</p>")
    cells = {**CELLS, score_key("m1", "a"): _cell("invalid", ["elr-invariant"], str(report))}
    write_pages(tmp_path, _state(cells))
    page = (tmp_path / "index.html").read_text()
    assert "Mutation score: 1 of 4 mutants killed" in page
    assert 'href="runs/m1/store/t/1/report.html"' in page
    assert "first INVALID at 12.5 s" in page and "control not valid in: b" in page
    assert page.count("<tr>") == 1 + 1 + 4  # head, control, four mutants


def test_the_first_invalid_is_timed_from_the_history(tmp_path) -> None:
    lines = [{"index": i, "time": 1_000_000_000 + i * 500_000_000} for i in range(10)]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    results = {"bad_anomaly_types": ["lost-write", "elr-invariant"], "anomalies": {
        "lost-write": {"examples": [{"ops": [7, 9]}]},
        "elr-invariant": {"examples": [{"ops": [4]}, {"ops": None}]},
        "fine": {"examples": [{"ops": [1]}]}}}
    # shown by each example's last op: lost-write at op 9, elr-invariant at op 4
    assert first_invalid_s(tmp_path, results) == 2.0
    results["anomalies"]["elr-invariant"]["examples"] = [{"ops": [2, 8]}]
    assert first_invalid_s(tmp_path, results) == 4.0  # op 8, before lost-write's 9
    assert first_invalid_s(tmp_path, {"bad_anomaly_types": []}) is None


def test_a_damaged_score_json_is_refused_in_one_line(tmp_path) -> None:
    import pytest

    from elr_harness.core.errors import BadInput

    with pytest.raises(BadInput, match="not a score folder"):
        read_state(tmp_path)
    (tmp_path / "score.json").write_text('{"score_version": 1}')
    with pytest.raises(BadInput, match="score.json is damaged"):
        read_state(tmp_path)
    (tmp_path / "score.json").write_text(json.dumps(_state(CELLS)))
    assert read_state(tmp_path)["mutants"] == ["m1", "m2", "m3", "m4"]


def test_a_mutant_list_names_the_one_that_is_not_in_the_catalog(tmp_path):
    """`--mutant a,b` scores those (and the control); a name not in the catalog is
    one line and exit 2, before any build or cluster."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "elr_harness.cli", "mutants", "score",
                           "--mutant", "fenced-broker-elected,no-such-bug"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "harness: --mutant 'no-such-bug': no such mutant; `harness mutants list` names them")
    assert not (tmp_path / "store").exists()


def test_a_guided_entry_aims_past_what_its_targets_earlier_entries_reached(tmp_path,
                                                                          monkeypatch):
    """As a soak hands its guided runs the soak's coverage so far, the score hands a
    target's guided run the states that target's earlier runs reached (each target
    its own): with 240 s for 13 aims, a guided run that aims at states the scenarios
    already reached spends its rounds there."""
    from pathlib import Path

    from elr_harness.soak import score

    asked: list[list[str]] = []
    states = {"a": ["isr-below-min-isr", "elr-not-empty"], "b": ["elected-from-elr"]}

    def child(args: list[str], folder: Path, name: str) -> dict:
        asked.append(args)
        return {"verdict": "valid", "bad": [], "states": states.get(name, []),
                "seconds": 1.0, "first_invalid_s": None, "exit": 0}

    monkeypatch.setattr(score, "run_child", child)
    state = _state({})
    state["plan"] = [{"name": "a", "args": ["--nemesis", "unclean-last-replica"]},
                     {"name": "b", "args": ["--nemesis", "all"]},
                     {"name": "guided", "args": ["--nemesis", "guided"]}]
    state["mutants"] = ["m1"]
    targets = [score.Target(CONTROL, None), score.Target("m1", tmp_path / "m1")]
    score.Score(tmp_path, state, targets).go()
    guided = [a for a in asked if a[:2] == ["--nemesis", "guided"]]
    assert len(guided) == 2
    for args in guided:
        assert args[args.index("--reached") + 1] == \
            "isr-below-min-isr,elr-not-empty,elected-from-elr"
    assert not any("--reached" in a for a in asked if a[:2] != ["--nemesis", "guided"])
    cell = state["cells"][score_key("m1", "guided")]
    assert cell["reached_before"] == ["isr-below-min-isr", "elr-not-empty",
                                      "elected-from-elr"]


def test_the_scores_flags_are_refused_in_words_before_anything_runs(tmp_path, monkeypatch,
                                                                   capsys):
    """An empty --mutant meant every mutant and ',' the control alone, neither said; a
    5,000-digit --kafka-version was an internal error; --seed had no range, so each
    run refused it in its own log. Each is now one line and exit 2, nothing made."""
    from elr_harness.cli.main import main

    monkeypatch.chdir(tmp_path)
    for argv, said in [
        (["--mutant", ""], "--mutant: '' names no mutant (leave --mutant out to score every "
                           "one; `harness mutants list` names them)"),
        (["--mutant", ","], "--mutant: ',' names no mutant"),
        (["--kafka-version", "4" * 5000], "--kafka-version: 5000 characters, more than "
                                          "4096"),
        (["--kafka-version", "4.4.0/x"], "--kafka-version: '4.4.0/x' is not a Kafka version"),
        (["--seed", "1" * 30], "--seed: '111111111111111111111111111111' is not a seed"),
        (["--seed", "x"], "--seed: 'x' is not a seed"),
    ]:
        with pytest.raises(SystemExit) as ended:  # argparse's: usage, then the one line
            main(["mutants", "score", *argv])
        assert ended.value.code == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert said in err[-1] and "Traceback" not in "\n".join(err), (argv, err)
    with pytest.raises(SystemExit) as ended:
        main(["mutants", "build", "--kafka-version", "4" * 5000])
    assert ended.value.code == 2
    assert "--kafka-version: 5000 characters" in capsys.readouterr().err.strip().splitlines()[-1]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("change", "said"), [
    (lambda s: s.update(kafka_version="4" * 5000), "`kafka_version`: 5000 characters"),
    (lambda s: s.update(kafka_version="4.4.0/x"), "`kafka_version`: '4.4.0/x' is not a "
     "Kafka version"),
    (lambda s: s.update(mutants=[]), "`mutants` names no mutant"),
    (lambda s: s.update(plan=[]), "`plan` is not a list of entries"),
    (lambda s: s.update(plan=[{"name": "a", "args": ["--seed", 3]}]), "`plan` is not"),
    (lambda s: s.update(cells={"m1 / a": {"verdict": None}}), "cell 'm1 / a' is not a run's"),
])
def test_a_score_json_of_wrong_fields_is_refused_naming_the_field(tmp_path, change, said):
    """--resume trusted score.json: a mistyped key was an internal error, an empty plan
    with no mutants exited 0 with '0 of 0 mutants killed'."""
    from elr_harness.core.errors import BadInput

    state = _state(CELLS)
    change(state)
    (tmp_path / "score.json").write_text(json.dumps(state))
    with pytest.raises(BadInput, match=r"--resume .*: score\.json: " + re.escape(said)):
        read_state(tmp_path)


def test_a_resumed_scores_plan_is_validated_again(tmp_path, capsys):
    """An entry of `--help` in score.json's plan failed each run later as 'error, 1 s';
    a resumed score validates its plan as a new one does, before anything runs."""
    from elr_harness.cli.main import main

    score_dir = tmp_path / "store" / "mutants" / "20261206T000000"
    score_dir.mkdir(parents=True)
    state = _state({})
    state["plan"] = [{"name": "helpful", "args": ["--help"]}]
    (score_dir / "score.json").write_text(json.dumps(state))
    assert main(["mutants", "score", "--resume", str(score_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"harness: --resume {score_dir}: score.json's plan: plan entry "
                              "'helpful': -h/--help"), err
    assert json.loads((score_dir / "score.json").read_text()) == state
