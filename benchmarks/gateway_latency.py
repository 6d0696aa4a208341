"""What the metering gateway adds to a model call: latency (p50/p99), streaming and not, at 1 and
64 concurrent sessions, and its throughput.

Three processes, as in a real run: a fast scripted provider (hypercorn, fixed answers), the
gateway (the real one, each session on the engine's real SessionMeter and Ledger; the run dir's
durable commit is left out: `benchmarks/worker_startup.py` measures it, ~1.2 ms per authorise),
and this process as the clients (httpx). Every latency is a call through the gateway minus the
same call straight to the provider; CPU/call is the gateway process's CPU time per call (the
warm-up calls included).

    python benchmarks/gateway_latency.py [--calls 2000] [--seconds-per-run 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parent.parent
BODY = {"model": "m", "messages": [{"role": "user", "content": "Say something. " * 20}], "max_tokens": 100}
ANSWER = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello " * 20}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100},
}  # fmt: skip


def _chunk(delta: dict, usage: dict | None = None) -> bytes:
    data = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}] if delta else []}  # fmt: skip
    if usage:
        data["usage"] = usage
    return f"data: {json.dumps(data)}\n\n".encode()


async def provider(scope, receive, send) -> None:
    """The scripted provider: a fixed chat completion, or the same as 6 stream events."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if not json.loads(body).get("stream"):
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(ANSWER).encode()})
        return
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
    )
    for _ in range(4):
        await send(
            {"type": "http.response.body", "body": _chunk({"content": "Hello " * 5}), "more_body": True}
        )
    await send({"type": "http.response.body", "body": _chunk({}, ANSWER["usage"]), "more_body": True})
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def serve_provider(port_file: str) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind, config.accesslog, config.errorlog = ["127.0.0.1:0"], None, None
    config.keep_alive_timeout, config.backlog = 60.0, 1024
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(serve, provider, config))
        Path(port_file).write_text(urls[0])


async def serve_gateway(provider_url: str, sessions: int, out_file: str) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.gateway import open_meter

    from benchtui.core.contract import ModelSpec
    from benchtui.runners.command.gateway import open_gateway

    model = ModelSpec("openai/m", Decimal(3), Decimal(15), 1000, f"{provider_url}/v1")
    async with open_gateway() as gateway, contextlib.AsyncExitStack() as stack:
        grants = []
        for n in range(sessions):
            meter, _, _ = open_meter(Decimal(1_000_000), model, f"s-{n}")
            grants.append(stack.enter_context(gateway.session(meter, model, "sk-bench")))
        Path(out_file).write_text(json.dumps({"url": gateway.url, "tokens": [g.token for g in grants]}))
        await trio.sleep_forever()


async def load(
    url: str, tokens: list[str], sessions: int, calls: int, stream: bool
) -> tuple[list[float], float]:
    """`sessions` clients, each making calls one after another; returns latencies and calls/s."""
    latencies: list[float] = []
    failures: list[int] = []
    body = {**BODY, "stream": stream}
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def session(n: int, count: int) -> None:
            headers = {"authorization": f"Bearer {tokens[n]}"}
            for _ in range(count):
                started = time.perf_counter()
                if stream:
                    async with client.stream(
                        "POST", f"{url}/v1/chat/completions", json=body, headers=headers
                    ) as r:
                        async for _chunk in r.aiter_raw():
                            pass
                else:
                    r = await client.post(f"{url}/v1/chat/completions", json=body, headers=headers)
                if r.status_code == 200:
                    latencies.append(time.perf_counter() - started)
                else:
                    failures.append(r.status_code)

        await session(0, 20)  # warm up the connections
        latencies.clear()
        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in range(sessions):
                nursery.start_soon(session, n, calls // sessions)
        if failures:
            print(f"  {len(failures)} calls failed: {sorted(set(failures))}")
        return latencies, len(latencies) / (time.perf_counter() - started)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux): a machine's load disturbs it less than latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else values[0] * 1000


async def wait_for(path: Path) -> str:
    with trio.fail_after(60):
        while not path.exists() or not path.read_text():
            await trio.sleep(0.05)
    return path.read_text()


async def main(calls: int) -> None:
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"gwbench-{os.getpid()}"
    tmp.mkdir()
    me = [sys.executable, __file__]
    procs = [subprocess.Popen([*me, "--provider", str(tmp / "provider")])]
    try:
        provider_url = await wait_for(tmp / "provider")
        procs.append(subprocess.Popen([*me, "--gateway", provider_url, str(tmp / "gateway")]))
        gateway = json.loads(await wait_for(tmp / "gateway"))
        print(f"{calls} calls per run; each session makes its calls one after another\n")
        print(f"{'sessions':>8} {'mode':>9} | {'direct p50':>10} {'p99':>7} | {'gateway p50':>11} {'p99':>7} |"
              f" {'added p50':>9} {'p99':>7} | {'gateway calls/s':>15} | {'CPU/call':>11}")  # fmt: skip
        for sessions in (1, 64):
            for stream in (False, True):
                direct, _ = await load(provider_url, ["x"] * 64, sessions, calls, stream)
                cpu_before = cpu_seconds(procs[1].pid)
                through, rate = await load(gateway["url"], gateway["tokens"], sessions, calls, stream)
                cpu_ms = (cpu_seconds(procs[1].pid) - cpu_before) / (len(through) + 20) * 1000
                d50, d99, g50, g99 = pct(direct, 50), pct(direct, 99), pct(through, 50), pct(through, 99)
                print(f"{sessions:>8} {'stream' if stream else 'plain':>9} | {d50:>8.2f}ms {d99:>5.2f}ms |"
                      f" {g50:>9.2f}ms {g99:>5.2f}ms | {g50 - d50:>7.2f}ms {g99 - d99:>5.2f}ms | {rate:>15.0f} | {cpu_ms:>9.2f}ms")  # fmt: skip
    finally:
        for p in procs:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--provider", help=argparse.SUPPRESS)
    parser.add_argument("--gateway", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.provider:
        trio.run(serve_provider, args.provider)
    elif args.gateway:
        trio.run(serve_gateway, args.gateway[0], 64, args.gateway[1])
    else:
        trio.run(main, args.calls)
