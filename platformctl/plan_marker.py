"""The plan directory's marker: the mark that the directory may be replaced, and the record of
the stack file the plan was rendered from (its path and sha256), so `policy --plan` and `diff`
read the settings of that file rather than whatever file the stack's name points to now."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .errors import UsageError

MARKER = ".platformctl-plan"
# The flag that accepts a recorded stack file edited since the plan was made.
CHANGED_FLAG = "--allow-changed-stack-file"


class StackFileChanged(UsageError):
    pass


@dataclass(frozen=True)
class StackFileRecord:
    path: Path
    sha256: str
    at: Optional[str] = None  # `REV (commit SHA)` of a plan of a commit


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def marker_text(stack: str, stack_file: Optional[Path], recorded_as: Optional[Path] = None,
                at: Optional[str] = None) -> str:
    """JSON: the stack, and the stack file's absolute path (recorded_as, where the file will be
    read from, if not where it is now) and sha256 (absent for plans not rendered from a file);
    `at`: the commit whose code and stack file the plan was rendered from (`plan --at`)."""
    record: dict[str, str] = {"plan": f"plan of stack {stack} by python -m platformctl; replaced by the next plan",
                              "stack": stack}
    if stack_file is not None:
        record.update(stackFile=str((recorded_as or stack_file).resolve()), stackFileSha256=file_sha256(stack_file))
    if at is not None:
        record.update(at=at)
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def recorded_stack_file(plan_path: Path) -> Optional[StackFileRecord]:
    """The stack file a plan directory (or its resources.json) records; None for plans written
    before the marker recorded it."""
    directory = plan_path if plan_path.is_dir() else plan_path.parent
    try:
        record = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return None  # no marker, or an earlier plain-text one
    if not isinstance(record, dict) or not isinstance(record.get("stackFile"), str) or not isinstance(record.get("stackFileSha256"), str):
        return None
    at = record.get("at")
    return StackFileRecord(Path(record["stackFile"]), record["stackFileSha256"], at if isinstance(at, str) else None)


def checked_stack_file(plan_path: Path, allow_changed: bool) -> Optional[Path]:
    """The recorded stack file, refused (StackFileChanged) when it is gone or its content changed
    since the plan was written, unless allow_changed."""
    record = recorded_stack_file(plan_path)
    if record is None:
        return None
    if not record.path.is_file():
        raise StackFileChanged(f"plan {plan_path}: its stack file {record.path} no longer exists; plan the stack again")
    if not allow_changed and file_sha256(record.path) != record.sha256:
        raise StackFileChanged(f"plan {plan_path}: its stack file {record.path} changed since the plan was written "
                               f"(sha256 differs); plan again, or pass {CHANGED_FLAG} to use the file as it is now")
    return record.path
