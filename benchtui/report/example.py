"""`python -m benchtui.report.example [OUT_DIR]`: the README's example report, from a scripted campaign.

Three models hunt in eight rules, twice each, with the scripted `DemoRunner` (token-priced calls
at each model's price, no model API): the first finds bugs in many sessions, the others in few.
Writes its headless-Chromium screenshot `report.png` to OUT_DIR (default `screenshots/`); the
page itself, `report-example.html`, is left in the system's temp dir.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import trio

from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.report import build
from benchtui.report.browser import screenshot
from benchtui.report.html import render

RULES = [
    "mis_clique",
    "vc_mis",
    "sat_mis",
    "spinglass_qubo",
    "spinglass_maxcut",
    "coloring_qubo",
    "factoring_circuit",
    "tsp_hamiltonian",
]
MODELS = {  # name: (input, output USD per Mtok, sessions (of 16) that find a bug)
    "acme/coder-xl": (3.0, 15.0, [0, 2, 3, 5, 8, 10, 11, 13, 14]),
    "acme/coder-mini": (0.25, 1.25, [1, 3, 9, 12]),
    "open/hunter-7b": (0.6, 2.4, [6]),
}


def campaign_toml() -> str:
    bugs = ", ".join(f'"{name}" = {idx}' for name, (_, _, idx) in MODELS.items())
    models = "".join(
        f'\n[[models]]\nname = "{name}"\ninput_usd_per_mtok = {i}\noutput_usd_per_mtok = {o}\n'
        for name, (i, o, _) in MODELS.items()
    )
    rules = ", ".join(f'"{r}"' for r in RULES)
    return f"""name = "example"
tasks = [{rules}]
repeats = 2
parallelism = 6
runner = "demo"

[budget]
total_usd = 12.0
per_session_usd = 0.25

[runners.demo]
kind = "demo"
step_s = 0.15
bug_sessions = {{ {bugs} }}
{models}
[environment]
path = "target"
"""


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="benchtui-example-") as tmp:
        os.chdir(tmp)  # so the page shows the short run dir `runs/example`
        try:
            Path("target").mkdir()
            Path("target/README").write_text("example target\n")
            Path("example.toml").write_text(campaign_toml())
            prep = engine.prepare(engine.Options(Path("example.toml"), Path("runs")))
            try:
                trio.run(engine.run, prep, ev.EventBus())
            finally:
                prep.lock.release()
            page = Path(tempfile.gettempdir()) / "report-example.html"
            page.write_text(render(build([prep.run_dir])))
        finally:
            os.chdir(old)
    print(screenshot(page, out / "report.png", size=(1100, 2200)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
