"""One real-browser test: Debian's Chromium, driven by Playwright, against the app served on
127.0.0.1. Load, see the heatmap, type a sentence, change the head, take screenshots."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run should have installed it")
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the app did not start within 60 s")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        yield b
        b.close()


def _heatmap_title(page) -> str:
    return page.locator(".js-plotly-plot .gtitle").first.text_content(timeout=60_000) or ""


def test_load_heatmap_and_open_a_head_from_the_link(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/attention", wait_until="domcontentloaded")
    page.wait_for_selector(".js-plotly-plot", timeout=90_000)
    assert "head 0" in _heatmap_title(page).lower()
    page.screenshot(path=str(tmp_path / "default.png"), full_page=True)

    page.goto(server + "/attention?layer=2&head=1&text=Dogs+chase+cats+around+the+garden.",
              wait_until="domcontentloaded")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot .gtitle')]"
        ".some(t => t.textContent.toLowerCase().includes('layer 2, head 1'))", timeout=90_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot .xtick text')]"
        ".some(t => t.textContent.includes('garden'))", timeout=60_000)
    page.screenshot(path=str(tmp_path / "head1.png"), full_page=True)
    assert not page.locator("[data-testid='stException']").count()
