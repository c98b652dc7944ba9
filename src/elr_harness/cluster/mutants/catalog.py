"""The mutant catalog (catalog.toml beside this file): one entry per mutant Kafka,
read and checked whole, so a wrong entry is one line naming it, never a mutant
built from half an entry."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from elr_harness.core.anomalies import BY_NAME
from elr_harness.core.errors import BadInput

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_CLASS = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+")
_METHOD = re.compile(r"[A-Za-z_$][\w$]*")
_DESCRIPTOR = re.compile(r"\([\[\w/;$]*\)[\[\w/;$]+")
_ARTIFACT = re.compile(r"[a-z][a-z0-9_.-]*")
_TEXT = ("breaks", "exposed_by")


@dataclass(frozen=True)
class Rewrite:
    """One method of one released class, rewritten: what a mutant and a fix share,
    and all the builder needs of either."""

    name: str
    #: the artifact in libs/ (kafka-metadata): its jar is `<jar>-<version>.jar`
    jar: str
    class_name: str
    method: str
    #: the JVM descriptor, "(I)Z"; None when the name alone is one method
    descriptor: str | None
    body: str

    def jar_file(self, version: str) -> str:
        return f"{self.jar}-{version}.jar"

    @property
    def digest(self) -> str:
        """What the built rewrite depends on: a change to its entry builds it again."""
        said = "\0".join([self.jar, self.class_name, self.method, self.descriptor or "-",
                          self.body])
        return hashlib.sha256(said.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Mutant(Rewrite):
    """A rewrite into a plausible bug."""

    breaks: str
    exposed_by: str
    #: the HISTORY.md anomaly that should fire
    rule: str
    #: the releases whose bytecode the body was written against
    versions: tuple[str, ...]
    #: a rewrite that cannot change behaviour (kept to show it is known)
    equivalent: bool = False
    #: the probe (java/probe) whose input the method must decide otherwise
    probe: str | None = None


def load_catalog(text: str | None = None) -> list[Mutant]:
    """The catalog's mutants, in its order (the packaged catalog.toml by default)."""
    if text is None:
        text = resources.files(__package__).joinpath("catalog.toml").read_text("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"the mutant catalog is not TOML: {err}") from None
    entries = data.get("mutant")
    if set(data) - {"mutant"} or not isinstance(entries, list) or not entries:
        raise BadInput("the mutant catalog holds [[mutant]] entries and nothing else")
    mutants = [_mutant(entry, number) for number, entry in enumerate(entries, 1)]
    seen: set[str] = set()
    for mutant in mutants:
        if mutant.name in seen:
            raise BadInput(f"the mutant catalog names {mutant.name!r} twice")
        seen.add(mutant.name)
    return mutants


def _mutant(entry: Any, number: int, what: str = "the mutant catalog") -> Mutant:
    where = f"{what}'s entry {number}"
    if not isinstance(entry, dict):
        raise BadInput(f"{where}: not a table")
    known = {"name", "jar", "class", "method", "descriptor", "body", "rule", "versions",
             "equivalent", "probe", *_TEXT}
    if unknown := sorted(set(entry) - known):
        raise BadInput(f"{where}: no setting {unknown[0]!r}")

    def text(key: str, pattern: re.Pattern | None = None, optional: bool = False) -> str | None:
        value = entry.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise BadInput(f"{where}: `{key}` must be text")
        if pattern is not None and not pattern.fullmatch(value):
            raise BadInput(f"{where}: `{key}` {value!r} is not {pattern.pattern}")
        return value.strip()

    name = text("name", _NAME)
    where = f"{what}'s entry {name!r}"
    rule = text("rule")
    if rule not in BY_NAME:
        raise BadInput(f"{where}: rule {rule!r} is no anomaly of HISTORY.md")
    versions = entry.get("versions")
    if not isinstance(versions, list) or not versions or \
            not all(isinstance(v, str) and re.fullmatch(r"\d+\.\d+\.\d+", v) for v in versions):
        raise BadInput(f"{where}: `versions` must list releases like \"4.4.0\"")
    equivalent = entry.get("equivalent", False)
    if not isinstance(equivalent, bool):
        raise BadInput(f"{where}: `equivalent` must be true or false")
    return Mutant(name=name, jar=text("jar", _ARTIFACT), class_name=text("class", _CLASS),
                  method=text("method", _METHOD),
                  descriptor=text("descriptor", _DESCRIPTOR, optional=True),
                  body=text("body"), breaks=" ".join(text("breaks").split()),
                  exposed_by=" ".join(text("exposed_by").split()), rule=rule,
                  versions=tuple(versions), equivalent=equivalent,
                  probe=text("probe", _NAME, optional=True))


@dataclass(frozen=True)
class Fix(Rewrite):
    """A rewrite as a draft ticket suggests (fixes.toml): built as a mutant is,
    never scored as one."""

    #: the draft ticket (a file of docs/bugs/) it answers
    fixes: str
    #: what the rewrite changes, in words
    says: str
    versions: tuple[str, ...]
    #: the probe input (the bug's own state) on which the fix decides otherwise
    probe: str | None = None
    #: a fix always changes behaviour on its probe; kept for the builder's check
    equivalent: bool = False


def load_fixes(text: str | None = None) -> list[Fix]:
    """The candidate fixes (the packaged fixes.toml by default), read and checked whole
    as the catalog is; a fix's `probe` is required (it must show a change)."""
    if text is None:
        text = resources.files(__package__).joinpath("fixes.toml").read_text("utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"the fixes file is not TOML: {err}") from None
    entries = data.get("fix")
    if set(data) - {"fix"} or not isinstance(entries, list) or not entries:
        raise BadInput("the fixes file holds [[fix]] entries and nothing else")
    fixes = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise BadInput(f"the fixes file's entry {number}: not a table")
        if taken := sorted({"rule", "breaks", "exposed_by", "equivalent"} & set(entry)):
            raise BadInput(f"the fixes file's entry {number}: no setting {taken[0]!r} "
                           "(a mutant's, not a fix's)")
        # a fix's fields checked by the catalog's own rules: `fixes` and `says` stand
        # where a mutant's `rule`, `breaks` and `exposed_by` stand
        mutant = _mutant({**{k: v for k, v in entry.items() if k not in ("fixes", "says")},
                          "rule": "lost-write", "breaks": "-", "exposed_by": "-"}, number,
                         what="the fixes file")
        for key in ("fixes", "says"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise BadInput(f"the fixes file's entry {mutant.name!r}: `{key}` must be text")
        if mutant.probe is None:
            raise BadInput(f"the fixes file's entry {mutant.name!r}: a fix needs a `probe`")
        fixes.append(Fix(name=mutant.name, jar=mutant.jar, class_name=mutant.class_name,
                         method=mutant.method, descriptor=mutant.descriptor, body=mutant.body,
                         fixes=entry["fixes"].strip(), says=" ".join(entry["says"].split()),
                         versions=mutant.versions, probe=mutant.probe))
    if len({f.name for f in fixes}) != len(fixes):
        raise BadInput("the fixes file names a fix twice")
    return fixes


def find(mutants: list[Mutant], name: str) -> Mutant:
    for mutant in mutants:
        if mutant.name == name:
            return mutant
    raise BadInput(f"--mutant {name!r}: no such mutant; `harness mutants list` names them")
