"""On a real server: the upload guard reads which files a session's widgets still refer to
(server/uploads.py, `_widget_file_lookup`), so it frees only uploads no page needs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run"]

APP = textwrap.dedent("""
    import streamlit as st
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from server import uploads

    rt = runtime.get_instance()
    sid = get_script_run_ctx().session_id
    if st.toggle("Show the uploader", value=True, key="show"):
        up = st.file_uploader("A lesson file", key="up")
        st.text(f"uploaded={up.file_id if up else '-'} end")
    st.button("Look again", key="again")  # a rerun: what the last run left in the state
    needed = uploads._widget_file_lookup(rt)(sid)
    st.text(f"needed={','.join(sorted(needed)) if needed else '-'} end")
    """)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api")
    (tmp_path / "needed_app.py").write_text(APP)
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "needed_app.py", "--server.address",
         "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    pytest.fail("the server did not start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _line(page, name: str) -> str:
    text = page.get_by_text(re.compile(name + r"=\S+ end")).text_content(timeout=20_000)
    return re.search(name + r"=(\S+) end", text).group(1)


def test_a_file_shown_by_an_uploader_is_needed_and_one_whose_uploader_is_gone_is_not(
        server, tmp_path):
    from playwright.sync_api import sync_playwright

    lesson = tmp_path / "lesson.toml"
    lesson.write_text('title = "x"\n')
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(server + "/", wait_until="domcontentloaded")
            assert _line(page, "needed") == "-"
            page.locator("input[type=file]").set_input_files(str(lesson))
            deadline = time.time() + 20
            while _line(page, "uploaded") == "-" and time.time() < deadline:
                time.sleep(0.3)
            file_id = _line(page, "uploaded")
            assert file_id != "-"
            deadline = time.time() + 20
            while _line(page, "needed") != file_id and time.time() < deadline:
                time.sleep(0.3)
            assert _line(page, "needed") == file_id  # the uploader shows it: needed
            page.get_by_text("Show the uploader").click()  # the uploader leaves the page
            deadline = time.time() + 20
            while page.get_by_text("uploaded=").count() and time.time() < deadline:
                time.sleep(0.3)
            # The state of widgets a run did not draw is dropped as that run ends; the guard
            # looks between runs, as the next run does.
            page.get_by_role("button", name="Look again").click()
            while _line(page, "needed") != "-" and time.time() < deadline:
                time.sleep(0.3)
            assert _line(page, "needed") == "-"  # no widget refers to it: it may be freed
        finally:
            browser.close()
