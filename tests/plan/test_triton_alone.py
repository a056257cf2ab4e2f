"""WeightCaches and TritonService used alone: a program that renders only them, with their
arguments written as a user would (plain dicts, snake_case keys)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.serving.triton import GRPC_PORT, HTTP_PORT, TritonService
from inference_platform.settings.errors import ConfigError
from inference_platform.weights.caches import CLAIM_NAME, S3_SECRET_NAME, WeightCaches
from platformctl import engine

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SECRET = "kubernetes:core/v1:Secret"
RELEASE = "kubernetes:helm.sh/v3:Release"

GPU_GROUP = {"name": "gpu", "min_nodes": 1, "max_nodes": 2, "selector": {"pool": "gpu"}, "gpu": {"model": "L4-24GB"}}


def version(name: str, weight: int, cache: str = "fileShare", **extra) -> dict:
    return {"name": name, "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "weight": weight,
            "model_repository": {"cache": cache, "path": f"chat/{name}"}, "gpu": {"group": "gpu"}, **extra}


def service(*versions: dict, **extra) -> dict:
    return {"name": "chat", "namespace": "llm", "hosts": ["chat.example.com"], "versions": list(versions), **extra}


def caches_args(*without: str, **extra) -> dict:
    args = {
        "weight_caches": {"file_share": {"mode": "existing", "server": "10.0.0.2", "path": "/models"},
                          "s3": {"endpoint": "https://s3.example.com", "bucket": "weights",
                                 "mount": {"enabled": True}}},
        "file_share_namespaces": ["llm"],
        "s3_namespaces": ["embed"],
        "s3_access_key_id": "AKIAEXAMPLE",
        "s3_secret_access_key": "secret-value",
        "node_groups": [GPU_GROUP],
        **extra,
    }
    return {k: v for k, v in args.items() if k not in without}


def render(build) -> engine.Plan:
    def program():
        provider = k8s.Provider("k8s")
        build(pulumi.ResourceOptions(providers={"kubernetes": provider}))

    return engine._run("alone", {}, [], program)


def test_weight_caches_alone_give_each_namespace_its_claim_or_secret_and_a_reference():
    refs = {}

    def build(opts):
        caches = WeightCaches("weights", caches_args(), opts)
        refs.update({ns: (caches.reference(ns), caches.depends_on(ns)) for ns in ("llm", "embed", "other")})

    plan = render(build)
    (claim,) = [r for r in plan.of_type(PVC) if r.inputs["metadata"]["name"] == CLAIM_NAME]
    assert claim.inputs["metadata"]["namespace"] == "llm"
    (secret,) = [r for r in plan.of_type(SECRET) if r.inputs["metadata"]["name"] == S3_SECRET_NAME]
    assert secret.inputs["metadata"]["namespace"] == "embed"
    (release,) = plan.of_type(RELEASE)
    assert release.inputs["chart"] == "csi-s3" and release.provider.startswith(plan.of_type("pulumi:providers:kubernetes")[0].urn)
    assert refs["llm"][0].claim_name == CLAIM_NAME and refs["llm"][0].s3_secret_name is None
    assert (refs["embed"][0].s3_secret_name, refs["embed"][0].s3_endpoint, refs["embed"][0].s3_bucket) == (
        S3_SECRET_NAME, "https://s3.example.com", "weights")
    assert refs["embed"][0].claim_name is None
    assert refs["other"][0].claim_name is None and refs["other"][0].s3_secret_name is None
    assert [len(deps) for _, deps in refs.values()] == [1, 1, 0]


@pytest.mark.parametrize("args, path", [
    (caches_args("s3_access_key_id"), "s3_access_key_id"),
    (caches_args(weight_caches={"file_share": {"mode": "manila"}}), "weight_caches.file_share.access_cidrs"),
    (caches_args(file_share_namespaces=["Not A Label"]), "file_share_namespaces[0]"),
])
def test_weight_caches_refuse_bad_arguments(args, path):
    with pytest.raises(ConfigError) as info:
        render(lambda opts: WeightCaches("weights", args, opts))
    assert info.value.stack_file == "WeightCachesArgs"
    assert path in info.value.paths


def test_weight_caches_alone_render_an_uploads_presets_and_refuse_one_they_do_not_know(tmp_path):
    (tmp_path / "resnet" / "1").mkdir(parents=True)
    (tmp_path / "resnet" / "config.pbtxt").write_text('name: "resnet"\nbackend: "onnxruntime"\nmax_batch_size: 8\n')
    s3 = {"endpoint": "https://s3.example.com", "bucket": "weights",
          "uploads": [{"source": str(tmp_path), "prefix": "m", "presets": ["latency", "cpu"]}]}
    args = caches_args(weight_caches={"s3": s3}, tuning_presets={"cpu": {"instance_kind": "cpu", "instance_count": 4}})
    plan = render(lambda opts: WeightCaches("weights", args, opts))
    (upload,) = plan.of_type("pulumi-python:dynamic/s3:Upload")
    assert sorted(upload.inputs["generated"]) == ["resnet/configs/cpu.pbtxt", "resnet/configs/latency.pbtxt"]
    assert "kind: KIND_CPU" in upload.inputs["generated"]["resnet/configs/cpu.pbtxt"]
    with pytest.raises(ConfigError, match=r"weight_caches\.s3\.uploads\[0\]\.presets\[1\]: no tuning preset named 'cpu'"):
        render(lambda opts: WeightCaches("weights", caches_args(weight_caches={"s3": s3}), opts))


def triton_args(svc: dict, **extra) -> dict:
    return {"service": svc, "gpu_groups": [GPU_GROUP],
            "weights": {"claim_name": CLAIM_NAME, "s3_secret_name": S3_SECRET_NAME,
                        "s3_endpoint": "http://minio.local:9000", "s3_bucket": "weights"}, **extra}


def test_triton_service_alone_renders_its_versions_with_a_default_rollout_wait():
    args = triton_args(service(version("v1", 90), version("v2", 10, cache="s3")), mesh={"tls": True})
    plan = render(lambda opts: TritonService("chat", args, opts))
    v1, v2 = plan.get(DEPLOYMENT, "chat-v1"), plan.get(DEPLOYMENT, "chat-v2")
    triton_v1 = v1.inputs["spec"]["template"]["spec"]["containers"][0]
    assert "--model-repository=/models/chat/v1" in triton_v1["args"]
    volumes = v1.inputs["spec"]["template"]["spec"]["volumes"]
    assert {"name": "models", "persistentVolumeClaim": {"claimName": CLAIM_NAME, "readOnly": True}} in volumes
    triton_v2 = v2.inputs["spec"]["template"]["spec"]["containers"][0]
    assert "--model-repository=s3://minio.local:9000/weights/chat/v2" in triton_v2["args"]
    assert triton_v2["envFrom"] == [{"secretRef": {"name": S3_SECRET_NAME}}]
    # Without the platform's estimate, the default stage times still bound the rollout's wait.
    assert v1.custom_timeouts["create"].endswith("m") and v1.inputs["spec"]["progressDeadlineSeconds"] > 600
    (vs,) = plan.of_type("kubernetes:networking.istio.io/v1:VirtualService")
    assert vs.inputs["spec"]["gateways"] == ["istio-system/inference-gateway"]
    (component,) = plan.of_type("inference-platform:index:TritonService")
    assert component.name == "chat"


def test_triton_service_waits_for_what_its_options_name():
    def build(opts):
        marker = k8s.core.v1.ConfigMap("marker", metadata={"name": "m", "namespace": "llm"}, opts=opts)
        TritonService("chat", triton_args(service(version("v1", 100))),
                      pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[marker])))

    plan = render(build)
    marker = plan.get("kubernetes:core/v1:ConfigMap", "marker")
    assert marker.urn in plan.get(DEPLOYMENT, "chat-v1").depends_on


@pytest.mark.parametrize("svc, path, message", [
    (service(version("v1", 60), version("v2", 30)), "service.versions",
     "version weights sum to 90 (60 + 30); they must sum to 100"),
    (service(version("v1", 50), version("v1", 50)), "service.versions[1].name",
     "duplicate version name 'v1' in service 'chat'"),
    (service({**version("v1", 100), "gpu": {"group": "h100"}}), "service.versions[v1].gpu.group",
     "no GPU node group named 'h100'; GPU groups: gpu"),
    (service(version("v1", 100), mirror={"version": "v9", "percent": 5}), "service.mirror.version",
     "no version named 'v9'; versions: v1"),
])
def test_triton_service_checks_a_service_with_the_stack_files_messages(svc, path, message):
    with pytest.raises(ConfigError) as info:
        render(lambda opts: TritonService("chat", triton_args(svc), opts))
    assert info.value.stack_file == "TritonServiceArgs"
    assert (info.value.paths, [m for _, m in info.value.problems]) == ([path], [message])


def test_triton_service_needs_the_weights_its_caches_read():
    args = triton_args(service(version("v1", 100, cache="s3")), weights={"claim_name": CLAIM_NAME})
    with pytest.raises(ConfigError) as info:
        render(lambda opts: TritonService("chat", args, opts))
    assert info.value.paths == ["service.versions[v1].model_repository.cache"]
    assert "weights.s3_secret_name, weights.s3_endpoint, weights.s3_bucket" in info.value.one_line()


@pytest.mark.parametrize("mesh, admitted", [
    ({"ingress_namespace": "istio-ingress"}, {"istio": "ingressgateway"}),
    ({"ingress_namespace": "istio-ingress", "ingress_pod_labels": {"app": "edge", "istio": "edge"}}, {"app": "edge", "istio": "edge"}),
])
def test_triton_service_alone_admits_to_tritons_ports_only_the_ingress_pods_it_is_told(mesh, admitted):
    """Triton's HTTP and gRPC ports admit the pods `mesh.ingress_pod_labels` name in the ingress
    namespace (default: the gateway chart's `istio: ingressgateway`), not the whole namespace."""
    plan = render(lambda opts: TritonService("chat", triton_args(service(version("v1", 100)), mesh=mesh), opts))
    spec = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "chat-networkpolicy").inputs["spec"]
    (triton,) = [rule for rule in spec["ingress"] if {"protocol": "TCP", "port": HTTP_PORT} in rule["ports"]]
    assert triton["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-ingress"}},
                               "podSelector": {"matchLabels": admitted}}]
    assert [p["port"] for p in triton["ports"]] == [HTTP_PORT, GRPC_PORT]


def test_triton_service_alone_refuses_empty_ingress_pod_labels():
    with pytest.raises(ConfigError) as info:
        render(lambda opts: TritonService("chat", triton_args(service(version("v1", 100)), mesh={"ingress_pod_labels": {}}), opts))
    assert info.value.paths == ["mesh.ingress_pod_labels"], info.value.one_line()
    assert "would admit every pod of ingress_namespace; allowed: the labels the ingress gateway's pods carry" in info.value.one_line()


def test_triton_service_alone_puts_the_basic_auth_deny_on_the_ingress_pods_it_is_told():
    """In Istio's root namespace the DENY policy that fails Basic Auth closed selects the gateway's
    pods: the ones `mesh.ingress_pod_labels` names, or a gateway labelled otherwise would lack it."""
    labels = {"app": "edge", "istio": "edge"}
    args = triton_args(service(version("v1", 100), auth={"mode": "basic"}), mesh={"ingress_pod_labels": labels})
    plan = render(lambda opts: TritonService("chat", args, opts))
    (deny,) = [r.inputs for r in plan.resources if r.type == "kubernetes:security.istio.io/v1:AuthorizationPolicy"
               and r.inputs["metadata"]["namespace"] == "istio-system"]
    assert deny["spec"]["action"] == "DENY" and deny["spec"]["selector"] == {"matchLabels": labels}
