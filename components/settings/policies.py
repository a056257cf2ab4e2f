"""`policies`: per-stack enforcement overrides, and the names of every policy in the pack.

The names live here, below the schema, so the stack file's overrides are checked without the
Policy SDK; the pack (policies/rules) imports them and asserts that its policies carry exactly
these names."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import field_validator

from inference_platform.settings.base import Model

SECURITY = (
    "pod-security-restricted",
    "no-privileged-containers",
    "images-pinned",
    "no-loadbalancer-services",
    "gateway-hosts-not-wildcard",
    "mesh-mtls-strict",
    "inference-namespace-network-policy",
    "inference-namespace-authorization-policy",
    "no-secret-literals",
    "no-open-auth-in-production",
)
CORRECTNESS = (
    "inference-namespace-injection",
    "virtualservice-weights-sum",
    "virtualservice-subsets-exist",
    "hpa-target-exists",
    "hpa-target-sets-no-replicas",
    "gpu-requests-equal-limits",
    "gpu-workloads-scheduling",
    "gpu-resources-in-group-profile",
    "triton-probes",
    "crd-resources-depend-on-release",
)
DATA_SAFETY = ("stateful-resources-protected",)
COST = ("gpu-quota", "chart-versions-pinned")

POLICY_NAMES: tuple[str, ...] = SECURITY + CORRECTNESS + DATA_SAFETY + COST
EnforcementLevel = Literal["mandatory", "advisory", "disabled"]
ENFORCEMENT_LEVELS: tuple[str, ...] = get_args(EnforcementLevel)


class PolicySettings(Model):
    enforcement: dict[str, EnforcementLevel] = {}
    """Per-policy enforcement override for this stack, e.g. `{triton-probes: advisory}`; names as in the policy list of docs/policies.md."""

    @field_validator("enforcement")
    @classmethod
    def _known_policies(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(POLICY_NAMES))
        if unknown:
            raise ValueError(f"unknown policy {', '.join(unknown)}; policies: {', '.join(POLICY_NAMES)}")
        return v
