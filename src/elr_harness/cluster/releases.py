"""Kafka's releases on Maven Central: `--kafka-version latest` is the newest 4.x
release, learnt from Maven's metadata at run time and cached for a day, so a
user who runs `harness run` tests what Kafka ships today.

Offline, the last list learnt is used however old it is (a pinned version
needs no list at all: its jars are cached).
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from elr_harness.core.config import ReleasesConfig, cache_dir
from elr_harness.core.errors import DistributionError

LATEST = "latest"

#: Releases the unclean-last-replica scenario was run on with ELR on and off, and
#: what was seen (SCENARIOS.md has the table); `harness versions` marks them.
TESTED: dict[str, str] = {
    "4.0.0": "ELR on (enabled at format) valid, ELR off acks=all lost-write",
    "4.1.1": "ELR on valid, ELR off acks=all lost-write",
    "4.2.2": "ELR on valid, ELR off acks=all lost-write",
    "4.3.1": "ELR on valid, ELR off acks=all lost-write",
    "4.4.0": "ELR on valid, ELR off acks=all lost-write",
}

#: What `elr-downgrade` (docs/bugs/stale-last-known-elr-after-elr-downgrade.md) showed
#: on each release it was run on, its losing order twice (seeds 0 and 4, 2026-12-07;
#: 4.1.1 in #53's first runs); `harness versions` says it beside the table above.
ELR_DOWNGRADE: dict[str, str] = {
    "4.1.0": "stale LastKnownELR kept at level 0, no acks=all loss (2 of 2)",
    "4.1.1": "stale leader elected, acks=all lost-write (2 of 2)",
    "4.1.2": "stale leader elected, acks=all lost-write (2 of 2)",
    "4.2.2": "stale leader elected, acks=all lost-write (2 of 2)",
    "4.3.2": "stale leader elected, acks=all lost-write (2 of 2)",
    "4.4.0": "stale leader elected, acks=all lost-write (2 of 2)",
}


def _release(text: str) -> tuple[int, ...] | None:
    """A final release's version as numbers (None for an rc, a milestone, 3.x)."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", text):
        return None
    numbers = tuple(int(n) for n in text.split("."))
    return numbers if numbers[0] >= 4 else None


def parse_metadata(xml: str) -> list[str]:
    """The 4.x final releases in a maven-metadata.xml, oldest first."""
    root = ElementTree.fromstring(xml)
    versions = [v.text or "" for v in root.iter("version")]
    return sorted((v for v in versions if _release(v)), key=lambda v: _release(v) or ())


def _cache_file() -> Path:
    return cache_dir() / "kafka" / "releases.json"


def releases(config: ReleasesConfig, log: Callable[[str], None] = print,
             now: Callable[[], float] = time.time) -> list[str]:
    """The 4.x releases, oldest first: from the cache if younger than a day,
    else from Maven Central; the stale cache when Maven cannot be reached."""
    cache = _cache_file()
    cached = None
    try:
        cached = json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    if cached and now() - cached.get("fetched_at", 0) < config.cache_hours * 3600:
        return list(cached["releases"])
    try:
        with urllib.request.urlopen(config.metadata_url,
                                    timeout=config.fetch_timeout_s) as answer:
            found = parse_metadata(answer.read().decode())
    except (OSError, ValueError, ElementTree.ParseError) as err:
        if cached:
            log(f"Maven Central did not answer ({err}); using the release list of "
                f"{time.strftime('%Y-%m-%d', time.gmtime(cached.get('fetched_at', 0)))}")
            return list(cached["releases"])
        raise DistributionError(
            f"cannot learn Kafka's newest release from {config.metadata_url} ({err}); "
            "pin one with --kafka-version, e.g. 4.1.1") from err
    if not found:
        raise DistributionError(f"{config.metadata_url} lists no Kafka 4.x release")
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".tmp")
    partial.write_text(json.dumps({"fetched_at": now(), "releases": found}))
    partial.replace(cache)
    return found


def resolve_version(version: str, config: ReleasesConfig,
                    log: Callable[[str], None] = print) -> str:
    """`latest` -> the newest release; any other version as it is."""
    if version != LATEST:
        return version
    newest = releases(config, log)[-1]
    log(f"Kafka {LATEST} is {newest}")
    return newest
