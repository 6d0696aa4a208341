"""The metering gateway beside the provider direct and a plain reverse proxy, in one run:
calls/s at 64 clients, added p50/p99 latency at 1 and 64 clients, plain and streaming; the
engine's CPU per call, its loop lag, and how long a durable `authorise` takes under that load.

Processes, as in a real run (this machine's cores are shared by all of them):
- a fast scripted provider (uvloop + httptools, fixed answers: a chat completion, or the same as
  six stream events);
- the gateway: the real `open_gateway` in an engine process (Trio) with its relay processes, each
  session on the engine's real SessionMeter, Accounts and Store (a run dir in a temp folder: every
  hold is a journal line in a group commit, one fsync, as in a campaign; the machine's fsync
  latency in that folder is printed before and after the rows);
- nginx as the plain reverse proxy (`apt-get install nginx-light`; skipped when absent);
- the clients: wrk (C, `apt-get install wrk`; one connection a client, the tokens of 64
  sessions in turn), or, without it, aiohttp on uvloop in one process (which spends more CPU
  per call than the gateway's relay: on 2 cores it caps every column).

Added latency is a percentile through the gateway (or nginx) minus the same percentile direct.

    python benchmarks/gateway_latency.py [--seconds 4] [--relays 1] [--provider-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from disk import fsync_latency

ROOT = Path(__file__).resolve().parent.parent
PROMPT = {"model": "m", "messages": [{"role": "user", "content": "Say something. " * 20}], "max_tokens": 100}
USAGE = {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}
ANSWER = json.dumps({
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello " * 20}, "finish_reason": "stop"}],
    "usage": USAGE,
}).encode()  # fmt: skip


def _chunk(delta: dict, usage: dict | None = None) -> bytes:
    data: dict = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                  "choices": [{"index": 0, "delta": delta, "finish_reason": None}] if delta else []}  # fmt: skip
    if usage:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n".encode()


STREAM = b"".join([_chunk({"content": "Hello " * 5})] * 4 + [_chunk({}, USAGE), b"data: [DONE]\n\n"])


# -- the provider -----------------------------------------------------------------------------
def serve_provider(port_file: str, delay_s: float) -> None:
    import httptools
    import uvloop

    plain = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(ANSWER),
        ANSWER,
    )
    stream = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    stream += b"%x\r\n%s\r\n0\r\n\r\n" % (len(STREAM), STREAM)

    class Provider(asyncio.Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self.transport = transport
            self.parser = httptools.HttpRequestParser(self)
            self.body = b""

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_body(self, body: bytes) -> None:
            self.body += body

        def on_message_complete(self) -> None:
            answer = stream if b'"stream":true' in self.body.replace(b" ", b"") else plain
            self.body = b""
            if delay_s:  # a provider's own latency: the answer after delay_s, the connection free meanwhile
                asyncio.get_running_loop().call_later(delay_s, self._answer, answer)
            else:
                self.transport.write(answer)

        def _answer(self, answer: bytes) -> None:
            if not self.transport.is_closing():
                self.transport.write(answer)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Provider, "127.0.0.1", 0, backlog=1024)
        Path(port_file).write_text(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        await server.serve_forever()

    uvloop.run(main())


# -- the gateway (an engine process) ----------------------------------------------------------
def serve_gateway(provider_url: str, sessions: int, relays: int, out_file: str) -> None:
    import trio

    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from decimal import Decimal

    from benchtui.core.contract import ModelSpec
    from benchtui.engine import events as ev
    from benchtui.engine.accounts import Accounts
    from benchtui.engine.ledger import Ledger
    from benchtui.engine.meter import SessionMeter
    from benchtui.engine.store import Store
    from benchtui.runners.kit.gateway import open_gateway

    model = ModelSpec("openai/m", Decimal(3), Decimal(15), 1000, f"{provider_url}/v1")
    held: list[float] = []
    lags: list[float] = []

    class TimedMeter(SessionMeter):
        async def authorise(self, worst_case_usd: Decimal) -> bool:
            started = time.perf_counter()
            try:
                return await super().authorise(worst_case_usd)
            finally:
                held.append(time.perf_counter() - started)

    async def lag() -> None:
        while True:
            started = trio.current_time()
            await trio.sleep(0.005)
            lags.append(trio.current_time() - started - 0.005)

    async def commands(gateway) -> None:  # stdin: "stats" -> one JSON line on stdout
        relay_pids = [r.process.pid for r in gateway._relays]
        while line := await trio.to_thread.run_sync(sys.stdin.readline):
            if line.strip() == "stats":
                print(json.dumps({
                    "at": time.monotonic(),
                    "engine_cpu": cpu_seconds(os.getpid()),
                    "relay_cpu": sum(cpu_seconds(p) for p in relay_pids),
                    "authorise": sorted(held), "lag": sorted(lags),
                }), flush=True)  # fmt: skip
                held.clear()
                lags.clear()

    async def main() -> None:
        run_dir = Path(tempfile.mkdtemp(prefix="gwbench-run-"))
        ledger = Ledger(Decimal(10**9), {model.name: Decimal(10**9)})
        store = Store(run_dir, ledger)
        accounts = Accounts(ledger, store, ev.EventBus(), {})  # type: ignore[arg-type]
        async with trio.open_nursery() as nursery:
            await nursery.start(store.serve)
            async with open_gateway(relays=relays) as gateway, contextlib.AsyncExitStack() as stack:
                grants = []
                for n in range(sessions):
                    flight = ledger.open(f"s-{n}", model.name, 0, 1, "command", Decimal(10**6))
                    meter = TimedMeter(accounts, flight, model, Decimal(10**6))
                    grants.append(await stack.enter_async_context(gateway.session(meter, model, "sk-bench")))
                out = {"url": gateway.url, "tokens": [g.token for g in grants]}
                Path(out_file).write_text(json.dumps(out))
                nursery.start_soon(lag)
                await commands(gateway)
                nursery.cancel_scope.cancel()
        shutil.rmtree(run_dir, ignore_errors=True)

    trio.run(main)


# -- the clients --------------------------------------------------------------------------------
def run_clients(url: str, tokens: list[str], sessions: int, seconds: float, stream: bool) -> None:
    import aiohttp
    import uvloop

    body = json.dumps({**PROMPT, "stream": stream}).encode()

    async def main() -> None:
        latencies: list[float] = []
        failures: dict[int, int] = {}
        connector = aiohttp.TCPConnector(limit=sessions, force_close=False)
        async with aiohttp.ClientSession(connector=connector) as client:

            async def session(n: int, until: float) -> None:
                headers = {
                    "authorization": f"Bearer {tokens[n % len(tokens)]}",
                    "content-type": "application/json",
                }
                while time.perf_counter() < until:
                    started = time.perf_counter()
                    async with client.post(f"{url}/v1/chat/completions", data=body, headers=headers) as r:
                        await r.read()
                        if r.status == 200:
                            latencies.append(time.perf_counter() - started)
                        else:
                            failures[r.status] = failures.get(r.status, 0) + 1

            await asyncio.gather(*(session(n, time.perf_counter() + 0.5) for n in range(sessions)))  # warm up
            latencies.clear()
            started = time.perf_counter()
            until = started + seconds
            await asyncio.gather(*(session(n, until) for n in range(sessions)))
            elapsed = time.perf_counter() - started
        print(json.dumps({"latencies": latencies, "rate": len(latencies) / elapsed, "failures": failures}))

    uvloop.run(main())


# -- nginx, the plain proxy -------------------------------------------------------------------
NGINX = """worker_processes 1; daemon off; pid {dir}/nginx.pid; error_log {dir}/error.log crit;
events {{ worker_connections 4096; }}
http {{ access_log off; client_body_temp_path {dir}; proxy_temp_path {dir};
  upstream provider {{ server {upstream}; keepalive 256; }}
  server {{ listen 127.0.0.1:{port}; keepalive_requests 1000000;
    location / {{ proxy_pass http://provider; proxy_http_version 1.1; proxy_set_header Connection "";
                 proxy_buffering off; }} }} }}
"""


def start_nginx(provider_url: str, folder: Path) -> tuple[subprocess.Popen, str] | None:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        return None
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = folder / "nginx.conf"
    conf.write_text(NGINX.format(dir=folder, upstream=provider_url.removeprefix("http://"), port=port))
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(folder)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc, f"http://127.0.0.1:{port}"


# -- the run ----------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux): a machine's load disturbs it less than latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else values[0] * 1000


def wait_for(path: Path) -> str:
    deadline = time.time() + 60
    while not path.exists() or not path.read_text():
        if time.time() > deadline:
            raise SystemExit(f"{path.name} did not start")
        time.sleep(0.05)
    return path.read_text()


WRK_SCRIPT = """
local tokens = {{{tokens}}}
local n = 0
wrk.method = "POST"
wrk.body = {body}
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/chat/completions",
    {{["authorization"] = "Bearer " .. tokens[n % #tokens + 1], ["content-type"] = "application/json"}})
end
done = function(summary, latency, requests)
  io.write(string.format('{{"rate": %f, "p50": %f, "p99": %f, "failures": %d}}\\n',
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


def wrk_clients(
    url: str, tokens: list[str], sessions: int, seconds: float, stream: bool, folder: Path
) -> dict:
    body = json.dumps({**PROMPT, "stream": stream})
    script = folder / "wrk.lua"
    script.write_text(
        WRK_SCRIPT.format(tokens=", ".join(json.dumps(t) for t in tokens), body=json.dumps(body))
    )
    subprocess.run(["wrk", "-t1", "-c1", "-d1s", "-s", str(script), url], capture_output=True, check=True)
    out = subprocess.run(
        ["wrk", "-t1", f"-c{sessions}", f"-d{int(seconds)}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "rate": found["rate"],
        "p50": found["p50"],
        "p99": found["p99"],
        "failures": {"any": found["failures"]},
    }


def clients(url: str, tokens: list[str], sessions: int, seconds: float, stream: bool, folder: Path) -> dict:
    if shutil.which("wrk"):
        return wrk_clients(url, tokens, sessions, seconds, stream, folder)
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--clients",
            url,
            json.dumps(tokens),
            str(sessions),
            str(seconds),
            str(int(stream)),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(out.stdout)
    lat = found["latencies"]
    return {"rate": found["rate"], "p50": pct(lat, 50), "p99": pct(lat, 99), "failures": found["failures"]}


def main(seconds: float, relays: int, provider_ms: float) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gwbench-"))
    me = [sys.executable, __file__]
    procs: list[subprocess.Popen] = [
        subprocess.Popen([*me, "--provider", str(tmp / "provider"), str(provider_ms)])
    ]
    try:
        provider_url = wait_for(tmp / "provider")
        engine = subprocess.Popen(
            [*me, "--gateway", provider_url, "64", str(relays), str(tmp / "gateway")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(engine)
        gateway = json.loads(wait_for(tmp / "gateway"))
        nginx = start_nginx(provider_url, tmp)
        if nginx:
            procs.append(nginx[0])

        def stats() -> dict:
            assert engine.stdin and engine.stdout
            engine.stdin.write("stats\n")
            engine.stdin.flush()
            return json.loads(engine.stdout.readline())

        # The engine's CPU is given net of what it spends idle (the lag probe's 200 wake-ups a
        # second are this benchmark's instrument, not the gateway's work): measured here, quiet.
        quiet = stats()
        time.sleep(3)
        after_quiet = stats()
        idle = (after_quiet["engine_cpu"] - quiet["engine_cpu"]) / (after_quiet["at"] - quiet["at"])
        print(f"engine idle (the lag probe): {idle * 1000:.1f} ms of CPU a second, taken off its ms/call\n")
        tool = "wrk" if shutil.which("wrk") else "aiohttp"
        print(
            f"{seconds:g} s a run; clients: {tool}, each making its calls one after another; {relays} relay(s); "
            f"the provider answers after {provider_ms:g} ms; "
            f"load {os.getloadavg()[0]:.1f}; fsync (4 KiB write + fsync, median of 50) {fsync_latency(tmp) * 1000:.2f} ms\n"
        )
        print(f"{'clients':>7} {'mode':>6} | {'direct':>7} {'p50':>6} {'p99':>6} | {'nginx':>7} {'+p50':>6} {'+p99':>6} |"
              f" {'gateway':>7} {'share':>5} {'+p50':>6} {'+p99':>6} {'fail':>4} | {'engine':>8} {'relays':>8} | {'authorise p50':>13} {'p99':>6} | {'lag p99':>7}")  # fmt: skip
        print(f"{'':>7} {'':>6} | {'calls/s':>7} {'ms':>6} {'ms':>6} | {'calls/s':>7} {'ms':>6} {'ms':>6} |"
              f" {'calls/s':>7} {'of d.':>5} {'ms':>6} {'ms':>6} {'':>4} | {'ms/call':>8} {'ms/call':>8} | {'ms':>13} {'ms':>6} | {'ms':>7}")  # fmt: skip

        for sessions in (1, 64):
            for stream in (False, True):
                direct = clients(provider_url, ["x"], sessions, seconds, stream, tmp)
                proxied = clients(nginx[1], ["x"], sessions, seconds, stream, tmp) if nginx else None
                before = stats()
                through = clients(gateway["url"], gateway["tokens"], sessions, seconds, stream, tmp)
                after = stats()
                calls = max(through["rate"] * seconds, 1)
                d50, d99, g50, g99 = direct["p50"], direct["p99"], through["p50"], through["p99"]
                n = f"{proxied['rate']:>7.0f} {proxied['p50'] - d50:>6.2f} {proxied['p99'] - d99:>6.2f}" if proxied else f"{'-':>7} {'-':>6} {'-':>6}"  # fmt: skip
                busy = after["engine_cpu"] - before["engine_cpu"] - idle * (after["at"] - before["at"])
                engine_ms = max(busy, 0.0) / calls * 1000
                relay_ms = (after["relay_cpu"] - before["relay_cpu"]) / calls * 1000
                held = [s * 1000 for s in after["authorise"]]
                lag99 = pct(after["lag"], 99)
                fail = sum(through["failures"].values())
                print(f"{sessions:>7} {'stream' if stream else 'plain':>6} | {direct['rate']:>7.0f} {d50:>6.2f} {d99:>6.2f} | {n} |"
                      f" {through['rate']:>7.0f} {through['rate'] / direct['rate']:>5.0%} {g50 - d50:>6.2f} {g99 - d99:>6.2f} {fail:>4} | {engine_ms:>8.3f} {relay_ms:>8.3f} |"
                      f" {statistics.median(held) if held else float('nan'):>13.2f} {pct([h / 1000 for h in held], 99):>6.2f} | {lag99:>7.2f}")  # fmt: skip
        print(f"\nfsync after the rows: {fsync_latency(tmp) * 1000:.2f} ms")
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--relays", type=int, default=1)
    parser.add_argument(
        "--provider-ms",
        type=float,
        default=0.0,
        help="the provider's own latency per call (a real one's: 100s of ms)",
    )
    parser.add_argument("--provider", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--gateway", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--clients", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.provider:
        serve_provider(args.provider[0], float(args.provider[1]) / 1000)
    elif args.gateway:
        serve_gateway(args.gateway[0], int(args.gateway[1]), int(args.gateway[2]), args.gateway[3])
    elif args.clients:
        url, tokens, sessions, seconds, stream = args.clients
        run_clients(url, json.loads(tokens), int(sessions), float(seconds), stream == "1")
    else:
        main(args.seconds, args.relays, args.provider_ms)
