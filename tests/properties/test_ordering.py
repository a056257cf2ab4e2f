"""Ordering invariants on the transitive dependency graph: they hold on every example
stack and on random valid stacks, and removing a dependency they need is reported with
both resources named."""

from __future__ import annotations

import copy

import pytest

from platformctl import ordering
from platformctl.engine import render_stack
from platformctl.invariants import plan_resources
from tests.conftest import ROOT, STACKS, stack_plan
from tests.support.random_stacks import SEEDS, random_plan

DATA_STACKS = sorted(ROOT.glob("tests/data/Pulumi.*.yaml"))


def resources_of(stack: str) -> list[dict]:
    return copy.deepcopy(plan_resources(stack_plan(stack)))


def find(resources: list[dict], type_suffix: str, name: str) -> dict:
    (r,) = [r for r in resources if r["type"].endswith(type_suffix) and r["name"] == name]
    return r


def forget(resources: list[dict], dependent: dict, required: dict) -> None:
    """Drop `dependent`'s dependency on `required` as a program that never asked for it would:
    the outermost component around `dependent` that was given it loses it, and so does every
    resource inside that component (a component's `depends_on` reaches all its children)."""
    by_urn = {r["urn"]: r for r in resources}
    given, r = None, dependent
    while r is not None:
        if required["urn"] in (r.get("dependsOn") or []):
            given = r
        r = by_urn.get(r.get("parent"))
    assert given is not None, f"{dependent['name']} did not depend on {required['name']}"
    inside, grew = {given["urn"]}, True
    while grew:
        before = len(inside)
        inside |= {r["urn"] for r in resources if r.get("parent") in inside}
        grew = len(inside) > before
    for r in resources:
        if r["urn"] in inside and required["urn"] in (r.get("dependsOn") or []):
            r["dependsOn"].remove(required["urn"])


@pytest.mark.parametrize("stack", STACKS)
def test_invariants_hold_on_example_stacks(stack):
    assert ordering.violations(plan_resources(stack_plan(stack))) == []


@pytest.mark.parametrize("path", DATA_STACKS, ids=lambda p: p.name)
def test_invariants_hold_on_test_stacks(path):
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert ordering.violations(plan_resources(render_stack(stack, path))) == []


@pytest.mark.parametrize("seed", SEEDS)
def test_invariants_hold_on_random_stacks(seed):
    plan, _ = random_plan(seed)
    assert ordering.violations(plan_resources(plan)) == []


def test_acme_prod_orders_what_the_issue_found():
    """Triton after istiod, the GPU operator after the monitoring CRDs, Loki and Triton
    after their storage: each as a path in the graph, not only a direct edge."""
    resources = plan_resources(stack_plan("acme-prod"))
    g = ordering.Graph(resources)
    idx = {r["name"]: i for i, r in enumerate(resources)}
    assert idx["llm-chat-v7"] in g.descendants(idx["acme-prod-mesh-istiod"])
    assert idx["embed-v1"] in g.descendants(idx["acme-prod-mesh-istiod"])
    assert idx["acme-prod-gpu-release"] in g.descendants(idx["acme-prod-observability-kube-prometheus-stack"])
    assert idx["llm-chat-v7"] in g.descendants(idx["acme-prod-weights-pv-llm-chat"])


def test_removed_injector_dependency_names_both_resources():
    resources = resources_of("acme-prod")
    ns = find(resources, ":Namespace", "acme-prod-namespaces-llm-chat")
    istiod = find(resources, ":Release", "acme-prod-mesh-istiod")
    forget(resources, ns, istiod)
    found = ordering.violations(resources)
    # The namespaces are given istiod together: every workload in them is named.
    for deployment in ("llm-chat/llm-chat-v7", "embed/embed-v1"):
        assert any(p.startswith(f"Deployment {deployment} must come after Release istio-system/istiod (sidecar-injection")
                   for p in found), found
    # Only the workloads' side of the rule: nothing else lost a path.
    assert all("(sidecar-injection" in p for p in found), found


def test_gpu_operator_before_monitoring_crds_is_reported():
    resources = resources_of("acme-prod")
    release = find(resources, ":Release", "acme-prod-gpu-release")
    kps = find(resources, ":Release", "acme-prod-observability-kube-prometheus-stack")
    forget(resources, release, kps)
    assert ordering.violations(resources) == [
        "Release gpu-operator/gpu-operator must come after Release monitoring/kube-prometheus-stack (monitoring-crds: "
        "kube-prometheus-stack installs the monitoring CRDs: a monitor created, or looked for by an operator, before "
        "them is rejected or skipped), but no dependency leads there"
    ]


def test_triton_without_its_claim_is_reported_with_claim_and_volume():
    resources = resources_of("acme-prod")
    deployment = find(resources, ":Deployment", "llm-chat-v7")
    claim = find(resources, ":PersistentVolumeClaim", "acme-prod-weights-pvc-llm-chat")
    forget(resources, deployment, claim)
    found = ordering.violations(resources)
    # Every version of the service reads the claim: each is named, with the claim and its volume.
    assert len(found) == 4, found
    for i, version in enumerate(("v7", "v8")):
        assert found[2 * i].startswith(f"Deployment llm-chat/llm-chat-{version} must come after PersistentVolume ")
        assert found[2 * i + 1].startswith(
            f"Deployment llm-chat/llm-chat-{version} must come after PersistentVolumeClaim llm-chat/model-weights ")


@pytest.mark.parametrize("required,expected", [
    ((":Secret", "acme-prod-weights-s3-embed"), "Secret embed/model-weights-s3 (storage-and-secrets-before-workloads"),
    ((":Release", "acme-prod-gpu-release"), "Release gpu-operator/gpu-operator (gpu-operator-before-triton"),
], ids=["its S3 secret", "the GPU operator"])
def test_triton_without_a_required_dependency_is_reported(required, expected):
    resources = resources_of("acme-prod")
    deployment = find(resources, ":Deployment", "embed-v1")
    forget(resources, deployment, find(resources, *required))
    problem, *others = ordering.violations(resources)
    assert problem.startswith(f"Deployment embed/embed-v1 must come after {expected}")
    # The version's tuning run reads the same weights Secret.
    assert [o.split(" must")[0].rsplit("-", 1)[0] for o in others] == (
        ["Job embed/tune-embed-v1"] if "Secret" in expected else [])


def test_workflow_template_without_the_argo_release_is_reported():
    resources = resources_of("demo-dev")
    template = find(resources, ":WorkflowTemplate", "demo-dev-pipeline-resnet-workflowtemplate")
    forget(resources, template, find(resources, ":Release", "demo-dev-pipeline-release"))
    assert ordering.violations(resources) == [
        "WorkflowTemplate resnet/resnet-pipeline must come after Release argo/argo-workflows (argo-crds: the "
        "argo-workflows chart installs Argo's CRDs: a WorkflowTemplate created before them is rejected), but no "
        "dependency leads there"
    ]


def test_loki_without_its_bucket_is_reported():
    seed = next(s for s in SEEDS if random_plan(s)[1].observability.loki_storage == "s3"
                and random_plan(s)[1].observability.enabled)
    resources = copy.deepcopy(plan_resources(random_plan(seed)[0]))
    loki = find(resources, ":Release", "rand-dev-observability-loki")
    bucket = find(resources, ":Bucket", "rand-dev-observability-loki-bucket")
    forget(resources, loki, bucket)
    found = ordering.violations(resources)
    assert [p for p in found if "(loki-storage" in p] == found and len(found) == 1
    assert found[0].startswith("Release monitoring/loki must come after Bucket rand-dev-observability-loki-bucket")


GATEWAY_CRD = "acme-prod-mesh-crd-{}-gateway.networking.k8s.io"
POOL_CRD = "acme-prod-mesh-crd-inferencepools-inference.networking.k8s.io"


def forget_crd(resources: list[dict], dependent: dict, crd_name: str) -> None:
    """The CRD leaves the dependent's ancestry: the service no longer asks for it, nor does
    istiod (which every service comes after through its namespace)."""
    crd = find(resources, ":CustomResourceDefinition", crd_name)
    forget(resources, dependent, crd)
    forget(resources, find(resources, ":Release", "acme-prod-mesh-istiod"), crd)


@pytest.mark.parametrize("dependent,crd,expected", [
    ((":Gateway", "llm-chat-gateway"), GATEWAY_CRD.format("gateways"),
     "Gateway llm-chat/llm-chat must come after CustomResourceDefinition gateways.gateway.networking.k8s.io"),
    ((":HTTPRoute", "llm-chat-httproute"), GATEWAY_CRD.format("httproutes"),
     "HTTPRoute llm-chat/llm-chat must come after CustomResourceDefinition httproutes.gateway.networking.k8s.io"),
    ((":ReferenceGrant", "llm-chat-gateway-certificate-grant"), GATEWAY_CRD.format("referencegrants"),
     "ReferenceGrant istio-system/llm-chat-llm-chat-gateway must come after CustomResourceDefinition "
     "referencegrants.gateway.networking.k8s.io"),
], ids=["Gateway", "HTTPRoute", "ReferenceGrant"])
def test_a_gateway_api_object_not_after_its_crd_is_reported(dependent, crd, expected):
    resources = resources_of("acme-prod")
    forget_crd(resources, find(resources, *dependent), crd)
    (problem,) = ordering.violations(resources)
    assert problem.startswith(f"{expected} (declared-crds: ") and problem.endswith("but no dependency leads there")


def test_router_releases_not_after_the_inference_pool_crd_are_reported():
    """Each version's router release renders its InferencePool: both are named."""
    resources = resources_of("acme-prod")
    forget_crd(resources, find(resources, ":Release", "llm-chat-v7-router"), POOL_CRD)
    found = ordering.violations(resources)
    assert [p.split(" (")[0] for p in found] == [
        f"Release llm-chat/llm-chat-{v} must come after CustomResourceDefinition inferencepools.inference.networking.k8s.io"
        for v in ("v7", "v8")]


def test_a_gateway_api_object_whose_crd_the_plan_lacks_is_reported():
    """The plan declares the group's other CRDs, so the cluster is not the one providing it."""
    resources = [r for r in resources_of("acme-prod") if r["name"] != GATEWAY_CRD.format("httproutes")]
    (problem,) = ordering.violations(resources)
    assert problem.startswith("HTTPRoute llm-chat/llm-chat needs the CRD of HTTPRoute (gateway.networking.k8s.io) "
                              "(declared-crds: ")


def test_acme_prod_orders_the_llm_routing_after_its_crds():
    resources = plan_resources(stack_plan("acme-prod"))
    g = ordering.Graph(resources)
    idx = {r["name"]: i for i, r in enumerate(resources)}
    for name, crd in (("llm-chat-gateway", GATEWAY_CRD.format("gateways")),
                      ("llm-chat-httproute", GATEWAY_CRD.format("httproutes")),
                      ("llm-chat-v7-router", POOL_CRD), ("llm-chat-v8-router", POOL_CRD)):
        assert idx[name] in g.descendants(idx[crd]), name


# --------------------------------------------------------------------------- the graph itself


def res(urn: str, *, deps=(), parent=None, provider=None, **inputs) -> dict:
    return {"urn": urn, "type": inputs.pop("type", "kubernetes:apps/v1:Deployment"), "name": urn, "parent": parent,
            "provider": provider, "dependsOn": list(deps), "inputs": inputs}


ISTIOD = res("istiod", type="kubernetes:helm.sh/v3:Release", chart="istiod", namespace="istio-system")
INJECTED = res("ns", type="kubernetes:core/v1:Namespace", apiVersion="v1", kind="Namespace",
               metadata={"name": "app", "labels": {"istio-injection": "enabled"}})


def workload(urn: str, **kw) -> dict:
    return res(urn, apiVersion="apps/v1", kind="Deployment", metadata={"namespace": "app"}, spec={}, **kw)


def test_a_parent_component_passes_on_its_dependencies():
    """A component's URN resolves after its depends_on, and children wait for it."""
    component = res("component", type="inference-platform:x:Thing", deps=["istiod"])
    child = workload("child", parent="component")
    assert ordering.violations([ISTIOD, INJECTED, component, child]) == []
    assert ordering.violations([ISTIOD, INJECTED, res("component", type="inference-platform:x:Thing"), child])


def test_a_provider_passes_on_its_dependencies():
    provider = res("provider", type="pulumi:providers:kubernetes", deps=["istiod"])
    assert ordering.violations([ISTIOD, INJECTED, provider, workload("w", provider="provider")]) == []


def test_rules_hold_trivially_without_the_required_release():
    """Without istiod in the stack the cluster provides the mesh: nothing to order after."""
    assert ordering.violations([INJECTED, workload("w")]) == []


def test_workloads_outside_injected_namespaces_need_no_injector():
    plain = res("ns", type="kubernetes:core/v1:Namespace", apiVersion="v1", kind="Namespace",
                metadata={"name": "app", "labels": {}})
    assert ordering.violations([ISTIOD, plain, workload("w")]) == []


def synthetic_stack(services: int) -> list[dict]:
    """resources.json-shaped: per service a namespace, claim, volume, Secret and two
    Deployments, all after istiod through the namespace."""
    out = [ISTIOD]
    for i in range(services):
        ns = f"s{i}"
        out.append(res(f"ns{i}", type="kubernetes:core/v1:Namespace", deps=["istiod"], apiVersion="v1", kind="Namespace",
                       metadata={"name": ns, "labels": {"istio-injection": "enabled"}}))
        out.append(res(f"pv{i}", type="kubernetes:core/v1:PersistentVolume", apiVersion="v1", kind="PersistentVolume",
                       metadata={}, spec={"claimRef": {"namespace": ns, "name": "weights"}}))
        out.append(res(f"pvc{i}", type="kubernetes:core/v1:PersistentVolumeClaim", deps=[f"ns{i}", f"pv{i}"],
                       apiVersion="v1", kind="PersistentVolumeClaim", metadata={"name": "weights", "namespace": ns}))
        out.append(res(f"secret{i}", type="kubernetes:core/v1:Secret", deps=[f"ns{i}"], apiVersion="v1", kind="Secret",
                       metadata={"name": "keys", "namespace": ns}))
        pod = {"template": {"spec": {"volumes": [{"name": "w", "persistentVolumeClaim": {"claimName": "weights"}}],
                                     "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "keys"}}]}]}}}
        for v in (1, 2):
            out.append(res(f"d{i}-{v}", deps=[f"ns{i}", f"pvc{i}", f"secret{i}"], apiVersion="apps/v1",
                           kind="Deployment", metadata={"namespace": ns}, spec=pod))
    return out


def test_check_work_grows_linearly_with_the_stack(monkeypatch):
    visits = []
    walk = ordering.Graph.descendants

    def counting(self, start):
        found = walk(self, start)
        visits.append(len(found))
        return found

    monkeypatch.setattr(ordering.Graph, "descendants", counting)
    work = {}
    for n in (500, 2000):
        visits.clear()
        assert ordering.violations(synthetic_stack(n)) == []
        work[n] = sum(visits)
    assert work[2000] <= 4.2 * work[500], work


def test_deep_chains_need_no_recursion():
    chain = [ISTIOD, INJECTED] + [workload(f"w{i}", deps=[f"w{i - 1}" if i else "istiod", "ns"]) for i in range(20000)]
    assert ordering.violations(chain) == []



POOL_CRD_RESOURCE = res("crd", type=ordering.CRD, apiVersion="apiextensions.k8s.io/v1", kind="CustomResourceDefinition",
                        metadata={"name": "inferencepools.inference.networking.k8s.io"},
                        spec={"group": "inference.networking.k8s.io", "names": {"kind": "InferencePool"}})


def router(urn: str, deps=(), **values) -> dict:
    return res(urn, type="kubernetes:helm.sh/v3:Release", deps=deps, chart="llm-d-router-gateway", namespace="llm",
               name=urn, values=values)


@pytest.mark.parametrize("values,needs_crd", [
    ({}, True),
    ({"router": {"inferencePool": {"create": False}}}, False),
], ids=["pool by default", "no pool"])
def test_a_router_release_needs_the_pool_crd_only_when_it_renders_a_pool(values, needs_crd):
    assert bool(ordering.violations([POOL_CRD_RESOURCE, router("r", **values)])) is needs_crd
    assert ordering.violations([POOL_CRD_RESOURCE, router("r", deps=["crd"], **values)]) == []


def test_a_router_release_scraped_by_its_service_monitor_comes_after_the_monitoring_crds():
    kps = res("kps", type="kubernetes:helm.sh/v3:Release", chart="kube-prometheus-stack", namespace="monitoring",
              name="kube-prometheus-stack")
    scraped = {"router": {"monitoring": {"prometheus": {"enabled": True}}}}
    (problem,) = ordering.violations([kps, router("r", **scraped)])
    assert problem.startswith("Release llm/r must come after Release monitoring/kube-prometheus-stack (monitoring-crds")
    assert ordering.violations([kps, router("r", deps=["kps"], **scraped)]) == []
    assert ordering.violations([kps, router("r")]) == []


def test_a_metrics_adapter_not_after_a_namespace_is_reported():
    """On destroy the adapter's APIService must go before every namespace: one that is deleted while
    custom.metrics.k8s.io does not answer waits for ever (NamespaceDeletionDiscoveryFailure)."""
    resources = resources_of("demo-dev")
    adapter = find(resources, ":Release", "demo-dev-observability-prometheus-adapter")
    forget(resources, adapter, find(resources, ":Namespace", "demo-dev-pipeline-namespace"))
    assert ordering.violations(resources) == [
        "Release monitoring/prometheus-adapter must come after Namespace argo (aggregated-apis-go-first: a "
        "namespace's deletion waits while any aggregated API (its chart's APIService) does not answer "
        "(NamespaceDeletionDiscoveryFailure): the release must go before every namespace on destroy), but no "
        "dependency leads there"]
