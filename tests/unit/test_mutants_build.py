"""`harness mutants build` on a real release (#54): each mutant of the catalog is
Kafka 4.4.0 from Maven Central with exactly one class rewritten, which the JVM
verified; a body that does not compile is one line naming the mutant.

No container runs here (the JVMs are local), so this is in the unit half of the
suite. Every mutant and its probe are built afresh on each run, into a cache of
the module's own: only the release (downloaded once) and the mutator (built by
Maven at set-up, keyed by its source) come from the user's cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from elr_harness.cluster.distribution import resolve_distribution
from elr_harness.cluster.mutants.build import MUTANT_FILE, build_fix, build_mutant
from elr_harness.cluster.mutants.catalog import load_catalog, load_fixes
from elr_harness.core.config import cache_dir
from elr_harness.core.errors import HarnessError

VERSION = "4.4.0"


@pytest.fixture(scope="module", autouse=True)
def fresh_cache(tmp_path_factory):
    """A cache with no mutant and no probe built yet; the release and the mutator
    linked from the user's cache (set-up made them)."""
    users = cache_dir()
    mutator = users / "mutator"
    assert mutator.is_dir(), "no mutator built: scripts/setup.sh builds it"
    fresh = tmp_path_factory.mktemp("cache")
    (fresh / "mutator").symlink_to(mutator)
    (users / "kafka").mkdir(parents=True, exist_ok=True)
    (fresh / "kafka").symlink_to(users / "kafka")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ELR_HARNESS_CACHE", str(fresh))
        yield fresh


@pytest.fixture(scope="module")
def release(fresh_cache):
    return resolve_distribution(VERSION, None, log=lambda _m: None)


def _entries(jar: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(jar) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_every_mutant_is_the_release_with_one_class_rewritten(release) -> None:
    built = subprocess.run([sys.executable, "-m", "elr_harness.cli", "mutants", "build",
                            "--kafka-version", VERSION], capture_output=True, text=True,
                           timeout=900, env=os.environ)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    # one line per mutant, `name folder`, then one summary line
    homes = dict(line.split() for line in built.stdout.splitlines()[:-1])
    catalog = load_catalog()
    assert sorted(homes) == sorted(m.name for m in catalog)
    release_jars = sorted(p.name for p in release.libs.iterdir())
    for mutant in catalog:
        home = Path(homes[mutant.name])
        said = json.loads((home / MUTANT_FILE).read_text())
        assert (said["name"], said["class"], said["release"]) == (
            mutant.name, mutant.class_name, VERSION)
        assert sorted(p.name for p in (home / "libs").iterdir()) == release_jars
        jar = mutant.jar_file(VERSION)
        original, mutated = _entries(release.libs / jar), _entries(home / "libs" / jar)
        assert sorted(original) == sorted(mutated)
        changed = [name for name in original if original[name] != mutated[name]]
        assert changed == [mutant.class_name.replace(".", "/") + ".class"], (mutant.name, changed)
        for other in release_jars:  # the others are the release's own bytes
            if other != jar:
                assert (home / "libs" / other).stat().st_ino == \
                    (release.libs / other).stat().st_ino or \
                    (home / "libs" / other).read_bytes() == (release.libs / other).read_bytes()


def test_a_body_that_does_not_compile_is_one_line_and_leaves_nothing(release) -> None:
    [mutant] = [m for m in load_catalog() if m.name == "elr-on-whatever-the-feature"]
    broken = replace(mutant, name="broken-body", body="{ return nosuchfield; }")
    with pytest.raises(HarnessError, match="mutant 'broken-body': the new body of "
                       "org.apache.kafka.controller.FeatureControlManager.isElrFeatureEnabled "
                       "does not compile"):
        build_mutant(broken, release)
    leftovers = [p.name for p in (release.home.parent.parent / "mutants" / VERSION).iterdir()
                 if "broken-body" in p.name]
    assert leftovers == []


def test_a_release_the_body_was_not_written_for_is_refused(release) -> None:
    [mutant] = load_catalog()[:1]
    with pytest.raises(Exception, match="was written against Kafka 4.4.0, not 4.1.1"):
        build_mutant(mutant, replace(release, version="4.1.1"))


def test_each_mutant_decides_otherwise_than_the_release_on_its_probe(release) -> None:
    """The second check of each mutant, every one of the catalog: on its probe's input
    (a partition state, a config change, a broker's shutdown, a leader's log) the
    release's code and the mutant's decide differently (what each decided is kept in
    mutant.json)."""
    for mutant in load_catalog():
        assert mutant.probe is not None, f"{mutant.name} has no probe"
        said = json.loads((build_mutant(mutant, release) / MUTANT_FILE).read_text())["probe"]
        assert said["input"] == mutant.probe
        assert said["release"] != said["mutant"], mutant.name
        assert "Exception" not in said["release"] + said["mutant"]


def test_a_mutant_its_probe_cannot_tell_from_the_release_is_refused_as_equivalent(
        release) -> None:
    """A rewrite the probe's input never reaches (the feature's method, probed on a
    partition change that does not ask it) decides as the release does: refused."""
    [feature] = [m for m in load_catalog() if m.name == "elr-on-whatever-the-feature"]
    blind = replace(feature, name="blind-probe", probe="elr-kept-at-min-isr")
    with pytest.raises(HarnessError, match="mutant 'blind-probe' is equivalent on its probe"):
        build_mutant(blind, release)
    built = build_mutant(replace(blind, name="marked-equivalent", equivalent=True), release)
    try:
        said = json.loads((built / MUTANT_FILE).read_text())["probe"]
        assert said["release"] == said["mutant"]
    finally:
        shutil.rmtree(built)  # no mutant of the catalog: not left in the cache


def test_each_fix_is_the_release_with_one_class_rewritten_and_changes_the_bugs_state(
        release) -> None:
    """`harness mutants fix` (#64): each candidate fix of fixes.toml is built as a mutant
    is, in the cache's fixes/ folder (never a mutant's), with one class rewritten; on
    the bug's own state (its probe) it writes the LastKnownELR the release leaves
    stale: [] at level 0, the fenced leader [2] when it goes leaderless."""
    built = subprocess.run([sys.executable, "-m", "elr_harness.cli", "mutants", "fix",
                            "--kafka-version", VERSION], capture_output=True, text=True,
                           timeout=900, env=os.environ)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    homes = dict(line.split() for line in built.stdout.splitlines()[:-2])
    fixes = load_fixes()
    assert sorted(homes) == sorted(f.name for f in fixes)
    expected = {"clear-last-known-elr-at-level-0": "lastKnownElr=[]",
                "fenced-leader-is-last-known": "lastKnownElr=[2]"}
    for fix in fixes:
        home = Path(homes[fix.name])
        assert home.parent.parent.name == "fixes", home
        said = json.loads((home / MUTANT_FILE).read_text())
        assert (said["kind"], said["name"], said["release"]) == ("fix", fix.name, VERSION)
        jar = fix.jar_file(VERSION)
        original, rewritten = _entries(release.libs / jar), _entries(home / "libs" / jar)
        changed = [name for name in original if original[name] != rewritten[name]]
        assert changed == [fix.class_name.replace(".", "/") + ".class"], (fix.name, changed)
        probe = said["probe"]
        assert "lastKnownElr=null" in probe["release"], probe  # the release leaves it
        assert expected[fix.name] in probe["fix"], probe


def test_a_fix_that_decides_as_the_release_does_is_refused(release) -> None:
    """A fix whose probe the rewrite does not change fixes nothing: refused, whatever
    it says (a fix has no `equivalent`)."""
    [fix] = [f for f in load_fixes() if f.name == "fenced-leader-is-last-known"]
    blind = replace(fix, name="blind-fix", probe="elr-kept-at-min-isr")
    with pytest.raises(HarnessError, match="fix 'blind-fix' is equivalent on its probe"):
        build_fix(blind, release)
