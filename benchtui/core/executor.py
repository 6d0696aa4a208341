"""Where a session's agent process runs: the campaign's `[executor]` table.

`kind = "local"` (the default) runs agents on this machine, as before. `kind = "ray"` runs each
attempt's agent as a Ray task on a node of an existing cluster; the engine (launch loop, ledger,
journal, meter, gateway) stays on this machine. This module imports no Ray: `ray_cluster` does,
and only a runner opened with `kind = "ray"` imports it.

Not part of the campaign identity: where a session ran changes neither its prompt, nor its
budget, nor its environment (each node checks its copy of the target against the fingerprint
before the agent starts), so `--resume` may move a campaign to another cluster or back home.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

KINDS = ("local", "ray")


class ExecutorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    kind: Literal["local", "ray"] = "local"
    """`local`: this machine; `ray`: a task per attempt on a running Ray cluster."""
    address: str | None = None
    """The cluster's address (`host:port` of its head, as `ray start --head --port` printed it)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """Ray custom resources each attempt asks for (e.g. `{ node_b = 0.01 }` pins to that node)."""
    num_cpus: float = Field(default=1.0, ge=0, le=1024)
    """Cores each attempt holds on its node (an agent's sandbox is CPU-bound); 0 packs freely."""
    spread: bool = False
    """Spread attempts over the nodes (Ray's SPREAD strategy) instead of packing them."""
    gateway_host: str | None = None
    """The address of this machine the nodes reach the metering gateway at (default: this
    machine's address as the Ray cluster sees it)."""

    @field_validator("resources")
    @classmethod
    def _positive(cls, value: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, v in value.items() if not v > 0 or k in ("CPU", "GPU"))
        if bad:
            raise ValueError(f"resources {', '.join(bad)}: give positive custom resources (cores: num_cpus)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExecutorConfig:
        if self.kind == "ray" and not self.address:
            raise ValueError('kind = "ray" needs the cluster\'s address (e.g. address = "10.0.0.1:6379")')
        if self.kind == "local" and (self.address or self.resources or self.gateway_host):
            raise ValueError('address, resources and gateway_host are for kind = "ray"')
        return self

    @property
    def remote(self) -> bool:
        return self.kind != "local"
