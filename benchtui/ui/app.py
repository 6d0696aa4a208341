"""The Textual app: runs the campaign as a Trio guest and turns keys into control calls.

Events fold into a `ViewModel` as they come; the screen redraws on a timer (`REDRAW_HZ`; the
events pane at `LOG_HZ`), so a fast campaign costs one redraw per tick, never one per event. Control calls go to the Trio
side through the guest's token and take effect at its next tick.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import outcome
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.driver import Driver
from textual.screen import Screen

from benchtui.core.errors import BenchtuiError, first_error
from benchtui.core.signals import STOP_SIGNALS, first_stop_note
from benchtui.engine import events as ev
from benchtui.engine import run as engine
from benchtui.engine.scheduler import Scheduler
from benchtui.ui import terminal
from benchtui.ui.bridge import TrioGuest
from benchtui.ui.messages import CampaignDone, RedrawNow, TerminalLost, Toast
from benchtui.ui.model import ViewModel
from benchtui.ui.palette import key_for, palette_commands
from benchtui.ui.screens.keys import KeysScreen, bindings
from benchtui.ui.screens.main import NARROW_BELOW, SHORT_BELOW, MainScreen
from benchtui.ui.screens.quit import QuitChoice, QuitScreen
from benchtui.ui.screens.runner_picker import RunnerPicker
from benchtui.ui.screens.summary import SummaryScreen
from benchtui.ui.sessions import SessionsTable

REDRAW_HZ = 10
LOG_HZ = 2
"""How often new lines reach the events pane (each write lays the screen out again)."""
HANGUP_ECHO_S = 1.0
"""One hang-up is told several times (a failed write, the kernel's SIGHUP, the shell's to its
job): within this of the first, they are the same hang-up, one stop."""
STOP_GRACE_S = 10.0
KILL_CONFIRM_S = 3.0  # a second press of the kill key within this kills


class BenchApp(App[bool]):
    CSS_PATH = "app.tcss"
    TITLE = "benchtui"
    # Ctrl-C acts as in headless (Textual's own would only say how to quit): the first stops
    # launching, the second interrupts running sessions; SIGINT, SIGTERM and SIGHUP do the same.
    BINDINGS = [Binding("ctrl+c", "interrupt", "Stop", show=False, priority=True, id="interrupt")]
    # Every screen gets -narrow/-wide and -short/-tall (app.tcss fits the panes and dialogs to them).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT_BELOW, "-tall")]

    def __init__(
        self,
        prep: engine.PreparedRun,
        *,
        clock: Callable[[], float] = time.monotonic,
        start_paused: bool = False,
        on_started: Callable[[Scheduler], None] | None = None,
        early_stops: Callable[[], int] = lambda: 0,
    ) -> None:
        super().__init__()
        self._early_stops = early_stops
        self.prep = prep
        self.view = ViewModel(
            prep.campaign.name,
            prep.runner,
            prep.campaign.parallelism,
            prep.plan,
            prep.checkpoint.journal,
            clock,
            limits=prep.campaign.logical_limits,
            verifying=verifying_profiles(prep.campaign),
        )
        self.bus = ev.EventBus()
        self.bus.subscribe(self.view.apply)
        self.bus.subscribe(self._urgent)
        self.guest = TrioGuest()
        self.scheduler: Scheduler | None = None
        self.finished = False
        self.error: BaseException | None = None
        self.quitting = False
        self._start_paused = start_paused
        self._on_started = on_started
        self._kill_armed: tuple[str, float] | None = None
        self.interrupts = 0
        """Ctrl-C presses and stop signals so far (1: stop launching, 2: interrupt sessions)."""
        self.terminal_lost_at: float | None = None
        """When the terminal was found gone (`terminal.let_go`): nothing is written to it since."""
        self.main: MainScreen

    def get_driver_class(self) -> type[Driver]:
        return terminal.driver_for(super().get_driver_class())

    # -- the campaign, in Trio ----------------------------------------------------------------
    def on_mount(self) -> None:
        self.set_keymap(self.prep.campaign.ui.keys)
        self.main = MainScreen(self.view, self.prep.run_dir)
        self.push_screen(self.main)
        self.set_interval(1 / REDRAW_HZ, self._redraw_view)
        self.set_interval(1 / LOG_HZ, self._write_log)
        self.set_interval(1.0, self._check_terminal)
        loop = asyncio.get_running_loop()  # its handlers wake the loop (and so the Trio guest)
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._stop_signal, signum)

        def done(result: outcome.Outcome[Any]) -> None:
            self.post_message(CampaignDone(result))

        self.guest.start(self._campaign, done)

    async def _campaign(self) -> bool:
        async with engine.open_run(self.prep, self.bus) as run:
            self._scheduler_ready(run.scheduler)
            return await run.until_done()

    def _scheduler_ready(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        if self._start_paused:  # before the launch loop runs: nothing starts until `resume`
            scheduler.pause()
        missed = self._early_stops()  # stop signals before the app's own handlers: act on them now
        if missed:
            self.interrupts = min(missed, 2)
            self.quitting = True
            scheduler.stop(now=missed > 1)
        if self._on_started is not None:
            self._on_started(scheduler)

    def on_campaign_done(self, message: CampaignDone) -> None:
        try:
            self.finished = bool(message.result.unwrap())
        except BaseException as exc:  # noqa: BLE001 - shown by the CLI after the app exits
            self.error = _first_error(exc)
            self.exit(False)
            return
        self.redraw()
        if self.quitting:
            self.exit(self.finished)
        elif self.view.ended is not None and self.is_running:
            if isinstance(self.screen, SummaryScreen):  # opened mid-run: its numbers are stale
                self.pop_screen()
            self.push_screen(SummaryScreen(self.view))

    async def on_unmount(self) -> None:
        """Leaving with the campaign still running (e.g. a test ends): stop it, save, release."""
        if not self.guest.running:
            return
        if self.scheduler is not None:
            self.guest.call(partial(self.scheduler.stop, now=True))
            if await self.guest.wait(STOP_GRACE_S):
                return
        self.guest.cancel()
        await self.guest.wait()

    def redraw(self) -> None:
        """Everything on screen up to date now, the events pane included."""
        self._redraw_view()
        self._write_log()

    def _redraw_view(self) -> None:
        if self._showing():
            self.main.redraw()

    def _write_log(self) -> None:
        if self._showing():
            self.main.write_log()

    def _showing(self) -> bool:
        """Worth drawing: nobody sees a terminal that is gone (its frames would cost CPU only)."""
        return self.is_running and self.main.is_mounted and self.terminal_lost_at is None

    def _urgent(self, event: ev.Event) -> None:
        """The answer to a key (pause, resume, …) is drawn at once, so keys feel instant."""
        if isinstance(event, ev.ControlChanged | ev.CampaignEnded):
            self.post_message(RedrawNow())

    def on_redraw_now(self, _: RedrawNow) -> None:
        """Only the status line: the frame that answers a key paints one line, not every widget
        the campaign changed since the last tick (those follow on the timer)."""
        if self._showing():
            self.main.status.sync()

    # -- the terminal, which can hang up ------------------------------------------------------
    def _stop_signal(self, signum: int) -> None:
        """One Ctrl-C per signal, but one hang-up told twice (see HANGUP_ECHO_S) is one stop."""
        if signum == signal.SIGHUP and self._terminal_gone():
            lost_at = self.terminal_lost_at
            if lost_at is not None and time.monotonic() - lost_at < HANGUP_ECHO_S:
                return
            self._lose_terminal("SIGHUP")
        self.action_interrupt(signum)

    def on_terminal_lost(self, message: TerminalLost) -> None:
        """Found gone by a failed write or the check: a stop, unless one is under way already."""
        if self._lose_terminal(message.why) and self.interrupts == 0:
            self.action_interrupt()

    def _check_terminal(self) -> None:
        """A hung-up terminal the screen has not written to yet (nothing changed on it)."""
        if self.terminal_lost_at is None and self._terminal_gone():
            self.post_message(TerminalLost("it hung up"))

    def _terminal_gone(self) -> bool:
        if self.terminal_lost_at is not None:
            return True
        return isinstance(self._driver, terminal.HangUpDriver) and terminal.hung_up(self._driver.fileno)

    def _lose_terminal(self, why: str) -> bool:
        """Let go of the terminal (the first time only: True): no more writes to it, the closing
        lines to the run dir's log."""
        if self.terminal_lost_at is not None or not isinstance(self._driver, terminal.HangUpDriver):
            return False
        self.terminal_lost_at = time.monotonic()
        self._driver.output.gone = True
        self._driver.quiet_input = terminal.let_go(self.prep.run_dir / terminal.LOG, why)
        return True

    # -- actions (keys, command palette) ------------------------------------------------------
    def _control(self, name: str, *args: Any, **kwargs: Any) -> bool:
        if self.scheduler is None or not self.guest.running:
            self.notify("the campaign is not running", severity="warning")
            return False
        self.guest.call(partial(getattr(self.scheduler, name), *args, **kwargs))
        return True

    def action_interrupt(self, signum: int | None = None) -> None:
        """What one Ctrl-C or stop signal (`signum`; None: the key) does in headless: stop
        launching, then interrupt; the app then exits, so the same closing lines are printed and
        the terminal is restored."""
        self.interrupts += 1
        self.quitting = True
        if not self.guest.running:  # ended already (the summary is showing): leave
            self.exit(self.finished)
        elif self.scheduler is None:
            self.guest.cancel()
        elif self.interrupts == 1:
            self.notify(first_stop_note(signum), severity="warning")
            self._control("stop")
        else:
            self.notify(
                "interrupting running sessions (state saved: --resume retries them)", severity="warning"
            )
            self._control("stop", now=True)

    def action_pause(self) -> None:
        self._control("pause")

    def action_resume(self) -> None:
        self._control("resume")

    def action_kill(self) -> None:
        """Kill the selected session on the second press (killing spends money for nothing)."""
        sid = self.main.table.selected
        if sid is None or self.view.sessions[sid].state != "running":
            self.notify(
                f"{sid or 'no session'} is not running: select a running session",
                severity="warning",
                markup=False,
            )
            return
        armed, self._kill_armed = self._kill_armed, (sid, time.monotonic())
        if armed is None or armed[0] != sid or time.monotonic() - armed[1] > KILL_CONFIRM_S:
            key = key_for("kill", self.prep.campaign.ui.keys)
            self.notify(
                f"Press {key} again to kill {sid}: it ends `killed`, its spend so far stays counted",
                title="Kill?",
                severity="warning",
                timeout=KILL_CONFIRM_S,
                markup=False,
            )
            return
        self._kill_armed = None
        scheduler = self.scheduler

        def kill() -> None:
            if scheduler is not None and not scheduler.kill(sid):
                self.post_message(Toast(f"{sid} is not running any more", "warning"))

        self.guest.call(kill)

    def _kill_now(self) -> None:
        """From the palette: choosing the command is the confirmation."""
        sid = self.main.table.selected
        if sid is not None:
            self._kill_armed = (sid, time.monotonic())
        self.action_kill()

    def on_toast(self, message: Toast) -> None:
        self.notify(message.text, severity=message.severity, markup=False)

    def action_parallelism(self, delta: int) -> None:
        n = self.view.parallelism + delta
        if n < 1:
            self.notify("parallelism is at least 1", severity="warning")
        elif self._control("set_parallelism", n):
            self.view.parallelism = n  # so that repeated presses add up before the engine answers

    def action_change_runner(self) -> None:
        def chosen(profile: str | None) -> None:
            if profile and profile != self.view.runner:
                self._control("set_runner", profile)

        self.push_screen(RunnerPicker(self.prep.campaign.runners, self.view.runner), chosen)

    def action_keys(self) -> None:
        """`?`: every key and what the panes show, over the screen."""
        if isinstance(self.screen, KeysScreen):
            return
        groups = {
            "Campaign": bindings(MainScreen.BINDINGS),
            "Sessions table": bindings(SessionsTable.BINDINGS),
        }
        self.push_screen(KeysScreen(groups, self.prep.campaign.ui.keys))

    def action_summary(self) -> None:
        if not isinstance(self.screen, SummaryScreen):
            self.push_screen(SummaryScreen(self.view))

    async def action_quit(self) -> None:
        if not self.guest.running:
            self.exit(self.finished)
            return

        def chosen(choice: QuitChoice) -> None:
            if choice is None:
                return
            self.quitting = True
            if not self.guest.running:  # the campaign ended while the dialog was open
                self.exit(self.finished)
            elif self.scheduler is None:
                self.guest.cancel()
            else:
                self._control("stop", now=choice == "now")

        self.push_screen(QuitScreen(self.view.states["running"], self.view.campaign), chosen)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            # Textual's Quit says "as soon as possible" (ours asks first); its Keys panel squeezes
            # the panes (ours is an overlay).
            if command.title not in ("Quit", "Keys"):
                yield command
        actions: dict[str, Callable[[], Any]] = {
            "quit": self.action_quit,
            "pause": self.action_pause,
            "resume": self.action_resume,
            "kill": self._kill_now,
            "change_runner": self.action_change_runner,
            "parallelism_up": partial(self.action_parallelism, 1),
            "parallelism_down": partial(self.action_parallelism, -1),
            "summary": self.action_summary,
            "help": self.action_keys,
        }
        yield from palette_commands(actions, self.prep.campaign.ui.keys)


def _first_error(exc: BaseException) -> BaseException:
    """The engine raises one-line BenchtuiErrors; unwrap them from Trio's exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        match, _ = exc.split(BenchtuiError)
        if match is not None:
            return first_error(match)
    return exc


def make_app(prep: engine.PreparedRun, **options: Any) -> BenchApp:
    """The one way to build the app (the CLI, the tests, the screenshots)."""
    return BenchApp(prep, **options)


def run_app(
    prep: engine.PreparedRun, *, early_stops: Callable[[], int] = lambda: 0
) -> tuple[ev.CampaignEnded | None, ev.AccountsCommitted | None]:
    """Run the TUI to the end: how the campaign ended (None: it did not get going) and the last
    accounts it showed; raises what the engine raised. `early_stops`: stop signals counted
    before the app's own handlers were in place (each acts as one Ctrl-C once it runs)."""
    app = make_app(prep, early_stops=early_stops)
    app.run()
    if app.terminal_lost_at is not None:
        terminal.errors_to_log()
    if app.error is not None:
        raise app.error
    return app.view.ended, app.view.accounts


def verifying_profiles(campaign: Any) -> frozenset[str]:
    """The runner profiles whose certificates a verifier judges (the target's, run by a kind that
    uses the target); the others' (fake, demo) are claims of the runner."""
    if not campaign.make_target().verifies:
        return frozenset()
    return frozenset(name for name, p in campaign.profiles.items() if p.kind.uses_target)
