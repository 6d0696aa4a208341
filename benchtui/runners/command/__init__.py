"""The `command` runner: any agent CLI, sandboxed, calling its model through the metering gateway."""

from benchtui.runners.command.runner import CommandRunner

__all__ = ["CommandRunner"]
