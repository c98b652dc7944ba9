"""The mutant catalog (#54) is read whole and checked: every entry names a class,
a method, a body, what it breaks and a rule HISTORY.md has; a wrong entry is one
line naming it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from elr_harness.cluster.mutants.catalog import find, load_catalog
from elr_harness.core.anomalies import BY_NAME
from elr_harness.core.errors import BadInput

ENTRY = '''
[[mutant]]
name = "m"
jar = "kafka-metadata"
class = "org.apache.kafka.controller.PartitionChangeBuilder"
method = "isValidNewLeader"
descriptor = "(I)Z"
breaks = "b"
exposed_by = "e"
rule = "election-outside-elr"
versions = ["4.4.0"]
body = "{ return true; }"
'''


def test_the_packaged_catalog_loads_and_each_entry_is_whole() -> None:
    mutants = load_catalog()
    assert len(mutants) >= 12  # #54: at least twelve
    assert len({m.name for m in mutants}) == len(mutants)
    assert len({m.digest for m in mutants}) == len(mutants), "two entries, one rewrite"
    for mutant in mutants:
        assert mutant.rule in BY_NAME
        assert mutant.body.startswith("{") and mutant.body.endswith("}")
        assert mutant.breaks and mutant.exposed_by and mutant.versions
        assert mutant.jar_file("4.4.0") == f"{mutant.jar}-4.4.0.jar"


def test_an_entry_is_read_as_written() -> None:
    [mutant] = load_catalog(ENTRY)
    assert (mutant.name, mutant.method, mutant.descriptor, mutant.versions) == (
        "m", "isValidNewLeader", "(I)Z", ("4.4.0",))
    assert find([mutant], "m") is mutant


def test_the_digest_follows_the_rewrite_not_the_words() -> None:
    [plain] = load_catalog(ENTRY)
    [reworded] = load_catalog(ENTRY.replace('breaks = "b"', 'breaks = "other words"'))
    [rewritten] = load_catalog(ENTRY.replace("return true;", "return false;"))
    assert plain.digest == reworded.digest != rewritten.digest


@pytest.mark.parametrize(("change", "said"), [
    (('rule = "election-outside-elr"', 'rule = "made-up"'), "no anomaly of HISTORY.md"),
    (('descriptor = "(I)Z"', 'descriptor = "I"'), "`descriptor` 'I' is not"),
    (('class = "org.apache.kafka.controller.PartitionChangeBuilder"', 'class = "Builder"'),
     "`class` 'Builder' is not"),
    (('versions = ["4.4.0"]', 'versions = ["latest"]'), "`versions` must list releases"),
    (('body = "{ return true; }"', 'body = " "'), "`body` must be text"),
    (('name = "m"', 'name = "M!"'), "`name` 'M!' is not"),
    (('jar = "kafka-metadata"', 'jar = "kafka-metadata"\ncolour = "red"'), "no setting 'colour'"),
])
def test_a_wrong_entry_is_one_line_naming_it(change, said) -> None:
    with pytest.raises(BadInput, match=said):
        load_catalog(ENTRY.replace(*change))


def test_two_entries_of_one_name_and_no_entries_are_refused() -> None:
    with pytest.raises(BadInput, match="names 'm' twice"):
        load_catalog(ENTRY + ENTRY)
    with pytest.raises(BadInput, match=r"\[\[mutant\]\] entries and nothing else"):
        load_catalog("x = 1")
    with pytest.raises(BadInput, match="not TOML"):
        load_catalog("[[mutant]")


def test_an_unknown_mutant_is_named() -> None:
    with pytest.raises(BadInput, match="no such mutant"):
        find(load_catalog(), "nope")


def test_the_fixes_load_apart_from_the_catalog_and_are_never_mutants() -> None:
    """fixes.toml (#64): each fix is whole (a draft it answers, words, a probe), and the
    catalog the score reads names none of them: a fix is not a mutant."""
    from elr_harness.cluster.mutants.catalog import load_fixes

    fixes = load_fixes()
    assert [f.name for f in fixes] == ["clear-last-known-elr-at-level-0",
                                      "fenced-leader-is-last-known"]
    for fix in fixes:
        assert fix.fixes.endswith(".md") and fix.says and fix.probe
        assert (Path(__file__).parents[2] / "docs" / "bugs" / fix.fixes).is_file(), fix.fixes
    assert not {f.name for f in fixes} & {m.name for m in load_catalog()}


@pytest.mark.parametrize("change, said", [
    ('rule = "lost-write"\n', "no setting 'rule' (a mutant's, not a fix's)"),
    ('equivalent = true\n', "no setting 'equivalent'"),
    ('', "a fix needs a `probe`"),
])
def test_a_wrong_fix_is_one_line_naming_it(change, said) -> None:
    from elr_harness.cluster.mutants.catalog import load_fixes

    entry = ('[[fix]]\nname = "f"\nfixes = "x.md"\nsays = "s"\njar = "kafka-metadata"\n'
             'class = "a.B"\nmethod = "m"\nversions = ["4.4.0"]\nbody = "{ }"\n' + change)
    with pytest.raises(BadInput, match=re.escape(said)):
        load_fixes(entry)
