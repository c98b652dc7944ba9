"""A real browser opens the index served by `harness serve`, a report, and one offline.

Debian's chromium (/usr/bin/chromium) is driven headless through playwright;
playwright's own browser downloads are never used. Screenshots land in
test-output/ for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit"))

from report_fixtures import HOSTILE_ERROR, RunSpec, make_run  # noqa: E402

from elr_harness.core.config import ReportConfig  # noqa: E402
from elr_harness.report.build import build_report  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
OUTPUT = REPO / "test-output"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="Debian's chromium is not installed "
                              "(apt-get install -y chromium chromium-driver)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("browser-store")
    for spec in (RunSpec(variant="valid", run_name="20261121T100000"),
                 RunSpec(variant="invalid", elr=False, error=HOSTILE_ERROR,
                         run_name="20261121T110000"),
                 RunSpec(variant="unknown", test_name="pause", run_name="20261121T120000")):
        build_report(make_run(store, spec), ReportConfig())
    return store


@pytest.fixture(scope="module")
def server(store: Path):
    """`harness serve` as a user starts it, on a free loopback port."""
    port = _free_port()
    harness = shutil.which("harness")
    command = [harness] if harness else [sys.executable, "-m", "elr_harness.cli"]
    proc = subprocess.Popen(
        [*command, "serve", "--store", str(store), "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/", timeout=5).close()
            break
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out, err = proc.communicate()
                pytest.fail(f"harness serve did not come up: {out}{err}")
            time.sleep(0.2)
    yield base
    proc.terminate()
    proc.communicate(timeout=15)


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000})
        yield context
        context.close()


def _open(context, url: str):
    """A page with its console errors, failed requests and every URL it asked for."""
    page = context.new_page()
    seen = {"errors": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("requestfailed", lambda r: seen["errors"].append(f"failed: {r.url}"))
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.goto(url, wait_until="load")
    return page, seen


def _assert_images_load(page) -> int:
    widths = page.eval_on_selector_all(
        "img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert widths and all(w > 0 for w in widths), widths
    return len(widths)


def test_index_and_report_through_harness_serve(server: str, browser_context) -> None:
    OUTPUT.mkdir(exist_ok=True)
    page, seen = _open(browser_context, server + "/")
    rows = page.locator("tbody tr")
    assert rows.count() == 3
    assert page.locator(".pill.invalid").count() == 1
    page.screenshot(path=str(OUTPUT / "index.png"), full_page=True)

    page.locator("a", has_text="report").nth(1).click()  # newest first: the invalid run
    page.wait_for_load_state("load")
    assert page.url.endswith("/unclean-last-replica/20261121T110000/report.html")
    assert page.locator("#verdict .verdict").inner_text() == "INVALID"
    for name in ("lost-write", "lost-committed-read", "garbage-read"):
        assert page.locator(f"#anomaly-{name} table.ops").count() >= 1
    assert _assert_images_load(page) == 7
    # the hostile error text is shown as text, never run
    assert page.locator("#anomaly-garbage-read").inner_text().count('<script>alert("pwned")') == 1
    assert page.evaluate("document.querySelectorAll('main script, main img[onerror]').length") == 0
    page.screenshot(path=str(OUTPUT / "report-invalid.png"), full_page=True)
    assert seen["errors"] == []
    assert all(url.startswith((server, "data:")) for url in seen["requests"]), seen["requests"]


def test_report_opens_offline_from_a_file(store: Path, browser_context) -> None:
    report = store / "unclean-last-replica" / "20261121T100000" / "report.html"
    page, seen = _open(browser_context, report.as_uri())
    assert page.locator("#verdict .verdict").inner_text() == "VALID"
    assert page.locator("#anomaly-lost-write").count() == 1
    for section in ("plots", "partitions", "faults", "stats", "metadata"):
        assert page.locator(f"section#{section} h2").count() == 1
    _assert_images_load(page)
    page.screenshot(path=str(OUTPUT / "report-valid.png"), full_page=True)
    assert seen["errors"] == []
    assert all(url.startswith(("file:", "data:")) for url in seen["requests"])
