"""The default real runner, `kind = "mini-swe-agent"`: a mini-swe-agent bug-hunting session.

Modules: `profile` (the `[runners.*]` table, templates), `runner` (the engine's side, Trio),
`forkserver`/`zygote` (a pre-warmed process forking one worker per session), `worker` (the
agent, in the child), `protocol` (their channel), `outcome` (certificates → verdicts), `sandbox`
(local / bubblewrap), `reaper` (kill a process tree for sure), `keys` (API keys, never written).

Importing this package imports neither litellm nor mini-swe-agent: only the worker does.
"""

from benchtui.runners.mini.profile import MiniSweProfile
from benchtui.runners.mini.runner import MiniSweRunner

__all__ = ["MiniSweProfile", "MiniSweRunner"]
