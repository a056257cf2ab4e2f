"""`python tree_run.py TREE -m MODULE [ARGS...]`: run MODULE as `python -m` would, with every import of
this repository's code taken from the checkout TREE.

An editable install maps `inference_platform` onto one checkout's `components/` whatever the current
directory is, so a plan run inside another checkout (a worktree of an older commit) would silently
render with the installed checkout's components. Here a finder placed before the editable one maps
each package of TREE's `pyproject.toml` (`[tool.setuptools.package-dir]`) onto TREE, and TREE comes
first on sys.path for everything else (platformctl, policies, the program).

Standard library only, and run as a script: the code it is about to import may be of any commit.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import runpy
import sys
import tomllib
from pathlib import Path


class TreeFinder:
    """Finds the packages a tree's pyproject maps onto folders of its own (import name -> folder)."""

    def __init__(self, mapping: dict[str, Path]):
        self.mapping = mapping

    def find_spec(self, fullname, path=None, target=None):
        folder = self.mapping.get(fullname)
        if folder is None or not folder.is_dir():
            return None
        init = folder / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[str(folder)])
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)  # a namespace package (data only)
        spec.submodule_search_locations = [str(folder)]
        return spec


def package_dirs(tree: Path) -> dict[str, Path]:
    """The tree's import-name -> folder map; empty for a tree whose packages sit at its top."""
    try:
        project = tomllib.loads((tree / "pyproject.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    dirs = project.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    return {name: tree / folder for name, folder in dirs.items() if name and isinstance(folder, str)}


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "-m":
        raise SystemExit("usage: tree_run.py TREE -m MODULE [ARGS...]")
    tree = Path(argv[0]).resolve()
    sys.path[0] = str(tree)  # in place of this script's folder, as `-m` puts the current directory
    sys.meta_path.insert(0, TreeFinder(package_dirs(tree)))
    sys.argv = [argv[2], *argv[3:]]
    runpy.run_module(argv[2], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
