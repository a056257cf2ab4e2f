"""The Observability component used alone, as a program in any language would: plain
arguments, the Kubernetes provider in its resource options."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.core import endpoints as ep
from inference_platform.observability import alerts
from inference_platform.observability.inputs import ObservabilityInputs
from inference_platform.observability.observability import Observability
from inference_platform.settings.errors import ConfigError
from platformctl.engine import SECRET, _run
from platformctl.plan import HELM_RELEASE

RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
SERVICE = {
    "name": "shop",
    "hosts": ["shop.example.com"],
    "versions": [{
        "name": "v1",
        "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
        "weight": 100,
        "model_repository": {"cache": "s3", "path": "shop/v1"},
        "gpu": {"group": "gpu"},
    }],
}
GPU_GROUP = {"name": "gpu", "min_nodes": 1, "max_nodes": 4, "selector": {"pool": "gpu"}, "os": "ubuntu-24.04",
             "gpu": {"model": "A100-80GB"}}
# A joining GPU node: boot, driver and image pull take 900 s before a DaemonSet pod runs there.
ESTIMATE = {"group": "gpu", "new_node": [{"name": "node boot", "seconds": 300}, {"name": "driver install", "seconds": 400},
                                         {"name": "image pull", "seconds": 200}, {"name": "model load", "seconds": 60}],
            "spare": [{"name": "model load", "seconds": 60}]}
ARGS = {
    "observability": {"loki_storage": "s3", "alerting": {"receivers": [{"name": "ops", "webhook": {}}], "critical": ["ops"]}},
    "services": [SERVICE],
    "gpu_groups": [GPU_GROUP],
    "tls": True,
    "weights_s3": {"endpoint": "https://s3.example.cloud", "bucket": "weights"},
    "s3_access_key_id": "key-id",
    "s3_secret_access_key": "secret-key",
    "alert_receiver_secrets": {"ops": "https://hooks.example.com/ops"},
    "cold_start": [ESTIMATE],
    "production": True,
}


def render(args: dict):
    made = {}

    def program():
        provider = k8s.Provider("k8s")
        made["obs"] = Observability("obs", args, opts=pulumi.ResourceOptions(providers={"kubernetes": provider}))

    return _run("alone", {}, [], program), made["obs"]


@pytest.fixture(scope="module")
def alone():
    return render(ARGS)


def releases(plan) -> dict:
    return {r.inputs["name"]: r for r in plan.of_type(HELM_RELEASE)}


def test_installs_the_stack_through_the_given_provider(alone):
    plan, _ = alone
    component = plan.get("inference-platform:index:Observability", "obs")
    provider = plan.get("pulumi:providers:kubernetes", "k8s")
    rel = releases(plan)
    assert set(rel) == {ep.KUBE_PROMETHEUS_RELEASE, ep.ADAPTER_RELEASE, ep.LOKI_RELEASE, ep.ALLOY_RELEASE}
    kubernetes_children = [r for r in plan.children(component) if r.type.startswith("kubernetes:")]
    assert len(kubernetes_children) > len(rel)
    for child in kubernetes_children:
        assert child.provider.startswith(provider.urn), child.name
    # DaemonSets on every GPU node wait for a joining one: 900 s with headroom, in whole minutes.
    assert rel[ep.KUBE_PROMETHEUS_RELEASE].inputs["timeout"] == rel[ep.ALLOY_RELEASE].inputs["timeout"] == 1140
    assert "timeout" not in rel[ep.LOKI_RELEASE].inputs


def test_rules_watch_the_given_services_and_groups(alone):
    plan, _ = alone
    [rule] = plan.of_type(RULE)
    expected = alerts.rule_groups(ObservabilityInputs.model_validate(ARGS))
    assert rule.inputs["spec"]["groups"] == expected
    endpoints = next(g for g in expected if g["name"] == "inference-platform.endpoints")["rules"]
    assert [r["labels"]["url"] for r in endpoints] == ["https://shop.example.com"]
    assert any(r.get("labels", {}).get("node_group") == "gpu" for g in expected for r in g["rules"])
    # No mesh and no autoscaler given: nothing scrapes them.
    assert plan.of_type(POD_MONITOR) == []


def test_loki_bucket_on_the_given_s3_endpoint_is_protected(alone):
    plan, _ = alone
    bucket = plan.get("pulumi-python:dynamic/s3:Bucket", "obs-loki-bucket")
    assert bucket.inputs["bucket"] == "weights-logs" and bucket.inputs["endpoint"] == "https://s3.example.cloud"
    assert bucket.inputs["secretAccessKey"] == SECRET
    assert bucket.protect and bucket.retain_on_delete
    assert bucket.urn in releases(plan)[ep.LOKI_RELEASE].depends_on


def test_attributes_name_what_other_parts_consume(alone):
    _, obs = alone
    assert obs.namespace == ep.MONITORING_NAMESPACE
    assert obs.urls == {"grafana": ep.GRAFANA_URL, "prometheus": ep.PROMETHEUS_URL}
    assert obs.crds.pulumi_resource_name == "obs-kube-prometheus-stack"
    assert isinstance(obs.grafana_admin_password, pulumi.Output)


def test_mesh_given_adds_its_monitors_and_jaeger():
    plan, obs = render({"mesh_installed": True, "mesh_urls": {"jaeger": ep.JAEGER_QUERY_URL}})
    assert {m.inputs["metadata"]["name"] for m in plan.of_type(POD_MONITOR)} == {"envoy-stats"}
    sources = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]["additionalDataSources"]
    assert {s["type"] for s in sources} == {"loki", "jaeger"}
    assert obs.urls["jaeger"] == ep.JAEGER_QUERY_URL


@pytest.mark.parametrize("args,paths", [
    ({"observability": {"prometheus_retention": "forever"}}, ["observability.prometheus_retention"]),
    ({"observability": {"loki_storage": "s3"}}, ["weights_s3", "s3_access_key_id", "s3_secret_access_key"]),
    ({"observability": {"alerting": {"receivers": [{"name": "ops", "webhook": {}}]}}}, ["alert_receiver_secrets.ops"]),
])
def test_a_bad_argument_names_the_component_and_the_key(args, paths):
    with pytest.raises(ConfigError) as err:
        render(args)
    assert err.value.stack_file == "ObservabilityArgs"
    assert err.value.paths == paths
