"""A session copy on a filesystem of its own: the kernel bounds its disk, and it names nothing.

Polling the copy's size (a walk every 5 s) let an agent `fallocate` 1.5 GiB between two polls
with a bound of 1,024 MB. Here the copy is an ext4 filesystem in a sparse image file beside it
(`<workdir>.img`, outside the agent's reach), loop-mounted at the workdir and sized so that, once
the copy is in, exactly about `free_bytes` are left: a write past it fails with ENOSPC, as on a
full disk, and the host disk the image takes never passes the copy plus `free_bytes` plus the
filesystem's own blocks. Being a filesystem of its own, it also shows the sandbox's mount table
`/` on a loop device, not the host path of the session's folder (which names the model).

Mounting needs root, `mkfs.ext4` and loop devices (`unavailable` says which is missing; the
runners then poll as before and say so at start). `BENCHTUI_COPY_VOLUME=0` opts out.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

IMAGE_SUFFIX = ".img"
BLOCK = 4096
INODE_BYTES = 256
BYTES_PER_INODE = 16384
"""mke2fs's default ratio; the copy's own files count twice on top (a checkout of many small files)."""
GROUP_BYTES = 128 << 20
"""An ext4 block group: each costs two bitmap blocks and a descriptor."""
SLACK = 1 << 20
"""How much more than asked a made filesystem may have free."""
MAKES = 4
TIMEOUT_S = 60.0
MOUNT_OPTIONS = "loop,nosuid,nodev,noatime,noinit_itable"
# noinit_itable: the kernel does not zero the lazily made inode tables in the background (they
# would cost the host ~16 MB of real disk per GiB of image for nothing).


class VolumeError(Exception):
    """The copy's filesystem could not be made or mounted (one line)."""


def image_of(workdir: Path) -> Path:
    return workdir.with_name(workdir.name + IMAGE_SUFFIX)


@functools.cache
def unavailable() -> str:
    """ "" when session copies can be mounted here, else why not (one line). Probed once per
    process by making, mounting and removing a tiny volume."""
    if os.environ.get("BENCHTUI_COPY_VOLUME") == "0":
        return "BENCHTUI_COPY_VOLUME=0"
    if os.geteuid() != 0:
        return "not root (mounting a filesystem needs root)"
    missing = [tool for tool in ("mkfs.ext4", "mount", "umount") if _tool(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found (apt install e2fsprogs mount)"
    with tempfile.TemporaryDirectory(prefix="benchtui-probe-") as folder:
        probe = Path(folder) / "copy"
        try:
            create(probe, 0, 1, 1 << 20)
        except VolumeError as exc:
            return str(exc)
        finally:
            release(probe)
    return ""


def create(workdir: Path, copy_bytes: int, copy_files: int, free_bytes: int) -> None:
    """An empty ext4 mounted at `workdir` (made, or emptied: a copy an attempt before left), its
    image beside it, with room for a copy of `copy_bytes` in `copy_files` entries and then
    `free_bytes` more. VolumeError when it cannot be made."""
    release(workdir)
    if workdir.is_dir() and not workdir.is_symlink():
        shutil.rmtree(workdir)  # a plain copy of an attempt that did not mount (fd-based: no link followed)
    workdir.mkdir(parents=True, exist_ok=True)
    image = image_of(workdir)
    need = _round(copy_bytes) + _round(free_bytes)
    inodes = max(2 * copy_files + 1024, need // BYTES_PER_INODE)
    size = need + inodes * INODE_BYTES + (need // GROUP_BYTES + 1) * 3 * BLOCK
    for _ in range(MAKES):  # the metadata's size is read from the made filesystem, then corrected
        have = _make(image, size, inodes)
        if need <= have <= need + SLACK:
            break
        size += _round(need - have) + (BLOCK if have < need else 0)
    if have < need:
        raise VolumeError(f"mkfs.ext4 left {have:,} bytes free, not {need:,}")
    _run(["mount", "-t", "ext4", "-o", MOUNT_OPTIONS, str(image), str(workdir)], "mount")
    with contextlib.suppress(OSError):
        (workdir / "lost+found").rmdir()  # not part of the copy


def _make(image: Path, size: int, inodes: int) -> int:
    """Make the filesystem in `image` (sparse: the host pays for what is written); its free bytes."""
    fd = os.open(image, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.ftruncate(fd, 0)
        os.ftruncate(fd, size)
        owner = f"{os.getuid()}:{os.getgid()}"
        make = ["mkfs.ext4", "-q", "-F", "-b", str(BLOCK), "-I", str(INODE_BYTES), "-N", str(inodes)]
        make += [
            "-m",
            "0",
            "-O",
            "^has_journal,^resize_inode",
            "-E",
            f"lazy_itable_init=1,root_owner={owner}",
        ]
        _run([*make, str(image)], "mkfs.ext4")
        superblock = os.pread(fd, 1024, 1024)
    finally:
        os.close(fd)
    # s_free_blocks_count: its low half at 12, its high half at 0x158 (64-bit filesystems). The
    # kernel keeps 2% of the blocks (at most 4,096) for its own metadata: not for any writer.
    free = (
        int.from_bytes(superblock[12:16], "little") | int.from_bytes(superblock[0x158:0x15C], "little") << 32
    )
    return (free - min(size // BLOCK // 50, 4096)) * BLOCK


def free_bytes(workdir: Path) -> int:
    """What the filesystem at `workdir` has left for its writers."""
    found = os.statvfs(workdir)
    return found.f_bavail * found.f_frsize


def mounted(workdir: Path) -> bool:
    return str(_real(workdir)) in mount_points()


def _real(path: Path) -> Path:
    """`path` with its parent's links resolved, not its own (mount points are listed resolved)."""
    path = path.absolute()
    return Path(os.path.realpath(path.parent)) / path.name


def release(workdir: Path) -> None:
    """Unmount `workdir` if a volume is mounted there (lazily when still busy) and remove its
    image. Nothing is walked: what the agent left goes with the filesystem."""
    if mounted(workdir):
        done = subprocess.run(
            [_tool("umount") or "umount", str(workdir)], capture_output=True, timeout=TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            subprocess.run(
                [_tool("umount") or "umount", "-l", str(workdir)],
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
            )
    with contextlib.suppress(FileNotFoundError):
        image_of(workdir).unlink()


def remove(workdir: Path, *, keep: bool = False) -> None:
    """The session's copy gone: its volume released, or its folder removed (`shutil.rmtree`
    opens each folder relative to its parent without following links: no link or swapped folder
    takes it outside). `keep`: a volume's content is first copied out to a plain folder at
    `workdir` (`cp -a`: links copied as links, FIFOs made anew, nothing read through them; the
    agent's processes are gone by now)."""
    if not mounted(workdir):
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    kept = workdir.with_name(workdir.name + ".kept")
    if keep:
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir()
        subprocess.run(["cp", "-a", "--", f"{workdir}/.", str(kept)], capture_output=True, check=False)
    release(workdir)
    with contextlib.suppress(OSError):
        workdir.rmdir()
    if keep:
        kept.rename(workdir)


def sweep(root: Path) -> list[Path]:
    """Release every volume mounted under `root` (those a SIGKILLed engine or node left)."""
    prefix = os.path.realpath(root).rstrip("/") + "/"
    found = [Path(point) for point in mount_points() if point.startswith(prefix)]
    for point in sorted(found, key=lambda p: len(p.parts), reverse=True):
        if image_of(point).is_file():
            release(point)
    return found


def mount_points() -> list[str]:
    """The mount points of this mount namespace (`/proc/self/mountinfo`, escapes undone)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return [_unescape(line.split(" ")[4]) for line in lines if line.count(" ") >= 5]


def _unescape(field: str) -> str:
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def _round(n: int) -> int:
    return -(-n // BLOCK) * BLOCK


def _tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            [_tool(argv[0]) or argv[0], *argv[1:]], capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VolumeError(f"{what}: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()
        raise VolumeError(f"{what} failed: {said[-1][:300]}")
