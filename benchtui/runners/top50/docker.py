"""Placement `docker`: the benchmark's runner image, run as its `make run` runs it
(`docker run --rm --env-file submission.env -e OUTPUT=/out/<stamp>/submission.json -v out:/out
IMAGE`), with the session's environment file: its model, the gateway as its API base and the
session's token as its key (never a real key). The container shares the host's network so that
it reaches the gateway on 127.0.0.1; it is named, so a cut run's container is killed by name (a
killed `docker` client leaves its container running)."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

OUT = "/out"


def container_name() -> str:
    """Random: a name that says nothing of the session's model."""
    return f"benchtui-top50-{secrets.token_hex(6)}"


def env_file_text(env: dict[str, str]) -> str:
    """`--env-file` lines (`KEY=value`, no quoting: Docker takes the rest of the line as is)."""
    for key, value in env.items():
        if "\n" in value or "\n" in key or "=" in key:
            raise ValueError(f"{key!r} cannot be written to an --env-file")
    return "".join(f"{key}={value}\n" for key, value in env.items())


def write_env_file(path: Path, env: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(env_file_text(env))


def argv(docker: str, image: str, name: str, env_file: Path, out: Path) -> list[str]:
    return [
        docker, "run", "--rm", "--name", name, "--network", "host",
        "--env-file", str(env_file), "-e", f"OUTPUT={OUT}/submission.json",
        "-v", f"{out}:{OUT}", image,
    ]  # fmt: skip


def kill_argv(docker: str, name: str) -> list[str]:
    return [docker, "kill", name]


def missing(docker: str) -> str | None:
    """Why Docker cannot run here, in one line (None: a client is there; its engine is asked by
    `docker info` in preflight)."""
    if shutil.which(docker) is None:
        return f'Docker is missing: no {docker!r} on PATH (placement "docker" runs the benchmark\'s image)'
    return None
