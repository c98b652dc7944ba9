"""`--kafka-version latest`: the newest 4.x release from Maven's metadata, cached a day."""

from __future__ import annotations

import http.server
import threading

import pytest

from elr_harness.cluster.releases import parse_metadata, releases, resolve_version
from elr_harness.core.config import ReleasesConfig
from elr_harness.core.errors import DistributionError

#: Maven Central's kafka_2.13 maven-metadata.xml as served on 2026-11-25 (its
#: <versions> trimmed to a spread of what it holds).
METADATA = """<?xml version="1.0" encoding="UTF-8"?>
<metadata><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
<versioning><latest>4.4.0</latest><release>4.4.0</release><versions>
<version>3.9.1</version><version>4.0.0</version><version>4.0.1</version>
<version>4.1.0-rc1</version><version>4.1.1</version><version>4.10.0</version>
<version>4.2.0</version><version>4.3.1</version><version>4.4.0</version>
</versions></versioning></metadata>"""


def test_only_4x_final_releases_in_version_order():
    """4.10.0 sorts after 4.4.0 (numbers, not text); rc and 3.x are left out."""
    assert parse_metadata(METADATA) == ["4.0.0", "4.0.1", "4.1.1", "4.2.0", "4.3.1", "4.4.0",
                                        "4.10.0"]


@pytest.fixture
def maven(monkeypatch, tmp_path):
    """A local stand-in for Maven Central's metadata URL (loopback only)."""
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path / "cache"))
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = METADATA.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield ReleasesConfig(metadata_url=f"http://127.0.0.1:{server.server_port}/m.xml"), hits
    server.shutdown()


def test_latest_is_the_newest_and_the_list_is_kept_a_day(maven):
    config, hits = maven
    assert resolve_version("latest", config, log=lambda _m: None) == "4.10.0"
    assert resolve_version("4.1.1", config, log=lambda _m: None) == "4.1.1"
    releases(config, lambda _m: None)
    assert len(hits) == 1, "the second ask within a day is answered from the cache"
    later = releases(config, lambda _m: None, now=lambda: 10**12)
    assert len(hits) == 2 and later[-1] == "4.10.0"


def test_offline_uses_the_last_list_and_says_so(maven):
    config, _hits = maven
    releases(config, lambda _m: None)
    offline = ReleasesConfig(metadata_url="http://127.0.0.1:1/m.xml", fetch_timeout_s=2)
    said = []
    assert releases(offline, said.append, now=lambda: 10**12)[-1] == "4.10.0"
    assert "did not answer" in said[0]


def test_offline_with_no_list_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ELR_HARNESS_CACHE", str(tmp_path))
    offline = ReleasesConfig(metadata_url="http://127.0.0.1:1/m.xml", fetch_timeout_s=2)
    with pytest.raises(DistributionError, match="pin one with --kafka-version"):
        resolve_version("latest", offline, log=lambda _m: None)


def test_versions_says_what_each_release_showed(monkeypatch, capsys):
    """`harness versions` (#64): the unclean-last-replica verdicts where that ran, and
    under each release elr-downgrade was run on, what it showed there."""
    from elr_harness.cli.main import main
    from elr_harness.cluster import releases as module

    monkeypatch.setattr(module, "releases",
                        lambda config, log: ["4.1.0", "4.2.1", "4.4.0"])
    assert main(["versions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "4.1.0    unclean-last-replica not run"
    assert lines[1].split() == ["elr-downgrade:", "stale", "LastKnownELR", "kept", "at",
                                "level", "0,", "no", "acks=all", "loss", "(2", "of", "2)"]
    assert lines[2] == "4.2.1    unclean-last-replica not run"
    assert lines[3].startswith("4.4.0    tested: ELR on valid") and lines[3].endswith("(latest)")
    assert "stale leader elected, acks=all lost-write (2 of 2)" in lines[4]
    assert len(lines) == 5
