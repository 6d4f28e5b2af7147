"""The upload quota on a real server, driven by Chromium (see tests/unit/test_uploads.py)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
KB = 1024
MB = 2**20


# ---- a real server ---------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
SESSION_TTL = 2  # server.disconnectedSessionTTL for the test server, in seconds

APP = textwrap.dedent("""
    import streamlit as st
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from server import uploads

    installed = uploads.install() and uploads.install()  # every rerun installs; twice is harmless
    mgr = runtime.get_instance().uploaded_file_mgr
    with mgr._lock:
        held = sorted(s for s, files in mgr.file_storage.items() if files)
    st.text(f"guard={installed} session={get_script_run_ctx().session_id} "
            f"held={','.join(held) or '-'} end")
    """)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api")
    (tmp_path / "upload_app.py").write_text(APP)
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - closed after the server stops
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "upload_app.py",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", "--server.maxUploadSize", "5",
         "--server.enableXsrfProtection", "true",
         "--server.disconnectedSessionTTL", str(SESSION_TTL)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    pytest.fail("the server did not start:\n"
                                + (tmp_path / "server.log").read_text(errors="replace"))
                time.sleep(0.2)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        print((tmp_path / "server.log").read_text(errors="replace"))


def _open_session(browser, url: str) -> tuple[object, str, str, list[str]]:
    """A browser tab on the app: (context, session id, XSRF token, sessions holding files)."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + "/", wait_until="domcontentloaded")
    text = page.get_by_text(re.compile(r"guard=\w+ session=")).text_content(timeout=20_000)
    m = re.search(r"guard=(\w+) session=(\S+) held=(\S+) end", text)
    assert m and m.group(1) == "True", text
    token = next(c["value"] for c in context.cookies() if c["name"] == "_streamlit_xsrf")
    held = [] if m.group(3) == "-" else m.group(3).split(",")
    return context, m.group(2), token, held


def test_server_refuses_uploads_over_the_session_quota(server):
    import requests
    from playwright.sync_api import sync_playwright

    url, proc = server

    def put(session_id, token, file_id, size):
        return requests.put(
            f"{url}/_stcore/upload_file/{session_id}/{file_id}",
            files={"file": (f"{file_id}.txt", b"x" * size, "text/plain")},
            headers={"X-Xsrftoken": token}, cookies={"_streamlit_xsrf": token}, timeout=10)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            ctx_a, sid_a, token_a, _ = _open_session(browser, url)
            assert requests.put(f"{url}/_stcore/upload_file/{sid_a}/x",
                                files={"file": ("x", b"x")}, timeout=10).status_code == 403

            # The page has no uploader, yet Streamlit takes files; now only up to the quota.
            assert put(sid_a, token_a, "f1", 1 * MB).status_code == 204
            assert put(sid_a, token_a, "f2", 900 * KB).status_code == 204
            r = put(sid_a, token_a, "f3", 4 * MB)  # under maxUploadSize, over the session's
            assert r.status_code == 413 and "Upload refused" in r.text
            assert put(sid_a, token_a, "f3", 1 * KB).status_code == 204
            assert put(sid_a, token_a, "f4", 1 * KB).status_code == 204
            r = put(sid_a, token_a, "f5", 1 * KB)
            assert r.status_code == 413 and "4 uploaded files" in r.text
            # The hostile test's flood: every further 1 MB file is refused, none is stored.
            assert {put(sid_a, token_a, f"flood{i}", 1 * MB).status_code
                    for i in range(20)} == {413}
            assert urllib.request.urlopen(url + "/_stcore/health", timeout=5).status == 200

            # The frontend's DELETE frees a place.
            r = requests.delete(f"{url}/_stcore/upload_file/{sid_a}/f1",
                                headers={"X-Xsrftoken": token_a},
                                cookies={"_streamlit_xsrf": token_a}, timeout=10)
            assert r.status_code == 204
            assert put(sid_a, token_a, "f6", 1 * MB).status_code == 204

            # Close the tab: Streamlit keeps the session for reconnection for SESSION_TTL s,
            # then forgets it without shutting it down, so its files stay in memory ...
            ctx_a.close()
            time.sleep(SESSION_TTL + 1.5)
            ctx_b, sid_b, token_b, held = _open_session(browser, url)
            assert put(sid_a, token_a, "late", 1).status_code == 400  # session a is gone
            print(f"after session a ended, before any upload: held by {held}")
            # ... until the next upload, when the guard frees the files of forgotten sessions.
            assert put(sid_b, token_b, "g1", 1 * KB).status_code == 204
            ctx_c, _, _, held = _open_session(browser, url)
            assert held == [sid_b]
            ctx_b.close()
            ctx_c.close()
        finally:
            browser.close()

    assert proc.poll() is None, "the server died"
    assert urllib.request.urlopen(url + "/_stcore/health", timeout=5).status == 200
