"""Fixtures of the real tier: the built tools, and a KWOK cluster in a network namespace per test."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.real_cluster import KwokCluster, NetNamespace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def real_bindir() -> Path:
    """The directory of the real tools (tests/real/tools/build.sh, `make real-tools`)."""
    proc = subprocess.run([str(ROOT / "tests" / "real" / "tools" / "build.sh"), "bindir"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"the real tools are not built: {proc.stderr.strip()} (run `make real-tools`)")
    return Path(proc.stdout.strip())


@pytest.fixture
def real_cluster_factory(real_bindir, tmp_path):
    """make(name, context): a KWOK cluster named `name` in a namespace of its own, its kubeconfig
    context renamed to `context` (what the stack's existing cluster names)."""
    made: list[tuple[KwokCluster, NetNamespace]] = []

    def make(name: str, context: str) -> KwokCluster:
        netns = NetNamespace.create(f"real-{name}-{os.getpid()}"[:40])
        cluster = KwokCluster(name, netns, real_bindir, tmp_path / "kwok", tmp_path / "real.log")
        made.append((cluster, netns))
        cluster.create()
        cluster.kubectl("config", "rename-context", f"kwok-{name}", context)
        return cluster

    yield make
    for cluster, netns in made:
        cluster.delete()
        netns.delete()
