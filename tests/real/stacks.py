"""The example stacks as the real tier runs them: each stack file as a user would deploy it on an
existing cluster (the KWOK one), its secrets set with `pulumi config set --secret`, the charts from
the local chart directory, the day-2 edits the diff tests cover, and what cannot be ready without a
real operator or cloud (with the reason)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from inference_platform.core.chart_source import ENVIRONMENT_VARIABLE
from tests.support.conformance import reference_dir

ROOT = Path(__file__).resolve().parents[2]
Edit = Callable[[dict], None]


def _services(config: dict) -> list[dict]:
    return config["inference-platform:services"]


def weights(service: int, *values: int) -> Edit:
    def edit(config: dict) -> None:
        for version, weight in zip(_services(config)[service]["versions"], values, strict=True):
            version["weight"] = weight
    return edit


def add_version(service: int, name: str) -> Edit:
    def edit(config: dict) -> None:
        versions = _services(config)[service]["versions"]
        versions.append({**{k: copy.deepcopy(v) for k, v in versions[-1].items() if k != "tuning"}, "name": name, "weight": 0})
    return edit


def remove_version(service: int, name: str) -> Edit:
    def edit(config: dict) -> None:
        versions = _services(config)[service]["versions"]
        versions[:] = [v for v in versions if v["name"] != name]
    return edit


def job_image(job: int, image: str) -> Edit:
    def edit(config: dict) -> None:
        config["inference-platform:training"]["jobs"][job]["image"] = image
    return edit


def on_existing_cluster(config: dict, s3_endpoint: str) -> None:
    """A Magnum stack's config as the same platform on an existing cluster (the KWOK one): each group
    selected by a node-pool label, the template's OS on every group, the Manila share as an existing NFS
    export, and the S3 cache at `s3_endpoint` (SeaweedFS in the test's namespace)."""
    cluster = config["inference-platform:cluster"]
    magnum = cluster.pop("magnum")
    cluster.pop("gpuQuota", None)
    customer = config["inference-platform:customer"]
    cluster["mode"] = "existing"
    cluster["existing"] = {"context": customer}
    for group in cluster["nodeGroups"]:
        for key in ("flavor", "initialNodes", "image"):
            group.pop(key, None)
        group["selector"] = {f"pool.{customer}.example.com/name": group["name"]}
        group.setdefault("os", magnum["template"]["os"])
    caches = config["inference-platform:weightCaches"]
    if caches.get("fileShare", {}).get("mode") == "manila":
        caches["fileShare"] = {"mode": "existing", "server": "10.0.0.50", "path": "/exports/models"}
    if "s3" in caches:
        caches["s3"]["endpoint"] = s3_endpoint


@dataclass
class RealStack:
    stack: str
    day2_edits: list[tuple[str, Edit]] = field(default_factory=list)
    allowed_unready: dict[str, str] = field(default_factory=dict)
    # The S3 keys the stack's own secrets hold (SeaweedFS in the namespace accepts these), when it has an S3 cache.
    s3_keys: tuple[str, str] | None = None
    variant: Callable[[dict, str], None] | None = None

    def stack_text(self, s3_endpoint: str = "") -> str:
        """The stack file as the tier deploys it: as shipped, or its existing-cluster variant."""
        text = (ROOT / "stacks" / f"Pulumi.{self.stack}.yaml").read_text()
        if self.variant is None:
            return text
        raw = yaml.safe_load(text)
        self.variant(raw["config"], s3_endpoint)
        return yaml.safe_dump(raw, sort_keys=False)

    def context(self, config: dict) -> str:
        """The kubeconfig context the stack's existing cluster names (its variant's: the customer)."""
        cluster = config["inference-platform:cluster"]
        if cluster.get("mode") == "magnum":
            return config["inference-platform:customer"]
        return cluster.get("existing", {}).get("context") or f"kwok-{self.stack}"

    def environment(self, cluster) -> dict[str, str]:
        ref = reference_dir()
        assert ref is not None, "../shared/reference is absent (set PLATFORM_REFERENCE_DIR)"
        return {ENVIRONMENT_VARIABLE: str(ref / "helm")}


REAL_STACKS = [
    RealStack(
        "demo-dev",
        day2_edits=[
            ("canary 90-10 to 80-20", weights(0, 80, 20)),
            ("add a version", add_version(0, "v3")),
            ("remove a version", remove_version(0, "v3")),
        ],
    ),
    RealStack("studio-dev"),
    RealStack(
        "acme-prod",
        variant=on_existing_cluster,
        s3_keys=("example-access-key", "example-secret-key"),
        day2_edits=[
            ("shift the llm canary 90-10 to 60-40", weights(0, 60, 40)),
            ("add a version", add_version(1, "v2")),
            ("remove a version", remove_version(1, "v2")),
        ],
    ),
    RealStack(
        "train-dev",
        day2_edits=[
            ("add a version", add_version(0, "v2")),
            ("remove a version", remove_version(0, "v2")),
            # Trainer makes spec.trainer immutable: the TrainJob is replaced, the old one deleted first.
            ("bump a job's image", job_image(0, "pytorch/pytorch:2.13.1-cuda13.0-cudnn9-runtime")),
        ],
    ),
]


# Stacks the tier cannot pass yet, each with what stops it (docs/testing.md), kept ready to join REAL_STACKS.
PENDING_STACKS: list[tuple[RealStack, str]] = []


def example_stacks() -> list[str]:
    """Every stack file in stacks/: each must be one the tier runs, or pending with its reason."""
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))

