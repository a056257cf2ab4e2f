"""`python -m tests.support.unchanged_tree CMD [ARGS...]`: run CMD, then fail (exit 1, one line per
path) if the working tree is not as CMD found it: `git status --porcelain` over tracked and
untracked files, and the content of every file it lists (so an edit of a file already modified
counts too). Ignored files (build/, caches, venvs) are not the tree's.

`make test` runs the suite under it: no test may write into the source tree, as other tests
collect from it (stacks/, docs/) while they run.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path


def snapshot(root: Path) -> dict[str, str]:
    """Path -> `XY status` and a digest of the file as it is (absent: no digest)."""
    out = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"], cwd=root,
                         check=True, capture_output=True).stdout.decode(errors="surrogateescape")
    state = {}
    entries = iter(out.split("\0"))
    for entry in entries:
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":
            next(entries, None)  # the rename's source follows
        file = root / path
        digest = hashlib.sha256(file.read_bytes()).hexdigest()[:16] if file.is_file() else "-"
        state[path] = f"{status} {digest}"
    return state


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return [f"{path}: {before.get(path, 'as committed')} -> {after.get(path, 'as committed')}"
            for path in sorted(before.keys() | after.keys()) if before.get(path) != after.get(path)]


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.support.unchanged_tree CMD [ARGS...]", file=sys.stderr)
        return 2
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True,
                               text=True).stdout.strip())
    before = snapshot(root)
    code = subprocess.run(argv, check=False).returncode
    changed = changes(before, snapshot(root))
    for line in changed:
        print(f"the source tree changed while {' '.join(argv)} ran: {line}", file=sys.stderr)
    return code or (1 if changed else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
