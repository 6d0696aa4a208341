import contextlib
import faulthandler
import fcntl
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

HANG_GUARD_S = float(os.environ.get("BENCHTUI_HANG_GUARD_S", 300))
_stderr = sys.stderr


def pytest_sessionstart(session):
    """The terminal's stderr as pytest found it, kept for the hang guard: during a test, fd 2 is
    pytest's capture file, and a traceback written there is lost when the guard ends the process."""
    global _stderr
    _stderr = open(os.dup(2), "w")  # noqa: SIM115 (kept open for the whole run)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip inside a Trio test keeps its reason: pytest-trio catches the test's exception group
    and calls `pytest.skip()` without one (every such skip read `python.py:157: Skipped`, so a
    missing part was not named); the group, the new skip's context, holds the original."""
    report = yield
    skipped = call.excinfo.value if call.excinfo is not None else None
    if report.skipped and isinstance(skipped, pytest.skip.Exception) and not skipped.msg:
        leaves = [skipped.__context__]
        while leaves and isinstance(leaves[0], BaseExceptionGroup):
            leaves = list(leaves[0].exceptions) + leaves[1:]
        if len(leaves) == 1 and isinstance(leaves[0], pytest.skip.Exception):
            path, line, _ = item.location  # where the test is (pytest-trio wraps its function)
            report.longrepr = (path, (line or 0) + 1, f"Skipped: {leaves[0].msg}")
    return report


@pytest.fixture(autouse=True)
def hang_guard(request):
    """A test that hangs (a deadlock in the engine, a child that never exits) ends the run with
    every thread's traceback after HANG_GUARD_S of real time, instead of hanging CI for 90 min
    (`@pytest.mark.hang_guard(seconds)`: longer, for a test that is slow by nature)."""
    marker = request.node.get_closest_marker("hang_guard")
    limit = max(HANG_GUARD_S, float(marker.args[0])) if marker else HANG_GUARD_S
    faulthandler.dump_traceback_later(limit, exit=True, file=_stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def heavy_tests_alone(request, tmp_path_factory):
    """With xdist workers (pyproject's addopts), a test marked `slow` (it spawns many processes:
    hundreds of sandboxes, a SIGKILL loop) runs while no other test does, as in a serial run;
    the others share. A fair readers-writer lock over two flock files shared by the workers: every
    test passes the turnstile, so a waiting heavy test is not starved by a stream of light ones."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    root = tmp_path_factory.getbasetemp().parent  # the same for every worker of this run
    heavy = request.node.get_closest_marker("slow") is not None
    with open(root / "turnstile.lock", "a") as turnstile, open(root / "tests.lock", "a") as tests:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(tests, fcntl.LOCK_EX if heavy else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(tests, fcntl.LOCK_UN)


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory):
    """Caches (the fingerprints of plain-directory targets) go to a temp dir, never ~/.cache."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture
def real_pred_path():
    """The real `pred`, checked before a Trio test starts (it skips before any of the test runs)."""
    from support.real_parts import require_pred

    return require_pred()


@pytest.fixture(autouse=True)
def no_copy_left_mounted(request):
    """A test that SIGKILLs an engine leaves its sessions' copies mounted (a resume would release
    them): released here, so no test leaves a mount or a loop device on the machine."""
    yield
    tmp_path = request.node.funcargs.get("tmp_path")
    if tmp_path is not None:
        from benchtui.core import volume

        volume.sweep(tmp_path)
