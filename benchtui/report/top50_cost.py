"""What one Top50 run can cost, before it runs (`benchtui check` on a top50 campaign): its worst
case at each model's prices, and the typical cost of the runs the state dir already holds.

The worst case follows from the benchmark's contract (its `top50_budget.py`, runner 0.11.0):
triage makes at most 8 model generations, each of the 50 episodes at most 10, so a run makes at
most 508 billed generations, each asking for the runner's fixed `max_tokens` 8192. Their input
grows: a generation sees the phase's prompt and every answer and observation before it in that
phase (each phase starts afresh). Assumed here, and said beside the figure: the triage prompt is
at most 12,000 tokens (its system template and the rule inventory, ~11 KB at 672b214), an
episode's at most 4,000, an observation at most 10,200 (its 10,000-character preview and the
budget header), a token per character at most. With retries (`num_retries` 2) a generation is up
to 3 requests; a failed request is not billed by providers, and the gateway's hold covers any
that is, call by call, so the money cap holds whatever this estimate says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from statistics import median

from benchtui.core.errors import BadInput
from benchtui.core.money import MTOK, fmt, usd
from benchtui.core.submission import Usage
from benchtui.report import top50_runs

TRIAGE_GENERATIONS = 8
EPISODES = 50
EPISODE_GENERATIONS = 10
MAX_TOKENS = 8192
REQUESTS_PER_GENERATION = 3
"""The first try and `num_retries` 2."""
TRIAGE_PROMPT_TOKENS = 12_000
EPISODE_PROMPT_TOKENS = 4_000
OBSERVATION_TOKENS = 10_200


@dataclass(frozen=True, slots=True)
class Worst:
    generations: int
    input_tokens: int
    output_tokens: int

    def usd(self, input_usd_per_mtok: Decimal, output_usd_per_mtok: Decimal) -> Decimal:
        return usd((self.input_tokens * input_usd_per_mtok + self.output_tokens * output_usd_per_mtok) / MTOK)


def phase_input(generations: int, prompt: int) -> int:
    """Input tokens of a phase's generations at most: the g-th sees the prompt and g-1 answers and
    observations."""
    step = MAX_TOKENS + OBSERVATION_TOKENS
    return generations * prompt + step * generations * (generations - 1) // 2


def worst_case() -> Worst:
    generations = TRIAGE_GENERATIONS + EPISODES * EPISODE_GENERATIONS
    tokens_in = phase_input(TRIAGE_GENERATIONS, TRIAGE_PROMPT_TOKENS) + EPISODES * phase_input(
        EPISODE_GENERATIONS, EPISODE_PROMPT_TOKENS
    )
    return Worst(generations, tokens_in, generations * MAX_TOKENS)


ASSUMPTION = (
    f"a run: at most {TRIAGE_GENERATIONS} triage + {EPISODES} × {EPISODE_GENERATIONS} episode generations "
    f"(the benchmark's contract), each asking {MAX_TOKENS} output tokens, its input growing within a phase "
    f"by each answer and observation (≤ {OBSERVATION_TOKENS:,} tokens) from a prompt of ≤ "
    f"{TRIAGE_PROMPT_TOKENS:,} (triage) / {EPISODE_PROMPT_TOKENS:,} (episode) tokens; up to "
    f"{REQUESTS_PER_GENERATION} requests a generation with retries, each held by the gateway"
)


def priced(usage: Usage, input_usd_per_mtok: Decimal, output_usd_per_mtok: Decimal) -> Decimal:
    """A run's usage at these prices (cache reads and writes at the input price: an upper bound)."""
    tokens_in = usage.input + usage.cache_read + usage.cache_write
    return usd((tokens_in * input_usd_per_mtok + usage.output * output_usd_per_mtok) / MTOK)


@dataclass(frozen=True, slots=True)
class Typical:
    runs: int
    median_usd: Decimal
    highest_usd: Decimal


def earlier_runs(state_dir: Path) -> list[top50_runs.Top50Run]:
    """The finished Top50 runs of every run dir in the state dir (one that cannot be read is
    passed over: it is no input of this check)."""
    found: list[top50_runs.Top50Run] = []
    try:
        folders = sorted(
            p for p in state_dir.iterdir() if (p / "campaign.toml").is_file() and not p.is_symlink()
        )
    except OSError:
        return []
    for folder in folders:
        try:
            found += [r for r in top50_runs.read([folder]).runs if r.finished]
        except (BadInput, OSError, ValueError):
            continue
    return found


def typical(
    runs: Iterable[top50_runs.Top50Run], model: str, input_usd: Decimal, output_usd: Decimal
) -> Typical | None:
    once = {r.sha256: r for r in runs if r.model == model}
    costs = sorted(priced(r.sub.usage, input_usd, output_usd) for r in once.values())
    if not costs:
        return None
    return Typical(len(costs), usd(Decimal(median(costs))), costs[-1])


def lines(models: list[tuple[str, Decimal, Decimal]], per_session_usd: Decimal, state_dir: Path) -> list[str]:
    """The preview `benchtui check` prints: per model (name, input and output $ per Mtok)."""
    worst = worst_case()
    earlier = earlier_runs(state_dir)
    out = ["", f"{'a Top50 run':<40}{'worst case':>12}{'typical':>12}   (earlier runs in {state_dir})"]
    for name, price_in, price_out in models:
        seen = typical(earlier, name, price_in, price_out)
        usual = (
            f"{fmt(seen.median_usd)} (median of {seen.runs}, highest {fmt(seen.highest_usd)})"
            if seen
            else "no run yet"
        )
        out.append(f"{name:<40}{fmt(worst.usd(price_in, price_out)):>12}   {usual}")
        if worst.usd(price_in, price_out) > per_session_usd:
            out.append(
                f"  {name}: per_session_usd {fmt(per_session_usd)} is below its worst case: a run that "
                "reaches it is cut (its next call refused at the gateway) and runs again as a new attempt on --resume"
            )
    out.append(
        f"worst case: {worst.generations} generations, {worst.input_tokens:,} input and {worst.output_tokens:,} "
        f"output tokens; assumed: {ASSUMPTION}"
    )
    return out
