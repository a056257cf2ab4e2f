"""The real Pulumi CLI for tests/real: a copy of the project (Pulumi.yaml, the stack files the test
writes; everything else linked to the checkout, so the code under test is this checkout's), a local
file backend, a PULUMI_HOME with the kubernetes and random plugins installed from the built binaries,
and every command run inside the cluster's network namespace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

from tests.support.real_cluster import KwokCluster, run

ROOT = Path(__file__).resolve().parents[2]
# The example stacks' passphrase (stacks/Pulumi.acme-prod.yaml holds secrets encrypted with it).
PASSPHRASE = "example-stacks"
# The plugin versions the Python SDKs ask for (pyproject.toml); the binaries are the builds that
# tests/real/tools/build.sh makes (docs/testing.md: which sources those are).
PLUGINS = {"kubernetes": "4.34.2", "random": "4.21.4"}
# Warnings the engine prints that do not bear on the verdict (each stays in the run's log):
KNOWN_WARNINGS = (
    # the random provider is built from v4.19.1 (the newest the module proxy can build) and says so
    # against the SDK's 4.21.4;
    re.compile(r"random.*4\.19\.1|4\.19\.1.*random", re.I),
    # the await's progress while a Deployment's pods start (it ends ready, or `up` fails);
    re.compile(r"\[MinimumReplicasUnavailable\] Deployment does not have minimum availability"),
    # a claim bound to a static volume by a class name no StorageClass carries (the NFS and S3 caches'
    # PersistentVolume/Claim pairs, and each training job's checkpoint claim, settings/training.py
    # checkpoint_claim: binding needs only the names to match).
    re.compile(r'PersistentVolumeClaim .* warning: no storage class found for "(model-weights|[a-z0-9-]+-checkpoint-[0-9a-f]{8}")'),
)
# Entries of the checkout the workspace does not link: what it writes or holds of its own.
_OWN = {"Pulumi.yaml", "stacks", "build", "site", ".git", ".venv", ".tools"}


@dataclass
class Workspace:
    root: Path
    cluster: KwokCluster
    home: Path
    state: Path
    log: Path
    extra_env: dict[str, str]

    @classmethod
    def create(cls, base: Path, cluster: KwokCluster, extra_env: Optional[dict[str, str]] = None) -> "Workspace":
        root, home, state = base / "project", base / "pulumi-home", base / "state"
        for d in (root / "stacks", home, state):
            d.mkdir(parents=True, exist_ok=True)
        project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
        project["runtime"]["options"]["virtualenv"] = str(ROOT / ".venv")
        (root / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
        for entry in ROOT.iterdir():
            if entry.name not in _OWN and not entry.name.startswith(".venv"):
                (root / entry.name).symlink_to(entry)
        ws = cls(root, cluster, home, state, cluster.log, dict(extra_env or {}))
        for name, version in PLUGINS.items():
            ws.pulumi("plugin", "install", "resource", name, version, "--file", str(cluster.bindir / f"pulumi-resource-{name}"))
        return ws

    def policy_pack(self) -> Path:
        """The policy pack, copied with its virtualenv set to the checkout's (the CLI would otherwise
        make one and pip-install into it, which the namespace's closed network refuses)."""
        pack = self.root.parent / "policies"
        if not pack.exists():
            shutil.copytree(ROOT / "policies", pack, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
            spec = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())
            spec["runtime"]["options"]["virtualenv"] = str(ROOT / ".venv")
            (pack / "PulumiPolicy.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        return pack

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            # The CLI's own directory (its language host beside it), not the providers': the engine
            # takes the plugins installed in PULUMI_HOME, as it would on a user's machine.
            "PATH": f"{Path(os.path.realpath(self.cluster.bindir / 'pulumi')).parent}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "KUBECONFIG": str(self.cluster.kubeconfig),
            **self.extra_env,
        }

    def pulumi(self, *args: str, check: bool = True, timeout: float = 1500):
        return run([*self.cluster.netns.prefix(), str(self.cluster.bindir / "pulumi"), *args, "--non-interactive"]
                   if args[0] not in ("plugin",) else [*self.cluster.netns.prefix(), str(self.cluster.bindir / "pulumi"), *args],
                   env=self.env(), cwd=self.root, log=self.log, check=check, timeout=timeout)

    def stack_file(self, stack: str) -> Path:
        return self.root / "stacks" / f"Pulumi.{stack}.yaml"

    def write_stack(self, stack: str, text: str) -> None:
        self.stack_file(stack).write_text(text)

    def preview_json(self, stack: str, *extra: str) -> dict:
        """`pulumi preview --json`: the steps the engine would take and the policy verdicts."""
        proc = self.pulumi("preview", "-s", stack, "--json", *extra, check=False)
        try:
            return {"rc": proc.returncode, **json.loads(proc.stdout)}
        except json.JSONDecodeError:
            return {"rc": proc.returncode, "raw": proc.stdout + proc.stderr}


def steps_by_op(preview: dict) -> dict[str, list[str]]:
    """URNs of a preview's steps that change something, by operation (create, update, replace, delete...)."""
    ops: dict[str, list[str]] = {}
    for step in preview.get("steps", []):
        if step.get("op") not in ("same", "read"):
            ops.setdefault(step["op"], []).append(step["urn"])
    return ops


def unexplained_warnings(text: str) -> list[str]:
    """Warning lines of an engine run other than the known ones (KNOWN_WARNINGS)."""
    return [line for line in text.splitlines() if "warning" in line.lower()
            and not any(p.search(line) for p in KNOWN_WARNINGS)]
