"""tests/support/unchanged_tree.py, which `make test` runs the suite under: a command that leaves a
new untracked file, edits a tracked or an already-modified file, or deletes one fails; one that
writes only ignored files passes with the command's own exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.clone import clone_env


def _repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text("build/\n")
    (repo / "kept.txt").write_text("a\n")
    (repo / "dirty.txt").write_text("b\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=repo, env=clone_env(), check=True)
    (repo / "dirty.txt").write_text("b2\n")  # modified before the run: only a further edit counts
    return repo


def _run(repo, shell: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.support.unchanged_tree", "sh", "-c", shell], cwd=repo,
                          env={**clone_env(), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True)


@pytest.mark.parametrize("shell, path", [
    ("echo x > stacks.yaml", "stacks.yaml"),
    ("echo c > kept.txt", "kept.txt"),
    ("echo b3 > dirty.txt", "dirty.txt"),
    ("rm kept.txt", "kept.txt"),
], ids=["new-untracked-file", "tracked-edit", "edit-of-a-modified-file", "delete"])
def test_a_command_that_changes_the_tree_fails_naming_the_path(tmp_path, shell, path):
    run = _run(_repo(tmp_path), shell)
    assert run.returncode == 1
    [line] = run.stderr.splitlines()
    assert line.startswith(f"the source tree changed while sh -c {shell} ran: {path}: ")


def test_ignored_files_do_not_count_and_the_command_exit_code_passes_through(tmp_path):
    repo = _repo(tmp_path)
    assert _run(repo, "mkdir -p build && echo x > build/plan").returncode == 0
    assert _run(repo, "exit 3").returncode == 3
