"""The `[runners.<name>]` table of kind "top50": where the benchmark's runner is, and how long one
run may take."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from benchtui.core.contract import ModelSpec, RunnerProfile

MAX_TOKENS = 8192
"""The benchmark's runner sends `max_tokens` 8192 on every generation (fixed, not settable)."""


class Top50Profile(RunnerProfile):
    path_keys: ClassVar[tuple[str, ...]] = ("benchmark",)

    kind: Literal["top50"] = "top50"
    """One session is one whole run of the benchmark's `python -m benchmark.run_top50`."""
    placement: Literal["checkout", "docker"] = "checkout"
    """`checkout`: the benchmark's checkout on this machine, the Docker image's baked state rebuilt
    per session in a private mount namespace (root, `unshare`); `docker`: its image, as its
    `make run` runs it."""
    benchmark: Path | None = None
    """placement `checkout`: the benchmark's checkout (the folder holding `benchmark/run_top50.py`)."""
    image: str = "problem-reductions-runner:v0.6.0"
    """placement `docker`: the benchmark's runner image."""
    docker: str = "docker"
    """placement `docker`: the Docker client."""
    python: str = ""
    """placement `checkout`: the interpreter that runs the benchmark (it needs mini-swe-agent and
    litellm; default: the one running benchtui). Its agent and oracle users must be able to run it."""
    pred: str = "pred"
    """placement `checkout`: the `pred` baked as the image bakes it (root:oracle, 0750, at
    /usr/local/libexec/prb/pred inside the session's namespace): a name on PATH or a path."""
    run_wall_time_s: float = Field(default=7200.0, gt=0, allow_inf_nan=False)
    """The outer watchdog of one run (written `wall_time_s` in the campaign): past it the run's
    whole process tree is killed, and the attempt ends as an infrastructure error (run again on
    `--resume` as a new attempt: a run is never resumed half-way)."""
    uid_base: int = Field(default=42000, ge=1000, le=2**31 - 4096)
    """placement `checkout`: per-session ids are taken from here up (agent, oracle, evidence: three
    per concurrent session, a slot locked on this machine while its run lasts)."""
    verify_timeout_s: float = Field(default=60.0, gt=0)
    """Each `pred` call of our own re-check of an accepted certificate."""
    api_key_env: str | None = None
    """Default for models without `api_key_env`: the variable holding the provider key (the
    gateway's; the benchmark's runner only ever sees a session token)."""
    request_timeout_s: float = Field(default=600.0, gt=0)
    """Limit of one call to the provider (the runner's own is 300 s)."""

    calls_model_api: ClassVar[bool] = True

    def key_variable(self, model: ModelSpec) -> str | None:
        return model.api_key_env or self.api_key_env

    @model_validator(mode="before")
    @classmethod
    def _watchdog(cls, data: Any) -> Any:
        """`wall_time_s` is this kind's own watchdog (the engine's would end a cut run as final)."""
        if isinstance(data, dict) and data.get("wall_time_s") is not None:
            data = dict(data)
            if data.get("run_wall_time_s") is not None:
                raise ValueError("set wall_time_s or run_wall_time_s, not both")
            data["run_wall_time_s"] = data.pop("wall_time_s")
        if (
            isinstance(data, dict)
            and data.get("placement", "checkout") == "checkout"
            and not data.get("benchmark")
        ):
            raise ValueError('placement "checkout" needs `benchmark`: the benchmark\'s checkout')
        return data
