"""The walk of preparing a run, and of running one attempt: which of the project's modules the
code goes through, and how often it comes back to one it had left.

Every call and return of a function of a module under `benchtui` is recorded (`sys.setprofile`)
as the module it happens in. A **stay** is a maximal run of consecutive events in one module,
the **rooms** are the distinct modules, a **return** is a stay in a module the walk had left
before (stays = rooms + returns). Going down a floor and back (a validator asking `core.bounds`)
is a return too, so three views are printed: every module, the engine's modules only (the floor
`prepare` works on: coming back to one of them is the back and forth this measures), and
its own steps (the functions of other modules that code of its own module calls).

`prepare` is traced on a shipped campaign (campaigns/fair.toml, copied with its target into a
temporary folder) after one untraced start, so imports and caches are warm as in a long-lived
process: a fresh start, then a `--resume` of the run it made. The attempt is the first session of
that campaign run to its end (fake runner), its own task only (the store, the control socket and
the other sessions run in other tasks of the same thread and are not counted).

    python benchmarks/walk.py                  # campaigns/fair.toml
    python benchmarks/walk.py --path           # also the path through the engine's modules
    python benchmarks/walk.py --packages       # engine.campaign.* as one room (as before the split)
    python benchmarks/walk.py campaigns/play.toml
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

PACKAGE = "benchtui."


@dataclass(frozen=True)
class Event:
    module: str
    caller: str | None
    """The module of the project's frame below this one (None: the traced call itself)."""
    call: bool


@dataclass(frozen=True)
class Walk:
    stays: list[str]

    @property
    def rooms(self) -> int:
        return len(set(self.stays))

    @property
    def returns(self) -> int:
        return len(self.stays) - self.rooms

    def line(self, label: str) -> str:
        return f"  {label:<38} stays {len(self.stays):>4}   rooms {self.rooms:>3}   returns {self.returns:>4}"


def walk(modules: list[str]) -> Walk:
    stays: list[str] = []
    for module in modules:
        if not stays or stays[-1] != module:
            stays.append(module)
    return Walk(stays)


class Tracer:
    """Records call/return events of project frames while `watching()` says so."""

    def __init__(self, watching: Callable[[], bool] = lambda: True) -> None:
        self.events: list[Event] = []
        self.lookups: Counter[str] = Counter()
        """Runner kinds looked up in the registry (`registry.runner_class`), by the spelling asked."""
        self.watching = watching
        self._stack: list[str] = []

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(PACKAGE) or not self.watching():
            return
        module = name.removeprefix(PACKAGE)
        if event == "call":
            if name == "benchtui.core.registry" and frame.f_code.co_name == "runner_class":
                self.lookups[str(frame.f_locals.get("kind"))] += 1
            self.events.append(Event(module, self._stack[-1] if self._stack else None, True))
            self._stack.append(module)
        elif self._stack:
            self._stack.pop()
            self.events.append(Event(module, self._stack[-1] if self._stack else None, False))

    def __enter__(self) -> Tracer:
        sys.setprofile(self.hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


def report(title: str, tracer: Tracer, *, path: bool, packages: bool) -> None:
    events = tracer.events
    if packages:  # engine.campaign.schema -> engine.campaign: a package's modules as one room

        def room(module: str | None) -> str | None:
            return module and ".".join(module.split(".")[:2])

        events = [Event(room(e.module) or "", room(e.caller), e.call) for e in events]
    root = events[0].module if events else ""
    every = walk([e.module for e in events])
    engine = walk([e.module for e in events if e.module.startswith("engine.")])
    own = walk([e.module for e in events if e.call and e.caller == root and e.module != root])
    print(title)
    print(every.line("every module under benchtui"))
    print(engine.line("the engine's modules only"))
    print(own.line("its steps (what it calls elsewhere)"))
    visits = Counter(engine.stays)
    print(
        "  stays per engine module: "
        + ", ".join(f"{m.removeprefix('engine.')} {n}" for m, n in visits.most_common())
    )
    looked = ", ".join(f"{kind} ×{n}" for kind, n in tracer.lookups.items()) or "none"
    print(f"  runner kinds looked up in the registry: {looked}")
    if path:
        print("  steps: " + " › ".join(own.stays))
        print("  path: " + " › ".join(m.removeprefix("engine.") for m in engine.stays))
    print()


def trace_prepare(opts: Any) -> tuple[Any, Tracer]:
    from benchtui.engine import run as engine

    with Tracer() as tracer:
        prep = engine.prepare(opts)
    return prep, tracer


def trace_attempt(prep: Any) -> Tracer:
    """The first attempt of `prep`'s campaign, in its own trio task, to its end."""
    import trio

    from benchtui.engine import attempt as attempt_module
    from benchtui.engine import events as ev
    from benchtui.engine import run as engine

    watched: set[object] = set()
    real = attempt_module.Attempt.run

    async def first_run(self: Any) -> Any:
        if watched:
            return await real(self)
        task = trio.lowlevel.current_task()
        watched.add(task)
        try:
            return await real(self)
        finally:
            watched.discard(task)
            watched.add(None)  # traced once: later attempts run untraced

    def watching() -> bool:
        try:
            return trio.lowlevel.current_task() in watched
        except RuntimeError:
            return False

    tracer = Tracer(watching)
    attempt_module.Attempt.run = first_run  # type: ignore[method-assign]
    try:
        with tracer:
            trio.run(engine.run, prep, ev.EventBus())
    finally:
        attempt_module.Attempt.run = real  # type: ignore[method-assign]
    return tracer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("campaign", nargs="?", type=Path, default=ROOT / "campaigns" / "fair.toml")
    p.add_argument("--path", action="store_true", help="print the path through the engine's modules")
    p.add_argument(
        "--packages", action="store_true", help="a package's modules as one room (engine.campaign.*)"
    )
    args = p.parse_args()
    from benchtui.engine import run as engine

    with tempfile.TemporaryDirectory(prefix="benchtui-walk-") as tmp:
        root = Path(tmp)
        shutil.copytree(args.campaign.resolve().parent, root / "campaigns", symlinks=True)
        path = root / "campaigns" / args.campaign.name
        with engine.prepare(engine.Options(path, root / "warm-up")):
            pass  # imports, the registry's and the fingerprint's caches: warm, as in a long-lived process
        prep, fresh = trace_prepare(engine.Options(path, root / "runs"))
        prep.lock.release()
        prep, resumed = trace_prepare(engine.Options(path, root / "runs", resume=True))
        attempt = trace_attempt(prep)
    name = args.campaign.name
    shown = {"path": args.path, "packages": args.packages}
    report(f"engine.prepare, a fresh start of {name}", fresh, **shown)
    report(f"engine.prepare, --resume of that run ({name})", resumed, **shown)
    report(f"one attempt of {name} (Attempt.run, its own task)", attempt, **shown)


if __name__ == "__main__":
    main()
