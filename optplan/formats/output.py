"""Output files: checked before any work starts, written so that no failure leaves a partial file.

``check_output`` runs before a solve (or an extraction, a model build, a plot): a missing
directory, a directory at the path or an extension the writer does not know would otherwise be
found only after minutes of solving, and the plan lost.

``atomic_output`` writes a new file beside the target and renames it over the target only once
it is complete and fsynced. On Linux the new file has no name until then (``O_TMPFILE``), so a
process killed mid-write (even by SIGKILL) leaves at most the old file (only a kill in the
microseconds between naming the finished file and the rename can leave a hidden ``.NAME.*.tmp``);
elsewhere such a hidden file is written instead and removed on every failure the process survives. A new file gets the
umask's permissions (0644 under umask 022); an overwritten one keeps its mode. A symlink at the
path is written through: its target is replaced and the link stays.

Outputs are regular files only: a path (or a symlink's target) that is a device, a FIFO, a
socket or a directory, or a symlink loop, is refused (as root, ``-o`` through a link to
``/dev/null`` would otherwise replace ``/dev/null``). ``check_output`` creates the new file the
write would create and drops it: permission bits say nothing to root, and ``/sys`` refuses new
files even to root.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from optplan.core.errors import FormatError

# what each command writes -> the extensions its writer knows (first: the one to suggest)
KINDS: dict[str, tuple[str, ...]] = {
    "plan": (".json", ".csv"),
    "problem": (".json", ".csv"),
    "model": (".lp", ".mps"),
    "picture": (".png", ".svg", ".pdf", ".html"),
}


def check_output(path: str | Path, kind: str, memories: int = 1, relative: bool = False) -> None:
    """Raise FormatError (one line) unless ``path`` can take a ``kind`` file; ``memories`` and
    ``relative`` describe the problem, since MiniMalloc CSV holds one memory and no relative placements."""
    p = Path(path)
    ext = p.suffix.lower()
    known = KINDS[kind]
    if ext not in known:
        raise FormatError(f"{path}: unknown {kind} extension {ext or '(none)'!r}; use {' or '.join(known)}")
    target = _target(p)
    parent = target.parent
    if not parent.is_dir():
        raise FormatError(f"{path}: directory {str(parent)!r} does not exist")
    fd, temp = _new_file(str(parent), target.name)  # what the write will do: refused now, not after the work
    os.close(fd)
    if temp is not None:
        os.unlink(temp)
    if ext == ".csv" and kind in ("plan", "problem") and (memories != 1 or relative):
        what = f"{memories} memories" if memories != 1 else "relative placements"
        raise FormatError(f"{path}: MiniMalloc CSV holds one memory without relative placements, "
                          f"but the problem has {what}; use .json")


def _target(path: Path) -> Path:
    """The file a write to ``path`` replaces: a symlink's final target (the link itself stays).
    FormatError unless that is a regular file or nothing yet: a write must never replace a
    device, a FIFO, a socket or a directory, nor follow a symlink loop."""
    try:
        mode = os.stat(path).st_mode  # (follows symlinks)
    except FileNotFoundError:
        mode = None  # a new file (or a symlink to one)
    except OSError as e:
        why = "a symlink loop" if e.errno == errno.ELOOP else e.strerror or str(e)
        raise FormatError(f"{path}: cannot write: {why}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        through = f" (through the symlink to {os.path.realpath(path)!r})" if path.is_symlink() else ""
        raise FormatError(f"{path}: is {kind}{through}; an output must be a regular file")
    return Path(os.path.realpath(path)) if path.is_symlink() else path


_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


def _mode(target: Path) -> int:
    """An overwritten file keeps its permission bits; a new one gets 0666 minus the umask."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic_output(path: str | Path) -> Iterator[str]:
    """Yield a file name to write the whole output to; it replaces ``path`` when the block ends
    without an exception and is gone otherwise (see the module docstring)."""
    target = _target(Path(path))
    parent = str(target.parent)
    fd, temp = _new_file(parent, target.name)
    name = temp or f"/proc/self/fd/{fd}"
    try:
        yield name
        os.fchmod(fd, _mode(target))
        os.fsync(fd)
        if temp is None:  # name the finished file, then move it over the target
            temp = _link(name, parent, target.name)
        os.replace(temp, target)
        temp = None
    except OSError as e:
        raise FormatError(f"{path}: cannot write: {e.strerror or e}") from None
    finally:
        os.close(fd)
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass


def _new_file(parent: str, name: str) -> tuple[int, str | None]:
    """An unnamed file in ``parent`` (fd, None) where the system has them, else (fd, temp name)."""
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(parent, os.O_TMPFILE | os.O_RDWR, 0o666), None
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise FormatError(f"{Path(parent) / name}: cannot write: {e.strerror or e}") from None
    try:
        fd, temp = tempfile.mkstemp(dir=parent, prefix=f".{name}.", suffix=".tmp")
    except OSError as e:
        raise FormatError(f"{Path(parent) / name}: cannot write: {e.strerror or e}") from None
    return fd, temp


def _link(proc_name: str, parent: str, name: str) -> str:
    """Give the unnamed file behind ``proc_name`` a fresh hidden name in ``parent``."""
    dir_fd = os.open(parent, os.O_RDONLY)
    try:
        while True:
            temp = os.path.join(parent, f".{name}.{secrets.token_hex(4)}.tmp")
            try:  # a dir fd makes os.link call linkat, which follows /proc/self/fd to the file
                os.link(proc_name, temp, src_dir_fd=dir_fd, follow_symlinks=True)
                return temp
            except FileExistsError:
                continue
    finally:
        os.close(dir_fd)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8, line ends as given) atomically."""
    with atomic_output(path) as name, open(name, "w", encoding="utf-8", newline="") as f:
        f.write(text)
