"""Per-session user and group ids for the benchmark's agent and oracle: concurrent runs must not
share them (one run's agent could signal or read the other's). A slot is three ids from the
profile's `uid_base` up, held by an exclusive lock on a file of this machine while its run lasts:
two campaigns on one host never take the same slot."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

LOCKS = Path("/run/lock/benchtui-top50") if Path("/run/lock").is_dir() else Path("/tmp/benchtui-top50-ids")
SLOTS = 1024


class NoSlot(Exception):
    """Every slot is held (SLOTS concurrent runs on this machine)."""


@dataclass(frozen=True, slots=True)
class Ids:
    agent: int
    oracle: int
    evidence: int

    def env(self) -> dict[str, str]:
        """As the benchmark's runner reads them (each user's group has its own id)."""
        return {
            "PRB_AGENT_UID": str(self.agent),
            "PRB_AGENT_GID": str(self.agent),
            "PRB_ORACLE_UID": str(self.oracle),
            "PRB_ORACLE_GID": str(self.oracle),
            "PRB_EVIDENCE_GID": str(self.evidence),
        }


@contextlib.contextmanager
def slot(base: int, locks: Path = LOCKS) -> Iterator[Ids]:
    """The first free slot's ids, held until the block ends."""
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    for index in range(SLOTS):
        fd = os.open(locks / f"{base}-{index}", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            first = base + 3 * index
            yield Ids(first, first + 1, first + 2)
            return
        finally:
            os.close(fd)  # the lock goes with it
    raise NoSlot(f"no free id slot: {SLOTS} runs hold one on this machine")
