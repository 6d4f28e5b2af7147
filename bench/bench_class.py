"""A live class on loopback: one teacher and N students go through a bundled lesson, through
nginx, on app replicas that share the class store; then a replica dies mid-lesson.

    python bench/bench_class.py                          # 3 replicas + Redis, 30 students
    python bench/bench_class.py --store sqlite --replicas 1 --restart    # SQLite, one replica

deploy/launch.py starts Redis (or a SQLite file), the replicas and nginx on 127.0.0.1. Every
member is a protocol-level client (tests/harness/class_client.py: the app's websocket, as the browser
speaks it, with the sticky cookie and the class signal's asks). The teacher starts a
class on the Teach page; the students open the join link, type a name and join; the teacher
opens the lesson and clicks "Next" step by step, waiting --dwell seconds on each.

Follow delay: from the teacher's click being sent to a student's app having drawn that step
(its "Step n of m" arrived and that run finished), for every student and step; --browsers N
of them are Chromium pages (measured in the page), and `all_follow_*` counts the whole class.

Mid-lesson (--kill-at-step): SIGKILL the replica holding the most students (never the
teacher's); with --restart (one replica), stop it and start it again. Its students reconnect
as the browser does (same cookie, the page they were on); the bench reports how long until each
has a running app again, whether it is back in the class by itself (its browser's XSRF cookie
names it to the class store: ui/class_session.restore) and how long until its bar says it
follows again, and, if not, how long joining again with the code takes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from tests.harness.class_browsers import Browsers, answer_through_pages, join_browsers, step_shown  # noqa
from tests.harness.class_client import ClassClient  # noqa: E402
from class_idle import idle_cpu, pct, wait_for  # noqa: E402
from tests.harness.loop_lag import LoopLag  # noqa: E402
from deploy.launch import COOKIE, running_cluster  # noqa: E402
from teaching.class_store import RATE_WINDOW  # noqa: E402

FOLLOWING = "Following the teacher"
KEYS = ("class_code", "class_name", "class_join", "lesson_check")  # a student's widgets
CODE = r"^[A-Z0-9]{3}-[A-Z0-9]{3}$"


async def start_teacher(cluster, timeout_s: float) -> tuple[ClassClient, str, str]:
    """The teacher on replica 0: the Teach page, "Start a class"; the join code and link."""
    show = "class_show_teacher_link"  # the teacher link is drawn only when asked for
    teacher = ClassClient(cluster.url + "/teach", keys=("class_start", show, "lesson_next_top"))
    teacher.cookies[COOKIE] = cluster.cookie_for(0, "teacher")
    for key in ("", "class_start", show):
        result = await (teacher.click(key, timeout_s) if key else teacher.open(timeout_s))
        if not result["ok"]:
            raise RuntimeError(f"the teacher could not start a class: {result}")
    code, link = teacher.said(CODE), teacher.said(r"/teach\?class=")
    if not code or not link:
        raise RuntimeError("the Teach page showed no join code or teacher link")
    teacher.start_polling()
    teacher.teacher_key, teacher.store_url = link.strip().rsplit("class=", 1)[-1], cluster.store
    return teacher, code, link.strip()


async def join(cluster, code: str, name: str, timeout_s: float,
               student: ClassClient | None = None) -> tuple[ClassClient, float | None]:
    """A student opens the join link, types a name and joins; seconds until it follows."""
    start = time.perf_counter()
    url = f"{cluster.url}/join?code={quote(code)}"
    if student is None:
        student = ClassClient(url, keys=KEYS)
        opened = await student.open(timeout_s)
    else:  # an open session joins again: a page link to /join
        student.keys = KEYS
        opened = await student.go("join", f"code={quote(code)}", timeout_s)
    if not opened["ok"] or "class_name" not in student.widgets:
        return student, None
    student.widgets["class_code"]["value"] = code
    student.widgets["class_name"]["value"] = name
    for _ in range(4):  # every member joins from 127.0.0.1: past its per-client limit, as
        clicked = time.perf_counter()  # a person would, they try again
        if not (await student.click("class_join", timeout_s))["ok"]:
            return student, None
        if not student.said("try again in a few seconds", clicked):
            break
        await asyncio.sleep(RATE_WINDOW)
    student.start_polling()
    if await wait_for(lambda: student.said(FOLLOWING, start), timeout_s) is None:
        return student, None
    return student, time.perf_counter() - start


async def join_all(cluster, code: str, n: int, timeout_s: float, at_once: int = 5):
    """n students join, at_once at a time (a class arriving over a minute or so)."""
    gate = asyncio.Semaphore(at_once)

    async def one(i: int):
        async with gate:
            return await join(cluster, code, f"Student {i + 1}", timeout_s)

    joined = await asyncio.gather(*(one(i) for i in range(n)))
    return [s for s, _ in joined], [t for _, t in joined if t is not None]


async def step_delays(teacher: ClassClient, students: list, number: int, first: bool,
                      lesson: str, timeout_s: float, wait_s: float, pages=()) -> dict:
    """The teacher opens step `number`; each student's delay until it has drawn it (the
    Chromium pages' measured in the page, reported apart)."""
    sent, sent_at = time.perf_counter(), time.time()  # the wall clock: to find it in logs
    shown = asyncio.create_task(step_shown(pages, number, sent, wait_s)) if pages else None
    if first:
        result = await teacher.go("lessons", f"lesson={lesson}&step={number}", timeout_s)
    else:
        result = await teacher.click("lesson_next_top", timeout_s)
    teacher_s = time.perf_counter() - sent
    pattern = rf"^Step {number} of \d+$"
    live = [s for s in students if not s.ws_closed]
    await wait_for(lambda: all(s.drawn(pattern, sent) for s in live), wait_s, poll_s=0.25)
    delays = [s.drawn(pattern, sent) for s in live]
    phases = [p for p in (s.phases(pattern, sent) for s in live) if p is not None]
    view = store_view(teacher)
    in_pages = ((await shown) if shown is not None else {}) | {"sent_at": round(sent_at, 3)}
    return in_pages | {"step": number, "teacher_ok": result["ok"], "teacher_run_s": round(teacher_s, 3),
            "teacher_shows": teacher.said(r"^Step \d+ of \d+$", sent),
            "class_view": f"{view.version} {view.link}" if view else None,
            "students_show": sorted({str(s.said(r"^Step \d+ of \d+$")) for s in live}),
            "students": len(live), "missed": sum(d is None for d in delays),
            "missed_who": [students.index(s) for s, d in zip(live, delays) if d is None],
            "missed_state": [s.state_said(sent) for s, d in zip(live, delays) if d is None],
            "delays_s": [round(d - sent, 3) for d in delays if d is not None],
            # per student: seconds to the start of the run that drew it, to the step's words
            # arriving, to the run's end (where the follow delay goes: the poll and the queue,
            # the run before the words, the rest of the run and sending it)
            "phases_s": [[round(x, 3) for x in p] for p in phases]}


def store_view(teacher: ClassClient):
    """The class's view as the store has it (the bench reads the store the replicas share)."""
    from teaching.class_store import open_store

    key = getattr(teacher, "teacher_key", None)
    if not key:
        return None
    store = open_store(teacher.store_url)
    class_id = store.teacher_class(key)
    return store.view(class_id) if class_id else None


async def answer_all(teacher: ClassClient, students: list, lesson: str, number: int,
                     sent: dict, timeout_s: float, pages=()) -> dict | None:
    """Every student answers step `number`'s question (if it has one), each its own pick;
    then the teacher's tally in the store must hold every answer. `sent`: student -> choice
    per question, kept across steps (answers sent before a failover are checked again)."""
    start = time.perf_counter()
    picks, in_pages = await asyncio.gather(
        asyncio.gather(*(s.answer(lesson, number, i, timeout_s) for i, s in enumerate(students))),
        answer_through_pages(list(pages), len(students), timeout_s))
    if not any(picks) and not in_pages:
        return None
    question = f"{lesson}:{number}"
    # sent: the click on "Check my answer" (with the pick) ran; confirmed: the screen then
    # said "Your answer is in" (a text that can scroll out of the kept texts: a lower bound).
    # A Chromium page's answer counts once its page said "Your answer is in".
    sent[question] = {i: p for i, p in enumerate(picks) if p is not None} | in_pages
    confirmed = len(in_pages) + sum(1 for i in sent[question] if i < len(students)
                                    and students[i].said("Your answer is in", start))
    await asyncio.sleep(1.0)
    return {"question": question, "sent": len(sent[question]), "confirmed": confirmed,
            "unanswered": sum(p is None for p in picks), "sent_by_pages": len(in_pages),
            "students_see": sorted({str(s.said("answer is in|Check my answer")) for s in students}),
            **tally_check(teacher, question, sent)}


def tally_check(teacher: ClassClient, question: str, sent: dict) -> dict:
    """The store's tally of a question against the answers the students sent."""
    from collections import Counter

    from teaching.class_store import open_store

    want = Counter(sent[question].values())
    tally = open_store(teacher.store_url).tally(teacher.teacher_key, question)
    lost = sum(max(0, n - tally.counts.get(choice, 0)) for choice, n in want.items())
    return {"in_tally": tally.answered, "lost": lost}


async def come_back(cluster, student: ClassClient, code: str, name: str, lost_at: float,
                    timeout_s: float) -> dict:
    """A student whose replica died reconnects as the browser does (same cookie, same page);
    if its new session is not in the class, it joins again with the code."""
    url = cluster.url + student.address()
    again = ClassClient(url, keys=KEYS)
    again.cookies.update(student.cookies)
    opened = None
    while time.perf_counter() - lost_at < timeout_s:  # a restarting replica: retry
        opened = await again.open(timeout_s)
        if opened["ok"]:
            break
        await again.close()
        again = ClassClient(url, keys=again.keys)
        again.cookies.update(student.cookies)
        await asyncio.sleep(0.5)
    out = {"reconnected_s": None, "rejoined_by_itself": False, "rejoined_with_code_s": None}
    if not opened or not opened["ok"]:
        return out | {"client": again}
    out["reconnected_s"] = round(time.perf_counter() - lost_at, 3)
    again.start_polling()
    if await wait_for(lambda: again.said(FOLLOWING), 3.0):
        out["rejoined_by_itself"] = True
        out["following_again_s"] = round(time.perf_counter() - lost_at, 3)
        return out | {"client": again}
    _, took = await join(cluster, code, name, timeout_s, student=again)
    if took is not None:
        out["rejoined_with_code_s"] = round(time.perf_counter() - lost_at, 3)
    return out | {"client": again}


def replica_load(cluster, students: list) -> dict[int, list[int]]:
    """replica index -> the students (by position) nginx sends there."""
    where: dict[int, list[int]] = {}
    for i, s in enumerate(students):
        seen = cluster.served(s.cookies.get(COOKIE, ""))
        if seen:
            where.setdefault(cluster.replica_at(seen[-1]), []).append(i)
    return where


async def fail_one(cluster, students: list, code: str, restart: bool, timeout_s: float) -> dict:
    """Kill (or restart) a replica mid-lesson; its students come back. Returns the report."""
    where = replica_load(cluster, students)
    victim = 0 if restart else max((r for r in where if r != 0),
                                   key=lambda r: len(where[r]), default=None)
    if victim is None:
        return {"skipped": "no replica other than the teacher's has students"}
    lost_at = time.perf_counter()
    if restart:
        restarting = asyncio.create_task(asyncio.to_thread(cluster.restart, victim))
    else:
        cluster.replicas[victim].kill()
    await wait_for(lambda: all(students[i].ws_closed for i in where.get(victim, [])), 10)
    moved = [i for i, s in enumerate(students) if s.ws_closed]
    back = await asyncio.gather(*(come_back(cluster, students[i], code, f"Student {i + 1}",
                                            lost_at, timeout_s) for i in moved))
    if restart:
        await restarting
    for i, result in zip(moved, back):
        students[i] = result.pop("client")
    after = replica_load(cluster, [students[i] for i in moved])
    following = [b["following_again_s"] for b in back if b.get("following_again_s")]
    return {"rejoined_by_itself": len(following), "following_again_s_p50": pct(following, 0.5),
            "following_again_s_max": max(following, default=None),
            "replica": victim, "restart": restart, "students_on_it": len(where.get(victim, [])),
            "dropped": len(moved), "now_on": {str(r): len(v) for r, v in after.items()},
            "per_student": back}


async def lesson_run(cluster, args, browsers: Browsers | None = None) -> dict:
    """The class: protocol students, and --browsers of them Chromium pages (the last ones)."""
    teacher, code, teacher_link = await start_teacher(cluster, args.timeout)
    n_pages = min(args.browsers, args.students) if browsers is not None else 0
    students, join_s = await join_all(cluster, code, args.students - n_pages, args.timeout)
    pages, page_join_s = await join_browsers(browsers, cluster.url, code, n_pages,
                                             len(students), args.timeout)
    report = {"joined": len(join_s), "join_s_p50": pct(join_s, 0.5),
              "join_s_p95": pct(join_s, 0.95), "steps": [], "failover": None, "answers": [],
              "pages_joined": len(page_join_s), "page_join_s": [round(t, 2) for t in page_join_s]}
    sent: dict = {}
    await asyncio.sleep(args.dwell)  # the pages finish loading before the teacher starts
    for number in range(1, args.steps + 1):
        if number == args.kill_at_step:
            report["failover"] = await fail_one(cluster, students, code, args.restart,
                                                args.timeout)
        dropped = [i for i, s in enumerate(students) if s.ws_closed]  # not by the failover
        if dropped:
            report.setdefault("other_drops", []).append(
                (number, sorted({str(students[i].ws_closed) for i in dropped}), len(dropped)))
            back = await asyncio.gather(*(come_back(cluster, students[i], code,
                                                    f"Student {i + 1}", time.perf_counter(),
                                                    args.timeout) for i in dropped))
            for i, result in zip(dropped, back):
                students[i] = result.pop("client")
        if teacher.ws_closed:  # as a browser does: the teacher's page reconnects
            report.setdefault("teacher_reconnects", []).append((number, teacher.ws_closed))
            teacher = await lead_again(cluster, teacher, teacher_link, args.timeout)
        report["steps"].append(await step_delays(teacher, students, number, number == 1,
                                                 args.lesson, args.timeout, args.wait, pages))
        answered = await answer_all(teacher, students, args.lesson, number, sent, args.timeout,
                                    pages)
        if answered:
            report["answers"].append(answered)
        report["idle"] = await idle_cpu(cluster, args.idle) if number == 1 else report.get("idle")
        await asyncio.sleep(args.dwell)
    # at the end, every question again: answers sent before the failover are still there
    report["answers_at_end"] = [{"question": q, "sent": len(sent[q]),
                                 **tally_check(teacher, q, sent)} for q in sent]
    said = teacher.said(r"\d+ following")
    report["teacher_bar_at_end"] = said
    report["page_problems"] = [p.problem for p in pages if p.problem]
    for member in [teacher, *students]:
        await member.close()
    return report


async def lead_again(cluster, teacher: ClassClient, link: str, timeout_s: float):
    """The teacher's replica restarted: the teacher opens their teacher link again."""
    path = link.split("://", 1)[-1].split("/", 1)[-1]
    again = ClassClient(f"{cluster.url}/{path}", keys=teacher.keys)
    again.cookies.update(teacher.cookies)
    if (await again.open(timeout_s))["ok"]:
        await again.go("lessons", teacher.query_string, timeout_s)
    again.start_polling()
    again.teacher_key, again.store_url = teacher.teacher_key, teacher.store_url
    return again


async def class_run(cluster, args) -> dict:
    async with LoopLag() as lag:  # the bench's own lateness, reported beside the delays
        if args.browsers <= 0:
            report = await lesson_run(cluster, args)
        else:
            async with Browsers(idle=args.browser_priority == "idle") as browsers:
                report = await lesson_run(cluster, args, browsers)
    late = [round(pct(lag.lags, q) or 0.0, 3) for q in (0.5, 0.95, 1.0)]  # p50, p95, max
    return report | {"bench_loop_late_s": late, "bench_cpu_s": round(lag.cpu_s, 1)}


def summary(report: dict, kill_at: int) -> dict:
    """Follow delays over every student and step (the failover's step apart)."""
    calm = [d for s in report["steps"] if s["step"] != kill_at for d in s["delays_s"]]
    after = [d for s in report["steps"] if s["step"] == kill_at for d in s["delays_s"]]
    return {"follow_p50_s": pct(calm, 0.5), "follow_p95_s": pct(calm, 0.95),
            "follow_max_s": max(calm, default=None), "follows": len(calm),
            "missed": sum(s["missed"] for s in report["steps"]),
            "failover_step_p95_s": pct(after, 0.95),
            "mean_teacher_run_s": statistics.mean(s["teacher_run_s"] for s in report["steps"]),
            **pages_summary(report, kill_at)}


def pages_summary(report: dict, kill_at: int) -> dict:
    """The Chromium pages' follow delays (measured in the page), apart from the others."""
    if not report.get("pages_joined"):
        return {}
    calm = [d for s in report["steps"] if s["step"] != kill_at
            for d in s.get("browser_delays_s", [])]
    everyone = calm + [d for s in report["steps"] if s["step"] != kill_at for d in s["delays_s"]]
    return {"all_follow_p50_s": pct(everyone, 0.5), "all_follow_p95_s": pct(everyone, 0.95),
            "pages_follow_p50_s": pct(calm, 0.5), "pages_follow_p95_s": pct(calm, 0.95),
            "pages_follow_max_s": max(calm, default=None), "pages_follows": len(calm),
            "pages_missed": sum(s.get("browser_missed", 0) for s in report["steps"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--store", default="redis", choices=("redis", "sqlite"))
    parser.add_argument("--lesson", default="minilm-heads")
    parser.add_argument("--browsers", type=int, default=0, help="how many are Chromium pages")
    parser.add_argument("--browser-priority", default="idle", choices=("idle", "same"))
    parser.add_argument("--steps", type=int, default=5, help="steps of the lesson to go through")
    parser.add_argument("--dwell", type=float, default=4.0, help="seconds on each step, and joined")
    parser.add_argument("--kill-at-step", type=int, default=3, help="0: no failure")
    parser.add_argument("--restart", action="store_true", help="restart replica 0 instead")
    parser.add_argument("--timeout", type=float, default=90.0, help="opening a page, a click")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to follow, or missed")
    parser.add_argument("--idle", type=float, default=0.0, help="seconds idle after step 1: "
                        "the replicas' CPU then (class_idle.py)")
    parser.add_argument("--out", help="write the whole report here (JSON)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-class-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the cluster on the way out
    started = time.perf_counter()
    with running_cluster(folder, args.replicas, args.store) as cluster:
        up_s = time.perf_counter() - started
        report = asyncio.run(class_run(cluster, args))
    report = {"args": vars(args), "start_s": round(up_s, 1), "logs": str(folder),
              "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
              "summary": summary(report, args.kill_at_step), **report}
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    shown = ("summary", "idle", "bench_loop_late_s", "joined", "join_s_p95", "pages_joined",
             "failover", "answers_at_end", "teacher_bar_at_end", "page_problems")
    sys.stdout.write(json.dumps({k: report.get(k) for k in shown}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
