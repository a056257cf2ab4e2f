"""Replace a file or a directory so that readers see the old or the new, never a mix.

New content is written beside the target (same parent directory, so the same file
system) under a hidden temporary name and renamed into place only when complete.
A failure or an interrupt removes the temporary copy and leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from pathlib import Path
from typing import Callable

# Each round either moves our copy in or finds that a concurrent writer did; a bound
# keeps a pathological race from spinning forever.
_ATTEMPTS = 100
# rename(2) refuses to replace a non-empty directory with one of these.
_TARGET_NOT_EMPTY = (errno.ENOTEMPTY, errno.EEXIST)


def _fresh_name(path: Path, suffix: str) -> Path:
    return path.parent / f".{path.name}.{secrets.token_hex(6)}{suffix}"


def _fresh_dir(path: Path, suffix: str) -> Path:
    """A new empty hidden directory beside path. Unlike mkdtemp (0700) its mode follows
    the umask, as any new directory's does."""
    for _ in range(_ATTEMPTS):
        tmp = _fresh_name(path, suffix)
        try:
            tmp.mkdir()
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def write_text(path: Path, text: str) -> None:
    """Replace a file's content atomically (keeping its permission bits)."""
    path = Path(path)
    tmp = _fresh_name(path, ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def replace_dir(target: Path, fill: Callable[[Path], None], check_replaceable: Callable[[Path], None]) -> Path:
    """Build a directory with `fill(tmp)` and move it to `target`.

    `check_replaceable(target)` raises when an existing target must not be replaced;
    it runs again right before each replacement, as another process may have written
    the target meanwhile. Concurrent calls for one target end with exactly one
    complete copy in place.
    """
    target = Path(os.path.abspath(target))
    if not target.name:
        raise IsADirectoryError(errno.EISDIR, "cannot replace a file system root", str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _fresh_dir(target, ".tmp")
    try:
        fill(tmp)
        _move_in(tmp, target, check_replaceable)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _move_in(new: Path, target: Path, check_replaceable: Callable[[Path], None]) -> None:
    for _ in range(_ATTEMPTS):
        try:
            os.rename(new, target)  # atomic when the target is absent or an empty directory
            return
        except OSError as err:
            if err.errno not in _TARGET_NOT_EMPTY:
                raise
        check_replaceable(target)
        # Move the old copy aside onto a reserved empty directory (rename replaces it),
        # move ours in, then delete the old one. A reader sees the old copy, then
        # briefly nothing, then ours: never a partial or mixed directory.
        old = _fresh_dir(target, ".old")
        try:
            os.rename(target, old)
        except FileNotFoundError:
            os.rmdir(old)
            continue  # a concurrent writer moved it aside first
        try:
            os.rename(new, target)
        except OSError as err:
            if err.errno in _TARGET_NOT_EMPTY:
                shutil.rmtree(old)  # a concurrent writer got in first; its copy supersedes the old one
                continue
            with contextlib.suppress(OSError):
                os.rename(old, target)  # put the previous copy back
            raise
        shutil.rmtree(old)
        return
    raise OSError(errno.EBUSY, f"gave up after {_ATTEMPTS} concurrent replacements", str(target))

