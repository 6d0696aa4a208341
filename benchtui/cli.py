"""Command line: `benchtui [CAMPAIGN] [options]`, `benchtui ctl …`, `benchtui schema`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchtui.errors import BenchtuiError, one_line
from benchtui.stopsignals import StopSignals

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 2, 130


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's default prints usage)
        self.exit(EXIT_BAD_INPUT, f"benchtui: {message} (see --help)\n")


def run_parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="benchtui",
        description="Run a fair, budgeted, resumable campaign.",
        epilog="Also: `benchtui ctl --help`, `benchtui verify --help`, `benchtui schema`.",
    )
    p.add_argument("campaign", nargs="?", type=Path, help="campaign TOML file")
    p.add_argument("--no-ui", action="store_true", help="headless: log lines instead of the TUI")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume", action="store_true", help="continue the existing run (without CAMPAIGN: the latest run)"
    )
    mode.add_argument(
        "--fresh", action="store_true", help="start over; the old run dir is moved aside, never deleted"
    )
    p.add_argument("--runner", metavar="PROFILE", help="active runner profile from [runners.*]")
    p.add_argument("--parallelism", type=int, metavar="N", help="sessions running at once")
    p.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where run dirs live (default: runs, or BENCHTUI_STATE_DIR)",
    )
    return p


def _state_dir(arg: Path | None) -> Path:
    import os

    return arg or Path(os.environ.get("BENCHTUI_STATE_DIR", "runs"))


def tune_gc() -> None:
    """Collect young objects less often: a campaign keeps a large live heap (the journal's
    current records), and CPython 3.11's default thresholds rescan it so often that the cost
    per session grows with the campaign (measured: 50k sessions 20.8 s -> 13.9 s)."""
    import gc

    gc.set_threshold(50_000, 20, 100)


def main_run(argv: list[str], stops: StopSignals) -> int:
    from benchtui import engine

    args = run_parser().parse_args(argv)
    if args.parallelism is not None and args.parallelism < 1:
        raise_bad("--parallelism must be at least 1")
    opts = engine.Options(
        args.campaign, _state_dir(args.state_dir), args.resume, args.fresh, args.runner, args.parallelism
    )
    tune_gc()
    prep = engine.prepare(opts)
    try:
        if args.no_ui or not sys.stdout.isatty():
            import trio

            from benchtui import headless

            printer = headless.LinePrinter()
            with stops.trio_owns_sigint():
                finished = trio.run(headless.main, prep, printer, headless.keys_available())
            print(printer.table())
        else:
            from benchtui.ui.app import run_app

            stops.hand_over()
            finished = run_app(prep)
    finally:
        prep.lock.release()
    return EXIT_OK if finished else EXIT_INTERRUPTED


def raise_bad(message: str) -> None:
    from benchtui.errors import BadInput

    raise BadInput(message)


def main_schema(argv: list[str]) -> int:
    from benchtui.campaign import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def main_ctl(argv: list[str]) -> int:
    from benchtui import ctl

    return ctl.main(argv)


def main_verify(argv: list[str]) -> int:
    from benchtui.verify import main_verify as verify

    return verify(argv)


COMMANDS = {"schema": main_schema, "ctl": main_ctl, "verify": main_verify}


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process itself, not an in-process caller (tests)
    argv = sys.argv[1:] if argv is None else argv
    command = COMMANDS.get(argv[0]) if argv else None
    stops = StopSignals()
    try:
        if command is None:
            stops.install()
        return command(argv[1:]) if command else main_run(argv, stops)
    except BenchtuiError as exc:
        print(f"benchtui: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # e.g. a full disk before the run's own storage took over
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"benchtui: {one_line(f'{exc.strerror or exc}{where}')}", file=sys.stderr)
        return 1
    except BaseException as exc:
        if not stops.explains(exc):
            raise
        print("benchtui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if program and command is None:
            stops.ignore_from_now()  # the exit code is decided: a late signal must not replace it


if __name__ == "__main__":
    sys.exit(main())
