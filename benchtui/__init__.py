"""benchtui: fair, budgeted, resumable agent-benchmark campaigns."""

__version__ = "0.1.0"
