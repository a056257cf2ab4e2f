"""A corpus of hostile stack files generated from the example stacks, and unusual valid ones.

Each hostile case is (id, file bytes, what the one error line must name): a key path
(`inference-platform:services[resnet].versions[v2].weight`, items by name) or, for files that are not a
well-formed mapping, a `file:line:col` location (`LOCATION`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterator

import yaml

from inference_platform.settings.errors import format_path

ROOT = Path(__file__).resolve().parents[2]
NS = "inference-platform"
LOCATION = object()


def example(stack: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())


def dump(doc: Any) -> bytes:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


def key_path(path: tuple, doc: dict | None = None) -> str:
    """("services", 0, "hosts", 1) -> inference-platform:services[0].hosts[1], or with the stack
    file `doc` the path points into, items by name: inference-platform:services[resnet].hosts[1]."""
    config = {k.removeprefix(f"{NS}:"): v for k, v in doc["config"].items()} if doc else None
    return format_path(path, NS, config)


def _set(doc: dict, path: tuple, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    node = doc["config"]
    keys = (f"{NS}:{path[0]}",) + path[1:]
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value
    return doc


def _leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    else:
        yield path, value


def _config_leaves(doc: dict) -> Iterator[tuple[tuple, Any]]:
    for key, value in doc["config"].items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            continue
        # Secure values nested in a map (alertReceiverSecrets.<name>) are opaque as well.
        yield from (leaf for leaf in _leaves(value, (key.split(":", 1)[1],)) if leaf[0][-1] != "secure")


def _wrong_types(value: Any, path: tuple) -> list[Any]:
    """Values of a type the field does not take: strict typing must refuse each at this path."""
    if isinstance(value, bool):
        # Nested booleans arrive typed; only a top-level one comes as the text Pulumi writes.
        return ["yes", "on", 1, "off", "True"] if len(path) == 1 else ["yes", "true", 1, "off"]
    if isinstance(value, int):
        return [str(value), True, [value], {"v": value}]
    if isinstance(value, float):
        return [True, "fast", [value]]
    if isinstance(value, str):
        if len(path) == 1:  # top-level values reach the program as text either way
            return [["x"], {"a": "b"}]
        return [123, True, ["x"], {"a": "b"}, 1.5]
    return []


def type_cases() -> Iterator[tuple[str, bytes, Any]]:
    """Every leaf of both example stacks with values of the wrong type."""
    for stack in ("demo-dev", "acme-prod"):
        doc = example(stack)
        for path, value in _config_leaves(doc):
            if path[-1] == "migProfile":
                continue  # a name or a mix: both types are allowed
            for i, bad in enumerate(_wrong_types(value, path)):
                if "serverArgs" in path and type(bad) is int:
                    continue  # `pulumi config set --path` writes flag values as integers: taken as text
                bad_doc = _set(doc, path, bad)
                yield f"{stack}:type:{key_path(path)}:{i}", dump(bad_doc), key_path(path, bad_doc)


V = ("services", 0, "versions", 0)
HOSTILE_VALUES: list[tuple[str, tuple, Any]] = [
    # lax coercion
    ("weight-string", V + ("weight",), "90"),
    ("weight-bool", V + ("weight",), True),
    ("minnodes-string", ("cluster", "nodeGroups", 0, "minNodes"), "2"),
    ("production-yes", ("production",), "yes"),
    ("mesh-enabled-off", ("mesh",), {"enabled": "off"}),
    # non-finite and absurd numbers
    ("timeout-inf", ("services", 0, "timeoutSeconds"), float("inf")),
    ("timeout-nan", ("services", 0, "timeoutSeconds"), float("nan")),
    ("timeout-tiny", ("services", 0, "timeoutSeconds"), 0.00001),
    ("timeout-huge", ("services", 0, "timeoutSeconds"), 1e300),
    ("sampling-over-100", ("mesh",), {"tracingSamplingPercent": 1000}),
    ("queue-target-huge", ("services", 0, "autoscaling", "queueTimeTargetUs"), 10**15),
    # the queue-time model becomes a label selector, then a PromQL matcher
    ("queue-model-empty", ("services", 0, "autoscaling", "queueTimeModel"), ""),
    ("queue-model-newline", ("services", 0, "autoscaling", "queueTimeModel"), "bottleneck\n"),
    ("queue-model-64", ("services", 0, "autoscaling", "queueTimeModel"), "m" * 64),
    ("queue-model-matcher-injection", ("services", 0, "autoscaling", "queueTimeModel"), 'a",pod=~".*'),
    ("queue-model-trailing-dot", ("services", 0, "autoscaling", "queueTimeModel"), "bottleneck."),
    ("queue-model-list", ("services", 0, "autoscaling", "queueTimeModel"), ["a", "b"]),
    ("alert-ratio-negative", ("observability",), {"alerts": {"failureRatio": -0.5}}),
    ("stage-seconds-huge", ("coldStart",), {"stageSeconds": {"nodeBoot": 10**9}}),
    ("percent-string-inf", ("mesh",), {"tracingSamplingPercent": "inf"}),
    # strings copied into manifests
    ("realm-crlf", ("services", 0, "auth"), {"mode": "basic", "realm": "x\r\nSet-Cookie: a=b"}),
    ("realm-quote", ("services", 0, "auth"), {"mode": "basic", "realm": 'a"b'}),
    ("host-trailing-newline", ("services", 0, "hosts", 0), "resnet.demo.example.com\n"),
    ("host-64-label", ("services", 0, "hosts", 0), "a" * 64 + ".example.com"),
    ("host-uppercase", ("services", 0, "hosts", 0), "Resnet.Example.com"),
    ("host-empty", ("services", 0, "hosts", 0), ""),
    ("host-ip", ("services", 0, "hosts", 0), "10.0.0.1"),
    ("image-no-tag", V + ("image",), "nvcr.io/nvidia/tritonserver"),
    ("image-double-slash", V + ("image",), "nvcr.io//nvidia/tritonserver:25.01-py3"),
    ("image-uppercase", V + ("image",), "nvcr.io/NVIDIA/tritonserver:25.01-py3"),
    ("image-space", V + ("image",), "nvcr.io/nvidia/tritonserver:25.01 py3"),
    ("image-bad-digest", V + ("image",), "nvcr.io/nvidia/tritonserver@sha256:xyz"),
    ("image-newline", V + ("image",), "nvcr.io/nvidia/tritonserver:25.01-py3\n"),
    ("image-latest", V + ("image",), "nvcr.io/nvidia/tritonserver:latest"),
    ("image-latest-registry-port", V + ("image",), "registry.local:5000/triton/server:latest"),
    ("tuning-sdk-image-latest", ("services", 0, "versions", 1, "tuning", "sdkImage"), "nvcr.io/nvidia/tritonserver:latest"),
    ("tuning-sdk-image-untagged", ("services", 0, "versions", 1, "tuning", "sdkImage"), "nvcr.io/nvidia/tritonserver"),
    ("tuning-shape-zero", ("services", 0, "versions", 1, "tuning", "shapes"), {"input_ids": [0]}),
    ("tuning-shape-negative", ("services", 0, "versions", 1, "tuning", "shapes"), {"input_ids": [-1]}),
    ("tuning-shape-huge", ("services", 0, "versions", 1, "tuning", "shapes"), {"input_ids": [1 << 40]}),
    ("tuning-shape-text", ("services", 0, "versions", 1, "tuning", "shapes"), {"input_ids": "128"}),
    ("tuning-shape-flag-injection", ("services", 0, "versions", 1, "tuning", "shapes"), {"x --input-data=/etc": [1]}),
    ("tuning-input-data-path", ("services", 0, "versions", 1, "tuning", "inputData"), "/etc/passwd"),
    ("tuning-gpu-memory-on-mig", ("services", 0, "versions", 1, "tuning", "constraints"), {"maxGpuMemoryMb": 9000}),
    ("pipeline-submitter-kind", ("modelPipeline", "submitters", 0, "kind"), "ClusterRole"),
    ("pipeline-submitter-newline", ("modelPipeline", "submitters", 0, "name"), "ml-engineers\nsystem:masters"),
    ("pipeline-submitter-sa-without-namespace", ("modelPipeline", "submitters", 0), {"kind": "ServiceAccount", "name": "ci"}),
    ("version-provenance-hash", ("services", 0, "versions", 1, "provenance"),
     {"workflow": "resnet-pipeline-x", "onnx": "resnet/model.onnx", "onnxSha256": "../../etc/passwd"}),
    ("model-path-dotdot", V + ("modelRepository", "path"), "resnet/../../etc"),
    ("model-path-absolute", V + ("modelRepository", "path"), "/etc/passwd"),
    ("model-path-double-slash", V + ("modelRepository", "path"), "resnet//v1"),
    ("model-path-empty", V + ("modelRepository", "path"), ""),
    ("version-name-upper", V + ("name",), "V1"),
    ("version-name-long", V + ("name",), "v" * 21),
    ("service-name-underscore", ("services", 0, "name"), "res_net"),
    ("service-name-64", ("services", 0, "name"), "s" * 64),
    ("customer-newline", ("customer",), "demo\n"),
    ("customer-empty", ("customer",), ""),
    ("environment-dots", ("environment",), "dev.1"),
    ("retry-on-bad", ("services", 0, "retries"), {"retryOn": "5xx,everything"}),
    ("retry-on-space", ("services", 0, "retries"), {"retryOn": "5xx, reset"}),
    ("retry-on-empty", ("services", 0, "retries"), {"retryOn": ""}),
    ("flag-unknown", V + ("serverArgs",), {"model-repository": "/etc"}),
    ("flag-int-bad", V + ("serverArgs",), {"log-verbose": "lots"}),
    ("flag-bool-bad", V + ("serverArgs",), {"strict-readiness": "yes"}),
    ("flag-space", V + ("serverArgs",), {"backend-config": "python,shm-default-byte-size=1 --model-repository=/"}),
    ("flag-dash", V + ("serverArgs",), {"host-policy": "--x"}),
    ("flag-choice", V + ("serverArgs",), {"log-format": "json"}),
    ("flag-list-on-single", V + ("serverArgs",), {"log-verbose": ["1", "2"]}),
    ("flag-list-empty", V + ("serverArgs",), {"backend-config": []}),
    ("flag-list-hostile-item", V + ("serverArgs",), {"backend-config": ["python,a=1", "x --model-repository=/"]}),
    ("exit-timeout-below-route", V + ("serverArgs",), {"exit-timeout-secs": "1"}),
    ("per-try-over-route", ("services", 0, "retries"), {"perTryTimeoutSeconds": 3600}),
    ("memory-bad-unit", V + ("resources",), {"memory": "16GB"}),
    ("memory-zero", V + ("resources",), {"memory": "0"}),
    ("cpu-negative", V + ("resources",), {"cpu": "-1"}),
    ("cpu-limit-below-request", V + ("resources",), {"cpu": "4", "cpuLimit": "2"}),
    ("memory-limit-below-request", V + ("resources",), {"memory": "16Gi", "memoryLimit": "8Gi"}),
    ("shm-text", V + ("resources",), {"shmSize": "lots"}),
    ("model-name-empty", V + ("modelControl",), {"mode": "explicit", "load": [""]}),
    ("model-name-dotdot", V + ("modelControl",), {"mode": "explicit", "load": ["../x"]}),
    ("config-name-slash", V + ("modelConfigName",), "a/b"),
    ("gpu-count-over-node", V + ("gpu", "count"), 16),
    ("gpu-group-upper", V + ("gpu", "group"), "GPU"),
    ("reserved-ns-monitoring", ("services", 0, "name"), "monitoring"),
    ("reserved-ns-default", ("services", 0, "name"), "default"),
    ("reserved-ns-kube", ("services", 0, "namespace"), "kube-public"),
    ("reserved-ns-istio", ("services", 0, "namespace"), "istio-system"),
    ("reserved-ns-gpu-operator", ("services", 0, "namespace"), "gpu-operator"),
    ("reserved-ns-csi", ("services", 0, "namespace"), "csi-s3"),
    ("reserved-ns-coldstart", ("services", 0, "namespace"), "gpu-coldstart"),
    ("node-label-key-space", ("cluster", "nodeGroups", 0, "labels"), {"bad key": "x"}),
    ("node-label-value-long", ("cluster", "nodeGroups", 0, "labels"), {"team": "x" * 64}),
    ("taint-key-bad", ("cluster", "nodeGroups", 0, "taints"), [{"key": "a b", "value": "x"}]),
    ("storage-class-empty", ("observability",), {"storageClass": ""}),
    ("storage-class-upper", ("observability",), {"storageClass": "Fast"}),
    ("retention-zero", ("observability",), {"prometheusRetention": "0d"}),
    ("annotation-key-space", ("mesh",), {"gatewayAnnotations": {"bad key": "x"}}),
    ("annotation-value-newline", ("mesh",), {"gatewayAnnotations": {"a.b/c": "x\ny"}}),
    ("tls-secret-upper", ("mesh",), {"tls": {"enabled": True, "secretName": "TLS"}}),
    ("kiali-issuer-userinfo", ("mesh",), {"kialiAuth": "openid", "kialiOpenid": {"issuerUri": "https://u:p@id.example.com", "clientId": "kiali"}}),
    ("kiali-issuer-http", ("mesh",), {"kialiAuth": "openid", "kialiOpenid": {"issuerUri": "http://id.example.com", "clientId": "kiali"}}),
    ("jwks-query", ("services", 0, "auth"), {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks?x=1"}}),
    ("jwks-no-host", ("services", 0, "auth"), {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https:///jwks"}}),
    ("jwks-fragment", ("services", 0, "auth"), {"mode": "jwt", "jwt": {"issuer": "https://id.example.com", "jwksUri": "https://id.example.com/jwks#k"}}),
    ("nfs-server-bad", ("weightCaches", "fileShare", "server"), "nfs server"),
    ("nfs-path-relative", ("weightCaches", "fileShare", "path"), "exports/models"),
    ("nfs-path-dotdot", ("weightCaches", "fileShare", "path"), "/exports/../etc"),
    ("nfs-server-newline", ("weightCaches", "fileShare", "server"), "10.0.0.20\n"),
    ("spare-slots-string", ("coldStart", "spareSlots", "gpu-a100"), "1"),
    ("spare-slots-huge", ("coldStart", "spareSlots", "gpu-a100"), 1000),
    # closed lists: a node OS outside it, or inside it but with no driver for the stack's mode
    ("os-unknown", ("cluster", "nodeGroups", 1, "os"), "windows-2022"),
    ("os-uppercase", ("cluster", "nodeGroups", 1, "os"), "Ubuntu-24.04"),
    ("os-trailing-newline", ("cluster", "nodeGroups", 1, "os"), "ubuntu-24.04\n"),
    ("os-version-only", ("cluster", "nodeGroups", 1, "os"), "24.04"),
    ("os-without-precompiled-driver", ("cluster", "nodeGroups", 1, "os"), "rhel-9"),
    ("selector-key-space", ("cluster", "nodeGroups", 0, "selector"), {"bad key": "x"}),
    ("selector-not-a-map", ("cluster", "nodeGroups", 0, "selector"), "pool=cpu"),
    ("context-newline", ("cluster", "existing", "context"), "demo\nx"),
    ("context-empty", ("cluster", "existing", "context"), ""),
    ("mirror-percent-zero", ("services", 0), "MIRROR0"),
]

S3 = ("weightCaches", "s3")
MAGNUM = ("cluster", "magnum")
MAGNUM_VALUES: list[tuple[str, tuple, Any]] = [
    ("magnum-driver-unknown", MAGNUM + ("driver",), "openshift"),
    ("magnum-driver-case", MAGNUM + ("driver",), "ClusterApi"),
    ("magnum-capi-driver-unknown", MAGNUM + ("clusterApiDriver",), "capi"),
    ("magnum-floating-ip-text", MAGNUM + ("apiFloatingIp",), "true"),
    ("magnum-allowed-cidr-bad", MAGNUM + ("apiAllowedCidrs",), ["10.0.0.0/33"]),
    ("magnum-allowed-cidr-not-list", MAGNUM + ("apiAllowedCidrs",), "0.0.0.0/0"),
    ("magnum-kube-tag-rancher", MAGNUM + ("kubernetesVersion",), "v1.34.1-rancher1"),
    ("magnum-kube-tag-suffix", MAGNUM + ("kubernetesVersion",), "v1.34.1-eks"),
    ("magnum-group-selector", ("cluster", "nodeGroups", 1, "selector"), {"pool": "gpu"}),
]
ALERTING = ("observability", "alerting")
# acme-prod's llm-chat (services[0]) is an LLM service (serving/llm_routing.py).
LLM_ROUTING = ("services", 0, "llmRouting")
LLM_ROUTING_VALUES: list[tuple[str, tuple, Any]] = [
    ("failure-mode-lowercase", LLM_ROUTING + ("failureMode",), "failopen"),
    ("failure-mode-newline", LLM_ROUTING + ("failureMode",), "FailOpen\n"),
    ("failure-mode-empty", LLM_ROUTING + ("failureMode",), ""),
    ("llm-routing-unknown-key", LLM_ROUTING + ("timeout",), 30),
]
ALERTING_VALUES: list[tuple[str, tuple, Any]] = [
    ("slack-channel-bare", ALERTING + ("receivers", 1, "slack", "channel"), "acme-alerts"),
    ("slack-channel-newline", ALERTING + ("receivers", 1, "slack", "channel"), "#alerts\n"),
    ("receiver-two-kinds", ALERTING + ("receivers", 0), {"name": "oncall-pagerduty", "pagerduty": {}, "slack": {"channel": "#a"}}),
    ("receiver-no-kind", ALERTING + ("receivers", 0), {"name": "oncall-pagerduty"}),
    ("receiver-unknown-kind", ALERTING + ("receivers", 0), {"name": "oncall-pagerduty", "opsgenie": {}}),
    ("receiver-name-upper", ALERTING + ("receivers", 0, "name"), "OnCall"),
    ("receiver-name-null", ALERTING + ("receivers", 0, "name"), "null"),
    ("critical-to-nobody", ALERTING + ("critical", 0), "nobody"),
    ("email-to-not-address", ALERTING + ("receivers", 1), {"name": "inference-slack", "email": {
        "to": "ops at acme", "from": "am@acme.example", "smarthost": "smtp.acme.example:587", "authUsername": "am"}}),
    ("email-smarthost-no-port", ALERTING + ("receivers", 1), {"name": "inference-slack", "email": {
        "to": "ops@acme.example", "from": "am@acme.example", "smarthost": "smtp.acme.example", "authUsername": "am"}}),
    ("repeat-interval-zero", ALERTING + ("repeatInterval",), "0h"),
    ("secret-for-no-receiver", ("alertReceiverSecrets", "ghost"), {"secure": "AAABAMockGhost"}),
    ("alert-secrets-plain", ("alertReceiverSecrets",), {"oncall-pagerduty": "plain-routing-key"}),
    # one receiver's secret in plain text beside a secure one, and deeper down
    ("alert-secret-plain-beside-secure", ("alertReceiverSecrets",), {
        "oncall-pagerduty": {"secure": "AAABAMockPagerDuty"}, "inference-slack": "https://hooks.slack.example/plain"}),
    ("alert-secret-plain-nested", ("alertReceiverSecrets",), {
        "oncall-pagerduty": {"secure": "AAABAMockPagerDuty"}, "inference-slack": {"url": "https://hooks.slack.example/plain"}}),
]
S3_VALUES: list[tuple[str, tuple, Any]] = [
    ("endpoint-port-99999", S3 + ("endpoint",), "https://s3.example.com:99999"),
    ("endpoint-port-0", S3 + ("endpoint",), "https://s3.example.com:0"),
    ("endpoint-port-text", S3 + ("endpoint",), "https://s3.example.com:http"),
    ("endpoint-userinfo", S3 + ("endpoint",), "https://key:secret@s3.example.com"),
    ("endpoint-query", S3 + ("endpoint",), "https://s3.example.com?x=1"),
    ("endpoint-fragment", S3 + ("endpoint",), "https://s3.example.com#x"),
    ("endpoint-no-host", S3 + ("endpoint",), "https://"),
    ("endpoint-ftp", S3 + ("endpoint",), "ftp://s3.example.com"),
    ("endpoint-path", S3 + ("endpoint",), "https://s3.example.com/bucket"),
    ("endpoint-newline", S3 + ("endpoint",), "https://s3.example.com\n"),
    ("endpoint-bad-host", S3 + ("endpoint",), "https://s3_example!.com"),
    ("bucket-upper", S3 + ("bucket",), "Weights"),
    ("bucket-short", S3 + ("bucket",), "ab"),
    ("bucket-ip", S3 + ("bucket",), "192.168.1.10"),
    ("bucket-dotdot", S3 + ("bucket",), "my..weights"),
    ("bucket-xn", S3 + ("bucket",), "xn--weights"),
    ("bucket-alias", S3 + ("bucket",), "weights-s3alias"),
    ("bucket-underscore", S3 + ("bucket",), "my_weights"),
    ("bucket-long", S3 + ("bucket",), "w" * 64),
    ("region-space", S3 + ("region",), "eu 1"),
    ("upload-root", S3 + ("uploads",), [{"source": "/", "prefix": "m"}]),
    ("upload-etc", S3 + ("uploads",), [{"source": "/etc", "prefix": "m"}]),
    ("upload-proc", S3 + ("uploads",), [{"source": "/proc/self", "prefix": "m"}]),
    ("upload-missing", S3 + ("uploads",), [{"source": "no/such/dir", "prefix": "m"}]),
    ("upload-file", S3 + ("uploads",), [{"source": "README.md", "prefix": "m"}]),
    ("upload-prefix-dotdot", S3 + ("uploads",), [{"source": "tests", "prefix": "../x"}]),
    ("mount-prefix-dotdot", S3 + ("mount",), {"enabled": True, "prefix": "a/../b"}),
    ("noncurrent-days-string", S3 + ("noncurrentDays",), "30"),
    ("versioning-string", S3 + ("versioning",), "true"),
    ("adopt-string", S3 + ("adopt",), "true"),
    ("adopt-int", S3 + ("adopt",), 1),
]

UI = ("ui",)
# acme-prod serves Grafana (OIDC) and Kiali on hosts of their own.
UI_VALUES: list[tuple[str, tuple, Any]] = [
    ("ui-host-wildcard", UI + ("grafana", "host"), "*.acme.example.com"),
    ("ui-host-newline", UI + ("kiali", "host"), "kiali.acme.example.com\n"),
    ("ui-host-service-clash", UI + ("kiali", "host"), "chat.acme.example.com"),
    ("ui-host-twice", UI + ("kiali", "host"), "grafana.acme.example.com"),
    ("ui-plain-http-in-prod", UI + ("allowPlainHttp",), True),
    ("ui-tls-off-in-prod", ("mesh", "tls"), {"enabled": False}),
    ("ui-grafana-auth-unknown", UI + ("grafana", "auth"), "anonymous"),
    ("ui-oidc-auth-url-http", UI + ("grafana", "oidc", "authUrl"), "http://sso.acme.example.com/auth"),
    ("ui-oidc-token-url-userinfo", UI + ("grafana", "oidc", "tokenUrl"), "https://u:p@sso.acme.example.com/token"),
    ("ui-oidc-scope-space", UI + ("grafana", "oidc", "scopes"), ["openid email"]),
    ("ui-oidc-role-path-newline", UI + ("grafana", "oidc", "roleAttributePath"), "'Admin'\nx"),
    ("ui-jaeger-host", UI + ("jaeger",), {"host": "jaeger.acme.example.com"}),
]


# acme-prod's llm-chat v7, an LLM version, behind the OpenAI frontend (llm.openai).
OPENAI = ("services", 0, "versions", 0, "llm", "openai")
OPENAI_VALUES: list[tuple[str, tuple, Any]] = [
    ("openai-tokenizer-parent", OPENAI, {"tokenizer": "../secrets"}),
    ("openai-tokenizer-absolute", OPENAI, {"tokenizer": "/etc/passwd"}),
    ("openai-tokenizer-flag", OPENAI, {"tokenizer": "--host=0.0.0.0"}),
    ("openai-tokenizer-newline", OPENAI, {"tokenizer": "llm-chat/tokenizer\n--openai-port=1"}),
    ("openai-tokenizer-space", OPENAI, {"tokenizer": "llm chat"}),
    ("openai-tokenizer-empty", OPENAI, {"tokenizer": ""}),
    ("openai-tokenizer-long", OPENAI, {"tokenizer": "t" * 1025}),
    ("openai-tokenizer-list", OPENAI, {"tokenizer": ["a", "b"]}),
    ("openai-unknown-key", OPENAI, {"servedModelName": "chat"}),
    ("openai-not-a-mapping", OPENAI, "yes"),
    # The NGC TensorRT-LLM image lacks the frontend's packages: refused on the image.
    ("openai-on-frontendless-image", ("services", 0, "versions", 0, "image"), "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3"),
]


def _expected_path(path: tuple, value: Any, doc: dict) -> str:
    """Where the error must point: the key itself, or the deepest key of a mapping value."""
    while isinstance(value, dict) and len(value) == 1:
        (k, value), = value.items()
        path = path + (k,)
    return key_path(path, doc)


# Cases whose error lands on a key other than the one mutated (a cross-field rule).
_REDIRECTED = {
    "magnum-allowed-cidr-bad": MAGNUM + ("apiAllowedCidrs", 0),
    "magnum-group-selector": ("cluster", "nodeGroups", 1, "selector"),
    "selector-key-space": ("cluster", "nodeGroups", 0, "selector"),
    "mesh-enabled-off": ("mesh", "enabled"),
    "openai-on-frontendless-image": ("services", 0, "versions", 0, "image"),
    "cpu-limit-below-request": V + ("resources",),
    "memory-limit-below-request": V + ("resources",),
    "retry-on-bad": ("services", 0, "retries", "retryOn"),
    "kiali-issuer-userinfo": ("mesh", "kialiOpenid", "issuerUri"),
    "kiali-issuer-http": ("mesh", "kialiOpenid", "issuerUri"),
    "jwks-query": ("services", 0, "auth", "jwt", "jwksUri"),
    "jwks-no-host": ("services", 0, "auth", "jwt", "jwksUri"),
    "jwks-fragment": ("services", 0, "auth", "jwt", "jwksUri"),
    "flag-unknown": V + ("serverArgs",),
    "flag-int-bad": V + ("serverArgs",),
    "flag-bool-bad": V + ("serverArgs",),
    "flag-space": V + ("serverArgs",),
    "flag-dash": V + ("serverArgs",),
    "flag-choice": V + ("serverArgs",),
    "flag-list-on-single": V + ("serverArgs",),
    "flag-list-empty": V + ("serverArgs",),
    "flag-list-hostile-item": V + ("serverArgs",),
    "model-name-empty": V + ("modelControl", "load", 0),
    "model-name-dotdot": V + ("modelControl", "load", 0),
    "node-label-key-space": ("cluster", "nodeGroups", 0, "labels"),
    "node-label-value-long": ("cluster", "nodeGroups", 0, "labels"),
    "taint-key-bad": ("cluster", "nodeGroups", 0, "taints", 0, "key"),
    "annotation-key-space": ("mesh", "gatewayAnnotations"),
    "annotation-value-newline": ("mesh", "gatewayAnnotations", "a.b/c"),
    "tls-secret-upper": ("mesh", "tls", "secretName"),
    "upload-root": S3 + ("uploads", 0, "source"),
    "upload-etc": S3 + ("uploads", 0, "source"),
    "upload-proc": S3 + ("uploads", 0, "source"),
    "upload-missing": S3 + ("uploads", 0, "source"),
    "upload-file": S3 + ("uploads", 0, "source"),
    "upload-prefix-dotdot": S3 + ("uploads", 0, "prefix"),
    "mount-prefix-dotdot": S3 + ("mount", "prefix"),
    "gpu-count-over-node": V + ("gpu", "count"),
    "reserved-ns-monitoring": ("services", 0, "name"),
    "mirror-percent-zero": ("services", 0, "mirror", "percent"),
    "ui-plain-http-in-prod": UI + ("allowPlainHttp",),
    "ui-tls-off-in-prod": UI + ("grafana", "host"),
    "ui-oidc-scope-space": UI + ("grafana", "oidc", "scopes", 0),
    "ui-jaeger-host": UI + ("jaeger",),
    "receiver-two-kinds": ALERTING + ("receivers", 0),
    "receiver-no-kind": ALERTING + ("receivers", 0),
    "receiver-unknown-kind": ALERTING + ("receivers", 0, "opsgenie"),
    "email-to-not-address": ALERTING + ("receivers", 1, "email", "to"),
    "email-smarthost-no-port": ALERTING + ("receivers", 1, "email", "smarthost"),
    "secret-for-no-receiver": ("alertReceiverSecrets", "ghost"),
    "alert-secrets-plain": ("alertReceiverSecrets",),
    "alert-secret-plain-beside-secure": ("alertReceiverSecrets", "inference-slack"),
    "alert-secret-plain-nested": ("alertReceiverSecrets", "inference-slack", "url"),
}


# demo-dev with a valid `training` section, which the TRAINING_VALUES cases break one key at a time.
TRAINING_SECTION = {
    "teams": [{"name": "vision", "namespace": "vision-train"}],
    "runtimes": [{"kind": "torch-ddp", "dataLoader": {"image": "example.com/loader:1.0", "command": ["python", "load.py"]}}],
    "networks": {"gpu-a100": {"socketIfname": "=eth0"}},
    "jobs": [{"name": "ddp", "team": "vision", "runtime": "torch-ddp", "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
              "command": ["torchrun", "train.py"], "gpu": {"group": "gpu-a100"},
              "dataset": {"cache": "fileShare", "path": "data/imagenet"}}],
}
T = ("training",)
TJ = T + ("jobs", 0)
TRAINING_VALUES: list[tuple[str, tuple, Any]] = [
    ("training-team-name-upper", T + ("teams", 0, "name"), "Vision"),
    ("training-team-namespace-newline", T + ("teams", 0, "namespace"), "vision-train\n"),
    ("training-job-name-41", TJ + ("name",), "j" * 41),
    ("training-job-name-dots", TJ + ("name",), "a.b"),
    ("training-runtime-unknown", TJ + ("runtime",), "deepspeed"),
    ("training-image-latest", TJ + ("image",), "pytorch/pytorch:latest"),
    ("training-command-empty", TJ + ("command",), []),
    ("training-command-nul", TJ + ("command", 0), "torchrun\x00"),
    ("training-command-string", TJ + ("command",), "torchrun train.py"),
    ("training-env-pet-reserved", TJ + ("env",), {"PET_NNODES": "8"}),
    ("training-env-pet-torchrun-flag", TJ + ("env",), {"PET_RDZV_ENDPOINT": "evil:29500"}),
    ("training-env-platform", TJ + ("env",), {"PLATFORM_TP_DEGREE": "8"}),
    ("training-env-name-injection", TJ + ("env",), {"A=B": "x"}),
    ("training-env-value-number", TJ + ("env",), {"WORKERS": 8}),
    ("training-nodes-zero", TJ + ("nodes",), 0),
    ("training-nodes-string", TJ + ("nodes",), "2"),
    ("training-nodes-huge", TJ + ("nodes",), 10**9),
    ("training-processes-huge", TJ + ("processesPerNode",), 1000),
    ("training-tp-on-ddp", TJ + ("tensorParallelDegree",), 2),
    ("training-hybrid-zero", TJ + ("hybridShardDegree",), 0),
    ("training-deadline-zero", TJ + ("activeDeadlineSeconds",), 0),
    ("training-deadline-huge", TJ + ("activeDeadlineSeconds",), 10**12),
    ("training-suspend-yes", TJ + ("suspend",), "yes"),
    ("training-memory-unit", TJ + ("memory",), "64GB"),
    ("training-dataset-dotdot", TJ + ("dataset",), {"cache": "fileShare", "path": "../etc"}),
    ("training-dataset-absolute", TJ + ("dataset",), {"cache": "fileShare", "path": "/etc/shadow"}),
    ("training-checkpoint-s3", TJ + ("checkpoint",), {"cache": "s3", "path": "ckpt"}),
    ("training-mig-profile-on-single", TJ + ("gpu", "migProfile"), "1g.10gb"),
    ("training-gpu-group-cpu", TJ + ("gpu", "group"), "cpu"),
    ("training-shm-text", T + ("runtimes", 0, "shmSize"), "lots"),
    ("training-run-as-root", T + ("runtimes", 0, "runAsUser"), 0),
    ("training-initializer-volume-zero", T + ("runtimes", 0, "initializerVolume"), "0"),
    ("training-data-loader-replicas-zero", T + ("runtimes", 0, "dataLoader", "replicas"), 0),
    ("training-data-loader-image-untagged", T + ("runtimes", 0, "dataLoader", "image"), "example.com/loader"),
    ("training-ifname-flag-injection", T + ("networks", "gpu-a100", "socketIfname"), "eth0 --x"),
    ("training-ifname-too-long", T + ("networks", "gpu-a100", "socketIfname"), "e" * 16),
    ("training-hca-shell", T + ("networks", "gpu-a100", "ibHca"), "mlx5_0;reboot"),
    ("training-network-unknown-group", T + ("networks",), {"gpu-h100": {"ibDisable": True}}),
    # publishTo: demo-dev's resnet has a pipeline (base version v2, on the file share).
    ("training-publish-unknown-service", TJ + ("publishTo",), {"service": "ghost"}),
    ("training-publish-service-upper", TJ + ("publishTo",), {"service": "Resnet"}),
    ("training-publish-as-string", TJ + ("publishTo",), "resnet"),
    ("training-publish-without-checkpoint", TJ + ("publishTo",), {"service": "resnet"}),
    ("training-publish-existing-version", TJ + ("publishTo",), {"service": "resnet", "version": "v2"}),
    ("training-publish-version-21", TJ + ("publishTo",), {"service": "resnet", "version": "v" * 21}),
    ("training-publish-version-slash", TJ + ("publishTo",), {"service": "resnet", "version": "v3/../v1"}),
    ("training-publish-onnx-dotdot", TJ + ("publishTo",), {"service": "resnet", "onnx": "../../resnet/v1/model.onnx"}),
    ("training-publish-onnx-absolute", TJ + ("publishTo",), {"service": "resnet", "onnx": "/etc/passwd.onnx"}),
    ("training-publish-onnx-shell", TJ + ("publishTo",), {"service": "resnet", "onnx": "$(reboot).onnx"}),
    ("training-publish-onnx-not-onnx", TJ + ("publishTo",), {"service": "resnet", "onnx": "model.pt"}),
    ("training-publish-onnx-newline", TJ + ("publishTo",), {"service": "resnet", "onnx": "model\n.onnx"}),
    ("training-publish-onnx-huge", TJ + ("publishTo",), {"service": "resnet", "onnx": "a/" * 200 + "m.onnx"}),
    ("training-publish-unknown-key", TJ + ("publishTo",), {"service": "resnet", "workflowTemplate": "x"}),
    # A secret in a job's env would be written into the TrainJob in clear text.
    ("training-env-secure", TJ + ("env",), {"HF_TOKEN": {"secure": "v1:c2VjcmV0"}}),
    ("training-memory-below-shm", TJ + ("memory",), "4Gi"),
    ("training-checkpoint-in-serving-repository", TJ + ("checkpoint",), {"cache": "fileShare", "path": "resnet/v1"}),
]
_REDIRECTED.update({
    "training-dataset-dotdot": TJ + ("dataset", "path"),
    "training-dataset-absolute": TJ + ("dataset", "path"),
    "training-checkpoint-s3": TJ + ("checkpoint", "cache"),
    "training-network-unknown-group": T + ("networks", "gpu-h100"),
    "training-publish-without-checkpoint": TJ + ("publishTo",),
    "training-publish-existing-version": TJ + ("publishTo", "version"),
    "training-publish-version-21": TJ + ("publishTo", "version"),
    "training-publish-version-slash": TJ + ("publishTo", "version"),
    "training-publish-onnx-dotdot": TJ + ("publishTo", "onnx"),
    "training-publish-onnx-absolute": TJ + ("publishTo", "onnx"),
    "training-publish-onnx-shell": TJ + ("publishTo", "onnx"),
    "training-publish-onnx-not-onnx": TJ + ("publishTo", "onnx"),
    "training-publish-onnx-newline": TJ + ("publishTo", "onnx"),
    "training-publish-onnx-huge": TJ + ("publishTo", "onnx"),
    "training-publish-unknown-key": TJ + ("publishTo", "workflowTemplate"),
    "training-env-secure": TJ + ("env", "HF_TOKEN"),
    "training-checkpoint-in-serving-repository": TJ + ("checkpoint", "path"),
})


def value_cases() -> Iterator[tuple[str, bytes, Any]]:
    demo = example("demo-dev")
    prod = example("acme-prod")
    training = _set(demo, T, TRAINING_SECTION)
    for base_name, base, values in (("demo-dev", demo, HOSTILE_VALUES),
                                    ("acme-prod", prod, S3_VALUES + MAGNUM_VALUES + UI_VALUES + ALERTING_VALUES + OPENAI_VALUES
                                     + LLM_ROUTING_VALUES),
                                    ("demo-dev-training", training, TRAINING_VALUES)):
        for case, path, value in values:
            if value == "MIRROR0":
                doc = _set(base, path + ("mirror",), {"version": "v2", "percent": 0})
            else:
                doc = _set(base, path, value)
            where = _REDIRECTED.get(case)
            expected = key_path(where, doc) if where else _expected_path(path, value, doc)
            yield f"{base_name}:{case}", dump(doc), expected


def _text_case(base: str, old: str, new: str) -> bytes:
    text = (ROOT / "stacks" / f"Pulumi.{base}.yaml").read_text()
    assert old in text, old
    return text.replace(old, new, 1).encode()


def loader_cases() -> Iterator[tuple[str, bytes, Any]]:
    """Files that are not a well-formed, bounded YAML mapping: the error is a file:line:col."""
    demo = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_bytes()
    bomb = b"config:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 9):
        bomb += f"  {chr(97 + i)}: &{chr(97 + i)} [{', '.join(['*' + chr(96 + i)] * 10)}]\n".encode()
    cases = {
        "syntax-unclosed-flow": demo.replace(b"[resnet.demo.example.com]", b"[resnet.demo.example.com"),
        "syntax-bad-indent": demo.replace(b"    mode: existing", b"      mode: existing\n   x: 1", 1),
        "syntax-tab-indent": demo.replace(b"    mode: existing", b"\tmode: existing", 1),
        "syntax-unclosed-quote": demo.replace(b"customer: demo", b'customer: "demo'),
        "document-list": b"- config: {}\n",
        "document-scalar": b"just text\n",
        "document-int": b"42\n",
        "two-documents": demo + b"---\nconfig: {}\n",
        "bad-utf8": demo.replace(b"customer: demo", b"customer: d\xffmo"),
        "nul-byte": demo.replace(b"customer: demo", b"customer: de\x00mo"),
        "escape-byte": demo.replace(b"customer: demo", b"customer: de\x1bmo"),
        "python-object-tag": demo.replace(b"customer: demo", b"customer: !!python/object/apply:os.system ['true']"),
        "binary-tag": demo.replace(b"customer: demo", b"customer: !!binary ZGVtbw=="),
        "local-tag": demo.replace(b"customer: demo", b"customer: !shell demo"),
        "str-tag": demo.replace(b"customer: demo", b"customer: !!str demo"),
        "set-tag": demo.replace(b"    mode: existing", b"    mode: !!set {existing}", 1),
        "timestamp-tag": demo.replace(b"customer: demo", b"customer: !!timestamp 2024-01-01"),
        "int-key": demo.replace(b"    mode: existing", b"    mode: existing\n    1: x", 1),
        "bool-key": demo.replace(b"    mode: existing", b"    mode: existing\n    true: x", 1),
        "null-key": demo.replace(b"    mode: existing", b"    mode: existing\n    ~: x", 1),
        "float-key": demo.replace(b"    mode: existing", b"    mode: existing\n    1.5: x", 1),
        "sequence-key": demo.replace(b"    mode: existing", b"    mode: existing\n    ? [a, b]\n    : x", 1),
        "deep-nesting": demo + b"  inference-platform:x: " + b"[" * 2000 + b"]" * 2000 + b"\n",
        "deep-block-nesting": demo + b"  inference-platform:x:\n" + b"".join(
            b"  " * (i + 2) + b"k:\n" for i in range(40)) + b"  " * 42 + b"v: 1\n",
        "alias-bomb": bomb,
        "recursive-alias": b"config: &a\n  inference-platform:x: *a\n",
        "duplicate-top-level": demo.replace(b"  inference-platform:production: false",
                                            b"  inference-platform:production: true\n  inference-platform:production: false"),
        "duplicate-nested": demo.replace(b"      context: demo", b"      context: demo\n      context: prod"),
        "duplicate-in-list-item": demo.replace(b"          weight: 90", b"          weight: 90\n          weight: 10"),
        "duplicate-document-key": demo + b"config: {}\n",
        "null-top-level": demo.replace(b"customer: demo", b"customer: null"),
        "null-tilde": demo.replace(b"customer: demo", b"customer: ~"),
        "null-empty": demo.replace(b"customer: demo", b"customer:"),
        "null-nested": demo.replace(b"      context: demo", b"      context: null"),
        "null-in-list": demo.replace(b"[resnet.demo.example.com]", b"[resnet.demo.example.com, null]"),
        "unknown-top-level-key": demo + b"configs: {}\n",
        "config-not-mapping": b"config: [a, b]\n",
        "config-key-two-colons": demo.replace(b"inference-platform:customer", b"inference-platform:x:customer"),
        "config-key-space": demo.replace(b"inference-platform:customer", b"inference platform:customer"),
        "oversized": b"config:\n  inference-platform:customer: demo\n# " + b"x" * (1 << 20) + b"\n",
        "merge-key-not-a-mapping": demo.replace(b"      context: demo", b"      context: demo\n      <<: [1, 2]"),
        "merge-key-after-its-key": demo.replace(b"      context: demo", b"      context: demo\n      <<: {context: prod}"),
    }
    for case, data in cases.items():
        yield f"loader:{case}", data, LOCATION
    # The same defects at other depths of the schema.
    for depth_case, old, new in (
        ("duplicate-gpu-key", "          perNode: 1", "          perNode: 1\n          perNode: 2"),
        ("null-mig-profile", "migProfile: all-1g.10gb", "migProfile: null"),
        ("tag-in-version", "          weight: 10", "          weight: !!int 10"),
        ("octal-looking-weight", "          weight: 10", "          weight: 010"),
        ("int-key-in-resources", "resources: {cpu: \"2\", memory: 8Gi}", "resources: {cpu: \"2\", 8: 8Gi}"),
    ):
        yield f"loader:{depth_case}", _text_case("demo-dev", old, new), LOCATION


def finding_cases() -> Iterator[tuple[str, bytes, Any]]:
    """Stacks a held-out hostile corpus found accepted (or refused without a key path)."""
    demo, studio = example("demo-dev"), example("studio-dev")
    graph_host = studio["config"][f"{NS}:graphs"][0]["hosts"][0]
    ui_on_graph_host = _set(studio, ("ui",), {"allowPlainHttp": True, "kiali": {"host": graph_host}})
    yield "studio-dev:ui-host-graph-clash", dump(ui_on_graph_host), key_path(("ui", "kiali", "host"))
    latest_step = _set(studio, ("graphs", 0, "steps", 1, "image"), "registry.studio.example.com/triton-ray:latest")
    yield "studio-dev:graph-image-latest", dump(latest_step), key_path(("graphs", 0, "steps", 1, "image"), latest_step)
    # A step's maxOngoingRequests: lax coercion, nothing, and beyond the thread pool's bound.
    ongoing = ("graphs", 0, "steps", 0, "maxOngoingRequests")
    for case, value in (("string", "32"), ("bool", True), ("zero", 0), ("huge", 10**9), ("float", 2.5)):
        doc = _set(studio, ongoing, value)
        yield f"studio-dev:graph-max-ongoing-{case}", dump(doc), key_path(ongoing, doc)
    services = demo["config"][f"{NS}:services"]
    for suffix in ("tuning", "pipeline"):  # names the tuned service's objects take, in its namespace
        clash = copy.deepcopy(services[0])
        clash.update(name=f"resnet-{suffix}", namespace="resnet", hosts=[f"{suffix}.demo.example.com"])
        clash.pop("pipeline")
        clash["versions"] = [dict(clash["versions"][0], weight=100)]
        yield (f"demo-dev:service-named-resnet-{suffix}", dump(_set(demo, ("services",), [*services, clash])),
               key_path(("services", 1, "name")))


# acme-prod's llm-chat v7 (TensorRT-LLM, maxConcurrentSequences 32, maxContextTokens 8192), tuned
# with GenAI-Perf: a hostile leaf of `tuning.llm`, or a key the engine's run cannot take.
LLM_TUNING = ("services", 0, "versions", 0, "tuning")
LLM_TUNING_VALUES: list[tuple[str, tuple, Any]] = [
    ("llm-tuning-tokenizer-dotdot", ("llm", "tokenizer"), "../../etc"),
    ("llm-tuning-tokenizer-absolute", ("llm", "tokenizer"), "/root/.cache"),
    ("llm-tuning-tokenizer-hub-name", ("llm", "tokenizer"), "meta-llama/Llama-3.1-8B --tokenizer-trust-remote-code"),
    ("llm-tuning-tokenizer-newline", ("llm", "tokenizer"), "tokenizer\n"),
    ("llm-tuning-concurrency-zero", ("llm", "concurrency", 0), 0),
    ("llm-tuning-concurrency-negative", ("llm", "concurrency", 0), -1),
    ("llm-tuning-concurrency-string", ("llm", "concurrency", 0), "8"),
    ("llm-tuning-concurrency-over-engine", ("llm", "concurrency"), [1, 64]),
    ("llm-tuning-concurrency-huge", ("llm", "concurrency", 0), 10**9),
    ("llm-tuning-concurrency-empty", ("llm", "concurrency"), []),
    ("llm-tuning-concurrency-unsorted", ("llm", "concurrency"), [8, 4]),
    ("llm-tuning-concurrency-flag", ("llm", "concurrency"), "1 --url evil:8001"),
    ("llm-tuning-input-tokens-zero", ("llm", "inputTokensMean"), 0),
    ("llm-tuning-input-tokens-float", ("llm", "inputTokensMean"), 1.5),
    ("llm-tuning-output-tokens-over-context", ("llm", "outputTokensMean"), 8000),
    ("llm-tuning-output-stddev-negative", ("llm", "outputTokensStddev"), -5),
    ("llm-tuning-interval-tiny", ("llm", "measurementIntervalMs"), 10),
    ("llm-tuning-interval-inf", ("llm", "measurementIntervalMs"), float("inf")),
    ("llm-tuning-unknown-key", ("llm", "extraInputs"), {"max_tokens": 1}),
    ("llm-tuning-model-analyzer-key", ("objectives",), {"throughput": 10}),
]


def llm_tuning_cases() -> Iterator[tuple[str, bytes, Any]]:
    prod = example("acme-prod")
    valid = {"model": "ensemble", "llm": {"tokenizer": "tokenizer", "concurrency": [1, 2, 4, 8, 16, 32]}}
    for case, path, value in LLM_TUNING_VALUES:
        doc = _set(_set(prod, LLM_TUNING, copy.deepcopy(valid)), LLM_TUNING + path, value)
        where = LLM_TUNING + path + ((1,) if case == "llm-tuning-concurrency-over-engine" else ())
        yield f"acme-prod:{case}", dump(doc), key_path(where, doc)


# studio-dev with a training team on the L4 group's one free GPU (serving's peak takes the other),
# its GPU groups at a fixed size (minNodes = maxNodes), where topology levels are allowed.
TRAINING_QUOTA_BASE = {
    "topologyLevels": ["topology.kubernetes.io/zone", "kubernetes.io/hostname"],
    "teams": [{"name": "research", "namespace": "research",
               "quotas": [{"group": "gpu-l4", "gpus": 1, "borrowingLimit": 1, "lendingLimit": 1}],
               "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}}],
}
TEAM = ("training", "teams", 0)
QUOTA = TEAM + ("quotas", 0)
TRAINING_QUOTA_VALUES: list[tuple[str, tuple, Any]] = [
    ("training-not-a-map", ("training",), ["research"]),
    ("training-unknown-key", ("training",), {"teems": []}),
    ("teams-not-a-list", ("training", "teams"), "research"),
    ("team-name-upper", TEAM + ("name",), "Research"),
    ("team-name-41", TEAM + ("name",), "t" * 41),
    ("team-name-newline", TEAM + ("name",), "research\n"),
    ("team-namespace-empty", TEAM + ("namespace",), ""),
    ("team-namespace-dots", TEAM + ("namespace",), "re.search"),
    ("team-namespace-kueue", TEAM + ("namespace",), "kueue-system"),
    ("team-namespace-kube", TEAM + ("namespace",), "kube-public"),
    ("team-namespace-default", TEAM + ("namespace",), "default"),
    ("team-namespace-of-a-graph", TEAM + ("namespace",), "speech-to-image"),
    ("quota-gpus-negative", QUOTA + ("gpus",), -1),
    ("quota-gpus-huge", QUOTA + ("gpus",), 10**7),
    ("quota-gpus-float", QUOTA + ("gpus",), 1.5),
    ("quota-gpus-over-the-group", QUOTA + ("gpus",), 2),
    ("quota-group-unknown", QUOTA + ("group",), "gpu-x"),
    ("quota-group-cpu", QUOTA + ("group",), "cpu"),
    ("quota-group-upper", QUOTA + ("group",), "GPU-L4"),
    ("quota-mig-on-whole-gpus", QUOTA + ("migProfile",), "1g.10gb"),
    ("quota-mig-profile-bad", QUOTA + ("migProfile",), "1g.10gb; rm"),
    ("quota-lending-over-gpus", QUOTA + ("lendingLimit",), 5),
    ("quota-borrowing-negative", QUOTA + ("borrowingLimit",), -1),
    ("quota-twice-on-a-group", TEAM + ("quotas",), [{"group": "gpu-l4", "gpus": 0}, {"group": "gpu-l4", "gpus": 1}]),
    ("preemption-unknown", TEAM + ("preemption", "withinClusterQueue"), "Always"),
    ("reclaim-lowercase", TEAM + ("preemption", "reclaimWithinCohort"), "any"),
    ("topology-hostname-first", ("training", "topologyLevels"), ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
    ("topology-twice", ("training", "topologyLevels"), ["topology.kubernetes.io/zone", "topology.kubernetes.io/zone"]),
    ("topology-key-space", ("training", "topologyLevels", 0), "topology zone"),
    ("topology-17-levels", ("training", "topologyLevels"), [f"example.com/level-{i}" for i in range(17)]),
]
_TRAINING_QUOTA_REDIRECTED = {
    "training-not-a-map": ("training",),
    "teams-not-a-list": ("training", "teams"),
    "quota-lending-over-gpus": QUOTA,
    "quota-twice-on-a-group": TEAM + ("quotas", 1),
    "topology-hostname-first": ("training", "topologyLevels"),
    "topology-twice": ("training", "topologyLevels"),
    "topology-17-levels": ("training", "topologyLevels"),
}


def training_quota_cases() -> Iterator[tuple[str, bytes, Any]]:
    """Hostile values, and values of the wrong type, for every key of `training`."""
    base = _set(example("studio-dev"), ("training",), TRAINING_QUOTA_BASE)
    for group in base["config"]["inference-platform:cluster"]["nodeGroups"]:
        if "gpu" in group:
            group["minNodes"] = group["maxNodes"]
    for case, path, value in TRAINING_QUOTA_VALUES:
        doc = _set(base, path, value)
        where = _TRAINING_QUOTA_REDIRECTED.get(case)
        yield f"studio-dev:{case}", dump(doc), key_path(where, doc) if where else _expected_path(path, value, doc)
    for path, value in _leaves(TRAINING_QUOTA_BASE, ("training",)):
        for i, bad in enumerate(_wrong_types(value, path)):
            doc = _set(base, path, bad)
            yield f"studio-dev:type:{key_path(path)}:{i}", dump(doc), key_path(path, doc)


def controller_name_cases() -> Iterator[tuple[str, bytes, Any]]:
    """Names the plan cannot see: a service or version whose objects take the name of one a
    controller or chart makes at `up` time in the same namespace (core/controller_names.py)."""
    from inference_platform.core.controller_names import inference_pool_service_name

    prod = example("acme-prod")
    services = prod["config"][f"{NS}:services"]
    embed = next(s for s in services if s["name"] == "embed")
    for case, name in (("gateway-identity", "llm-chat-istio"), ("picker", "llm-chat-v7-epp"),
                       ("pool-service", inference_pool_service_name("llm-chat-v8"))):
        clash = dict(copy.deepcopy(embed), name=name, namespace="llm-chat", hosts=[f"{case}.acme.example.com"])
        yield (f"acme-prod:controller-name-{case}", dump(_set(prod, ("services",), [*services, clash])),
               key_path(("services", len(services), "name")))
    for case, version in (("gateway-deployment", "istio"), ("picker-deployment", "v7-epp")):
        chat = copy.deepcopy(services[0])
        chat["versions"].append(dict(copy.deepcopy(chat["versions"][1]), name=version, weight=0))
        doc = _set(prod, ("services",), [chat, *services[1:]])
        yield f"acme-prod:controller-name-{case}", dump(doc), key_path(("services", 0, "versions", 2, "name"), doc)


def hostile_cases() -> list[tuple[str, bytes, Any]]:
    return [*loader_cases(), *value_cases(), *type_cases(), *finding_cases(), *llm_tuning_cases(), *training_quota_cases(),
            *controller_name_cases()]


def valid_cases() -> list[tuple[str, bytes]]:
    """Unusual but valid stack files (each must plan)."""
    demo = (ROOT / "stacks" / "Pulumi.demo-dev.yaml").read_text()
    doc = example("demo-dev")

    def edit(path: tuple, value: Any) -> bytes:
        return dump(_set(doc, path, value))

    flow = yaml.safe_dump(doc, default_flow_style=True, width=100000).encode()
    return [
        ("comments-everywhere", "\n".join(f"{line}  # note" if line.strip() and not line.lstrip().startswith("#") and
                                          not line.rstrip().endswith(":") else line for line in demo.splitlines()).encode()),
        ("flow-style", flow),
        ("byte-order-mark", b"\xef\xbb\xbf" + demo.encode()),
        ("crlf-line-endings", demo.replace("\n", "\r\n").encode()),
        ("document-markers", ("---\n" + demo + "...\n").encode()),
        ("quoted-keys", demo.replace("inference-platform:customer:", '"inference-platform:customer":').encode()),
        ("small-aliases", demo.replace("resources: {cpu: \"2\", memory: 8Gi}", "resources: &r {cpu: \"2\", memory: 8Gi}", 1)
         .replace("resources: {cpu: \"2\", memory: 8Gi}", "resources: *r").encode()),
        ("production-as-written-by-pulumi", demo.replace("production: false", 'production: "false"').encode()),
        ("bare-keys-without-namespace", demo.replace("inference-platform:environment", "environment").encode()),
        ("yes-is-a-string", edit(("services", 0, "auth"), {"mode": "basic", "realm": "yes"})),
        ("hex-integer", demo.replace("weight: 90", "weight: 0x5a").encode()),
        ("path-float-string", edit(("services", 0, "timeoutSeconds"), "0.5")),
        ("path-int-flag-value", edit(("services", 0, "versions", 0, "serverArgs"), {"log-verbose": 1})),
        ("provider-config-keys", (demo + "  kubernetes:context: demo\n  openstack:region: RegionOne\n").encode()),
        ("unicode-realm-free-text", edit(("cluster", "existing", "context"), "démo-kontext")),
        ("digest-pinned-image", edit(("services", 0, "versions", 0, "image"),
                                     "nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64)),
        ("registry-with-port", edit(("services", 0, "versions", 0, "image"), "registry.local:5000/triton/server:25.01-py3")),
        ("date-like-text", edit(("services", 0, "auth"), {"mode": "basic", "realm": "2024-01-01"})),
        ("ipv6-nfs-server", edit(("weightCaches", "fileShare", "server"), "fd00::20")),
        ("float-timeout-ms", edit(("services", 0, "timeoutSeconds"), 0.25)),
        ("merge-keys", demo.replace("        - name: v1\n", "        - &v1\n          name: v1\n", 1)
         .replace("        - name: v2\n", "        - <<: [*v1, {replicas: 1}]\n          name: v2\n", 1).encode()),
    ]
