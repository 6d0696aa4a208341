"""How long `benchtui view` takes to open a session whose trajectory is huge: a fake-runner run
whose one session is given a trajectory of SIZE (default 1 GiB: 1,024 command outputs of 1 MiB,
as a long session whose commands printed a lot), its evidence and a 50 MB worker log.

Prints the trajectory's size, then the time to render the session's page (the story and the
first page of its timeline: what a person sees first) and its next page, in process and through
the real server (`benchtui view` in a child process, one HTTP GET each, first and second time),
and the time to open a raw file's page. The machine's 2 shared cores make every figure noisy:
each is the median of REPEATS.

    python benchmarks/view_open.py              # 1 GiB
    python benchmarks/view_open.py 256          # MiB
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPEATS = 5
SESSION = "bench_m-0000"


def campaign(folder: Path) -> Path:
    (folder / "target").mkdir()
    path = folder / "view.toml"
    path.write_text("""name = "view"
sessions_per_model = 1
runner = "fake"
[budget]
total_usd = 1
[runners.fake]
kind = "fake"
cost_usd = 0.001
[[models]]
name = "bench/m"
input_usd_per_mtok = 1.0
output_usd_per_mtok = 2.0
[environment]
path = "target"
""")
    return path


def huge_session(run_dir: Path, mib: int) -> int:
    session = run_dir / "sessions" / SESSION
    session.mkdir(parents=True, exist_ok=True)
    output = ("a line a command printed, " * 40 + "\n") * 1000  # ~1 MiB
    path = session / "attempt-1.traj.json"
    with path.open("w") as out:
        out.write('{"info": {"exit_status": "Submitted"}, "messages": [\n')
        out.write(json.dumps({"role": "system", "content": "you are a tester"}) + ",\n")
        out.write(json.dumps({"role": "user", "content": "the task"}))
        for i in range(mib):
            answer = {
                "role": "assistant",
                "content": f"step {i}",
                "extra": {"actions": [{"command": f"cmd {i}"}]},
            }
            shown = {"role": "tool", "content": output[:10_000], "extra": {"raw_output": output}}
            out.write(",\n" + json.dumps(answer) + ",\n" + json.dumps(shown))
        out.write("\n]}\n")
    steps = []
    for i in range(mib):
        steps.append(
            {"v": 1, "kind": "generation", "attempt": 1, "n": i + 1, "input_tokens": 100, "charged": True}
        )
        steps.append(
            {
                "v": 1,
                "kind": "action",
                "attempt": 1,
                "n": i + 1,
                "command": f"cmd {i}",
                "raw_bytes": len(output),
            }
        )
    (session / "evidence.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (session / "attempt-1.worker.log").write_text("a log line\n" * 5_000_000)
    return path.stat().st_size


def median_s(action) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    with tempfile.TemporaryDirectory(prefix="benchtui-view-bench-") as tmp:
        folder = Path(tmp)
        path = campaign(folder)
        subprocess.run(
            [sys.executable, "-m", "benchtui", str(path), "--no-ui", "--state-dir", str(folder / "runs")],
            check=True,
            capture_output=True,
            cwd=folder,
        )
        run_dir = folder / "runs" / "view"
        size = huge_session(run_dir, mib)
        print(f"trajectory: {size / 2**30:.2f} GiB ({size:,} bytes), {2 * mib + 2:,} messages")

        from benchtui.view.pages import Viewer

        viewer = Viewer([run_dir])
        viewer.page("index.html")  # the run's story and report, read once (as the server's first page)
        first = f"sessions/{SESSION}/index.html"
        page = viewer.page(first)
        assert page is not None
        following = re.search(r'id="next-page" href="([^"]+)"', page.body.decode())
        assert following is not None
        second = f"sessions/{SESSION}/" + following.group(1)
        print(
            f"in process: session page {median_s(lambda: viewer.page(first)):.3f} s, "
            f"its next page {median_s(lambda: viewer.page(second)):.3f} s, "
            f"the 55 MB worker log's first page {median_s(lambda: viewer.page(f'sessions/{SESSION}/files/attempt-1.worker.log.html')):.3f} s "
            f"(median of {REPEATS})"
        )

        server = subprocess.Popen(
            [sys.executable, "-m", "benchtui", "view", str(run_dir)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None
            url = re.search(r"(http://\S+/)", server.stdout.readline()).group(1)  # type: ignore[union-attr]
            started = time.perf_counter()
            body = urllib.request.urlopen(url + first, timeout=60).read()
            cold = time.perf_counter() - started
            warm = median_s(lambda: urllib.request.urlopen(url + first, timeout=60).read())
            print(
                f"through the server: the session page {cold:.3f} s the first time (the run dir read), "
                f"{warm:.3f} s after ({len(body):,} bytes of HTML)"
            )
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
