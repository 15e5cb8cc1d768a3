"""The report page in a real headless browser: Debian's Chromium, driven by Playwright.

The page must load from a ``file://`` URL with no console error, no page error and no request
beyond itself, and every image must be decoded (``complete`` with a natural width). Chromium is
installed with apt-get when it is missing and the tests run as root; where it cannot be, the
test is skipped and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _install_chromium() -> str | None:
    """Install Debian's chromium if it is missing; None when it is there, else why not."""
    if os.path.exists(CHROMIUM):
        return None
    apt = shutil.which("apt-get")
    if apt is None:
        return f"{CHROMIUM} is missing and there is no apt-get to install it"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return f"{CHROMIUM} is missing and installing it needs root (apt-get install chromium)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt, "install", "-y", "chromium"]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:  # stale package lists: update them once and try again
        subprocess.run([apt, "update"], env=env, capture_output=True, timeout=600)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])
        return f"apt-get install chromium failed ({done.returncode}): {tail}"
    return None if os.path.exists(CHROMIUM) else f"chromium installed but {CHROMIUM} is missing"


@pytest.fixture(scope="session")
def chromium() -> str:
    reason = _install_chromium()
    if reason is not None:
        print(f"skipping the browser test: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture(scope="module")
def report_path(request, tmp_path_factory) -> Path:
    """The example run's page: the one tests/test_report.py wrote in this session, or a new
    one (the example run takes half a minute; it is not run twice)."""
    path = tmp_path_factory.getbasetemp() / "example-report.html"
    if not path.exists():
        from windowkit.report import write_report
        from windowkit.report.example import example_run

        write_report(example_run(request.getfixturevalue("spark")), str(path))
    return path


def test_report_renders_in_chromium(chromium, report_path):
    from playwright.sync_api import sync_playwright

    from windowkit.report.example import WITH_FIGURE

    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report_path.as_uri(), wait_until="load")
            images = page.evaluate("""() => Array.from(document.images, img => ({
                complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
                shown: img.getBoundingClientRect().width, alt: img.alt}))""")
            sections = page.locator("section.step").count()
            title = page.title()
        finally:
            browser.close()
    assert problems == []
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
    assert len(images) == len(WITH_FIGURE)
    for image in images:
        assert image["complete"] and image["width"] > 300 and image["height"] > 100, image
        assert image["shown"] > 0 and image["alt"]
    assert sections >= len(WITH_FIGURE)
    assert title.startswith("example run <b>x</b>")  # the markup shows as text
