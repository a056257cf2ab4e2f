"""Every policy refuses a failing case and accepts a passing one (synthetic resources)."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings import policies as catalog
from policies.rules import ALL_POLICIES
from policies.rules.kube import pod_specs
from tests.support.policy_fixtures import (
    GPU_GROUPS,
    GPU_SELECTOR,
    check,
    custom,
    deployment,
    helm,
    k8s,
    namespace,
    pod,
    resource,
    route,
    triton_container,
    virtual_service,
    workflow_template,
)

ISTIO_BASE = helm("mesh-base", {}, chart="base", version="1.30.3", ns="istio-system", release="istio-base")
STRICT_NS = custom("security.istio.io/v1:PeerAuthentication", "svc-mtls", "svc", {"mtls": {"mode": "STRICT"}}, meta_name="default")


def privileged_container() -> dict:
    c = triton_container()
    c["securityContext"] = {**c["securityContext"], "privileged": True, "allowPrivilegeEscalation": True}
    return c


def hpa(target: str, deps=()) -> dict:
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "maxReplicas": 3}
    return k8s("autoscaling/v2:HorizontalPodAutoscaler", "svc-v1-hpa", {"namespace": "svc"}, {"spec": spec}, deps=deps)


def as_served(resource: dict, replicas_by: str) -> dict:
    """A Deployment as the API server returns it: `spec.replicas: 1`, and managedFields where
    `replicas_by` owns the count and Pulumi's field manager the rest it applied."""
    served = copy.deepcopy(resource)
    props = served["inputs"]
    props["spec"]["replicas"] = 1
    ours = {"f:spec": {"f:selector": {}, "f:template": {}}}
    counted = {"f:spec": {"f:replicas": {}}}
    props.setdefault("metadata", {})["managedFields"] = [
        {"manager": "pulumi-kubernetes-a2652af4", "operation": "Apply", "fieldsV1": ours},
        {"manager": replicas_by, "operation": "Update", "fieldsV1": counted},
    ]
    if replicas_by.startswith("pulumi-kubernetes"):
        props["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:replicas"] = {}
    return served


def gpu_pod(requests: dict, limits: dict, **over) -> dict:
    return pod(triton_container(resources={"requests": requests, "limits": limits}), **over)


def destination_rule(*subsets: str) -> dict:
    spec = {"host": "svc.svc.svc.cluster.local", "subsets": [{"name": s, "labels": {"version": s}} for s in subsets]}
    return custom("networking.istio.io/v1:DestinationRule", "svc-destinationrule", "svc", spec, meta_name="svc")


BUCKET = "pulumi-python:dynamic/s3:Bucket"
MOUNTING = deployment(pod_spec=pod(volumes=[{"name": "models", "persistentVolumeClaim": {"claimName": "model-weights"}}]))


def claim(protect: bool) -> dict:
    return k8s("core/v1:PersistentVolumeClaim", "weights-pvc-svc", {"name": "model-weights", "namespace": "svc"},
               {"spec": {"accessModes": ["ReadWriteMany"]}}, protect=protect)


# An Argo workflow's steps: each container template is a pod, with the template's scheduling
# fields or else the workflow's.
GPU_STEP = {"name": "build", "container": triton_container(), "nodeSelector": dict(GPU_SELECTOR),
            "tolerations": pod()["tolerations"]}
WORKFLOW_POD = {"securityContext": pod()["securityContext"]}


# (policy, passing resources, failing resources, facts)
CASES = [
    ("pod-security-restricted", [workflow_template(GPU_STEP, **WORKFLOW_POD)],
     [workflow_template({**GPU_STEP, "sidecars": [privileged_container()]}, **WORKFLOW_POD)], {}),
    ("gpu-workloads-scheduling", [workflow_template(GPU_STEP, **WORKFLOW_POD)],
     [workflow_template({k: v for k, v in GPU_STEP.items() if k != "nodeSelector"}, **WORKFLOW_POD)],
     {"gpuGroups": GPU_GROUPS}),
    ("pod-security-restricted", [deployment()], [deployment(pod_spec=pod(privileged_container()))], {}),
    ("pod-security-restricted", [deployment(ns="kube-system", pod_spec=pod(privileged_container()))],
     [deployment(pod_spec=pod(hostNetwork=True))], {}),
    ("no-privileged-containers", [deployment(), helm("gpu", {"dcgm": {"privileged": True}}, ns="gpu-operator")],
     [deployment(pod_spec=pod(privileged_container()))], {}),
    ("no-privileged-containers", [deployment()], [helm("logs", {"securityContext": {"privileged": True}})], {}),
    ("images-pinned", [deployment(pod_spec=pod(triton_container(image="nvcr.io/nvidia/tritonserver@sha256:" + "a" * 64)))],
     [deployment(pod_spec=pod(triton_container(image="nvcr.io/nvidia/tritonserver:latest")))], {}),
    ("images-pinned", [deployment()], [deployment(pod_spec=pod(initContainers=[triton_container(name="init", image="busybox")]))], {}),
    ("images-pinned", [helm("ok", {"image": {"repository": "x", "tag": "1.2.3"},
                                   "driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "595.91.07"},
                                   "sidecar": {"image": "registry.local:5000/tool:1.0"}})],
     [helm("bad", {"image": {"repository": "x", "tag": "latest"}, "sidecar": {"image": "registry.local:5000/tool"}})], {}),
    ("no-loadbalancer-services",
     [k8s("core/v1:Service", "svc-service", {"name": "svc", "namespace": "svc"}, {"spec": {"type": "ClusterIP"}}),
      helm("gw", {"service": {"type": "LoadBalancer"}}, chart="gateway", ns="istio-system", release="istio-ingressgateway")],
     [k8s("core/v1:Service", "svc-service", {"name": "svc", "namespace": "svc"}, {"spec": {"type": "LoadBalancer"}})], {}),
    ("no-loadbalancer-services", [helm("grafana", {"grafana": {"service": {"type": "ClusterIP"}}})],
     [helm("grafana", {"grafana": {"service": {"type": "LoadBalancer"}}})], {}),
    ("gateway-hosts-not-wildcard",
     [custom("networking.istio.io/v1:Gateway", "gw", "istio-system", {"servers": [{"hosts": ["models.example.com"]}]})],
     [custom("networking.istio.io/v1:Gateway", "gw", "istio-system", {"servers": [{"hosts": ["*", "*/*", "*.example.com"]}]})], {}),
    ("mesh-mtls-strict", [namespace(), STRICT_NS], [namespace()], {}),
    ("mesh-mtls-strict", [namespace(), STRICT_NS],
     [namespace(), custom("security.istio.io/v1:PeerAuthentication", "svc-mtls", "svc", {"mtls": {"mode": "PERMISSIVE"}})], {}),
    ("inference-namespace-network-policy",
     [namespace(), k8s("networking.k8s.io/v1:NetworkPolicy", "svc-np", {"name": "svc", "namespace": "svc"}, {"spec": {}})],
     [namespace()], {}),
    ("inference-namespace-authorization-policy",
     [namespace(), custom("security.istio.io/v1:AuthorizationPolicy", "svc-authz", "svc", {"action": "ALLOW"})],
     [namespace()], {}),
    ("no-secret-literals",
     [k8s("core/v1:ConfigMap", "cm", {"name": "cm", "namespace": "svc"}, {"data": {"config.yaml": "log:\n  level: info\n"}}),
      helm("grafana", {"admin": {"existingSecret": "grafana-admin", "passwordKey": "admin-password"},
                       "storage": {"accessKeyId": "${LOKI_S3_ACCESS_KEY_ID}"}, "password": "[secret]"}),
      deployment(pod_spec=pod(triton_container(env=[{"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}])))],
     [k8s("core/v1:ConfigMap", "cm", {"name": "cm", "namespace": "svc"}, {"data": {"password": "hunter2"}}),
      k8s("core/v1:ConfigMap", "cm2", {"name": "cm2", "namespace": "svc"}, {"data": {"app.yaml": "db:\n  password: hunter2\n"}}),
      helm("grafana", {"adminPassword": "hunter2"}),
      deployment(pod_spec=pod(triton_container(env=[{"name": "AWS_SECRET_ACCESS_KEY", "value": "abc"}])))], {}),
    ("no-open-auth-in-production", [namespace(), virtual_service([route(90, 10)])],
     [namespace(), virtual_service([route(90, 10, auth=False)])], {"production": True}),
    ("no-open-auth-in-production",
     [namespace(), virtual_service([route(90, 10, auth=False)]),
      custom("security.istio.io/v1:RequestAuthentication", "svc-jwt", "svc", {"jwtRules": [{"issuer": "x"}]})],
     [namespace(), virtual_service([{"name": "http", "match": [{"uri": {"prefix": "/"}}],
                                     "route": [{"destination": {"host": "svc", "subset": "v1"}}]}])], {"production": True}),
    ("inference-namespace-injection", [namespace(), deployment()], [namespace(injected=False), deployment()], {}),
    ("inference-namespace-injection", [namespace(), deployment()], [deployment()], {}),
    ("virtualservice-weights-sum", [virtual_service([route(90, 10), {"name": "one", "route": [{"destination": {"host": "svc"}}]}])],
     [virtual_service([route(80, 30)])], {}),
    ("virtualservice-subsets-exist", [destination_rule("v1", "v2"), virtual_service([route(90, 10)])],
     [destination_rule("v1"), virtual_service([route(90, 10)])], {}),
    ("virtualservice-subsets-exist", [destination_rule("v1", "v2"), virtual_service([{**route(90, 10), "mirror": {"host": "svc", "subset": "v2"}}])],
     [destination_rule("v1", "v2"), virtual_service([{**route(90, 10), "mirror": {"host": "svc", "subset": "v9"}}])], {}),
    ("hpa-target-exists", [deployment(rendered="svc-v1-0a1b2c3"), hpa("svc-v1-0a1b2c3")],
     [deployment(rendered="svc-v1-0a1b2c3"), hpa("svc-v2-0a1b2c3")], {}),
    ("hpa-target-exists", [deployment(), hpa("svc-v1-0a1b2c3", deps=(deployment(),))], [deployment(), hpa("svc-v1-0a1b2c3")], {}),
    ("hpa-target-sets-no-replicas", [deployment(rendered="svc-v1-0a1b2c3"), hpa("svc-v1-0a1b2c3")],
     [deployment(rendered="svc-v1-0a1b2c3", replicas=2), hpa("svc-v1-0a1b2c3")], {}),
    # After `up` the analyzer sees the object as the API server returns it: `replicas: 1` filled in by
    # the server, owned by the controller manager; only a count Pulumi's field manager applied is ours.
    ("hpa-target-sets-no-replicas", [as_served(deployment(rendered="svc-v1-0a1b2c3"), replicas_by="kube-controller-manager"),
                                     hpa("svc-v1-0a1b2c3")],
     [as_served(deployment(rendered="svc-v1-0a1b2c3"), replicas_by="pulumi-kubernetes-a2652af4"), hpa("svc-v1-0a1b2c3")], {}),
    ("gpu-requests-equal-limits", [deployment()],
     [deployment(pod_spec=gpu_pod({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"})),
      deployment(pod_spec=gpu_pod({"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": "0.5"})),
      deployment(pod_spec=gpu_pod({"nvidia.com/gpu": "1"}, {}))], {}),
    ("gpu-workloads-scheduling", [deployment(), deployment(pod_spec=gpu_pod({}, {}, tolerations=[], nodeSelector={}))],
     [deployment(pod_spec=pod(tolerations=[])), deployment(pod_spec=pod(nodeSelector={})),
      deployment(pod_spec=pod(nodeSelector={"pool.example.com/name": "cpu"})),
      # The group's selector and more is not the group's selector.
      deployment(pod_spec=pod(nodeSelector={**GPU_SELECTOR, "zone": "a"})),
      # A label the platform puts on the nodes is not what singles them out.
      deployment(pod_spec=pod(nodeSelector={"inference-platform/node-group": "gpu"}))], {"gpuGroups": GPU_GROUPS}),
    ("gpu-resources-in-group-profile",
     [deployment(pod_spec=gpu_pod({"nvidia.com/mig-1g.10gb": "1"}, {"nvidia.com/mig-1g.10gb": "1"}))],
     [deployment(pod_spec=gpu_pod({"nvidia.com/mig-3g.40gb": "1"}, {"nvidia.com/mig-3g.40gb": "1"}))],
     {"gpuGroups": {"gpu": {"gpusPerNode": 1, "maxNodes": 2, "resources": ["nvidia.com/mig-1g.10gb"], "selector": GPU_SELECTOR}}}),
    ("triton-probes", [deployment()], [deployment(pod_spec=pod(triton_container(startupProbe=None)))], {}),
    ("crd-resources-depend-on-release",
     [ISTIO_BASE, virtual_service([route(90, 10)], deps=(ISTIO_BASE,))],
     [ISTIO_BASE, virtual_service([route(90, 10)], deps=(namespace(),))], {}),
    ("stateful-resources-protected",
     [resource(BUCKET, "bucket", {"bucket": "weights"}, protect=True), MOUNTING, claim(protect=True)],
     [resource(BUCKET, "bucket", {"bucket": "weights"}), MOUNTING, claim(protect=False)], {"production": True}),
    ("stateful-resources-protected",
     [resource("openstack:sharedfilesystem/share:Share", "share", {"size": 10}, protect=True)],
     [resource("openstack:containerinfra/cluster:Cluster", "cluster", {}),
      resource("openstack:containerinfra/nodeGroup:NodeGroup", "gpu", {}),
      resource("openstack:sharedfilesystem/share:Share", "share", {"size": 10})], {"production": True}),
    ("gpu-quota", [], [], None),  # facts below
    ("chart-versions-pinned", [helm("a", {}, version="1.30.3"), helm("b", {}, version="v26.7.0")],
     [helm("a", {}, version="^1.2.0"), helm("b", {}, version=""), helm("c", {}, version="1.x")], {}),
]

QUOTA_GROUPS = {"gpu": {"gpusPerNode": 2, "maxNodes": 4, "resources": ["nvidia.com/gpu"]}}


@pytest.mark.parametrize("policy,passing,failing,facts", [c for c in CASES if c[3] is not None],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES) if c[3] is not None])
def test_policy_passes_and_fails(policy, passing, failing, facts):
    assert check(policy, passing, **facts) == []
    found = check(policy, failing, **facts)
    assert found, f"{policy} found nothing in its failing case"
    for v in found:
        assert v.policy == policy and v.level == "mandatory"
        assert "Fix: " in v.message


def test_every_policy_has_a_case():
    assert {c[0] for c in CASES} == set(catalog.POLICY_NAMES)


def test_gpu_quota():
    node_group = resource("openstack:containerinfra/nodeGroup:NodeGroup", "gpu", {"role": "gpu", "maxNodeCount": 2})
    assert check("gpu-quota", [], gpuQuota=8, gpuGroups=QUOTA_GROUPS) == []
    assert len(check("gpu-quota", [], gpuQuota=6, gpuGroups=QUOTA_GROUPS)) == 2  # the group, and the total
    # The declared node group's maxNodeCount (2 x 2 GPUs) is what can be deployed.
    assert check("gpu-quota", [node_group], gpuQuota=4, gpuGroups=QUOTA_GROUPS) == []
    assert check("gpu-quota", [], gpuGroups=QUOTA_GROUPS) == []  # no quota, no limit
    two = {**QUOTA_GROUPS, "gpu-b": {"gpusPerNode": 1, "maxNodes": 4, "resources": []}}
    found = check("gpu-quota", [], gpuQuota=10, gpuGroups=two)
    assert [v.urn for v in found] == [None] and "together" in found[0].message


def test_gpu_pods_select_a_group_by_exactly_its_selector():
    def found(selector):
        return check("gpu-workloads-scheduling", [deployment(pod_spec=pod(nodeSelector=selector))], gpuGroups=GPU_GROUPS)

    assert found(dict(GPU_SELECTOR)) == []
    for selector in ({}, {"pool.example.com/name": "cpu"}, {**GPU_SELECTOR, "zone": "a"}, {"inference-platform/node-group": "gpu"}):
        (violation,) = found(selector)
        assert "selector" in violation.message, selector
    # The profile check finds the group by the same selector.
    mig = {"gpu": {**GPU_GROUPS["gpu"], "resources": ["nvidia.com/mig-1g.10gb"]}}
    assert len(check("gpu-resources-in-group-profile", [deployment()], gpuGroups=mig)) == 1


def test_non_production_stacks_are_not_held_to_production_rules():
    open_vs = [namespace(), virtual_service([route(90, 10, auth=False)])]
    assert check("no-open-auth-in-production", open_vs, production=False) == []
    assert check("stateful-resources-protected", [resource(BUCKET, "bucket", {"bucket": "w"})]) == []


def test_crds_from_outside_the_stack_need_no_release():
    # mesh.enabled: false uses the cluster's own Istio: no release in the stack installs the CRDs.
    assert check("crd-resources-depend-on-release", [virtual_service([route(90, 10)])]) == []


def test_violations_name_the_resource():
    found = check("triton-probes", [deployment(pod_spec=pod(triton_container(livenessProbe=None)))])
    assert [v.resource for v in found] == ["kubernetes:apps/v1:Deployment::svc-v1"]
    assert "livenessProbe" in found[0].message


def test_policy_metadata():
    for p in ALL_POLICIES:
        assert p.description and p.enforcement_level.value in ("mandatory", "advisory"), p.name
    assert [p.name for p in ALL_POLICIES] == list(catalog.POLICY_NAMES)
    assert len(ALL_POLICIES) >= 20


def test_each_container_template_of_a_workflow_is_a_pod():
    copy_step = {"name": "copy", "container": {"name": "main", "image": "rclone/rclone:1.75.2"},
                 "volumes": [{"name": "scratch", "emptyDir": {}}], "securityContext": {"runAsUser": 2000}}
    gpu_step = {**GPU_STEP, "sidecars": [triton_container(name="server")], "initContainers": [{"name": "fetch"}]}
    wf = workflow_template(copy_step, gpu_step, nodeSelector={"pool": "cpu"}, volumes=[{"name": "tools", "configMap": {}}],
                           **WORKFLOW_POD)
    copy_pod, gpu_pod_ = pod_specs(wf["type"], wf["inputs"])  # the steps template makes no pod
    assert copy_pod["securityContext"] == {"runAsUser": 2000} and copy_pod["nodeSelector"] == {"pool": "cpu"}
    assert [v["name"] for v in copy_pod["volumes"]] == ["tools", "scratch"]
    assert gpu_pod_["securityContext"] == WORKFLOW_POD["securityContext"] and gpu_pod_["nodeSelector"] == GPU_SELECTOR
    assert [c["name"] for c in gpu_pod_["containers"]] == ["triton", "server"]
    assert [c["name"] for c in gpu_pod_["initContainers"]] == ["fetch"]


def test_mapping_proxies_are_read_like_dicts():
    # The CLI hands props over as read-only Mapping proxies; the runner does the same.
    bad = copy.deepcopy(deployment(pod_spec=pod(privileged_container())))
    assert check("pod-security-restricted", [bad])


def test_policy_hints_speak_of_stack_file_keys_never_of_internal_modules():
    import re

    from tests.conftest import ROOT

    for source in (ROOT / "policies" / "rules").glob("*.py"):
        for line in source.read_text().splitlines():
            strings = re.findall(r'"([^"]*)"', line)
            assert not [s for s in strings if re.search(r"\w+\.py\b|\w+\.\w+ does\b", s)], f"{source.name}: {line.strip()}"
