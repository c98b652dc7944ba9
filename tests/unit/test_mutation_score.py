"""The mutation score's bookkeeping (#54, #62), from score.json alone: a mutant is
killed by an INVALID run only where all three control runs of that entry were
valid, survives when its runs are done, played and none killed it, and is
inconclusive (never survived) when no run tested it; junit.xml and index.html say
so, and the control's INVALID runs are the plan's false-alarm rate."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from elr_harness.hunt.score import CONTROL, read_state, score_key
from elr_harness.hunt.score_pages import control_keys, tally, write_pages
from elr_harness.soak.children import first_invalid_s, unplayed


def _cell(verdict: str, bad=(), report=None, **more) -> dict:
    return {"verdict": verdict, "bad": list(bad), "states": [], "seconds": 60.0,
            "first_invalid_s": 12.5 if verdict == "invalid" else None, "report": report,
            **more}


def _state(cells: dict) -> dict:
    return {"score_version": 2, "kafka_version": "4.4.0",
            "mutants": ["m1", "m2", "m3", "m4", "m5", "m6"],
            "rules": {"m1": "elr-invariant", "m2": "lost-write"},
            "seed": 0, "cluster_name": "elr-mutants", "plan": [
                {"name": "a", "args": ["--nemesis", "none"]},
                {"name": "b", "args": ["--nemesis", "kill"]},
                {"name": "c", "args": ["--nemesis", "kill"]}], "cells": cells}


def _controls(entry: str, *verdicts: str) -> dict:
    return {key: _cell(v, ["x"] if v == "invalid" else ())
            for key, v in zip(control_keys(entry), verdicts, strict=False)}


CELLS = {
    **_controls("a", "valid", "valid", "valid"),
    # one of b's three control runs cried wolf: no kill counts on b
    **_controls("b", "valid", "invalid", "valid"),
    # c's control: one run gave no verdict, so a kill there is not yet shown
    **_controls("c", "valid", "error", "valid"),
    score_key("m1", "a"): _cell("invalid", ["elr-invariant"]), score_key("m1", "b"): _cell("valid"),
    score_key("m1", "c"): _cell("valid"),
    # m2's only INVALID is beside the control's false alarm: flaky control, no kill
    score_key("m2", "a"): _cell("valid"), score_key("m2", "b"): _cell("invalid", ["lost-write"]),
    score_key("m2", "c"): _cell("valid"),
    score_key("m3", "a"): _cell("valid"),  # b, c not run yet
    # m4: every run tested nothing (an error; a nemesis that skipped a step; an
    # INVALID where the control is inconclusive): inconclusive, not survived
    score_key("m4", "a"): _cell("error"),
    score_key("m4", "b"): _cell("valid", unplayed="step T1 skipped: no leader"),
    score_key("m4", "c"): _cell("invalid", ["lost-write"]),
    # m5: killed on a where the control was clean (an INVALID stands, a step skipped
    # or not: the checker found what it found)
    score_key("m5", "a"): _cell("invalid", ["lost-write"], unplayed="step T3 skipped: x"),
    score_key("m5", "b"): _cell("valid"),
    score_key("m5", "c"): _cell("valid"),
    # m6: survived on a, inconclusive elsewhere: the survived run counts
    score_key("m6", "a"): _cell("valid"), score_key("m6", "b"): _cell("unknown"),
    score_key("m6", "c"): _cell("valid"),
}


def test_each_run_has_one_of_four_outcomes_and_the_score_counts_the_decided() -> None:
    tallied = tally(_state(CELLS))
    assert tallied["killed_by"] == ["m1", "m5"]
    assert tallied["survived"] == ["m2", "m6"]
    assert tallied["inconclusive"] == ["m4"]
    assert tallied["pending"] == ["m3"]
    assert (tallied["mutants"], tallied["killed"], tallied["score"]) == (6, 2, 0.5)
    outcomes = tallied["outcomes"]
    assert outcomes[score_key("m2", "b")] == "flaky control"
    assert outcomes[score_key("m4", "a")] == outcomes[score_key("m4", "b")] == "inconclusive"
    assert outcomes[score_key("m4", "c")] == "inconclusive"  # its control is not all there
    assert outcomes[score_key("m6", "b")] == "inconclusive"
    assert outcomes[score_key("m1", "b")] == "survived"
    assert tallied["inconclusive_cells"][score_key("m4", "b")] == "step T1 skipped: no leader"
    assert tallied["inconclusive_cells"][score_key("m4", "a")] == "no verdict (error)"
    # the control: 8 conclusive runs, 1 INVALID; b is where it cried wolf
    assert tallied["control_bad"] == ["b"]
    assert (tallied["false_alarms"], tallied["control_runs"]) == (1, 8)
    assert tallied["false_alarm_rate"] == 0.125
    assert [tallied["control"][e]["status"] for e in "abc"] == [
        "clean", "false alarm", "inconclusive"]
    assert tallied["outcomes"][control_keys("b")[1]] == "false alarm"
    # which rule fired, beside the catalog's
    assert tallied["expected_fired"]["m1"] == ["a"]
    assert tallied["expected_fired"]["m2"] == ["b"]


def test_junit_fails_a_survivor_and_errors_what_tested_nothing(tmp_path) -> None:
    write_pages(tmp_path, _state(CELLS))
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert "false alarm" in cases[(f"{CONTROL} #2", "b")].find("error").get("message")
    assert "inconclusive: no verdict (error)" in \
        cases[(f"{CONTROL} #2", "c")].find("error").get("message")
    assert cases[(CONTROL, "a")].find("error") is None
    assert cases[("mutant", "m1")].find("failure") is None
    assert "survived" in cases[("mutant", "m2")].find("failure").get("message")
    assert "inconclusive" in cases[("mutant", "m4")].find("error").get("message")
    assert cases[("mutant", "m4")].find("failure") is None
    assert cases[("mutant", "m3")].find("skipped") is not None
    assert (suite.get("failures"), suite.get("errors"), suite.get("tests")) == ("2", "3", "15")


def test_the_page_grids_targets_by_entries_and_links_each_report(tmp_path) -> None:
    report = tmp_path / "runs" / "m1" / "store" / "t" / "1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<p>report</p>")
    cells = {**CELLS, score_key("m1", "a"): _cell("invalid", ["elr-invariant"], str(report))}
    write_pages(tmp_path, _state(cells))
    page = (tmp_path / "index.html").read_text()
    assert "Mutation score: 2 of 4 mutants killed" in page
    assert "2 of 4 decided mutants killed (50%); 1 inconclusive, 1 pending, of 6; " \
           "false alarms: 1 of 8 control runs INVALID" in page
    assert 'href="runs/m1/store/t/1/report.html"' in page
    assert "first INVALID at 12.5 s" in page and "false alarm (an INVALID run of the " \
        "release) in: b" in page
    assert "fired: elr-invariant; expected elr-invariant: yes" in page
    assert "fired: lost-write; expected lost-write: yes" in page
    assert "step T1 skipped: no leader" in page
    # m4's INVALID on c beside a control run with no verdict: the reason is the control's
    assert "the control&#x27;s runs of this entry are not all conclusive" in page
    assert page.count("<tr>") == 1 + 3 + 6  # head, three control runs, six mutants


def test_a_run_that_played_less_than_asked_says_what(tmp_path) -> None:
    """test.json's nemesis_result, as each kind of nemesis writes it."""
    assert unplayed({"nemesis": "none", "nemesis_result": {}}) is None
    assert unplayed({"nemesis": "all", "nemesis_result": {"injected": ["kill"]}}) is None
    assert unplayed({"nemesis": "all", "nemesis_result": {}}) == "no fault was injected"
    played = {"file": "x.toml", "steps": [{"step": "T0", "fault": "kill"}]}
    assert unplayed({"nemesis": "s", "nemesis_result": {"schedule": played,
                                                        "injected": ["kill"]}}) is None
    for change, said in [
        ({"skipped": "no full ISR"}, "the schedule was skipped: no full ISR"),
        ({"error": "no node b9"}, "the schedule failed: no node b9"),
        ({"stopped_before": "T3"}, "the nemesis stopped before step T3"),
        ({"steps": [{"step": "T0", "skipped": "no ELR"}]}, "step T0 skipped: no ELR"),
        ({"steps": [{"step": "T0", "error": "Boom: x"}]}, "step T0 failed: Boom: x"),
    ]:
        assert unplayed({"nemesis": "s", "nemesis_result": {
            "schedule": {**played, **change}, "injected": ["kill"]}}) == said, change
    scripted = {"steps": [{"step": "T0", "reached": True}, {"step": "T1", "reached": False}]}
    assert unplayed({"nemesis": "d", "nemesis_result": scripted}) == \
        "scenario step T1 not reached"
    scripted["steps"][1]["reached"] = True
    assert unplayed({"nemesis": "d", "nemesis_result": scripted}) is None


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
    (tmp_path / "score.json").write_text('{"score_version": 3}')
    with pytest.raises(BadInput, match="score.json is damaged"):
        read_state(tmp_path)
    (tmp_path / "score.json").write_text('{"score_version": 1}')
    with pytest.raises(BadInput, match="a score of an older harness .version 1: one control "
                                       "run per entry.; start a new score"):
        read_state(tmp_path)
    (tmp_path / "score.json").write_text(json.dumps(_state(CELLS)))
    assert read_state(tmp_path)["mutants"] == ["m1", "m2", "m3", "m4", "m5", "m6"]


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


def test_a_guided_entry_aims_past_what_the_controls_earlier_entries_reached(tmp_path,
                                                                           monkeypatch):
    """As a soak hands its guided runs the soak's coverage so far, the score hands
    every guided run the states the control's runs of the earlier entries reached:
    the control and each mutant aim at the same states, so "the control was valid"
    is measured on the plan the mutants ran (a mutant's own runs reach otherwise)."""
    from pathlib import Path

    from elr_harness.hunt import score

    asked: list[tuple[str, list[str]]] = []
    # by run folder and entry: control run 2 of b reaches one state more
    states = {("control", "a"): ["isr-below-min-isr", "elr-not-empty"],
              ("control-2", "b"): ["elected-from-elr"],
              ("m1", "a"): ["leaderless-with-elr"], ("m1", "b"): ["min-isr-change-with-elr"]}

    def child(args: list[str], folder: Path, name: str) -> dict:
        asked.append((folder.name, args))
        return {"verdict": "valid", "bad": [], "states": states.get((folder.name, name), []),
                "seconds": 1.0, "first_invalid_s": None, "exit": 0}

    monkeypatch.setattr(score, "run_child", child)
    state = _state({})
    state["plan"] = [{"name": "a", "args": ["--nemesis", "unclean-last-replica"]},
                     {"name": "b", "args": ["--nemesis", "all"]},
                     {"name": "guided", "args": ["--nemesis", "guided"]}]
    state["mutants"] = ["m1"]
    targets = [score.Target(CONTROL, None), score.Target("m1", tmp_path / "m1")]
    assert score.Score(tmp_path, state, targets).go() == 0
    assert [folder for folder, _ in asked] == ["control", "control-2", "control-3"] * 3 + \
        ["m1"] * 3, "each entry three times on the control, its runs first"
    guided = [(folder, a) for folder, a in asked if a[:2] == ["--nemesis", "guided"]]
    assert [folder for folder, _ in guided] == ["control", "control-2", "control-3", "m1"]
    for _, args in guided:
        assert args[args.index("--reached") + 1] == \
            "isr-below-min-isr,elr-not-empty,elected-from-elr"
        assert args[args.index("--seed") + 1] == "2", "the same seed for every target"
    assert not any("--reached" in a for _, a in asked if a[:2] != ["--nemesis", "guided"])
    cell = state["cells"][score_key("m1", "guided")]
    assert cell["reached_before"] == ["isr-below-min-isr", "elr-not-empty",
                                      "elected-from-elr"]


def test_a_run_that_tested_nothing_runs_once_more_and_its_first_attempt_is_kept(
        tmp_path, monkeypatch, capsys):
    """An inconclusive run (no verdict, or an unplayed nemesis) is run again once, in
    a folder of its own, the first attempt kept in its cell; one inconclusive the
    second time too stays so, is listed, and the score exits 2 (not sure)."""
    from pathlib import Path

    from elr_harness.hunt import score

    asked: list[str] = []
    # by run folder: m1 played nothing, then was caught; m2 gave no verdict twice
    outcomes = {"m1": {"verdict": "valid", "bad": [], "unplayed": "no fault was injected"},
                "m1-again": {"verdict": "invalid", "bad": ["lost-write"]},
                "m2": {"verdict": "error", "bad": []}, "m2-again": {"verdict": "error",
                                                                   "bad": []}}

    def child(args: list[str], folder: Path, name: str) -> dict:
        asked.append(folder.name)
        return {"states": [], "seconds": 1.0, "first_invalid_s": None, "exit": 0,
                **outcomes.get(folder.name, {"verdict": "valid", "bad": []})}

    monkeypatch.setattr(score, "run_child", child)
    state = _state({})
    state["plan"] = [{"name": "a", "args": ["--nemesis", "kill"]}]
    state["mutants"] = ["m1", "m2"]
    targets = [score.Target(CONTROL, None), score.Target("m1", tmp_path / "m1"),
               score.Target("m2", tmp_path / "m2")]
    assert score.Score(tmp_path, state, targets).go() == 2
    assert asked == ["control", "control-2", "control-3", "m1", "m2", "m1-again", "m2-again"]
    m1, m2 = state["cells"][score_key("m1", "a")], state["cells"][score_key("m2", "a")]
    assert m1["verdict"] == "invalid" and m1["first_attempt"]["unplayed"] == \
        "no fault was injected"
    assert m2["verdict"] == "error" and m2["first_attempt"]["verdict"] == "error"
    tallied = tally(state)
    assert (tallied["killed_by"], tallied["inconclusive"]) == (["m1"], ["m2"])
    out = capsys.readouterr().out
    assert "inconclusive: m2 / a: no verdict (error)" in out
    assert "1 of 1 decided mutants killed (100%); 1 inconclusive" in out
    # --resume runs nothing again: every cell is there, each second attempt made once
    asked.clear()
    assert score.Score(tmp_path, state, targets).go() == 2 and asked == []


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
