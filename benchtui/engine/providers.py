"""Per-provider limits: how many sessions may run at once, and one backoff after a 429.

A provider is where a model's calls go: its `api_base`, else the provider part of its litellm
name (`openai` of `openai/gpt-5`). Providers limit concurrent requests per key and per
organisation, so a campaign may cap the sessions of a model (`max_connections` of its
`[[models]]` entry) and of a provider across its models (`[providers."<api_base>"]
max_connections`). The scheduler starts a session only when both have room; a model at its
limit is passed over for now, keeping its place at the head of the queue (docs/design/invariants.md#f4).

A 429 from a provider slows every session of that provider, not only the one that got it: the
next call of any of them waits until the provider's backoff has passed (`Retry-After` when it
said one, else an exponential wait), so eight sessions do not each hammer a provider that asked
for a pause. The wait happens inside the meter's `authorise`, which every model call of every
runner goes through.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import trio

MAX_WAIT_S = 60.0
"""The longest backoff one 429 imposes (a larger Retry-After is cut to it)."""
BASE_WAIT_S = 1.0
"""The first wait after a 429 without Retry-After; it doubles for each 429 in a row."""


def provider_of(name: str, api_base: str | None) -> str:
    """The provider a model's calls go to: its `api_base` (without a trailing slash), else the
    provider part of its litellm name (`openai/gpt-5` -> `openai`)."""
    if api_base:
        return api_base.rstrip("/")
    return name.split("/", 1)[0] if "/" in name else name


@dataclass
class Backoff:
    """One provider's shared backoff: after a 429, none of its sessions calls it before `until`."""

    provider: str
    until: float = -math.inf
    """Trio time before which no call of this provider is authorised."""
    streak: int = 0
    """429s since the provider last served a call (the exponential wait doubles with each)."""
    answers: int = 0
    """429 answers in this run."""

    def throttled(self, retry_after_s: float | None) -> tuple[float, bool]:
        """A 429: every session of the provider waits until now + the wait (Retry-After when the
        provider gave one, else BASE_WAIT_S doubled for each 429 in a row; at most MAX_WAIT_S).
        Returns the wait and whether it started a new backoff (False: it extended a running one)."""
        self.answers += 1
        self.streak += 1
        if retry_after_s is not None and math.isfinite(retry_after_s) and retry_after_s >= 0:
            wait = min(retry_after_s, MAX_WAIT_S)
        else:
            wait = min(BASE_WAIT_S * 2 ** min(self.streak - 1, 16), MAX_WAIT_S)
        now = trio.current_time()
        started = self.until <= now
        self.until = max(self.until, now + wait)
        return wait, started

    def served(self) -> None:
        """The provider served a call: the next 429 starts the exponential wait afresh."""
        self.streak = 0

    def remaining(self) -> float:
        """Seconds until the provider may be called again (0: now)."""
        return max(self.until - trio.current_time(), 0.0)

    async def wait(self) -> float:
        """Return once the backoff has passed (at once, without a checkpoint, when there is
        none); the seconds waited. A 429 that comes meanwhile extends the wait."""
        waited = 0.0
        while (left := self.remaining()) > 0:
            started = trio.current_time()
            await trio.sleep(left)
            waited += trio.current_time() - started
        return waited


@dataclass
class Providers:
    """The connection limits of a campaign's models and providers, and each provider's backoff."""

    model_limits: dict[str, int | None]
    """Model name -> its `max_connections` (None: no limit of its own)."""
    provider_by_model: dict[str, str]
    """Model name -> its provider."""
    provider_limits: dict[str, int] = field(default_factory=dict)
    """Provider -> its `max_connections` across its models."""
    backoffs: dict[str, Backoff] = field(default_factory=dict)

    def backoff(self, model: str) -> Backoff:
        provider = self.provider_by_model[model]
        found = self.backoffs.get(provider)
        if found is None:
            found = self.backoffs[provider] = Backoff(provider)
        return found

    def can_start(self, model: str, running: Counter[str]) -> bool:
        """Whether one more session of `model` fits its limit and its provider's, with `running`
        sessions by model."""
        limit = self.model_limits.get(model)
        if limit is not None and running[model] >= limit:
            return False
        provider = self.provider_by_model.get(model)
        shared = self.provider_limits.get(provider) if provider is not None else None
        if shared is None:
            return True
        return sum(n for m, n in running.items() if self.provider_by_model.get(m) == provider) < shared

    @property
    def limited(self) -> bool:
        """Whether any limit is set (without one, every model can always start)."""
        return bool(self.provider_limits) or any(v is not None for v in self.model_limits.values())
