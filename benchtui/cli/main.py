"""Command line: `benchtui [CAMPAIGN] [options]`, `benchtui ctl …`, `benchtui schema`."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.cli.stopsignals import StopSignals
from benchtui.core.errors import BenchtuiError, Problems, one_line
from benchtui.engine import rundir

if TYPE_CHECKING:
    from benchtui.engine.events import CampaignEnded

EXIT_OK, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 2, 130
EXIT_RETRY = 75
"""Not stopped, yet not finished: sessions ended in infrastructure errors (sysexits' EX_TEMPFAIL)."""


SUMMARIES = {
    "demo": "a real campaign with no API key: mini-swe-agent against a scripted model server",
    "check": "preflight a campaign: tools, keys, endpoints, cost preview (--ping: one call per model)",
    "ctl": "steer a running campaign: pause, resume, stop, status, kill, runner, parallelism",
    "report": "leaderboard, pairwise tests and fairness audit of run dirs (text, json, html)",
    "view": "read sessions in the browser: a read-only viewer of run dirs on 127.0.0.1 (--export)",
    "verify": "re-check the certificates in any file benchtui wrote, with its target's verifier",
    "schema": "the campaign file's JSON Schema, for editors",
}
"""One line per command, for `benchtui --help` (a test checks every command has one)."""


def run_parser() -> OneLineParser:
    names = [*SUMMARIES, *(n for n in [*RUNS, *COMMANDS] if n not in SUMMARIES)]
    commands = "\n".join(f"  {name:<8} {SUMMARIES.get(name, '')}".rstrip() for name in names)
    p = OneLineParser(
        prog="benchtui",
        description="Run a fair, budgeted, resumable campaign (the options below):\n"
        f"  benchtui CAMPAIGN.toml\n\ncommands (`benchtui COMMAND --help` for each):\n{commands}",
        epilog="Exit codes: 0 finished (skips included), 1 state could not be saved, 2 bad input, "
        "3 run dir in use, 75 not finished: sessions ended in infrastructure errors (--resume "
        "retries them), 130 stopped or interrupted (--resume continues).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("campaign", nargs="?", type=Path, help="campaign TOML file")
    p.add_argument("--no-ui", action="store_true", help="headless: log lines instead of the TUI")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume",
        action="store_true",
        help="continue the existing run, or grow it by the models and repeats the campaign adds "
        "(without CAMPAIGN: the latest run)",
    )
    mode.add_argument(
        "--fresh",
        action="store_true",
        help="start over, the only way to: the old run dir is moved aside, never deleted; a new budget",
    )
    p.add_argument("--runner", metavar="PROFILE", help="active runner profile from [runners.*]")
    p.add_argument("--parallelism", type=int, metavar="N", help="sessions running at once")
    p.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="a quick trial: at most N sessions per model (recorded in the identity)",
    )
    p.add_argument(
        "--models",
        metavar="A,B",
        help="a quick trial: only these of the campaign's models, comma-separated (recorded in the identity)",
    )
    p.add_argument(
        "--no-preflight",
        action="store_true",
        help="do not probe each model's api_base with a TCP connection before starting",
    )
    add_state_dir(p)
    return p


def tune_gc() -> None:
    """Collect young objects less often: a campaign keeps a large live heap (the journal's
    current records), and CPython 3.11's default thresholds rescan it so often that the cost
    per session grows with the campaign (measured: 50k sessions 20.8 s -> 13.9 s)."""
    import gc

    gc.set_threshold(50_000, 20, 100)


def main_run(argv: list[str], stops: StopSignals) -> int:
    args = run_parser().parse_args(argv)
    from benchtui.engine import run as engine  # after parsing: `--help` and usage errors stay instant
    from benchtui.runners.mini import prices as price_map  # litellm's map, asked in a child if needed

    if args.parallelism is not None and args.parallelism < 1:
        raise_bad("--parallelism must be at least 1")
    if args.limit is not None and args.limit < 1:
        raise_bad("--limit must be at least 1")
    models = None
    if args.models is not None:
        models = list(dict.fromkeys(m.strip() for m in args.models.split(",") if m.strip()))
        if not models:
            raise_bad("--models needs model names, comma-separated (--models vendor/a,vendor/b)")
    opts = engine.Options(
        args.campaign,
        rundir.state_dir(args.state_dir),
        args.resume,
        args.fresh,
        args.runner,
        args.parallelism,
        preflight=not args.no_preflight,
        limit=args.limit,
        models=models,
        prices=price_map.lookup,
    )
    tune_gc()
    with engine.prepare(opts) as prep:
        if prep.finished_before:
            from benchtui.cli.closing import finished_text

            print(finished_text(prep), flush=True)
            return EXIT_OK
        if args.no_ui or not sys.stdout.isatty():
            import trio

            from benchtui.cli import headless

            printer = headless.LinePrinter()
            ended: CampaignEnded | None
            with stops.trio_owns_sigint():
                # At a checkpoint, not in whatever frame runs (a weakref callback would swallow it),
                # until the headless front end's signal receiver takes over.
                ended = trio.run(
                    headless.main,
                    prep,
                    printer,
                    headless.keys_available(),
                    restrict_keyboard_interrupt_to_checkpoints=True,
                )
            accounts = printer.accounts
        else:
            from benchtui.ui.app import run_app

            stops.hand_over()
            ended, accounts = run_app(prep, early_stops=lambda: stops.early)
            stops.hand_over()  # the app's loop is closed: a late signal must not kill what follows
    # Both front ends end the same way: the table, where the results are, how to continue.
    from benchtui.cli.closing import closing_text

    try:
        print(closing_text(prep.run_dir, accounts, ended is not None and ended.finished), flush=True)
    except BrokenPipeError:  # `| head`: the campaign's own exit code still tells how it ended
        quiet_stdout()
    except OSError as exc:  # EIO: the terminal hung up after the TUI closed; the state is saved
        if exc.errno != errno.EIO:
            raise
        quiet_stdout()
    return exit_code(ended)


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush on a closed pipe says nothing."""
    import os

    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def say(line: str) -> None:
    """The last line on stderr: on a terminal that hung up (EIO) it is lost, the exit code not."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def exit_code(ended: object) -> int:
    """The contract's exit code for how a campaign ended (None: it never got going)."""
    from benchtui.engine.events import CampaignEnded

    if not isinstance(ended, CampaignEnded):
        return EXIT_INTERRUPTED
    if ended.finished:
        return EXIT_OK
    return EXIT_INTERRUPTED if ended.stopped or not ended.retry else EXIT_RETRY


def raise_bad(message: str) -> None:
    from benchtui.core.errors import BadInput

    raise BadInput(message)


def main_schema(argv: list[str]) -> int:
    p = OneLineParser(
        prog="benchtui schema",
        description="Print the JSON Schema of the campaign file (every key documented), "
        "for editors and validators: `benchtui schema > benchtui.schema.json`.",
    )
    p.add_argument("--results", action="store_true", help="the schema of results/<model>.json instead")
    args = p.parse_args(argv)
    if args.results:
        from benchtui.engine.results_format import json_schema as results_schema

        print(json.dumps(results_schema(), indent=2))
        return EXIT_OK
    from benchtui.cli.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def main_ctl(argv: list[str]) -> int:
    from benchtui.cli import ctl

    return ctl.main(argv)


def main_verify(argv: list[str]) -> int:
    from benchtui.cli.verify import main_verify as verify

    return verify(argv)


def main_check(argv: list[str]) -> int:
    from benchtui.cli.check import main_check as check

    return check(argv)


def main_report(argv: list[str]) -> int:
    from benchtui.cli.report import main as report

    return report(argv)


def main_view(argv: list[str]) -> int:
    from benchtui.cli.view import main as view

    return view(argv)


def main_demo(argv: list[str], stops: StopSignals) -> int:
    from benchtui.cli.demo import main_demo as demo

    return demo(argv, stops, main_run)


RUNS = {"demo": main_demo}
"""Commands that run a campaign (stop signals act on them as on `benchtui CAMPAIGN`)."""

COMMANDS = {
    "schema": main_schema,
    "ctl": main_ctl,
    "verify": main_verify,
    "check": main_check,
    "report": main_report,
    "view": main_view,
}


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process itself, not an in-process caller (tests)
    argv = sys.argv[1:] if argv is None else argv
    command = COMMANDS.get(argv[0]) if argv else None
    runs = RUNS.get(argv[0]) if argv else None
    stops = StopSignals()
    try:
        if command is None:
            stops.install()
        if runs is not None:
            return runs(argv[1:], stops)
        return command(argv[1:]) if command else main_run(argv, stops)
    except BenchtuiError as exc:
        for line in exc.lines if isinstance(exc, Problems) else [str(exc)]:  # one line per problem
            say(f"benchtui: {one_line(line)}")
        return exc.exit_code
    except BrokenPipeError:  # `benchtui report | head`: the reader has what it wanted
        quiet_stdout()
        return EXIT_OK
    except OSError as exc:  # e.g. a full disk before the run's own storage took over
        where = f" ({exc.filename})" if exc.filename else ""
        say(f"benchtui: {one_line(f'{exc.strerror or exc}{where}')}")
        return 1
    except BaseException as exc:
        if not stops.explains(exc):
            raise
        say("benchtui: interrupted")
        return EXIT_INTERRUPTED
    finally:
        if program and command is None:
            stops.ignore_from_now()  # the exit code is decided: a late signal must not replace it


if __name__ == "__main__":
    sys.exit(main())
