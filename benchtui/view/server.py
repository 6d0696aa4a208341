"""`benchtui view`'s server: aiohttp on 127.0.0.1, read-only, every page under a secret prefix.

The pages hold a campaign's answer key, and a loopback port is open to every user of the machine
and, through DNS rebinding, to any web page the browser visits: so every page lives under
`/<token>/` (a random token printed with the address: a stranger cannot guess it), a request
whose `Host` is not the viewer's own address is refused (a rebound name is not), and every answer
carries a Content-Security-Policy that lets only the viewer's own script run. Pages render in a
worker thread (reading files blocks), at most `RENDERING` at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

from benchtui.view.pages import Viewer
from benchtui.view.render import CSP

RENDERING = 4
"""Pages rendered at once (a burst of clients queues, the event loop stays free)."""
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ViewerServer:
    def __init__(self, viewer: Viewer, *, token: str | None = None) -> None:
        self.viewer = viewer
        self.token = token or secrets.token_urlsafe(16)
        self.hosts: set[str] = set()
        """`Host` values the viewer answers (its address, with the port it got)."""
        self._rendering = asyncio.Semaphore(RENDERING)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/{path:.*}", self._page)
        return app

    def allow(self, host: str, port: int) -> None:
        names = {host, "localhost", "127.0.0.1", "::1"} if is_loopback(host) else {host}
        self.hosts |= {f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names}

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.host not in self.hosts:
            response: web.StreamResponse = web.Response(
                status=421, text="misdirected request: not this viewer's address\n"
            )
        else:
            response = await handler(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response

    async def _page(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["path"]
        prefix = self.token + "/"
        if path == self.token:
            raise web.HTTPFound(f"/{prefix}")
        if not path.startswith(prefix):
            return web.Response(status=404, text="no such page\n")
        path = path.removeprefix(prefix)
        async with self._rendering:
            loop = asyncio.get_running_loop()
            tag = await loop.run_in_executor(None, self.viewer.etag, path)
            if tag and request.headers.get("If-None-Match") == tag:
                return web.Response(status=304, headers={"ETag": tag})
            page = await loop.run_in_executor(None, self.viewer.page, path)
        if page is None:
            return web.Response(status=404, text="no such page\n")
        headers = {"ETag": tag or '"' + hashlib.sha256(page.body).hexdigest()[:32] + '"'}
        if page.csp:
            headers["Content-Security-Policy"] = page.csp
        return web.Response(
            body=page.body, content_type=page.content_type.split(";")[0], charset="utf-8", headers=headers
        )


async def serve(server: ViewerServer, host: str, port: int, started: Callable[[str], None]) -> None:
    """Serve until cancelled; `started(url)` once it listens."""
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, backlog=128)
        await site.start()
        server_sockets = getattr(site._server, "sockets", None) or []
        bound = server_sockets[0].getsockname()[1] if server_sockets else port
        server.allow(host, bound)
        shown = f"[{host}]" if ":" in host else host
        started(f"http://{shown}:{bound}/{server.token}/")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
