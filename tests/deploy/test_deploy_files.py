"""deploy/compose.yaml cannot run here (no Docker), so it is held to the configuration the
other tests run: the same nginx template, the same names filled in, the same replica flags and
the same shared settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from deploy.launch import ROOT, TEMPLATE, render

pytestmark = pytest.mark.deploy
DEPLOY = ROOT / "deploy"
NAMES = re.compile(r"\$\{(ATTENTION_LAB_[A-Z_]+)\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_compose_fills_in_the_same_template_with_the_same_names(compose):
    nginx = compose["services"]["nginx"]
    mounted = [v.split(":")[0] for v in nginx["volumes"]]
    assert (DEPLOY / mounted[0]).resolve() == TEMPLATE
    filled = {k for k in nginx["environment"] if k.startswith("ATTENTION_LAB_")}
    assert filled == set(NAMES.findall(TEMPLATE.read_text(encoding="utf-8")))
    # the image's envsubst must leave nginx's own $variables alone
    assert re.match(nginx["environment"]["NGINX_ENVSUBST_FILTER"], "ATTENTION_LAB_LISTEN")
    assert not re.match(nginx["environment"]["NGINX_ENVSUBST_FILTER"], "cookie_x")


def test_compose_routes_to_every_app_replica_it_defines(compose):
    apps = {name for name in compose["services"] if name.startswith("app")}
    servers = compose["services"]["nginx"]["environment"]["ATTENTION_LAB_SERVERS"]
    assert set(re.findall(r"server (app\d+):8501 max_fails=1", servers)) == apps
    assert len(apps) >= 2


def test_every_replica_shares_the_class_store_and_the_cookie_secret(compose):
    for name, service in compose["services"].items():
        if name.startswith("app"):
            env = service["environment"]
            assert env["ATTENTION_LAB_CLASS_STORE"].startswith("redis://redis:")
            assert "STREAMLIT_SERVER_COOKIE_SECRET" in env
            assert env["ATTENTION_LAB_CLIENT_HEADER"] == "X-Real-IP"  # as launch.py sets it


def test_the_containers_start_streamlit_as_launch_py_does():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    launch = (DEPLOY / "launch.py").read_text(encoding="utf-8")
    for flag in ("--server.headless", "--server.enableCORS", "--server.enableXsrfProtection"):
        assert f'"{flag}", "true"' in dockerfile and f'"{flag}", "true"' in launch


def test_rendering_fills_in_only_the_template_names():
    site = render("127.0.0.1:8080", ["127.0.0.1:1", "127.0.0.1:2"], "logs/a.log")
    assert "${" not in site
    assert "listen 127.0.0.1:8080;" in site
    assert re.findall(r"server (\S+:\d+) max_fails=1 fail_timeout=10s;", site) == [
        "127.0.0.1:1", "127.0.0.1:2"]
    for own in ("$cookie_attention_lab_replica", "$request_id", "$http_upgrade", "$http_host"):
        assert own in site  # nginx's variables, untouched


def test_nginx_logs_no_query_string_and_passes_the_clients_address_on():
    """A teacher link's key is in its query: the access log keeps the path only."""
    site = render("127.0.0.1:8080", ["127.0.0.1:1"], "logs/a.log")
    log_format = site[site.index("log_format"):site.index(";", site.index("log_format"))]
    assert "$uri" in log_format
    for whole in ("$request ", '$request"', "$request_uri", "$args", "$query_string"):
        assert whole not in log_format
    assert "proxy_set_header X-Real-IP $remote_addr;" in site
    from deploy.launch import replica_env

    assert replica_env("redis://x", "s", None)["ATTENTION_LAB_CLIENT_HEADER"] == "X-Real-IP"
