"""Report benchmark: how long `benchtui report` takes on zero-latency FakeRunner campaigns of
1k / 10k / 100k sessions over 10 models (a third of the sessions find a bug, scripted).

Prints, per size: the time to build the report (read the run dir, statistics, audit), to render
it as text, JSON and HTML (three matplotlib plots), the HTML page's size, and the end-to-end
wall time of `benchtui report --format html` in a fresh interpreter (imports included).

    python benchmarks/report_scale.py               # 1000 10000 100000
    python benchmarks/report_scale.py 1000          # chosen sizes
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = 10
REPEATS = 3


def campaign(dirpath: Path, sessions: int) -> Path:
    (dirpath / "target").mkdir(exist_ok=True)
    per_model = sessions // MODELS
    bugs = ", ".join(f'"bench/m{i}" = {list(range(i % 3, per_model, 3))}' for i in range(MODELS))
    models = "".join(
        f'\n[[models]]\nname = "bench/m{i}"\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n'
        for i in range(MODELS)
    )
    path = dirpath / "scale.toml"
    path.write_text(f"""name = "scale"
sessions_per_model = {per_model}
parallelism = 64
runner = "fake"
[budget]
total_usd = 1000000
[runners.fake]
kind = "fake"
cost_usd = 0.001
bug_sessions = {{ {bugs} }}
{models}
[environment]
path = "target"
""")
    return path


def run_campaign(path: Path, state_dir: Path) -> Path:
    import trio

    from benchtui.engine import events as ev
    from benchtui.engine import run as engine

    prep = engine.prepare(engine.Options(path, state_dir, fresh=True))
    try:
        trio.run(engine.run, prep, ev.EventBus())
    finally:
        prep.lock.release()
    return prep.run_dir


def timed(fn, *args) -> tuple[float, object]:
    times, result = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def measure(sessions: int) -> dict:
    from benchtui.report import build
    from benchtui.report.html import render as html
    from benchtui.report.text import render as text

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = run_campaign(campaign(Path(tmp), sessions), Path(tmp) / "runs")
        build_s, report = timed(build, [run_dir])
        text_s, _ = timed(text, report)
        json_s, _ = timed(lambda r: json.dumps(r.to_json()), report)
        html_s, page = timed(html, report)
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchtui",
                "report",
                str(run_dir),
                "--format",
                "html",
                "-o",
                str(Path(tmp) / "r.html"),
            ],
            check=True,
        )
        cli_s = time.perf_counter() - t0
    return {
        "sessions": sessions,
        "build_s": build_s,
        "text_s": text_s,
        "json_s": json_s,
        "html_s": html_s,
        "html_kb": len(page.encode()) / 1024,
        "cli_html_s": cli_s,
    }


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [1000, 10_000, 100_000]
    print(f"{'sessions':>9} {'build':>8} {'text':>8} {'json':>8} {'html':>8} {'page':>9} {'CLI html':>9}")
    for n in sizes:
        r = measure(n)
        print(
            f"{r['sessions']:>9,} {r['build_s']:>7.2f}s {r['text_s']:>7.3f}s {r['json_s']:>7.3f}s "
            f"{r['html_s']:>7.2f}s {r['html_kb']:>7.0f}kB {r['cli_html_s']:>8.2f}s",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
