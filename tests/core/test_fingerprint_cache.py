"""A plain-directory target is not read again while no file changed; any change is seen."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchtui.core import workspace
from benchtui.core.workspace import HashStats, content_hash
from benchtui.engine import campaign as campaign_mod
from benchtui.engine import preflight


@pytest.fixture
def target(tmp_path: Path) -> Path:
    root = tmp_path / "target"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n")
    (root / "b.txt").write_text("bee\n")
    (root / "link").symlink_to("b.txt")
    return root


@pytest.fixture
def not_racy(monkeypatch):
    monkeypatch.setattr(workspace, "RACY_S", 0.0)


def hashed(root: Path, cache: Path | None) -> tuple[str, HashStats]:
    stats = HashStats()
    return content_hash(root, cache=cache, stats=stats), stats


def test_an_unchanged_target_is_not_read_again_and_hashes_the_same(target, tmp_path, not_racy):
    plain, _ = hashed(target, None)
    first, cold = hashed(target, tmp_path / "cache")
    second, warm = hashed(target, tmp_path / "cache")
    assert plain == first == second
    assert cold.read_bytes == len("print('a')\n") + len("bee\n") and warm.read_bytes == 0
    assert warm.files == cold.files == 3 and warm.bytes == cold.bytes


def test_a_same_size_rewrite_with_its_old_mtime_put_back_is_seen(target, tmp_path, not_racy):
    before, _ = hashed(target, tmp_path / "cache")
    file = target / "b.txt"
    old = file.stat()
    file.write_text("BEE\n")  # same size
    os.utime(file, ns=(old.st_atime_ns, old.st_mtime_ns))  # mtime restored; ctime cannot be
    after, stats = hashed(target, tmp_path / "cache")
    assert after != before and stats.read_bytes > 0
    assert after == hashed(target, None)[0]


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "src" / "new.py").write_text(""),
        lambda t: (t / "b.txt").unlink(),
        lambda t: (t / "src" / "a.py").rename(t / "src" / "z.py"),
        lambda t: ((t / "link").unlink(), (t / "link").symlink_to("src")),
    ],
    ids=["added", "removed", "renamed", "relinked"],
)
def test_every_kind_of_change_is_seen(target, tmp_path, not_racy, change):
    before, _ = hashed(target, tmp_path / "cache")
    change(target)
    assert hashed(target, tmp_path / "cache")[0] == hashed(target, None)[0] != before


def test_files_changed_just_now_are_never_cached(target, tmp_path):
    """Within RACY_S of a change a coarse-mtime filesystem could give a rewrite the same stat."""
    hashed(target, tmp_path / "cache")
    _, again = hashed(target, tmp_path / "cache")
    assert again.read_bytes > 0
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    "garbage",
    [b"not json", b'{"listing": 1}', b"[" * 5000, b"x" * 100_000, "fifo"],
    ids=["text", "wrong-type", "deep", "huge", "fifo"],
)
def test_a_broken_cache_is_ignored_not_trusted(target, tmp_path, not_racy, garbage):
    cache = tmp_path / "cache"
    truth, _ = hashed(target, cache)
    [slot] = cache.iterdir()
    slot.unlink()
    if garbage == "fifo":
        os.mkfifo(slot)  # reading it must not block
    else:
        slot.write_bytes(garbage)
    assert hashed(target, cache) == (truth, hashed(target, None)[1])


def test_a_cache_that_cannot_be_written_is_only_skipped(target, tmp_path, not_racy):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    assert hashed(target, blocker / "cache")[0] == hashed(target, None)[0]


def test_the_cached_hash_is_the_fingerprint_a_session_copy_gets(target, tmp_path, not_racy):
    cache = tmp_path / "cache"
    workspace.fingerprint(target, cache=cache)
    warm = workspace.fingerprint(target, cache=cache)
    copy = workspace.make_session_copy(target, tmp_path / "copy")
    assert warm == workspace.fingerprint(copy)


def fake_campaign(tmp_path: Path, target: Path) -> campaign_mod.Campaign:
    path = tmp_path / "c.toml"
    path.write_text(
        'name = "c"\nsessions_per_model = 1\nrunner = "fake"\n[budget]\ntotal_usd = 1\n'
        '[runners.fake]\nkind = "fake"\n[[models]]\nname = "m/a"\ninput_usd_per_mtok = 1\n'
        f'output_usd_per_mtok = 1\n[environment]\npath = "{target}"\n'
    )
    return campaign_mod.load(path)


def test_a_huge_target_is_named_at_start(target, tmp_path, monkeypatch):
    campaign = fake_campaign(tmp_path, target)
    assert not [
        n
        for n in preflight.at_start(
            campaign, campaign.profiles[campaign.runner], campaign.make_target()
        ).notes
        if "is large" in n
    ]
    monkeypatch.setattr(preflight, "HUGE_FILES", 2)
    [note] = [
        n
        for n in preflight.at_start(
            campaign, campaign.profiles[campaign.runner], campaign.make_target()
        ).notes
        if "is large" in n
    ]
    assert "3 files" in note and "copied whole into every session" in note
