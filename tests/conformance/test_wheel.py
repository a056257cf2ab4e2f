"""The package as a user installs it: a wheel built from the repository, in a fresh virtualenv
that has no repository on its path, plans an example program that uses TritonService alone, and
carries the data its components put into the cluster (dashboards, graph app, tuning tools)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

EXAMPLE = "triton-on-existing-mesh"


def _run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A virtualenv holding the built wheel; the pinned dependencies come from this interpreter's
    site-packages through a path line (a .pth *line* adds the folder but runs none of the .pth
    files in it, so this checkout's editable install is not on the path)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools leaves earlier builds' files in build/, which a wheel would take.
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv*", ".tools", "build", "__pycache__", "*.egg-info"))
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp / "dist", source, cwd=tmp)
    assert built.returncode == 0, built.stderr
    venv = tmp / "venv"
    assert _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp).returncode == 0
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next((tmp / "dist").glob("inference_platform-*.whl"))
    done = _run(sys.executable, "-m", "pip", "install", "--no-deps", "--target", site, wheel, cwd=tmp)
    assert done.returncode == 0, done.stderr
    return venv


def test_the_wheel_plans_an_example_using_triton_service_alone(installed, tmp_path):
    # The offline engine, the policy pack it runs and the example, copied away from the repository.
    shutil.copytree(ROOT / "platformctl", tmp_path / "tools" / "platformctl")
    shutil.copytree(ROOT / "policies", tmp_path / "tools" / "policies")
    shutil.copytree(ROOT / "examples" / EXAMPLE, tmp_path / EXAMPLE)
    python = installed / "bin" / "python"
    where = _run(python, "-c", "import inference_platform; print(inference_platform.__file__)", cwd=tmp_path / "tools")
    assert where.stdout.startswith(str(installed)), where.stdout + where.stderr
    from_wheel = _run(python, "-m", "platformctl", "plan-example", tmp_path / EXAMPLE, "--out", tmp_path / "plan", cwd=tmp_path / "tools")
    assert from_wheel.returncode == 0, from_wheel.stderr
    from_checkout = _run(sys.executable, "-m", "platformctl", "plan-example", ROOT / "examples" / EXAMPLE,
                         "--out", tmp_path / "plan", cwd=ROOT)
    assert from_checkout.returncode == 0, from_checkout.stderr
    assert "TritonService" in from_wheel.stdout
    assert from_wheel.stdout == from_checkout.stdout


def test_the_wheel_carries_what_components_ship_into_the_cluster(installed, tmp_path):
    probe = ("from inference_platform.core.common import shipped_dir\n"
             "for name in ('dashboards', 'graph_app', 'model_tools'):\n"
             "    print(name, sorted(p.name for p in shipped_dir(name).iterdir() if p.suffix in ('.json', '.py')))\n")
    shipped = _run(installed / "bin" / "python", "-c", probe, cwd=tmp_path)
    assert shipped.returncode == 0, shipped.stderr
    for line in shipped.stdout.splitlines():
        name, _, files = line.partition(" ")
        assert str(installed) in _run(installed / "bin" / "python", "-c",
                                      f"from inference_platform.core.common import shipped_dir; print(shipped_dir('{name}'))",
                                      cwd=tmp_path).stdout
        expected = sorted(p.name for p in (ROOT / name).iterdir() if p.suffix in (".json", ".py"))
        assert files == repr(expected), name


def test_every_subpackage_of_the_library_is_in_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"inference_platform" + "".join("." + p for p in d.relative_to(ROOT / "components").parts)
             for d in [ROOT / "components", *(ROOT / "components").rglob("*")] if (d / "__init__.py").is_file()}
    assert found <= listed, f"pyproject.toml [tool.setuptools] packages lacks {sorted(found - listed)}"
