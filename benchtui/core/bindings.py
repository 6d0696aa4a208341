"""The TUI's key bindings by id: what a campaign's `[ui.keys]` table may remap.

Kept free of Textual so the campaign file can be checked without it; a test checks that these
are exactly the ids of the screens' bindings.
"""

from __future__ import annotations

BINDING_IDS = (
    # the main screen
    "pause",
    "resume",
    "kill",
    "change_runner",
    "parallelism_up",
    "parallelism_down",
    "summary",
    "quit",
    "help",
    # the sessions table
    "sessions_up",
    "sessions_down",
    "sessions_page_up",
    "sessions_page_down",
    "sessions_first",
    "sessions_last",
    "sessions_open",
    # a session's story
    "session_back",
    "session_next_page",
    "session_first_page",
    # the dialogs
    "quit_now",
    "quit_finish",
    "quit_cancel",
    "runner_cancel",
    "summary_close",
    "summary_quit",
    "help_close",
)
