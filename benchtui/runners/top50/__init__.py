"""The `top50` runner kind: one session is one whole run of the benchmark's own runner
(`python -m benchmark.run_top50`, CodingThrust/problem-reductions-benchmark) for one model, its
model calls through the metering gateway, its outcome read from its `submission.json`."""

from benchtui.runners.top50.runner import Top50Runner

__all__ = ["Top50Runner"]
