"""Cost policies: GPU node groups within the stack's quota, chart versions pinned."""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from .kube import HELM_RELEASE, fix, get, schema, setting

NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"


def _max_nodes(name: str, facts: Any, resources: list) -> tuple[int, Any]:
    """A group's most nodes: its Magnum NodeGroup's maxNodeCount when the stack declares one."""
    for r in resources:
        if r.resource_type == NODE_GROUP and get(r.props, "role") == name and get(r.props, "maxNodeCount") is not None:
            return int(get(r.props, "maxNodeCount")), r
    return int(get(facts, "maxNodes", default=0)), None


def _gpu_quota(args: StackValidationArgs, report) -> None:
    quota = setting(args, "gpuQuota")
    if quota is None:
        return
    hint = "lower the group's maxNodes or raise cluster.gpuQuota (after the cloud quota is raised)"
    total = 0
    for name, facts in sorted(setting(args, "gpuGroups").items()):
        nodes, resource = _max_nodes(name, facts, args.resources)
        gpus = nodes * int(get(facts, "gpusPerNode", default=1))
        total += gpus
        if gpus > quota:
            report(fix(f"GPU group {name} can grow to {gpus} GPUs ({nodes} nodes), over the quota of {quota}", hint),
                   resource.urn if resource else None)
    if total > quota:
        report(fix(f"GPU groups can grow to {total} GPUs together, over the quota of {quota}", hint), None)


gpu_quota = StackValidationPolicy(
    name="gpu-quota",
    description="GPU node groups at their maximum size stay within the stack's GPU quota.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gpu_quota,
    config_schema=schema("gpuQuota", "gpuGroups"),
)

# An exact SemVer 2 version, optionally with the `v` many charts use (gpu-operator v26.7.0).
EXACT_VERSION = re.compile(r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
CHART_TYPES = (HELM_RELEASE, "kubernetes:helm.sh/v4:Chart")


def _chart_versions(args: ResourceValidationArgs, report) -> None:
    if args.resource_type not in CHART_TYPES:
        return
    version = get(args.props, "version", default="")
    if not isinstance(version, str) or not EXACT_VERSION.match(version):
        what = "has no version" if not version else f"version {version!r} is not an exact version"
        report(fix(f"chart {get(args.props, 'chart')!r} {what}",
                   "pin an exact chart version (e.g. 1.30.3); no ranges or wildcards"), None)


chart_versions_pinned = ResourceValidationPolicy(
    name="chart-versions-pinned",
    description="Helm chart versions are exact: not empty, no ranges or wildcards.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_chart_versions,
)

POLICIES = [gpu_quota, chart_versions_pinned]
