"""The runners' name for `benchtui.core.reaper` (killing a process tree for sure, without cgroups),
which core's bounded runs use too."""

from benchtui.core.reaper import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    descendants,
    is_alive,
    kill_tree,
    prctl,
    state,
)

__all__ = [
    "PR_SET_CHILD_SUBREAPER",
    "PR_SET_PDEATHSIG",
    "descendants",
    "is_alive",
    "kill_tree",
    "prctl",
    "state",
]
