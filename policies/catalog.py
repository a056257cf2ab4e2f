"""Names of every policy in the pack, by category, without importing the Policy SDK.

The stack schema (components/config.py) checks per-stack enforcement overrides
against these names, and the Pulumi program's environment has no pulumi-policy;
rules/__init__.py asserts that the policies it builds carry exactly these names.
"""

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
ENFORCEMENT_LEVELS = ("mandatory", "advisory", "disabled")
