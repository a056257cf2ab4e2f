"""A temporary clone of the working tree (its tracked and untracked, not ignored files, committed as
`main` of a new repository), with the venvs the Makefile would build stood in for by this one's
interpreter importing the clone's own code (platformctl/tree_run.py's finder, from a sitecustomize),
as a venv installed editable from the clone would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def clone_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "PYTHON", "GIT_"))}
    return {**env, **GIT_ENV}


def git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=clone, env=clone_env(), check=True, capture_output=True, text=True).stdout


def make_clone(where: Path, venvs: tuple[str, ...] = (".venv", ".venv-plan")) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, check=True, capture_output=True).stdout.decode().split("\0")
    clone = where / "clone"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():  # listed but deleted in the working tree: not part of it
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name, follow_symlinks=False)
    git(clone, "init", "--quiet", "--initial-branch", "main")
    git(clone, "add", "--all")
    git(clone, "commit", "--quiet", "-m", "the working tree")
    # As `pip install -e .` into the clone's venvs would: every process of this interpreter (and its
    # children) imports the clone's packages, via the clone's own finder ahead of this venv's install.
    site = where / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('_clone_tree_run', {str(clone / 'platformctl' / 'tree_run.py')!r})\n"
        "tree_run = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(tree_run)\n"
        f"sys.meta_path.insert(0, tree_run.TreeFinder(tree_run.package_dirs(tree_run.Path({str(clone)!r}))))\n")
    for venv in venvs:
        (clone / venv / "bin").mkdir(parents=True)
        wrapper = clone / venv / "bin" / "python"
        wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
        (clone / venv / ".installed").touch()  # newer than the requirements: make builds nothing
    return clone
