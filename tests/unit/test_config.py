"""The configuration schema: defaults, and one clear error per bad input."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from inference_platform.settings.stack import Settings
from tests.conftest import as_magnum, base_config, clashing_deployment_names

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
PIPELINE = {"baseVersion": "v1", "model": "m", "inputs": {"input": [3]}, "repositoryPrefix": "models/m"}

# (case id, edits, expected key path, words the message must contain)
BAD = [
    ("unknown-top-key", [("servics", [])], "inference-platform:servics", ["unknown key", "services"]),
    ("unknown-nested-key", [(f"{V0}.weigth", 3)], "inference-platform:services[svc].versions[v1].weigth", ["unknown key", "weight"]),
    ("wrong-type-weight", [(f"{V0}.weight", "lots")], "inference-platform:services[svc].versions[v1].weight", ["integer"]),
    ("weight-out-of-range", [(f"{V0}.weight", 120)], "inference-platform:services[svc].versions[v1].weight", ["less than or equal to 100"]),
    ("weights-not-100", [(f"{V0}.weight", 99)], "inference-platform:services[svc].versions", ["sum to 99", "must sum to 100"]),
    ("missing-customer", [("customer", DELETE)], "inference-platform:customer", ["required"]),
    ("bad-customer-name", [("customer", "ACME Corp")], "inference-platform:customer", ["not a DNS label"]),
    ("bad-cluster-mode", [("cluster.mode", "eks")], "inference-platform:cluster.mode", ["'existing' or 'magnum'"]),
    ("no-node-groups", [("cluster.nodeGroups", [])], "inference-platform:cluster.nodeGroups", ["at least 1"]),
    ("min-over-max", [("cluster.nodeGroups.1.minNodes", 3)], "inference-platform:cluster.nodeGroups[gpu]", ["minNodes (3) exceeds maxNodes (2)"]),
    ("unknown-gpu-model", [("cluster.nodeGroups.1.gpu.model", "RTX-4090")], "inference-platform:cluster.nodeGroups[gpu].gpu.model", ["A100-80GB"]),
    ("mig-on-non-mig-gpu", [("cluster.nodeGroups.1.gpu", {"model": "L4-24GB", "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}})], "inference-platform:cluster.nodeGroups[gpu].gpu", ["no MIG", "MIG-capable"]),
    ("mig-without-profile", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "mig"})], "inference-platform:cluster.nodeGroups[gpu].gpu.sharing", ["needs migProfile"]),
    ("time-slicing-without-replicas", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "time-slicing"})], "inference-platform:cluster.nodeGroups[gpu].gpu.sharing", ["needs replicas"]),
    ("bad-sharing-mode", [("cluster.nodeGroups.1.gpu.sharing", {"mode": "vgpu"})], "inference-platform:cluster.nodeGroups[gpu].gpu.sharing.mode", ["'none'", "'mig'", "'time-slicing'", "'mps'"]),
    ("duplicate-node-group", [("cluster.nodeGroups.0.name", "gpu")], "inference-platform:cluster.nodeGroups[1].name", ["duplicate node group"]),
    ("service-to-missing-group", [(f"{V0}.gpu.group", "gpu-h100")], "inference-platform:services[svc].versions[v1].gpu.group", ["no GPU node group named 'gpu-h100'", "GPU groups: gpu"]),
    ("service-to-cpu-group", [(f"{V0}.gpu.group", "cpu")], "inference-platform:services[svc].versions[v1].gpu.group", ["no GPU node group named 'cpu'"]),
    ("missing-weight-cache", [(f"{V0}.modelRepository.cache", "s3")], "inference-platform:services[svc].versions[v1].modelRepository.cache", ["'s3' is not configured", "configured: fileShare"]),
    ("duplicate-service", [("services", "DUP")], "inference-platform:services[1].name", ["name 'svc' is already used by services[0]"]),
    ("duplicate-version", [("services.0.versions", "DUPV")], "inference-platform:services[svc].versions[1].name", ["duplicate version name 'v1'"]),
    ("wildcard-host", [("services.0.hosts", ["*.example.com"])], "inference-platform:services[svc].hosts[0]", ["no wildcards"]),
    ("auth-none-in-production", [("production", True), ("services.0.auth", {"mode": "none"})], "inference-platform:services[svc].auth.mode", ["not allowed in a production stack", "basic, jwt"]),
    ("jwt-without-issuer", [("services.0.auth", {"mode": "jwt"})], "inference-platform:services[svc].auth", ["needs jwt.issuer"]),
    ("mirror-to-missing-version", [("services.0.mirror", {"version": "v9", "percent": 10})], "inference-platform:services[svc].mirror.version", ["no version named 'v9'", "versions: v1"]),
    ("spare-slots-missing-group", [("coldStart", {"spareSlots": {"gpu-x": 1}})], "inference-platform:coldStart.spareSlots.gpu-x", ["no GPU node group named 'gpu-x'"]),
    ("queue-time-model-not-a-label", [("services.0.autoscaling", {"queueTimeModel": "my model"})],
     "inference-platform:services[svc].autoscaling.queueTimeModel", ["'my model' is not a Triton model name", "1-63 characters of [A-Za-z0-9-_.]"]),
    ("queue-time-model-empty", [(f"{V0}.autoscaling", {"queueTimeModel": ""})],
     "inference-platform:services[svc].versions[v1].autoscaling.queueTimeModel", ["'' is not a Triton model name"]),
    ("startup-budget-below-load", [(f"{V0}.modelLoadSeconds", 1200)], "inference-platform:services[svc].versions[v1]", ["startupBudgetSeconds (900) is shorter than modelLoadSeconds (1200)"]),
    ("existing-share-without-server", [("weightCaches.fileShare", {"mode": "existing"})], "inference-platform:weightCaches.fileShare", ["needs server and path"]),
    ("anonymous-kiali-in-production", [("production", True), ("mesh", {"kialiAuth": "anonymous"})], "inference-platform:mesh.kialiAuth", ["not allowed in a production stack"]),
    ("token-kiali-on-a-host-in-production", [("production", True), ("ui", {"kiali": {"host": "kiali.example.com"}})],
     "inference-platform:mesh.kialiAuth", ["logs in through its identity provider", "allowed: openid"]),
    ("gpu-quota-exceeded", [("cluster.gpuQuota", 1)], "inference-platform:cluster.gpuQuota", ["2 GPUs, over the quota of 1"]),
    ("bad-memory-quantity", [(f"{V0}.resources", {"memory": "16 GB"})], "inference-platform:services[svc].versions[v1].resources.memory", ["not a Kubernetes quantity"]),
    ("magnum-gpu-min-zero", [("cluster.mode", "magnum"), ("cluster.nodeGroups.1.minNodes", 0)], "inference-platform:cluster.nodeGroups[gpu].minNodes", ["never adds the first one", "minNodes: 1"]),
    ("capi-helm-cpu-min-zero", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}),
                                ("cluster.nodeGroups.1", {"name": "batch", "flavor": "m1", "minNodes": 0, "maxNodes": 2})],
     "inference-platform:cluster.nodeGroups[batch].minNodes", ["magnum-capi-helm refuses minNodes 0"]),
    ("capi-helm-names-alike-once-sanitized", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}),
                                              ("cluster.nodeGroups.0.name", "cpu-a"), ("cluster.nodeGroups.1.name", "cpu--a"), (f"{V0}.gpu.group", "cpu--a")],
     "inference-platform:cluster.nodeGroups[1].name", ["'cpu--a' is 'cpu-a' to magnum-capi-helm", "like 'cpu-a'"]),
    ("cluster-api-initial-nodes-above-min", [("cluster.mode", "magnum"), ("cluster.nodeGroups.1.initialNodes", 2)],
     "inference-platform:cluster.nodeGroups[gpu].initialNodes", ["magnum-cluster-api starts an autoscaled group at minNodes", "raise minNodes to 2"]),
    ("capi-helm-initial-nodes-above-min", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}),
                                           ("cluster.nodeGroups.1.flavor", "g1"), ("cluster.nodeGroups.1.initialNodes", 2)],
     "inference-platform:cluster.nodeGroups[gpu].initialNodes", ["magnum-capi-helm starts an autoscaled group at minNodes"]),
    ("existing-group-without-selector", [("cluster.nodeGroups.0.selector", DELETE)], "inference-platform:cluster.nodeGroups[cpu].selector",
     ["required in mode existing"]),
    ("magnum-group-with-selector", [("cluster.mode", "magnum"), ("cluster.nodeGroups.0.selector", {"pool": "cpu"})],
     "inference-platform:cluster.nodeGroups[cpu].selector", ["not in mode magnum", "labels the group's nodes itself"]),
    ("heat-plain-kube-tag", [("cluster.mode", "magnum"), ("cluster.magnum", {"driver": "heat"})],
     "inference-platform:cluster.magnum.kubernetesVersion", ["rancher/hyperkube", "v1.34.1-rancher1"]),
    ("capi-rancher-kube-tag", [("cluster.mode", "magnum"), ("cluster.magnum", {"kubernetesVersion": "v1.34.1-rancher1"})],
     "inference-platform:cluster.magnum.kubernetesVersion", ["for the heat driver"]),
    ("heat-floating-ip-without-lb", [("cluster.mode", "magnum"), ("cluster.magnum", {"driver": "heat", "kubernetesVersion": "v1.34.1-rancher1", "template": {"masterLbEnabled": False}})],
     "inference-platform:cluster.magnum.template.masterLbEnabled", ["needs the API load balancer"]),
    ("vexxhost-allow-list", [("cluster.mode", "magnum"), ("cluster.magnum", {"apiAllowedCidrs": ["203.0.113.0/24"]})],
     "inference-platform:cluster.magnum.apiAllowedCidrs", ["magnum-cluster-api has no label"]),
    ("capi-helm-allow-list", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm", "apiAllowedCidrs": ["203.0.113.0/24"]})],
     "inference-platform:cluster.magnum.apiAllowedCidrs", ["does not apply", "API would stay open", "security group"]),
    ("heat-containerd-without-cri-v1", [("cluster.mode", "magnum"), ("cluster.magnum", {"driver": "heat", "kubernetesVersion": "v1.34.1-rancher1", "template": {"labels": {"containerd_version": "1.4.4", "containerd_tarball_sha256": "96641849cb78a0a119223a427dfdc1ade88412ef791a14193212c8c8e29d447b"}}})],
     "inference-platform:cluster.magnum.template.labels.containerd_version", ["has no CRI v1", "v1.34.1-rancher1", "1.6 or later"]),
    ("heat-containerd-without-checksum", [("cluster.mode", "magnum"), ("cluster.magnum", {"driver": "heat", "kubernetesVersion": "v1.34.1-rancher1", "template": {"labels": {"containerd_version": "1.7.25"}}})],
     "inference-platform:cluster.magnum.template.labels.containerd_version", ["needs containerd_tarball_sha256"]),
    ("capi-helm-time-slicing", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}), ("cluster.nodeGroups.1.flavor", "g1"), ("cluster.nodeGroups.1.gpu.sharing", {"mode": "time-slicing", "replicas": 4})],
     "inference-platform:cluster.nodeGroups[gpu].gpu.sharing.mode", ["needs a device-plugin config", "run their own GPU operator", "allowed: none or mig"]),
    ("capi-helm-driver-mode", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}), ("cluster.nodeGroups.1.flavor", "g1"), ("gpuOperator", {"driver": {"mode": "compiled"}})],
     "inference-platform:gpuOperator.driver", ["run their own GPU operator", "remove the key"]),
    ("capi-helm-taints", [("cluster.mode", "magnum"), ("cluster.magnum", {"clusterApiDriver": "magnum-capi-helm"}), ("cluster.nodeGroups.1.flavor", "g1"), ("cluster.nodeGroups.1.taints", [{"key": "example.com/pool", "value": "x"}])],
     "inference-platform:cluster.nodeGroups[gpu].taints", ["applies no taints"]),
    ("subnet-without-network", [("cluster.mode", "magnum"), ("cluster.magnum", {"fixedSubnet": "nodes"})],
     "inference-platform:cluster.magnum.fixedNetwork", ["required with fixedSubnet"]),
    ("subnet-cidr-with-fixed-subnet", [("cluster.mode", "magnum"), ("cluster.magnum", {"fixedNetwork": "n", "fixedSubnet": "s", "subnetCidr": "10.1.0.0/24"})],
     "inference-platform:cluster.magnum.subnetCidr", ["read from Neutron"]),
    ("magnum-reserved-role", [("cluster.mode", "magnum"), ("cluster.nodeGroups.1.name", "worker"), (f"{V0}.gpu.group", "worker")], "inference-platform:cluster.nodeGroups[1].name", ["role Magnum gives its own node groups"]),
    ("even-master-count", [("cluster.mode", "magnum"), ("cluster.magnum", {"masterCount": 2})], "inference-platform:cluster.magnum.masterCount", ["odd"]),
    ("s3-without-credentials", [("weightCaches.s3", {"endpoint": "https://s3.example.com", "bucket": "weights"})], "inference-platform:s3AccessKeyId", ["needs the secret"]),
    ("per-try-over-route-timeout", [("services.0.timeoutSeconds", 60), ("services.0.retries", {"perTryTimeoutSeconds": 90})],
     "inference-platform:services[svc].retries.perTryTimeoutSeconds", ["90 s exceeds the service's timeoutSeconds (60 s)", "allowed: at most timeoutSeconds"]),
    ("exit-timeout-below-route-timeout", [("services.0.timeoutSeconds", 120), (f"{V0}.serverArgs", {"exit-timeout-secs": "30"})],
     "inference-platform:services[svc].versions[v1].serverArgs.exit-timeout-secs", ["shorter than the service's timeoutSeconds (120 s)", "allowed: at least 120"]),
    ("list-on-single-valued-flag", [(f"{V0}.serverArgs", {"log-verbose": ["1", "2"]})],
     "inference-platform:services[svc].versions[v1].serverArgs", ["--log-verbose takes one value, not a list", "backend-config"]),
    ("misspelt-buffer-manager-flag", [(f"{V0}.serverArgs", {"buffer-management-thread-count": "2"})],
     "inference-platform:services[svc].versions[v1].serverArgs", ["'buffer-management-thread-count' is not allowed", "buffer-manager-thread-count"]),
    ("retry-on-with-space", [("services.0.retries", {"retryOn": "connect-failure, unavailable"})],
     "inference-platform:services[svc].retries.retryOn", ["without spaces"]),
    ("receiver-without-secret", [("observability", {"alerting": {"receivers": [{"name": "oncall", "pagerduty": {}}], "critical": ["oncall"]}})],
     "inference-platform:observability.alerting.receivers[oncall]", ["needs its pagerduty credential", "alertReceiverSecrets.oncall", "--secret"]),
    ("duplicate-receiver", [("observability", {"alerting": {"receivers": [{"name": "a", "webhook": {}}, {"name": "a", "pagerduty": {}}]}})],
     "inference-platform:observability.alerting.receivers[1].name", ["duplicate receiver name 'a'"]),
    ("warning-to-unknown-receiver", [("observability", {"alerting": {"warning": ["chat"]}})],
     "inference-platform:observability.alerting.warning[0]", ["no receiver named 'chat'", "receivers: none"]),
    # Tuning and the model pipeline.
    ("tuning-model-with-slash", [(f"{V0}.tuning", {"model": "models/resnet"})],
     "inference-platform:services[svc].versions[v1].tuning.model", ["should match pattern"]),
    ("tuning-unknown-objective", [(f"{V0}.tuning", {"model": "m", "objectives": {"speed": 10}})],
     "inference-platform:services[svc].versions[v1].tuning.objectives.speed", ["'throughput'", "'gpuUtilization'", '"speed"']),
    ("tuning-objective-weight-zero", [(f"{V0}.tuning", {"model": "m", "objectives": {"throughput": 0}})],
     "inference-platform:services[svc].versions[v1].tuning.objectives.throughput", ["greater than or equal to 1"]),
    ("tuning-negative-latency-budget", [(f"{V0}.tuning", {"model": "m", "constraints": {"latencyP99Ms": -1}})],
     "inference-platform:services[svc].versions[v1].tuning.constraints.latencyP99Ms", ["greater than or equal to 0.01"]),
    ("tuning-keeps-nothing", [(f"{V0}.tuning", {"model": "m", "keep": 0})],
     "inference-platform:services[svc].versions[v1].tuning.keep", ["greater than or equal to 1"]),
    ("tuning-sdk-image-not-an-image", [(f"{V0}.tuning", {"model": "m", "sdkImage": "not an image"})],
     "inference-platform:services[svc].versions[v1].tuning.sdkImage", ["is not an image reference"]),
    ("preset-name-uppercase", [("tuningPresets", {"Fast": {}})], "inference-platform:tuningPresets.Fast", ["should match pattern"]),
    ("preset-preferred-over-max", [("tuningPresets", {"fast": {"maxBatchSize": 4, "preferredBatchSizes": [8]}})],
     "inference-platform:tuningPresets.fast", ["exceed maxBatchSize 4", "allowed: sizes up to maxBatchSize"]),
    ("pipeline-prefix-escapes", [("services.0.pipeline", {**PIPELINE, "repositoryPrefix": "../x"}), ("modelPipeline", {"enabled": True})],
     "inference-platform:services[svc].pipeline.repositoryPrefix", ["is not a relative path", "no '..'"]),
    ("pipeline-zero-dim", [("services.0.pipeline", {**PIPELINE, "inputs": {"input": [0]}}), ("modelPipeline", {"enabled": True})],
     "inference-platform:services[svc].pipeline.inputs.input[0]", ["greater than or equal to 1"]),
    ("pipeline-input-name-with-space", [("services.0.pipeline", {**PIPELINE, "inputs": {"a b": [3]}}), ("modelPipeline", {"enabled": True})],
     'inference-platform:services[svc].pipeline.inputs["a b"]', ["should match pattern"]),
    ("pipeline-canary-over-half", [("services.0.pipeline", {**PIPELINE, "canaryWeight": 60}), ("modelPipeline", {"enabled": True})],
     "inference-platform:services[svc].pipeline.canaryWeight", ["less than or equal to 50"]),
    ("pipeline-unknown-base-version", [("services.0.pipeline", {**PIPELINE, "baseVersion": "v9"}), ("modelPipeline", {"enabled": True})],
     "inference-platform:services[svc].pipeline.baseVersion", ["no version named 'v9'", "versions: v1"]),
    ("s3-adopt-with-force-destroy", [("weightCaches.s3", {"endpoint": "https://s3.example.com", "bucket": "weights", "adopt": True, "forceDestroy": True})],
     "inference-platform:weightCaches.s3.forceDestroy", ["not allowed with adopt: true", "allowed: forceDestroy: false"]),
]


def _apply(edits) -> dict:
    raw = base_config()
    for path, value in edits:
        if value == "DUP":
            raw["services"].append(dict(raw["services"][0], hosts=["other.example.com"]))
        elif value == "DUPV":
            raw["services"][0]["versions"] = [dict(raw["services"][0]["versions"][0], weight=50)] * 2
        elif (path, value) == ("cluster.mode", "magnum"):
            as_magnum(raw)
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


def test_a_selector_on_magnum_is_refused_where_it_was_written_only():
    raw = _apply([("cluster.mode", "magnum"), ("cluster.nodeGroups.0.selector", {"pool": "cpu"})])
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    with pytest.raises(ConfigError) as info:
        parse(raw)
    assert info.value.paths == ["inference-platform:cluster.nodeGroups[cpu].selector"]


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
        "inference-platform:services[svc].versions",
        "inference-platform:services[svc].versions[v1].gpu.group",
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


# --------------------------------------------------------------------------- forms Pulumi's CLI writes

# (what `pulumi config set` writes into the stack file, accepted?) per pkg/resource/config:
# top-level values are always strings; with --path, "true"/"false" become booleans and
# integers (no leading zero) become integers, anything else stays a string; --type sets the type.
PULUMI_FORMS = [
    ("set production true", "  inference-platform:production: \"true\"\n", True),
    ("set --type bool production true", "  inference-platform:production: true\n", True),
    ("set production yes", "  inference-platform:production: \"yes\"\n", False),
    ("set production True (hand-written string)", "  inference-platform:production: \"True\"\n", False),
]
PATH_FORMS = [
    ("--path weight 90", ("services", 0, "versions", 0, "weight"), 90, True),
    ("--path --type string weight 90", ("services", 0, "versions", 0, "weight"), "90", False),
    ("--path timeoutSeconds 0.5 (a decimal stays a string)", ("services", 0, "timeoutSeconds"), "0.5", True),
    ("--path --type float timeoutSeconds 0.5", ("services", 0, "timeoutSeconds"), 0.5, True),
    ("--path --type int timeoutSeconds 30", ("services", 0, "timeoutSeconds"), 30, True),
    ("--path --type string timeoutSeconds fast", ("services", 0, "timeoutSeconds"), "fast", False),
    ("--path minReplicas 0.5 (a decimal string is not an integer)", ("services", 0, "autoscaling", "minReplicas"), "0.5", False),
    ("--path mesh.enabled false", ("mesh", "enabled"), False, True),
    ("--path --type string mesh.enabled false", ("mesh", "enabled"), "false", False),
    ("--path serverArgs.log-verbose 1", ("services", 0, "versions", 0, "serverArgs", "log-verbose"), 1, True),
    ("--path serverArgs.log-verbose true", ("services", 0, "versions", 0, "serverArgs", "log-verbose"), True, False),
    ("--path serverArgs.backend-config[0] python,...", ("services", 0, "versions", 0, "serverArgs", "backend-config"),
     ["python,shm-default-byte-size=16777216"], True),
    ("--path serverArgs.model-load-gpu-limit[0] 0:0.9", ("services", 0, "versions", 0, "serverArgs", "model-load-gpu-limit"), ["0:0.9"], True),
    ("--path serverArgs.log-verbose[0] 1 (a list on a one-value flag)", ("services", 0, "versions", 0, "serverArgs", "log-verbose"), [1], False),
    ("--path serverArgs.exit-timeout-secs 600", ("services", 0, "versions", 0, "serverArgs", "exit-timeout-secs"), 600, True),
    ("--path retries.perTryTimeoutSeconds 0.5", ("services", 0, "retries", "perTryTimeoutSeconds"), "0.5", True),
]


def _settings_of(tmp_path, text: str):
    from platformctl.engine import stack_settings

    path = tmp_path / "Pulumi.forms.yaml"
    path.write_text(text)
    return stack_settings(path)


@pytest.mark.parametrize("form,line,accepted", PULUMI_FORMS, ids=[f[0] for f in PULUMI_FORMS])
def test_top_level_forms_pulumi_writes(tmp_path, form, line, accepted):
    from tests.support.hostile_corpus import ROOT as root

    demo = (root / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    # With TLS: a production stack sends resnet's Basic credentials over HTTPS only.
    tls = "  inference-platform:mesh:\n    tls: {enabled: true, secretName: demo-tls}\n"
    plain_http = "  inference-platform:mesh:\n    allowPlainHttpCredentials: true\n"  # refused in production
    assert plain_http in demo
    text = demo.replace("  inference-platform:production: false\n", line).replace(plain_http, tls)
    if accepted:
        assert _settings_of(tmp_path, text).production is ("true" in line)
    else:
        with pytest.raises(ConfigError, match=r"inference-platform:production: Input should be a valid boolean"):
            _settings_of(tmp_path, text)


@pytest.mark.parametrize("form,path,value,accepted", PATH_FORMS, ids=[f[0] for f in PATH_FORMS])
def test_path_forms_pulumi_writes(tmp_path, form, path, value, accepted):
    from tests.support.hostile_corpus import dump, example, key_path

    doc = example("demo-dev")
    node = doc["config"]
    keys = (f"inference-platform:{path[0]}",) + path[1:]
    for k in keys[:-1]:
        node = node[k] if isinstance(node, list) else node.setdefault(k, {})
    node[keys[-1]] = value
    if accepted:
        _settings_of(tmp_path, dump(doc).decode())
    else:
        with pytest.raises(ConfigError) as err:
            _settings_of(tmp_path, dump(doc).decode())
        assert key_path(path, doc) in err.value.one_line() or key_path(path[:-1], doc) in err.value.one_line()


# --------------------------------------------------------------------------- UI hosts

GRAFANA_OIDC = {"authUrl": "https://sso.example.com/auth", "tokenUrl": "https://sso.example.com/token",
                "apiUrl": "https://sso.example.com/userinfo", "clientId": "grafana"}
TLS = {"tls": {"enabled": True, "secretName": "test-tls"}}
# (case id, raw edits, secret keys, expected key path, words the message must contain)
BAD_UI = [
    ("ui-dev-without-tls", {"ui": {"kiali": {"host": "kiali.example.com"}}}, (),
     "inference-platform:ui.kiali.host", ["needs HTTPS", "allowPlainHttp: true"]),
    ("ui-without-mesh", {"mesh": {"enabled": False}, "ui": {"kiali": {"host": "kiali.example.com"}, "allowPlainHttp": True}}, (),
     "inference-platform:ui.kiali.host", ["mesh.enabled: true"]),
    ("ui-grafana-without-observability", {"mesh": TLS, "observability": {"enabled": False},
                                          "ui": {"grafana": {"host": "grafana.example.com"}}}, (),
     "inference-platform:ui.grafana.host", ["observability.enabled: false"]),
    ("ui-host-is-a-service-host", {"mesh": TLS, "ui": {"grafana": {"host": "svc.example.com"}}}, (),
     "inference-platform:ui.grafana.host", ["already served by services[0]"]),
    ("ui-oidc-without-provider", {"mesh": TLS, "ui": {"grafana": {"host": "g.example.com", "auth": "oidc"}}}, (),
     "inference-platform:ui.grafana", ["needs oidc.authUrl"]),
    ("ui-oidc-without-secret", {"mesh": TLS, "ui": {"grafana": {"host": "g.example.com", "auth": "oidc", "oidc": GRAFANA_OIDC}}}, (),
     "inference-platform:grafanaOidcClientSecret", ["pulumi config set --secret grafanaOidcClientSecret"]),
    ("ui-secret-without-oidc", {"mesh": TLS, "ui": {"grafana": {"host": "g.example.com"}}, "grafanaOidcClientSecret": "s"},
     ("grafanaOidcClientSecret",), "inference-platform:grafanaOidcClientSecret", ["applies to ui.grafana.auth 'oidc' only"]),
    ("ui-oidc-secret-in-plain-text", {"mesh": TLS, "ui": {"grafana": {"host": "g.example.com", "auth": "oidc", "oidc": GRAFANA_OIDC}},
                                      "grafanaOidcClientSecret": "s"}, (),
     "inference-platform:grafanaOidcClientSecret", ["must be a secret"]),
    ("ui-plain-http-in-production", {"production": True, "ui": {"allowPlainHttp": True}}, (),
     "inference-platform:ui.allowPlainHttp", ["not allowed in a production stack"]),
]


@pytest.mark.parametrize("case,edits,secrets,path,words", BAD_UI, ids=[c[0] for c in BAD_UI])
def test_bad_ui_config_names_path_and_problem(case, edits, secrets, path, words):
    with pytest.raises(ConfigError) as info:
        parse(base_config() | edits, secrets)
    assert path in info.value.paths, f"{case}: {info.value.one_line()}"
    for w in words:
        assert w in info.value.one_line(), f"{case}: {w!r} not in {info.value.one_line()}"


def test_ui_is_off_by_default_and_plain_http_is_an_explicit_dev_choice():
    assert parse(base_config()).ui.hosts == {}
    s = parse(base_config() | {"ui": {"grafana": {"host": "grafana.example.com"}, "allowPlainHttp": True}})
    assert s.ui.hosts == {"grafana": "grafana.example.com"} and s.ui.grafana.auth == "admin"


def test_retry_defaults_fit_expensive_non_idempotent_requests():
    service = parse(base_config()).services[0]
    assert service.retries.retry_on == "connect-failure,refused-stream,unavailable"
    assert service.retries.per_try_timeout_seconds is None
    assert service.per_try_timeout_seconds == service.timeout_seconds == 60


def test_alert_receiver_credentials_are_secrets():
    raw = base_config() | {
        "observability": {"alerting": {"receivers": [{"name": "oncall", "pagerduty": {}}], "critical": ["oncall"]}},
        "alertReceiverSecrets": {"oncall": "0123456789abcdef0123456789abcdef"},
    }
    with pytest.raises(ConfigError) as info:
        parse(raw)
    assert info.value.paths == ["inference-platform:alertReceiverSecrets"]
    assert "0123456789abcdef" not in info.value.one_line()
    settings = parse(raw, {"alertReceiverSecrets"})
    assert "0123456789abcdef" not in repr(settings)
    assert settings.alert_receiver_secrets["oncall"].get_secret_value() == "0123456789abcdef0123456789abcdef"


def test_secret_keys_are_the_top_level_keys_that_hold_a_secret():
    from typing import Optional

    from pydantic import SecretStr, create_model

    from inference_platform.settings import stack
    from inference_platform.settings.base import Model

    assert stack.SECRET_KEYS == ("kubeconfig", "s3AccessKeyId", "s3SecretAccessKey", "grafanaOidcClientSecret",
                                 "alertReceiverSecrets", "trainingSecrets")
    # A new secret field, at any depth of its annotation, joins them.
    token = create_model("Token", __base__=Model, value=(SecretStr, ...))
    grown = create_model("Grown", __base__=stack.Settings, registry_token=(Optional[dict[str, list[SecretStr]]], None),
                         registry_tokens=(list[token], []), registry_user=(str, "pull"))
    held = tuple(f.alias or n for n, f in grown.model_fields.items() if stack._holds_secret(f.annotation))
    assert held == (*stack.SECRET_KEYS, "registryToken", "registryTokens")


def test_clashing_deployment_names_are_refused_by_the_loader():
    raw = clashing_deployment_names()
    with pytest.raises(ConfigError) as err:
        parse_settings(raw, "stacks/Pulumi.t.yaml")
    assert err.value.paths == ["inference-platform:services[a].versions[0].name"]
    assert "Deployment name 'a-b-c' in namespace 'shared' is already a-b/c's" in str(err.value)


def test_the_platform_runs_on_a_magnum_clusters_first_cpu_group_and_anywhere_on_an_existing_cluster():
    magnum = as_magnum(base_config())
    magnum["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    assert parse(magnum).cluster.system_selector == {"node.cluster.x-k8s.io/nodegroup": "default-worker"}
    # An existing cluster names no system group.
    assert parse(base_config()).cluster.system_selector == {}
