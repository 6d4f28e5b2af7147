"""Two app replicas behind nginx with one Redis, as deploy/ runs them: the page and the app's
websocket pass through nginx, the sticky cookie keeps a client on one replica, a replica that
dies sends its clients to the other, and a class started through one replica is joined through
the other (they share the class store in Redis).

Real processes on 127.0.0.1 (Debian's redis-server and nginx, `streamlit run app.py` twice,
started in parallel and shared by the whole module); the replica kill comes last: a student of
a class on the killed replica comes back into the class through the other one.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.request
from pathlib import Path

import pytest

from deploy.launch import COOKIE, NGINX, REDIS, running_cluster
from tests.harness.class_client import ClassClient
from tests.harness.ws_client import WsSession

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.deploy


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for tool in (NGINX, REDIS):
        if not Path(tool).exists():
            if os.environ.get("CI"):
                pytest.fail(f"{tool} is not installed; .ci/run should have installed it")
            pytest.skip(f"{tool} is not installed (apt-get install -y nginx redis-server)")
    with running_cluster(tmp_path_factory.mktemp("cluster"), replicas=2) as running:
        yield running


def get(url: str, cookie: str | None = None):
    headers = {"Cookie": f"{COOKIE}={cookie}"} if cookie else {}
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30)


async def open_session(url: str, cookies: dict | None = None) -> tuple[WsSession, dict]:
    """The attention page through the app's websocket, as a browser opens it: the page,
    health, host config, then the websocket and the first run, which draws the heatmap."""
    session = WsSession(url + "/attention?model=minilm")
    session.cookies.update(cookies or {})
    return session, await session.open(120)


async def dropped(session: WsSession, within_s: float = 10.0) -> str | None:
    """How the session's websocket closed, once it has (None if still open after within_s)."""
    for _ in range(int(within_s * 10)):
        if session.ws_closed:
            return session.ws_closed
        await asyncio.sleep(0.1)
    return None


def test_the_page_loads_through_nginx_with_a_sticky_cookie(cluster):
    answer = get(cluster.url + "/")
    body = answer.read().decode()
    cookies = answer.headers.get_all("Set-Cookie") or []
    assert answer.status == 200 and "<title>Streamlit</title>" in body
    assert any(c.startswith(COOKIE + "=") and "HttpOnly" in c for c in cookies), cookies
    # a client that already has the cookie is not given another one
    again = get(cluster.url + "/", cookie="someone")
    assert not any(c.startswith(COOKIE) for c in again.headers.get_all("Set-Cookie") or [])


def test_the_app_runs_over_its_websocket_through_nginx(cluster):
    async def scenario():
        session, result = await open_session(cluster.url)
        await session.close()
        return session, result

    session, result = asyncio.run(scenario())
    assert result["ok"], result
    assert result["status"] == "FINISHED_SUCCESSFULLY"
    assert result["error_boxes"] == 0
    assert session.cookies.get(COOKIE)  # nginx's cookie, kept from the page's answer


def test_the_sticky_cookie_keeps_a_client_on_one_replica(cluster):
    for _ in range(8):
        get(cluster.url + "/_stcore/health", cookie="student-7").read()
        get(cluster.url + "/_stcore/host-config", cookie="student-7").read()
    assert len(set(cluster.served("student-7", 16))) == 1
    # ... while different clients are spread over both replicas
    for n in range(40):
        get(cluster.url + "/_stcore/health", cookie=f"spread-{n}").read()
    replicas = {r for n in range(40) for r in cluster.served(f"spread-{n}", 1)}
    assert {cluster.replica_at(r) for r in replicas} == {0, 1}


def test_a_class_started_through_one_replica_is_joined_through_the_other(cluster):
    teacher = ClassClient(cluster.url + "/teach", keys=("class_start",))
    teacher.cookies[COOKIE] = cluster.cookie_for(0, "teacher")
    student = ClassClient(cluster.url + "/join", keys=("class_code", "class_name",
                                                       "class_join"))
    student.cookies[COOKIE] = cluster.cookie_for(1, "student")

    async def scenario():
        assert (await teacher.open(120))["ok"]
        assert (await teacher.click("class_start", 60))["ok"]
        code = teacher.said(r"^[A-Z0-9]{3}-[A-Z0-9]{3}$")
        assert code, "the Teach page shows no join code"
        teacher.start_polling()  # the teacher's class bar: the headcount, once a second
        assert (await student.open(120))["ok"]
        student.widgets["class_code"]["value"] = code
        student.widgets["class_name"]["value"] = "Ada"
        joined = await student.click("class_join", 60)
        for _ in range(100):  # the teacher's replica sees the student the other one added
            if teacher.said(r"\b1 joined"):
                break
            await asyncio.sleep(0.1)
        await teacher.close()
        await student.close()
        return joined

    joined = asyncio.run(scenario())
    assert joined["ok"] and joined["error_boxes"] == 0, joined
    assert student.said("Following the teacher|You are in the class")
    assert teacher.said(r"\b1 joined"), "the teacher's replica never saw the student"
    assert {cluster.replica_at(r) for r in cluster.served(teacher.cookies[COOKIE])} == {0}
    assert {cluster.replica_at(r) for r in cluster.served(student.cookies[COOKIE])} == {1}


def test_an_idle_student_runs_nothing_on_the_server_until_the_teacher_moves(cluster):
    """A following student's browser asks the class's signal (ui/class_signal.py) and its app
    has no timer: while the teacher does nothing, the student's session runs nothing at all;
    when the teacher moves on, it follows."""
    async def scenario():
        teacher, student = await a_class(cluster, "idle", teacher_on=0, student_on=1)
        student.start_polling()
        assert await said_within(student, "Following the teacher", 0.0, 30)
        await asyncio.sleep(2.0)  # the runs of joining are over
        runs = len(student.started)
        await asyncio.sleep(4.0)  # eight asks of the signal
        idle_runs, timers = len(student.started) - runs, dict(student.auto)
        moved = time.perf_counter()
        assert (await teacher.go("lessons", "lesson=minilm-heads&step=1", 60))["ok"]
        followed = await said_within(student, r"^Step 1 of \d+$", moved, 30)
        key = student.signal["data"]["key"]
        await teacher.close()
        await student.close()
        return idle_runs, timers, followed, key

    idle_runs, timers, followed, key = asyncio.run(scenario())
    assert idle_runs == 0 and timers == {}, (idle_runs, timers)
    assert followed, "the student did not follow the teacher"
    log = cluster.access_log.read_text(encoding="utf-8")
    assert "/signal HTTP/1.1\" 200" in log  # the asks went through nginx, answered
    assert key not in log  # the member key travels in a header, which nginx does not log


def test_a_rerun_asked_from_the_page_a_student_just_left_opens_the_new_page_again(cluster):
    """A student's app takes the teacher's lesson step on another page (the join page ->
    the lessons page), and a rerun the browser asked for from the join page arrives after it
    (its signal heard the teacher move while the page was switching): that run would leave the
    student on the join page. The app opens the lessons page again, at the same step."""
    step = r"^Step 1 of \d+$"

    async def scenario():
        teacher, student = await a_class(cluster, "left", teacher_on=0, student_on=0)
        student.start_polling()
        assert (await teacher.go("lessons", "lesson=minilm-heads&step=1", 60))["ok"]
        assert await said_within(student, step, 0.0, 30)
        await asyncio.sleep(1.0)  # the step's run has finished; then the browser stops asking
        await student.stop_polling()
        taken = (student.page_script_hash, student.query_string)
        stale = student.rerun_msg()
        stale.rerun_script.page_script_hash = student.pages["join"]
        stale.rerun_script.query_string = ""
        sent = time.perf_counter()
        await student.ws.send(stale.SerializeToString())
        redrawn = await said_within(student, step, sent, 30)
        await asyncio.sleep(1.0)
        finished = [q for t, q in student.finished if t >= sent]
        now = (student.page_script_hash, student.query_string)
        await teacher.close()
        await student.close()
        return taken, redrawn, finished, now

    taken, redrawn, finished, now = asyncio.run(scenario())
    assert "lesson=minilm-heads" in taken[1] and "step=1" in taken[1], taken
    assert redrawn, "the lesson step was not drawn again after the stale rerun"
    assert finished and finished[-1] == taken[1], finished  # a whole run, at that step
    assert now == taken, (now, taken)


async def a_class(cluster, name: str, teacher_on: int,
                  student_on: int) -> tuple[ClassClient, ClassClient]:
    """A teacher who started a class through replica `teacher_on` and a student who joined
    it with the code through replica `student_on` (browsers named after `name`)."""
    teacher = ClassClient(cluster.url + "/teach", keys=("class_start",))
    teacher.cookies[COOKIE] = cluster.cookie_for(teacher_on, f"{name}-teacher")
    assert (await teacher.open(120))["ok"]
    assert (await teacher.click("class_start", 60))["ok"]
    code = teacher.said(r"^[A-Z0-9]{3}-[A-Z0-9]{3}$")
    return teacher, await joined(cluster, code, student_on, f"{name}-student")


async def joined(cluster, code: str, replica: int, browser: str, client=ClassClient,
                 keys: tuple = ("class_code", "class_join")) -> ClassClient:
    """A student who opened the join page through `replica`, in a browser named `browser`,
    and joined the class with its code."""
    student = client(cluster.url + "/join", keys=keys)
    student.cookies[COOKIE] = cluster.cookie_for(replica, browser)
    assert (await student.open(120))["ok"]
    student.widgets["class_code"]["value"] = code
    assert (await student.click("class_join", 60))["ok"]
    return student


async def a_class_split_over_both(cluster) -> tuple[ClassClient, ClassClient]:
    """A teacher on replica 1 and a student who joined with the code through replica 0."""
    teacher, student = await a_class(cluster, "rejoin", teacher_on=1, student_on=0)
    teacher.start_polling()
    return teacher, student


async def said_within(client: ClassClient, pattern: str, since: float, within_s: float):
    for _ in range(int(within_s * 10)):
        if client.said(pattern, since):
            return client.said(pattern, since)
        await asyncio.sleep(0.1)
    return None


class Recording(ClassClient):
    """A browser tab whose every message from the server is kept, to be searched afterwards."""

    def __init__(self, url: str, keys: tuple = ()) -> None:
        super().__init__(url, keys=keys)
        self.received: list[bytes] = []

    def handle(self, msg, size: int = 0) -> None:
        self.received.append(msg.SerializeToString())
        super().handle(msg, size)

    def shows(self, secret: str, upto: int | None = None) -> bool:
        return any(secret.encode() in m for m in self.received[:upto])


async def a_whole_class_run(cluster) -> tuple[str, list[Recording], int]:
    """A teacher starts a class in projector mode and asks for the teacher link; the projector's
    computer opens that link through the other replica and leads: two students join, follow a
    lesson step with a question, answer, get the reveal and the class's end. (The key, the
    tabs, and how many messages the teacher's tab had before it asked for the link.)"""
    teacher = Recording(cluster.url + "/teach?projector=1",
                        keys=("class_start", "class_show_teacher_link"))
    teacher.cookies[COOKIE] = cluster.cookie_for(0, "keyrun-teacher")
    assert (await teacher.open(120))["ok"]
    assert (await teacher.click("class_start", 60))["ok"]
    code, asked = teacher.said(r"^[A-Z0-9]{3}-[A-Z0-9]{3}$"), len(teacher.received)
    assert (await teacher.click("class_show_teacher_link", 60))["ok"]
    key = teacher.said(r"/teach\?class=").strip().rsplit("class=", 1)[-1]
    leader = Recording(f"{cluster.url}/teach?class={key}&projector=1",
                       keys=("class_end", "class_reveal"))
    leader.cookies[COOKIE] = cluster.cookie_for(1, "keyrun-projector")
    assert (await leader.open(120))["ok"] and leader.said(r"\b0 joined")
    students = []
    for n, replica in enumerate((0, 1)):
        student = await joined(cluster, code, replica, f"keyrun-student-{n}", Recording,
                               ("class_code", "class_join", "lesson_check"))
        student.start_polling()
        students.append(student)
    leader.start_polling()
    assert (await leader.go("lessons", "lesson=minilm-heads&step=2&projector=1", 120))["ok"]
    for n, student in enumerate(students):
        assert await said_within(student, r"^Step 2 of \d+$", 0.0, 60)
        for _ in range(60):  # the step's words can arrive before its question's options
            if await student.answer("minilm-heads", 2, n, 60):
                break
            await asyncio.sleep(1.0)
        else:
            raise AssertionError(f"student {n} could not answer: {student.state_said(0.0)}")
    assert (await leader.click("class_reveal", 60))["ok"]
    assert (await leader.go("teach", "projector=1", 60))["ok"]
    assert (await leader.click("class_end", 60))["ok"]
    for student in students:
        assert await said_within(student, "The class has ended", 0.0, 30)
    for tab in (teacher, leader, *students):
        await tab.close()
    return key, [teacher, leader, *students], asked


def test_the_teacher_key_is_on_no_students_screen_no_projector_and_in_no_log(cluster):
    key, (teacher, leader, *students), asked = asyncio.run(a_whole_class_run(cluster))
    assert teacher.shows(key)  # the search finds it where it is: after the teacher asked
    assert not teacher.shows(key, upto=asked)  # the projected Teach page, before that
    assert not leader.shows(key) and "class=" not in leader.address()  # gone from the address
    for student in students:
        assert student.received and not student.shows(key)
    logs = [f for f in cluster.folder.rglob("*") if f.is_file()]
    assert {"attention_lab.log", "error.log", "replica0.log", "replica1.log"} <= {
        f.name for f in logs}  # nginx's, Streamlit's and the app's (its replicas' output)
    assert [f.name for f in logs if key.encode() in f.read_bytes()] == []
    assert '"GET /teach HTTP/1.1"' in cluster.access_log.read_text(encoding="utf-8")


def test_a_student_on_a_killed_replica_is_back_in_the_class_through_the_other(cluster):
    """Replica 0 dies mid-lesson. Its student's browser reconnects with the same cookies (the
    sticky one, Streamlit's XSRF one); nginx sends it to replica 1, a new session there, which
    takes the class back by itself: no code typed again, the same member (still 1 joined)."""
    async def scenario():
        teacher, student = await a_class_split_over_both(cluster)
        assert student.said("You are in the class")
        cookies = dict(student.cookies)
        assert "_streamlit_xsrf" in cookies  # the browser's id, the same on every replica
        await student.close()
        killed = time.perf_counter()
        cluster.replicas[0].kill()
        again = ClassClient(cluster.url + "/join", keys=("class_code", "class_join"))
        again.cookies.update(cookies)
        reopened = await again.open(120)
        following = await said_within(again, "Following the teacher", killed, 30)
        headcount = await said_within(teacher, r"1 following · 0 looking around · 1 joined",
                                      time.perf_counter(), 10)
        await again.close()
        await teacher.close()
        return cookies, again, reopened, following, headcount

    cookies, again, reopened, following, headcount = asyncio.run(scenario())
    assert reopened["ok"] and reopened["error_boxes"] == 0, reopened
    assert again.cookies[COOKIE] == cookies[COOKIE]  # no new sticky cookie: the same client
    last = cluster.served(cookies[COOKIE], 6)[-3:]  # page, health, host config of the reconnect
    assert {cluster.replica_at(r) for r in last} == {1}
    assert following and "Back in the class" in following, again.texts[-5:]
    assert again.said("You are in the class")  # the join page, without the code typed
    assert headcount, "the teacher's headcount lost or doubled the student"
