"""`platformctl plan STACK --at REV`: the plan of a commit, rendered with that commit's code and stack
file, for the old side of a day-2 diff.

The commit is checked out into a temporary git worktree and planned there by a Python process that
imports every package of the repository from the worktree (tree_run.py), not from the checkout the
venv's editable install points to: otherwise a branch that changes a component's default would be
diffed against "main" rendered with the branch's own components, and show no change. The stack file
as it was at REV is kept in the plan directory (`stack/`), so the plan's marker records a file that
cannot change under it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from .atomic import replace_dir
from .engine import ROOT
from .errors import UsageError
from .plan import plan_dir_replaceable
from .plan_marker import MARKER, marker_text
from .stack_names import shown

TREE_RUN = Path(__file__).resolve().parent / "tree_run.py"


def _git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def resolve_commit(rev: str) -> str:
    """The full sha of REV in this checkout, or one line saying why not."""
    if _git("rev-parse", "--is-inside-work-tree").returncode != 0:
        raise UsageError(f"--at {shown(rev)}: {ROOT} is not a git checkout")
    found = _git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    if found.returncode != 0 or not found.stdout.strip():
        raise UsageError(f"--at {shown(rev)}: not a commit of {ROOT} (a branch, tag or commit, e.g. main)")
    return found.stdout.strip()


def stack_file_in_tree(stack: str, stack_file: Optional[Path]) -> Path:
    """Where the stack file lies inside a checkout: stacks/Pulumi.STACK.yaml, or --stack-file's path
    relative to the repository."""
    if stack_file is None:
        return Path("stacks") / f"Pulumi.{stack}.yaml"
    try:
        return stack_file.resolve().relative_to(ROOT)
    except ValueError:
        raise UsageError(f"--stack-file {stack_file} with --at: the file must lie inside {ROOT}, "
                         "as it is read from the commit") from None


def plan_at(stack: str, rev: str, out: Path, stack_file: Optional[Path]) -> int:
    """Plan STACK as it was at REV into OUT; the exit code of the plan at REV (its output passes through)."""
    out = out.resolve()
    plan_dir_replaceable(out)  # refuse now rather than after rendering
    commit = resolve_commit(rev)
    relative = stack_file_in_tree(stack, stack_file)
    with tempfile.TemporaryDirectory(prefix="platformctl-at-") as tmp:
        tree, rendered = Path(tmp) / "tree", Path(tmp) / "plan"
        added = _git("worktree", "add", "--detach", "--quiet", str(tree), commit)
        if added.returncode != 0:
            reason = (added.stderr.strip().splitlines() or ["no reason given"])[-1]
            raise UsageError(f"--at {shown(rev)}: git worktree add failed: {reason}")
        try:
            print(f"plan of stack {stack} at {rev} (commit {commit[:12]}), with that commit's code and {relative}:",
                  flush=True)
            run = subprocess.run([sys.executable, str(TREE_RUN), str(tree), "-m", "platformctl", "plan", stack,
                                  "--out", str(rendered), "--stack-file", str(tree / relative)],
                                 cwd=tree, capture_output=True, text=True, check=False)
            # Paths inside the temporary worktree read as REV:PATH, those of its plan as OUT.
            for text, stream in ((run.stdout, sys.stdout), (run.stderr, sys.stderr)):
                stream.write(text.replace(str(rendered), str(out)).replace(f"{tree}/", f"{rev}:"))
            if run.returncode != 0:
                return run.returncode
            kept = out / "stack" / relative.name

            def fill(tmp_out: Path) -> None:
                for entry in rendered.iterdir():
                    if entry.name != MARKER:
                        (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, tmp_out / entry.name)
                (tmp_out / "stack").mkdir()
                shutil.copy2(tree / relative, tmp_out / "stack" / relative.name)
                (tmp_out / MARKER).write_text(marker_text(stack, tmp_out / "stack" / relative.name, recorded_as=kept,
                                                          at=f"{rev} (commit {commit})"))

            replace_dir(out, fill, plan_dir_replaceable)
        finally:
            _git("worktree", "remove", "--force", str(tree))
    print(f"wrote {out} (the stack file at {rev}: {kept})")
    return 0
