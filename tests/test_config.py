"""The configuration schema: defaults, and one clear error per bad input."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.config import ConfigError, Settings, parse_settings
from tests.conftest import base_config

STACK_FILE = "stacks/Pulumi.test-dev.yaml"


def parse(raw: dict, secret_keys=frozenset()) -> Settings:
    return parse_settings(raw, STACK_FILE, frozenset(secret_keys))


def test_base_config_fills_defaults():
    s = parse(base_config())
    assert s.production is False
    assert s.gpu_operator.driver.mode == "precompiled"
    assert s.services[0].auth.mode == "basic"
    assert s.services[0].autoscaling.min_replicas == 1
    assert s.services[0].versions[0].startup_budget_seconds == 900
    assert s.cluster.node_groups[1].start_nodes == 1
    assert s.services[0].k8s_namespace == "svc"


def test_settings_are_frozen():
    s = parse(base_config())
    with pytest.raises(ValidationError, match="frozen"):
        s.customer = "other"


def _set(raw: dict, path: str, value) -> dict:
    """Set a dotted path (a.b.0.c) in a raw config; value DELETE removes the key."""
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = raw
    for p in parts[:-1]:
        node = node[p]
    if value is DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return raw


DELETE = object()
V0 = "services.0.versions.0"

# (case id, edits, expected key path, words the message must contain)
BAD = [
    ("unknown-top-key", [("servics", [])], "inference-platform:servics", ["unknown key", "services"]),
    ("unknown-nested-key", [(f"{V0}.weigth", 3)], "inference-platform:services[0].versions[0].weigth", ["unknown key", "weight"]),
    ("wrong-type-weight", [(f"{V0}.weight", "lots")], "inference-platform:services[0].versions[0].weight", ["integer"]),
    ("weight-out-of-range", [(f"{V0}.weight", 120)], "inference-platform:services[0].versions[0].weight", ["less than or equal to 100"]),
    ("weights-not-100", [(f"{V0}.weight", 99)], "inference-platform:services[0].versions", ["sum to 99", "must sum to 100"]),
    ("missing-customer", [("customer", DELETE)], "inference-platform:customer", ["required"]),
    ("bad-customer-name", [("customer", "ACME Corp")], "inference-platform:customer", ["not a DNS label"]),
    ("bad-cluster-mode", [("cluster.mode", "eks")], "inference-platform:cluster.mode", ["'existing' or 'magnum'"]),
    ("no-node-groups", [("cluster.nodeGroups", [])], "inference-platform:cluster.nodeGroups", ["at least 1"]),
    ("min-over-max", [("cluster.nodeGroups.1.minNodes", 3)], "inference-platform:cluster.nodeGroups[1]", ["minNodes (3) exceeds maxNodes (2)"]),
    ("unknown-gpu-model", [("cluster.nodeGroups.1.gpu.model", "RTX-4090")], "inference-platform:cluster.nodeGroups[1].gpu.model", ["A100-80GB"]),
    ("mig-on-non-mig-gpu", [("cluster.nodeGroups.1.gpu", {"model": "L4-24GB", "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}})], "inference-platform:cluster.nodeGroups[1].gpu", ["no MIG", "MIG-capable"]),
    ("mig-without-profile", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "mig"})], "inference-platform:cluster.nodeGroups[1].gpu.sharing", ["needs migProfile"]),
    ("time-slicing-without-replicas", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "time-slicing"})], "inference-platform:cluster.nodeGroups[1].gpu.sharing", ["needs replicas"]),
    ("bad-sharing-mode", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "vgpu"})], "inference-platform:cluster.nodeGroups[1].gpu.sharing.mode", ["'none'", "'mig'", "'time-slicing'", "'mps'"]),
    ("duplicate-node-group", [("cluster.nodeGroups.0.name", "gpu")], "inference-platform:cluster.nodeGroups[1].name", ["duplicate node group"]),
    ("service-to-missing-group", [(f"{V0}.gpu.group", "gpu-h100")], "inference-platform:services[0].versions[0].gpu.group", ["no GPU node group named 'gpu-h100'", "GPU groups: gpu"]),
    ("service-to-cpu-group", [(f"{V0}.gpu.group", "cpu")], "inference-platform:services[0].versions[0].gpu.group", ["no GPU node group named 'cpu'"]),
    ("missing-weight-cache", [(f"{V0}.modelRepository.cache", "s3")], "inference-platform:services[0].versions[0].modelRepository.cache", ["'s3' is not configured", "configured: fileShare"]),
    ("duplicate-service", [("services", "DUP")], "inference-platform:services[1].name", ["duplicate service name 'svc'"]),
    ("duplicate-version", [("services.0.versions", "DUPV")], "inference-platform:services[0].versions[1].name", ["duplicate version name 'v1'"]),
    ("wildcard-host", [("services.0.hosts", ["*.example.com"])], "inference-platform:services[0].hosts[0]", ["no wildcards"]),
    ("auth-none-in-production", [("production", True), ("services.0.auth", {"mode": "none"})], "inference-platform:services[0].auth.mode", ["not allowed in a production stack", "basic, jwt"]),
    ("jwt-without-issuer", [("services.0.auth", {"mode": "jwt"})], "inference-platform:services[0].auth", ["needs jwt.issuer"]),
    ("mirror-to-missing-version", [("services.0.mirror", {"version": "v9", "percent": 10})], "inference-platform:services[0].mirror.version", ["no version named 'v9'", "versions: v1"]),
    ("spare-slots-missing-group", [("coldStart", {"spareSlots": {"gpu-x": 1}})], "inference-platform:coldStart.spareSlots.gpu-x", ["no GPU node group named 'gpu-x'"]),
    ("startup-budget-below-load", [(f"{V0}.modelLoadSeconds", 1200)], "inference-platform:services[0].versions[0]", ["startupBudgetSeconds (900) is shorter than modelLoadSeconds (1200)"]),
    ("existing-share-without-server", [("weightCaches.fileShare", {"mode": "existing"})], "inference-platform:weightCaches.fileShare", ["needs server and path"]),
    ("anonymous-kiali-in-production", [("production", True), ("mesh", {"kialiAuth": "anonymous"})], "inference-platform:mesh.kialiAuth", ["not allowed in a production stack"]),
    ("gpu-quota-exceeded", [("cluster.gpuQuota", 1)], "inference-platform:cluster.gpuQuota", ["2 GPUs, over the quota of 1"]),
    ("bad-memory-quantity", [(f"{V0}.resources", {"memory": "16 GB"})], "inference-platform:services[0].versions[0].resources.memory", ["not a Kubernetes quantity"]),
    ("magnum-gpu-min-zero", [("cluster.mode", "magnum"), ("cluster.nodeGroups.1.minNodes", 0)], "inference-platform:cluster.nodeGroups[1].minNodes", ["cannot scale a group up from zero", "minNodes: 1"]),
    ("magnum-reserved-role", [("cluster.mode", "magnum"), ("cluster.nodeGroups.1.name", "worker"), (f"{V0}.gpu.group", "worker")], "inference-platform:cluster.nodeGroups[1].name", ["role Magnum gives its own node groups"]),
    ("even-master-count", [("cluster.mode", "magnum"), ("cluster.magnum", {"masterCount": 2})], "inference-platform:cluster.magnum.masterCount", ["odd"]),
    ("s3-without-credentials", [("weightCaches.s3", {"endpoint": "https://s3.example.com", "bucket": "weights"})], "inference-platform:s3AccessKeyId", ["needs the secret"]),
]


def _apply(edits) -> dict:
    raw = base_config()
    for path, value in edits:
        if value == "DUP":
            raw["services"].append(dict(raw["services"][0], hosts=["other.example.com"]))
        elif value == "DUPV":
            raw["services"][0]["versions"] = [dict(raw["services"][0]["versions"][0], weight=50)] * 2
        else:
            _set(raw, path, value)
    return raw


@pytest.mark.parametrize("case,edits,path,words", BAD, ids=[b[0] for b in BAD])
def test_bad_config_names_path_and_problem(case, edits, path, words):
    with pytest.raises(ConfigError) as info:
        parse(_apply(edits))
    err = info.value
    assert path in err.paths, f"{case}: {err.one_line()}"
    line = err.one_line()
    assert line.startswith(STACK_FILE + ": ")
    assert "\n" not in line
    for w in words:
        assert w in line, f"{case}: {w!r} not in {line}"


def test_secret_keys_must_be_secret():
    raw = base_config() | {"kubeconfig": "apiVersion: v1"}
    with pytest.raises(ConfigError) as info:
        parse(raw)
    assert info.value.paths == ["inference-platform:kubeconfig"]
    assert "--secret" in info.value.one_line()
    assert parse(raw, {"kubeconfig"}).kubeconfig.get_secret_value() == "apiVersion: v1"


def test_all_problems_reported_together():
    raw = _apply([(f"{V0}.weight", 99), (f"{V0}.gpu.group", "nope")])
    with pytest.raises(ConfigError) as info:
        parse(raw)
    assert set(info.value.paths) == {
        "inference-platform:services[0].versions",
        "inference-platform:services[0].versions[0].gpu.group",
    }


def test_weight_zero_version_is_valid():
    raw = base_config()
    v = raw["services"][0]["versions"][0]
    raw["services"][0]["versions"] = [v, dict(v, name="v2", weight=0)]
    s = parse(raw)
    assert [x.weight for x in s.services[0].versions] == [100, 0]


def test_odd_keys_are_quoted_and_the_error_stays_one_line():
    raw = base_config()
    raw["cluster"]["bad\nkey"] = 1
    with pytest.raises(ConfigError) as info:
        parse(raw)
    assert info.value.paths == ['inference-platform:cluster["bad\\nkey"]']
    assert "\n" not in info.value.one_line()
