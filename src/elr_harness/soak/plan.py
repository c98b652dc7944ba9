"""What a soak runs: plan entries (named `harness run` flag lists), rotated over
Kafka releases, with seeds counting up from the soak's seed.

A plan file is TOML, one table per entry:

    [[entry]]
    name = "unclean-last-replica"
    args = ["--nemesis", "unclean-last-replica"]

    [[entry]]
    name = "mix"
    args = ["--nemesis", "partition,kill,stop,pause,page-cache-loss", "--time-limit", "90"]

Run n is entry n mod E on release (n div E) mod V with seed base + n: every
entry meets every release, and any run is repeated alone by its command.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from elr_harness.core.config import RunConfig, SoakConfig
from elr_harness.core.errors import BadInput, HarnessError
from elr_harness.core.files import read_text
from elr_harness.nemesis.registry import ALL, GUIDED
from elr_harness.nemesis.scenarios import SCENARIOS
from elr_harness.run.flags import given_flags

#: The longest soak accepted (a typo like 80h for 8h is refused, not run for days).
MAX_DURATION_S = 7 * 86400
#: The shortest: the message says 1 s, so 0.5 is refused too.
MIN_DURATION_S = 1.0
#: The largest --max-runs (a million runs outlast any --duration).
MAX_RUNS = 10**6
#: Flags the soak sets on every run itself; a plan entry may not.
SOAK_OWNED = ("--seed", "--kafka-version", "--store", "--keep-cluster", "--no-check",
              "--config", "--name", "--subnet", "--nodes-file", "--reached")
#: ...and may not name in any spelling: the owned flags, and the run's hidden
#: --record-run-dir (the file the run writes its run directory's path to).
RESERVED = (*SOAK_OWNED, "--record-run-dir")
#: What a plan entry's name may hold: printable text (it goes into junit.xml,
#: index.html and the terminal).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class PlanEntry:
    name: str
    args: tuple[str, ...]


#: The default rotation: the scenarios whose packages ask for it (the KIP-966
#: ones), a random mix of every kind of `all` (role-targeted ones included)
#: long enough for several rounds of faults, and a guided run aiming at the
#: KIP-966 states the soak has not reached yet (each run hands it the soak's
#: coverage so far).
DEFAULT_PLAN = (
    *(PlanEntry(name, ("--nemesis", name)) for name, scenario in SCENARIOS.items()
      if scenario.in_default_soak),
    PlanEntry("mix-all", ("--nemesis", ALL, "--time-limit", "90", "--interval", "8")),
    PlanEntry(GUIDED, ("--nemesis", GUIDED, "--time-limit", "240")),
)


@dataclass(frozen=True)
class PlannedRun:
    """Run `index` of a soak: everything that decides what it does."""

    index: int
    entry: PlanEntry
    seed: int
    kafka_version: str

    def run_args(self, store: Path, cluster_name: str, nodes_file: Path | None = None,
                 reached: Sequence[str] = (), subnet: str | None = None) -> list[str]:
        """Its `harness run` flags; a guided entry also gets the KIP-966 states the
        soak reached so far (`reached`), so it aims at the others first."""
        hosts = ["--nodes-file", str(nodes_file)] if nodes_file else []
        hosts += ["--subnet", subnet] if subnet else []
        before = ["--reached", ",".join(reached)] if reached and self.guided else []
        return ["run", *self.entry.args, "--seed", str(self.seed),
                "--kafka-version", self.kafka_version, "--store", str(store),
                "--name", cluster_name, *hosts, *before]

    @property
    def guided(self) -> bool:
        return flag_value(list(self.entry.args), "--nemesis") == GUIDED

    def command(self) -> str:
        """What a person types to run it alone (before the release is resolved)."""
        return shlex.join(["harness", "run", *self.entry.args, "--seed", str(self.seed),
                           "--kafka-version", self.kafka_version])


def planned_run(plan: Sequence[PlanEntry], versions: Sequence[str], base_seed: int,
                index: int) -> PlannedRun:
    entry = plan[index % len(plan)]
    version = versions[(index // len(plan)) % len(versions)]
    return PlannedRun(index, entry, base_seed + index, version)


def read_plan(path: Path) -> tuple[PlanEntry, ...]:
    """The entries of a plan file; anything wrong is one line naming the file."""
    where = f"--plan {str(path)[:200]}"
    if path.is_dir():
        raise BadInput(f"{where}: is a folder, not a TOML file")
    text = read_text(path, where)  # a FIFO, /dev/zero or a huge file: one line
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as err:
        raise BadInput(f"{where}: not TOML ({str(err)[:120]})") from None
    extra = sorted(set(data) - {"entry"})
    if extra:
        raise BadInput(f"{where}: unknown key {extra[0]!r} (a plan is a list of [[entry]])")
    raw = data.get("entry")
    if not isinstance(raw, list) or not raw:
        raise BadInput(f"{where}: no [[entry]] tables")
    entries = []
    for number, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise BadInput(f"{where}: entry {number}: not a table (write [[entry]] with "
                           "name = ... and args = [...])")
        name, args = item.get("name"), item.get("args", [])
        unknown = sorted(set(item) - {"name", "args"})
        if unknown:
            raise BadInput(f"{where}: entry {number}: unknown key {unknown[0]!r}")
        if not isinstance(name, str) or not name.strip() or len(name) > 80:
            raise BadInput(f"{where}: entry {number}: `name` must be a short text")
        if _CONTROL.search(name):
            raise BadInput(f"{where}: entry {number}: `name` holds a control character")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise BadInput(f"{where}: entry {name!r}: `args` must be a list of strings")
        if any("\x00" in a for a in args):
            raise BadInput(f"{where}: entry {name!r}: `args` holds a NUL character")
        entries.append(PlanEntry(name.strip(), tuple(args)))
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise BadInput(f"{where}: two entries are named "
                       f"{next(n for n in names if names.count(n) > 1)!r}")
    return tuple(entries)


def validate_plan(plan: Sequence[PlanEntry], run_parser: argparse.ArgumentParser,
                  store: Path, nodes_file: Path | None = None) -> None:
    """Every entry parses as `harness run` flags and passes the run's own checks,
    before the soak starts anything (a typo found at hour six wastes the night)."""
    from elr_harness.run.config import run_configs
    from elr_harness.run.spec import RunSpec, validate

    for entry in plan:
        for arg in entry.args:
            flag = reserved_flag(arg)
            if flag is not None:
                said = arg.split("=", 1)[0]
                spelt = "" if said == flag else f" ({said[:40]!r} abbreviates it)"
                raise BadInput(f"plan entry {entry.name!r}: {flag} is set by the soak for "
                               f"every run{spelt}")
        argv = [*entry.args, "--store", str(store),
                *(["--nodes-file", str(nodes_file)] if nodes_file else [])]
        try:
            # argparse prints a refusal on stderr, and help (-h, --help) on stdout
            with contextlib.redirect_stderr(io.StringIO()) as said, \
                    contextlib.redirect_stdout(io.StringIO()):
                args = run_parser.parse_args(argv)
                args.given = given_flags(run_parser, argv)
        except SystemExit as exited:
            if exited.code in (0, None):
                raise BadInput(f"plan entry {entry.name!r}: -h/--help asks for `harness run`'s "
                               "help, which is no run; `harness run --help` prints it") from None
            why = said.getvalue().strip().splitlines()[-1:] or ["not `harness run` flags"]
            raise BadInput(f"plan entry {entry.name!r}: {why[0]}") from None
        try:
            cluster, topic, workload, run, checker = run_configs(args)
            validate(RunSpec(cluster, [topic], workload, run, checker))
        except HarnessError as err:
            raise BadInput(f"plan entry {entry.name!r}: {err.message}") from None


def reserved_flag(arg: str) -> str | None:
    """The reserved flag `arg` names, exactly or as a prefix argparse might
    expand (`--sto` for --store), whatever the run parser's allow_abbrev."""
    if not arg.startswith("--") or arg == "--":
        return None
    said = arg.split("=", 1)[0]
    for flag in RESERVED:
        if flag.startswith(said) and len(said) > 2:
            return flag
    return None


def workload_seconds(entry: PlanEntry, config: SoakConfig) -> float:
    """How long an entry's workload runs: its --time-limit, else the run's default
    (a scenario's typical length, since it ends when its steps are done)."""
    args = list(entry.args)
    value = flag_value(args, "--time-limit")
    if value is not None:
        return float(value)
    if flag_value(args, "--nemesis") in SCENARIOS:
        return config.scenario_workload_s
    return RunConfig.time_limit_s


def flag_value(args: list[str], flag: str) -> str | None:
    """The value a flag list gives flag (`--flag value` or `--flag=value`), or None."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None
