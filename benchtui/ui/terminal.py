"""The TUI's terminal, which can go away under it (an ssh drop, a closed window, `tmux kill-server`).

Textual's Linux driver writes the screen from a thread (`WriterThread`, a queue of 30 writes).
When the terminal hangs up, a write fails (EIO): the exception ends that thread, the queue fills,
and the next write of the app's own thread waits for room forever — measured: a TUI stuck in
`stop_application_mode` restoring a terminal that is gone, 50–87% of a core spent (0.3 here, on
a loaded machine) by its input thread (a hung-up terminal reads as an endless end of file), a later SIGTERM never handled, its
run dir held (`--resume` exit 3).

So the driver here writes through `TerminalOutput`, which turns the first failed write into a
`TerminalLost` message and drops every write after it; the app then `let_go`s of the terminal:
standard input becomes a pipe nobody writes to (the input thread waits instead of spinning),
standard output the run dir's `benchtui.log` (the closing lines go there), standard error
/dev/null; and the driver does not restore a terminal that is gone.
"""

from __future__ import annotations

import errno
import os
import sys
import termios
import time
from pathlib import Path
from typing import IO, Any

from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from benchtui.ui.messages import TerminalLost

LOG = "benchtui.log"
"""In the run dir: what benchtui meant for a terminal it no longer has."""


class TerminalOutput:
    """The file the driver's writer thread writes the screen to: a failed write is the terminal
    gone (`lost` is called, from that thread), and from then on writes go nowhere."""

    def __init__(self, file: IO[str], lost: Any) -> None:
        self._file = file
        self._lost = lost
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._file.write(text)
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except OSError as exc:
                self._fail(exc)

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return True

    def _fail(self, exc: OSError) -> None:
        self.gone = True
        self._lost(f"a write failed: {exc.strerror or exc}")


class HangUpDriver(LinuxDriver):
    """Textual's Linux driver, writing through `TerminalOutput`, not restoring a lost terminal."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        assert self._file is not None  # sys.__stderr__: the app runs in a terminal
        self.output = TerminalOutput(self._file, self._lost_from_writer)
        self._file = self.output  # type: ignore[assignment]  # what its WriterThread writes to
        self.quiet_input: int | None = None
        """The write end of the pipe that is standard input once the terminal is gone."""

    def _lost_from_writer(self, why: str) -> None:
        self.send_message(TerminalLost(why))  # from the writer thread: thread-safe

    def stop_application_mode(self) -> None:
        if self.output.gone:  # nothing to restore; only the input thread to end
            if self.quiet_input is not None:  # its read (of the pipe now) returns: it can end
                os.close(self.quiet_input)
                self.quiet_input = None
            self.disable_input()
            return
        super().stop_application_mode()


def driver_for(base: type[Driver]) -> type[Driver]:
    """The driver the app runs with: ours in place of Textual's Linux driver (others as they are)."""
    return HangUpDriver if base is LinuxDriver else base


def hung_up(fd: int) -> bool:
    """Whether the terminal on `fd` has hung up (its ioctls fail with EIO from then on)."""
    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] in (errno.EIO, errno.ENXIO)
    return False


def let_go(log: Path, why: str) -> int:
    """Stop using a terminal that is gone: stdin a pipe nobody writes to (its write end is
    returned: close it to let a reader go), stdout the run dir's log (the closing lines), stderr
    /dev/null (what was queued for the screen). Starts the log with why."""
    read, write = os.pipe()  # while the write end is open, the read end never says EOF
    os.dup2(read, 0)
    os.close(read)
    try:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:  # a full disk, a link planted there: the lines are lost, not the exit
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.close(fd)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    os.write(1, f"{stamp} benchtui: the terminal is gone ({why}); its closing lines follow\n".encode())
    return write


def errors_to_log() -> None:
    """After the app: its error lines (`benchtui: …`) go where its closing lines go."""
    sys.stderr = os.fdopen(os.dup(1), "w", buffering=1)
