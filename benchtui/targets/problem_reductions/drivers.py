"""Running pred for the checks: synchronously (the CLI) or under Trio (a runner), with timeouts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, TypeVar

from .certificate import Finding, PredCall, PredResult
from .checks import check

T = TypeVar("T")


# -- drivers ---------------------------------------------------------------------------------------
def _drive(checks: Generator[PredCall, PredResult, T], run: Callable[[PredCall], PredResult]) -> T:
    try:
        call = next(checks)
        while True:
            call = checks.send(run(call))
    except StopIteration as stop:
        done: T = stop.value
        return done


def _prepare(call: PredCall, workdir: Path) -> None:
    for name, content in call.files.items():
        (workdir / name).write_text(json.dumps(content))


#: A file a call writes is read back up to this size (pred 0.3.0's `export-graph`: 32 KB).
MAX_OUTPUT_BYTES = 16 * 1024 * 1024


def _outputs(call: PredCall, workdir: Path) -> dict[str, str]:
    """The call's `reads` that pred wrote (its own temporary directory: no agent writes there)."""
    found = {}
    for name in call.reads:
        path = workdir / name
        if path.is_file() and path.stat().st_size <= MAX_OUTPUT_BYTES:
            found[name] = path.read_text(errors="replace")
    return found


def pred_environment() -> dict[str, str]:
    """pred's environment: no Rust backtraces (RUST_BACKTRACE=1 appends one to every error)."""
    return {**os.environ, "RUST_BACKTRACE": "0"}


INSTALL_PRED = (
    "install problem-reductions' CLI (crate problemreductions-cli): `cargo install --locked --path "
    "problemreductions-cli` in a checkout of https://github.com/CodingThrust/problem-reductions "
    "(it puts `pred` in ~/.cargo/bin)"
)
"""Where `pred` comes from, for every message that finds it missing."""


def resolve_pred(pred: str) -> str:
    """An absolute path for `pred` (calls run in temporary directories), or `pred` if not found."""
    found = shutil.which(pred)
    return os.path.abspath(found) if found else pred


def run_call(call: PredCall, *, pred: str, timeout: float) -> PredResult:
    """One call, synchronously, in a fresh temporary directory (`pred` resolved already)."""
    with tempfile.TemporaryDirectory(prefix="benchtui-verify-") as tmp:
        _prepare(call, Path(tmp))
        try:
            done = subprocess.run(
                [pred, *call.args],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                env=pred_environment(),
            )
        except subprocess.TimeoutExpired:
            return PredResult(failure="timeout")
        except OSError as exc:
            return PredResult(failure="missing", stderr=str(exc))
        return PredResult(done.returncode, done.stdout, done.stderr, outputs=_outputs(call, Path(tmp)))


def drive_sync(checks: Generator[PredCall, PredResult, T], *, pred: str, timeout: float) -> T:
    """Run any of the sans-IO generators synchronously (the checks, the rule inventory)."""
    pred = resolve_pred(pred)
    return _drive(checks, lambda call: run_call(call, pred=pred, timeout=timeout))


def verify(cert: Any, *, pred: str = "pred", timeout: float = 60.0) -> Finding:
    """Verify synchronously (the CLI); each pred call runs in a fresh temporary directory."""
    return drive_sync(check(cert), pred=pred, timeout=timeout)


async def verify_async(cert: Any, *, pred: str = "pred", timeout: float = 60.0) -> Finding:
    """Verify under Trio: cancelling it kills the running pred call at once."""
    import trio

    pred = resolve_pred(pred)

    async def kill(process: trio.Process) -> None:
        process.kill()

    async def run(call: PredCall) -> PredResult:
        with tempfile.TemporaryDirectory(prefix="benchtui-verify-") as tmp:
            _prepare(call, Path(tmp))
            with trio.move_on_after(timeout):
                try:
                    done = await trio.run_process(
                        [pred, *call.args],
                        cwd=tmp,
                        check=False,
                        stdin=b"",
                        capture_stdout=True,
                        capture_stderr=True,
                        deliver_cancel=kill,
                        env=pred_environment(),
                    )
                except OSError as exc:
                    return PredResult(failure="missing", stderr=str(exc))
                return PredResult(
                    done.returncode,
                    done.stdout.decode(errors="replace"),
                    done.stderr.decode(errors="replace"),
                    outputs=_outputs(call, Path(tmp)),
                )
            return PredResult(failure="timeout")

    checks = check(cert)
    try:
        call = next(checks)
        while True:
            call = checks.send(await run(call))
    except StopIteration as stop:
        verdict: Finding = stop.value
        return verdict
