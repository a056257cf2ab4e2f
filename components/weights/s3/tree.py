"""The local model repository: listed and hashed completely and safely, or refused with the reason.

Deletions in the bucket are computed from the listing, so nothing is skipped silently; files
are opened so that a FIFO or device cannot block or feed the upload, and a file that changes
while it is read is read again once. Files the program generates from the source (tuning
presets' config variants) are checked against the listing here too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from inference_platform.weights.s3.client import S3Error

# Generated files are tuning presets' config variants: `<model>/configs/<preset>.pbtxt`, where
# Triton's --model-config-name looks for them.
GENERATED_KEY = re.compile(r"[^/]+/configs/[^/]+\.pbtxt")
READ_CHUNK = 8 * 1024 * 1024


class SourceError(S3Error):
    """The local model repository cannot be read as a whole (or changed while it was read or sent)."""


@dataclass(frozen=True)
class LocalFile:
    rel: str  # path below the source, with "/": the key below the prefix
    path: Path
    stat: os.stat_result  # of the file itself: a symlink is followed


@dataclass(frozen=True)
class GeneratedFile:
    """A file the program rendered (a tuning preset's config variant), uploaded beside the source's files."""

    rel: str
    body: bytes

    @property
    def entry(self) -> dict[str, Any]:
        """Its manifest entry: content only, as it has no times of its own."""
        return {"sha256": hashlib.sha256(self.body).hexdigest(), "size": len(self.body),
                "md5": hashlib.md5(self.body, usedforsecurity=False).hexdigest()}


def file_identity(st: os.stat_result) -> tuple[int, ...]:
    # Every write, rename or utime sets ctime, which no user can set back: an unchanged identity is an unchanged file.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def stat_fields(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}


def _shown(path: Any) -> str:
    # A file name that is not UTF-8 must still print.
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _unreadable(action: str, path: Any, err: OSError) -> SourceError:
    return SourceError(f"weight upload: cannot {action} {_shown(path)} ({err.strerror or err})")


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _not_a_file(path: Any, mode: int) -> SourceError:
    return SourceError(f"weight upload: {_shown(path)} is {_kind(mode)}; only regular files are uploaded, remove it from the source")


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except OSError as err:
        raise _unreadable("list directory", directory, err) from None


def _relative_key(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(f"weight upload: the name of {_shown(path)} is not UTF-8, so it cannot be an S3 key; rename it") from None
    return rel


def refuse_broken_configs(source: str) -> None:
    """A model repository whose config.pbtxt Triton would refuse is not uploaded at all."""
    from inference_platform.serving.model_config import broken_repository_configs

    broken = broken_repository_configs(source)
    if broken:
        raise SourceError(f"weight upload source {source!r}: {broken[0]}"
                          + (f" (and {len(broken) - 1} more)" if len(broken) > 1 else "") + "; nothing was uploaded")


def generated_key_problem(rel: Any) -> Optional[str]:
    """Why `rel` cannot be the key of a generated file below the prefix, or None."""
    if not isinstance(rel, str) or not GENERATED_KEY.fullmatch(rel) or rel.split("/")[0] in (".", ".."):
        return f"generated file {rel!r} is not <model>/configs/<name>.pbtxt"
    return None


def generated_files(generated: dict[str, str], files: list[LocalFile]) -> list[GeneratedFile]:
    """The generated files, checked against the source listing, or SourceError: each is a config
    variant of a model the source holds (its `<model>/config.pbtxt`), no source file has its key,
    and Triton's model config parses it."""
    from inference_platform.serving.model_config import CONFIG_FILE, ModelConfigError, parse_model_config

    listed = {f.rel for f in files}
    found = []
    for rel, text in sorted(generated.items()):
        problem = generated_key_problem(rel)
        if problem:
            raise SourceError(f"weight upload: {problem}")
        model = rel.split("/")[0]
        if f"{model}/{CONFIG_FILE}" not in listed:
            raise SourceError(f"weight upload: generated {rel} is a variant of {model}/{CONFIG_FILE}, which the source "
                              "does not hold (the source changed since the plan?); run `pulumi up` again")
        if rel in listed:
            raise SourceError(f"weight upload: {rel} is both a file of the source and generated from a tuning preset; "
                              "remove it from the source or the preset from the upload")
        try:
            parse_model_config(text, f"generated {rel}")
        except ModelConfigError as err:
            raise SourceError(f"weight upload: {err}") from None
        found.append(GeneratedFile(rel, text.encode("utf-8")))
    return found


def local_files(source: str) -> list[LocalFile]:
    """Every file under `source`, sorted by relative path: the complete listing, or SourceError.

    Nothing is skipped silently, because deletions are computed from this listing: a
    directory that cannot be listed, a file that cannot be looked at or a name that is
    not UTF-8 fails it. Symlinks to files are followed wherever they point (a Hugging
    Face snapshot links every file into ../../blobs) and their content is uploaded;
    symlinks to directories are refused (a loop, or a whole other tree). FIFOs, sockets
    and devices are refused rather than read (reading a FIFO blocks forever).
    """
    root = Path(source).resolve()
    try:
        root_is_dir = stat.S_ISDIR(os.stat(root).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        root_is_dir = False
    except OSError as err:
        raise _unreadable("read the weight upload source", root, err) from None
    if not root_is_dir:
        raise SourceError(f"weight upload source {source!r} is not a directory (resolved to {root})")
    files, directories = [], [root]
    while directories:
        for entry in _entries(directories.pop()):
            path = Path(entry.path)
            try:
                link, st = entry.is_symlink(), os.stat(path)
            except OSError as err:
                raise _unreadable("read", path, err) from None
            if stat.S_ISDIR(st.st_mode):
                if link:
                    raise SourceError(f"weight upload: {_shown(path)} is a symlink to a directory, which is not followed; "
                                      "link the files one by one, or copy the directory")
                directories.append(path)
            elif stat.S_ISREG(st.st_mode):
                files.append(LocalFile(_relative_key(root, path), path, st))
            else:
                raise _not_a_file(path, st.st_mode)
    return sorted(files, key=lambda f: f.rel)


def fingerprint(source: str) -> str:
    """Cheap tree fingerprint from names, sizes and times (no file is read).

    It only tells Pulumi that something may have changed; the upload itself compares
    content hashes, so a fingerprint change with equal content uploads nothing. A tree
    that cannot be listed gets a fingerprint of its own, so the update runs and reports why.
    """
    if not Path(source).is_dir():
        return "missing"
    try:
        files = local_files(source)
    except SourceError:
        return "unreadable"
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.rel}\0{f.stat.st_size}\0{f.stat.st_mtime_ns}\0{f.stat.st_ctime_ns}\n".encode())
    return h.hexdigest()


@contextlib.contextmanager
def open_regular(path: Path):
    """The open file and its stat. O_NONBLOCK: a FIFO swapped in since the listing must not block the open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise _unreadable("read", path, err) from None
    with os.fdopen(fd, "rb") as f:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_a_file(path, st.st_mode)
            os.set_blocking(fd, True)
            yield f, st
        except OSError as err:
            raise _unreadable("read", path, err) from None


def changed_error(path: Path, doing: str) -> SourceError:
    return SourceError(f"weight upload: {_shown(path)} changed while it was {doing}, twice; "
                       "stop writing to it (or upload a finished copy) and run `pulumi up` again")


def hash_file(path: Path) -> tuple[str, os.stat_result]:
    """sha256 of a file and the stat it kept for the whole read (read again once if it changed meanwhile)."""
    for _ in range(2):
        with open_regular(path) as (f, before):
            h = hashlib.sha256()
            while chunk := f.read(READ_CHUNK):
                h.update(chunk)
            after = os.fstat(f.fileno())
        if file_identity(before) == file_identity(after):
            return h.hexdigest(), after
    raise changed_error(path, "read")
