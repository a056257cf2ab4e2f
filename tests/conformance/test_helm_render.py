"""Every Helm release of the example stacks rendered by a real `helm template` of the vendored
chart (../shared/reference/helm): it renders, and every object it makes validates (core kinds
with kubernetes-validate, custom resources against the reference CRDs or the chart's own). The
model pipeline's Argo release is also checked for what pipeline.py says its values do."""

from __future__ import annotations

import pytest
import yaml

from inference_platform.core import versions
from tests.conftest import ROOT, STACKS, stack_plan
from tests.support import conformance, helm


def _releases() -> dict[str, dict]:
    """Each distinct release (chart, version, namespace, name, values) of the example stacks, by an id."""
    found: dict[str, dict] = {}
    for stack in STACKS:
        for inputs in helm.releases(stack_plan(stack)):
            if inputs not in found.values():
                found[f"{stack}:{inputs['name']}"] = inputs
    return found


RELEASES = _releases()


def helm_template(release_id: str) -> list[dict]:
    """The objects `helm template` makes of a planned Helm release, CRDs included."""
    return helm.helm_template(RELEASES[release_id])


@pytest.mark.parametrize("release_id", sorted(RELEASES))
def test_release_renders_and_every_object_validates(release_id, reference):
    docs = helm_template(release_id)
    assert docs
    conformance.validate_rendered(docs)


def test_the_argo_values_reach_the_controller(reference):
    (release_id,) = [i for i, r in RELEASES.items() if r["chart"] == versions.ARGO_WORKFLOWS.name]
    docs = helm_template(release_id)
    assert sorted({doc["kind"] for doc in docs}) == ["ClusterRole", "ClusterRoleBinding", "ConfigMap",
                                                    "CustomResourceDefinition", "Deployment", "ServiceAccount"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    # The controller alone: no Argo Server.
    assert deployment["metadata"]["name"].endswith("workflow-controller")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    (controller,) = pod["containers"]
    args = controller["args"]
    assert args[args.index("--executor-image") + 1] == f"quay.io/argoproj/argoexec:{versions.ARGO_WORKFLOWS_VERSION}-nonroot"
    (config_map,) = [d for d in docs if d["kind"] == "ConfigMap"]
    config = yaml.safe_load(config_map["data"]["config"])
    assert config["workflowRestrictions"] == {"templateReferencing": "Strict"}
    assert config["executor"]["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize("stack", ["acme-prod", "demo-dev"])
def test_the_ingress_gateway_outlives_its_longest_request_and_survives_a_drain(stack):
    from inference_platform.core import endpoints as ep
    from platformctl.engine import stack_settings

    settings = stack_settings(ROOT / "stacks" / f"Pulumi.{stack}.yaml")
    longest = max(w.timeout_seconds for w in [*settings.services, *settings.graphs])
    objects = helm_template(next(k for k, r in RELEASES.items() if k.startswith(f"{stack}:") and r["name"] == ep.GATEWAY_RELEASE))
    by_kind = {o["kind"]: o for o in objects}
    pod = by_kind["Deployment"]["spec"]["template"]
    drain = yaml.safe_load(pod["metadata"]["annotations"]["proxy.istio.io/config"])["terminationDrainDuration"]
    drain_seconds = int(drain.removesuffix("s"))
    # Envoy drains for as long as the longest request may take, and the kubelet waits beyond it.
    assert drain_seconds >= longest
    assert pod["spec"]["terminationGracePeriodSeconds"] > drain_seconds
    # A node drain never takes the only replica: two at least, and a budget that keeps one.
    assert by_kind["HorizontalPodAutoscaler"]["spec"]["minReplicas"] >= 2
    budget = by_kind["PodDisruptionBudget"]["spec"]
    assert budget["minAvailable"] == 1
    assert budget["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


def test_prometheus_scrapes_the_argo_controller_where_the_chart_serves_its_metrics(reference):
    """The platform's PodMonitor selects the controller pod the real chart renders, on a port that
    pod declares; the argo NetworkPolicy admits the monitoring namespace to that port."""
    from platformctl.plan import manifest

    (release_id,) = [i for i, r in RELEASES.items() if r["chart"] == versions.ARGO_WORKFLOWS.name]
    (deployment,) = [d for d in helm_template(release_id) if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]
    stack = release_id.split(":", 1)[0]
    (monitor,) = [manifest(r) for r in stack_plan(stack).of_type("kubernetes:monitoring.coreos.com/v1:PodMonitor")
                  if r.inputs["metadata"]["namespace"] == "argo"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    ports = {p.get("name"): p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    (policy,) = [manifest(r) for r in stack_plan(stack).of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
                 if r.inputs["metadata"]["namespace"] == "argo"]
    admitted = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert ports[endpoint["port"]] in admitted
