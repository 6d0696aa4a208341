"""The observation policy: what every model sees of a command's output."""

from __future__ import annotations

import os
import stat

from benchtui.runners.kit import observation as policy


def test_escape_sequences_and_control_characters_never_reach_the_model():
    text = "\x1b[31mred\x1b[0m \x1b]0;title\x07ok\x1b(B \x9b1mbold\x07\x00\nprogress 10%\rprogress 100%\n"
    shown = policy.shape(text, 1000).text
    assert shown == "red ok bold\nprogress 100%\n"  # a carriage return: what the line finally showed
    assert not any(ord(c) < 32 and c not in "\n\t" for c in shown)


C1 = "".join(map(chr, range(0x80, 0xA0)))
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_c1_and_bidi_controls_never_reach_the_model_but_tabs_and_newlines_do():
    # Before: only C0 and DEL went; U+0080-U+009F (8-bit escapes) and bidi overrides reached the model.
    text = f"a{C1}b\tc\n\td{BIDI}e\x7f\x00\x07\n"
    assert policy.shape(text, 1000).text == "ab\tc\n\tde\n"
    cut = policy.shape("\n".join(f"{C1}row\t{i}{BIDI}" for i in range(5000)), 500)
    assert cut.cut and not set(cut.text) & set(C1 + BIDI) and "row\t4999" in cut.text


def test_repeated_lines_collapse_to_one_and_a_count():
    shown = policy.shape("start\n" + "warning: same\n" * 500 + "end\n", 1000)
    assert shown.text.count("warning: same") == 1 and "repeated 499 more times" in shown.text
    assert shown.cut and "end" in shown.text


def test_diagnostic_lines_survive_the_cut_with_their_line_numbers():
    lines = [f"compiling unit {i}" for i in range(3000)]
    lines[1500] = "thread 'main' panicked at src/rules/x.rs:10"
    lines[2100] = "Error: the reduction FAILED"
    view = policy.shape("\n".join(lines), 2000)
    assert (
        "line 1501: thread 'main' panicked" in view.text
        and "line 2101: Error: the reduction FAILED" in view.text
    )
    assert "compiling unit 0" in view.text and "compiling unit 2999" in view.text
    assert "compiling unit 1500" not in view.text
    assert len(view.text) < 2000 + 300


def test_the_marker_says_what_was_cut_and_where_the_full_output_is(tmp_path):
    text = "\n".join(f"row {i}" for i in range(10_000))
    view = policy.shape(text, 500, policy.SavedOutputs(tmp_path, "/workspace"), "action-1.txt")
    assert "cut here; the full output is in /workspace/.benchtui-outputs/action-1.txt" in view.text
    saved = tmp_path / policy.SAVED_DIR / "action-1.txt"
    assert saved.read_text() == text
    assert not os.stat(saved).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def test_the_saved_output_is_bounded_and_never_follows_a_planted_link(tmp_path):
    huge = "y" * (3 * policy.MAX_SAVED)
    outputs = policy.SavedOutputs(tmp_path, "/workspace")
    view = policy.shape(huge, 100, outputs, "a.txt")
    assert (tmp_path / policy.SAVED_DIR / "a.txt").stat().st_size < policy.MAX_SAVED + 200
    (tmp_path / policy.SAVED_DIR / "b.txt").symlink_to(tmp_path / "victim")  # planted where it goes
    view = policy.shape(huge, 100, outputs, "b.txt")
    assert not (tmp_path / "victim").exists() and view.saved == "" and view.cut
    assert "the full output was not saved (.benchtui-outputs/b.txt: already there" in view.text


def test_short_output_is_shown_as_it_is():
    assert policy.shape("a\nb\n", 100).text == "a\nb\n"
    assert not policy.shape("a\nb\n", 100).cut


def test_one_long_line_keeps_a_head_and_a_tail():
    view = policy.shape("h" * 100 + "m" * 10_000 + "t" * 100, 400)
    assert view.text.startswith("h" * 100) and view.text.endswith("t" * 100)
    assert "9,800 of 10,200 characters cut here" in view.text
