"""`benchtui view [RUN_DIR ...] [--port N] [--host H] [--open] [--export DIR]`: read every session."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from benchtui.cli.args import OneLineParser, add_state_dir
from benchtui.core.errors import BadInput
from benchtui.engine import rundir


def parser() -> OneLineParser:
    p = OneLineParser(
        prog="benchtui view",
        description="A read-only viewer of run dirs in the browser: the campaign, its sessions, and "
        "each session's story (what the model saw and answered, every command's output, submits, "
        "verdicts), live while a campaign runs. Served on 127.0.0.1 at a free port, under a secret "
        "address it prints; or written as static files with --export.",
        epilog="The pages hold the benchmark's answer key: keep the address and an export private.",
    )
    p.add_argument("run_dirs", nargs="*", type=Path, metavar="RUN_DIR", help="default: the latest run")
    p.add_argument("--port", type=int, default=0, metavar="N", help="the port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--unsafe-listen",
        action="store_true",
        help="allow a --host that is not loopback (anyone who reaches it and has the printed address "
        "reads every session)",
    )
    p.add_argument("--open", action="store_true", help="open the address in the browser")
    p.add_argument(
        "--export", type=Path, metavar="DIR", help="write static pages into DIR (new or empty) and exit"
    )
    add_state_dir(p)
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    run_dirs = args.run_dirs or [rundir.latest(rundir.state_dir(args.state_dir), nothing="no run to view")]
    for run in run_dirs:
        rundir.require(run)
    from benchtui.view.server import is_loopback

    if not is_loopback(args.host) and not args.unsafe_listen:
        raise BadInput(
            f"view: --host {args.host} is not a loopback address: the pages hold the answer key "
            "(add --unsafe-listen to serve them there anyway)"
        )
    if not 0 <= args.port <= 65535:
        raise BadInput("view: --port takes 0 (a free port) to 65535")
    from benchtui.view.pages import Viewer

    viewer = Viewer(run_dirs)
    for run in viewer.runs:
        run.story.campaign  # noqa: B018 - a run dir that cannot be read is one line, now
    if args.export is not None:
        from benchtui.view.export import export

        pages = export(run_dirs, args.export)
        print(
            f"view: wrote {pages} pages to {args.export} (open {args.export / 'index.html'}); "
            "private: it holds the answer key",
            file=sys.stderr,
        )
        return 0
    return serve(viewer, args.host, args.port, args.open)


def serve(viewer: object, host: str, port: int, open_browser: bool) -> int:
    from benchtui.view.pages import Viewer
    from benchtui.view.server import ViewerServer
    from benchtui.view.server import serve as serve_pages

    assert isinstance(viewer, Viewer)

    def started(url: str) -> None:
        print(
            f"benchtui view: {url}  (read-only; private: keep this address to yourself; Ctrl-C stops)",
            flush=True,
        )
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    try:
        asyncio.run(serve_pages(ViewerServer(viewer), host, port, started))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        raise BadInput(f"view: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return 0
