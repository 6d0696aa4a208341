"""One runner per profile, created when a session first needs it and kept until the campaign ends.

A runner that is an async context manager (it owns a pre-warmed process, a gateway, …) is
entered in a task of the campaign's service nursery, so its services live inside the
campaign's structured concurrency and are shut down with it, never left behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import trio

from benchtui.core import registry
from benchtui.core.contract import AgentRunner, RunnerProfile
from benchtui.core.executor import ExecutorConfig
from benchtui.core.target import TargetKind


class RunnerPool:
    def __init__(
        self,
        profiles: Mapping[str, RunnerProfile],
        run_dir: Path,
        nursery: trio.Nursery,
        executor: ExecutorConfig | None = None,
        *,
        target: TargetKind,
    ) -> None:
        self._profiles = profiles
        self._target = target
        self._executor = executor
        self._run_dir = run_dir
        self._nursery = nursery
        self._open: dict[str, AgentRunner] = {}
        self._lock = trio.Lock()

    async def get(self, profile: str) -> AgentRunner:
        """The runner of `profile`, opened on first use (its start-up errors raise here)."""
        runner = self._open.get(profile)
        if runner is not None:  # no checkpoint on the hot path: it would split commit batches
            return runner
        async with self._lock:
            if profile not in self._open:
                self._open[profile] = await self._nursery.start(self._keep, profile)
        return self._open[profile]

    async def _keep(self, profile: str, *, task_status: trio.TaskStatus[AgentRunner]) -> None:
        runner = registry.create(
            self._profiles[profile], run_dir=self._run_dir, target=self._target, executor=self._executor
        )
        if not isinstance(runner, AbstractAsyncContextManager):
            task_status.started(runner)
            await trio.sleep_forever()
        async with runner:
            task_status.started(runner)
            await trio.sleep_forever()
