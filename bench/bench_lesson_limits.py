"""What parsing a lesson file costs at the edge of teaching/limits.py (issue 25).

Each file is parsed in a fresh child process with 1 GiB more address space than it starts with:
the CPU time of `parse_lesson` and the peak RSS it adds (ru_maxrss after minus before; the
imports are done first). The shapes are the worst a file within the limits can take, and the
hostile files that the limits refuse (what they cost now, refused).

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_lesson_limits.py [--old DIR]

`--old DIR` parses the same files with the teaching/ package in DIR as well (e.g. a `git
archive` of an older commit), to show what the limits save.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from teaching.limits import MAX_KEYS, MAX_LESSON_BYTES, MAX_PIECES  # noqa: E402

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from teaching.format import LessonError, parse_lesson
    source = open(sys.argv[2], "rb").read()
    virtual = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (virtual + (1 << 30),) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (120,) * 2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    try:
        out = {"outcome": f"{len(parse_lesson(source, 'x').steps)} steps"}
    except LessonError as exc:
        out = {"outcome": f"refused: {exc}"[:70]}
    except BaseException as exc:
        out = {"outcome": f"crashed: {type(exc).__name__}"}
    out["cpu_s"] = time.process_time() - start
    out["added_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(json.dumps(out))
""")
HEAD = 'title = "Edge"\nmodel = "minilm"\ntext = "The cat sat on the mat."\n'
STEP = '\n[[steps]]\ntitle = "One"\npage = "attention"\nexplain = "Look."\n'


def _fill_to_limit(before: str, filler: str, after: str = "") -> str:
    """`before`, then `filler` repeated, then `after`: just under MAX_LESSON_BYTES."""
    room = MAX_LESSON_BYTES - len((before + after).encode()) - 10
    return before + filler * (room // len(filler.encode())) + after


def shapes() -> dict[str, str]:
    steps = "".join(STEP.replace('"One"', f'"Step {i}"') for i in range(60))
    values = (MAX_PIECES - 100) // 2
    keys = min(MAX_KEYS - 10, (MAX_PIECES - 100) // 17)  # k.b.c.d.e.f.g.h = 1: 17 pieces
    return {
        "60 steps + blank lines": _fill_to_limit(HEAD + steps, "\n"),
        "one string": _fill_to_limit(HEAD + STEP + 'summary = """', "w", '"""\n'),
        "one string of \\u escapes": _fill_to_limit(HEAD + STEP + 'summary = "', "\\u0041",
                                                    '"\n'),
        f"{keys:,} keys of 8 dotted parts": HEAD + STEP + "".join(
            f"k{i}.b.c.d.e.f.g.h = {i}\n" for i in range(keys)),
        f"{MAX_KEYS - 10:,} keys, long strings": HEAD + STEP + "".join(
            f'k{i} = "{"w" * 300}"\n' for i in range(MAX_KEYS - 10)),
        f"a list of {values:,} values": HEAD + STEP + "x = [" + "1," * values + "]\n",
        "refused: 25,000-part dotted key": HEAD + "a" + ".a" * 25_000 + " = 1\n",
        "refused: 400,000-part dotted key": HEAD + "a" + ".a" * 400_000 + " = 1\n",
        "refused: 900 nested lists": HEAD + "x = " + "[" * 900 + "]" * 900 + "\n",
        "refused: width format x10": HEAD + STEP.replace(
            '"Look."', '"' + " ".join(["{prev.share:99999999}"] * 10) + '"'),
    }


def parse_in_child(teaching_root: Path, source: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(source)
    done = subprocess.run([sys.executable, "-c", CHILD, str(teaching_root), f.name],
                          capture_output=True, text=True, timeout=600)
    Path(f.name).unlink()
    if done.returncode != 0:
        return {"outcome": f"died: {done.stderr.strip().splitlines()[-1][:60]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, help="a checkout whose teaching/ to compare")
    args = parser.parse_args()
    roots = {"now": ROOT} | ({"old": args.old} if args.old else {})
    print("| file | " + " | ".join(f"{k}: outcome | {k}: CPU s | {k}: +RSS MB"
                                    for k in roots) + " |")
    print("| --- |" + " --- | --- | --- |" * len(roots))
    for name, source in shapes().items():
        cells = []
        for root in roots.values():
            got = parse_in_child(root, source)
            cells += [got["outcome"].replace("|", "/"), f"{got.get('cpu_s', 0):.3f}",
                      f"{got.get('added_mb', 0):.0f}"]
        print(f"| {name} ({len(source.encode()) / 1000:,.0f} kB) | " + " | ".join(cells) + " |",
              flush=True)


if __name__ == "__main__":
    main()
