"""The Mesh component used alone, as a program in any language would: plain arguments, the
Kubernetes provider and the parts it waits for in its resource options."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.core import endpoints as ep
from inference_platform.mesh.mesh import Mesh
from inference_platform.settings.errors import ConfigError
from platformctl.engine import _run
from platformctl.plan import HELM_RELEASE

ARGS = {
    "mesh": {"tls": {"enabled": True, "secret_name": "shop-tls"}, "jaeger_storage": "persistent",
             "kiali_auth": "openid", "kiali_openid": {"issuer_uri": "https://sso.example.com", "client_id": "kiali"}},
    "ui": {"kiali": {"host": "kiali.example.com"}},
    "hosts": ["shop.example.com", "search.example.com"],
    "production": True,
    "storage_class": "fast-ssd",
    "node_boot_seconds": 600,
}


def render(args: dict):
    """The plan of a program holding only a provider, a namespace to wait for, and the Mesh."""
    made = {}

    def program():
        provider = k8s.Provider("k8s")
        before = k8s.core.v1.Namespace("before", opts=pulumi.ResourceOptions(provider=provider))
        made["mesh"] = Mesh("mesh", args, opts=pulumi.ResourceOptions(providers={"kubernetes": provider}, depends_on=[before]))

    plan = _run("alone", {}, [], program)
    return plan, made["mesh"]


@pytest.fixture(scope="module")
def alone():
    return render(ARGS)


def test_installs_istio_jaeger_and_kiali_through_the_given_provider(alone):
    plan, _ = alone
    component = plan.get("inference-platform:index:Mesh", "mesh")
    children = plan.children(component)
    provider = plan.get("pulumi:providers:kubernetes", "k8s")
    before = plan.get("kubernetes:core/v1:Namespace", "before")
    releases = {r.inputs["name"]: r for r in plan.of_type(HELM_RELEASE)}
    assert set(releases) == {ep.ISTIO_BASE_RELEASE, ep.ISTIOD_RELEASE, ep.GATEWAY_RELEASE, ep.JAEGER_RELEASE, ep.KIALI_RELEASE}
    assert all(r.parent == component.urn for r in releases.values())
    for child in children:
        assert child.provider.startswith(provider.urn), child.name
        assert before.urn in child.depends_on, child.name
    # A load balancer takes about a node boot: 600 s with headroom, in whole minutes.
    assert releases[ep.GATEWAY_RELEASE].inputs["timeout"] == 780
    assert releases[ep.ISTIO_BASE_RELEASE].urn in releases[ep.ISTIOD_RELEASE].depends_on


def test_gateway_serves_the_given_hosts_and_ui_hosts_over_tls(alone):
    plan, _ = alone
    [gateway] = [r for r in plan.resources if r.type == "kubernetes:networking.istio.io/v1:Gateway"]
    spec = gateway.inputs["spec"]
    assert spec["selector"] == {"istio": "ingressgateway"}
    servers = {s["port"]["name"]: s for s in spec["servers"]}
    assert servers["https"]["hosts"] == ["shop.example.com", "search.example.com"]
    assert servers["https"]["tls"] == {"mode": "SIMPLE", "credentialName": "shop-tls"}
    assert servers["https-ui"]["hosts"] == ["kiali.example.com"]


def test_jaeger_volume_is_protected_in_production(alone):
    plan, _ = alone
    claim = plan.get("kubernetes:core/v1:PersistentVolumeClaim", "mesh-jaeger-data")
    assert claim.protect and claim.retain_on_delete
    assert claim.inputs["spec"]["storageClassName"] == "fast-ssd"


def test_attributes_name_what_other_parts_consume(alone):
    _, mesh = alone
    assert mesh.gateway == f"{ep.ISTIO_NAMESPACE}/{ep.GATEWAY_NAME}"
    assert mesh.ingress_namespace == ep.ISTIO_NAMESPACE
    assert mesh.ingress_principal == f"cluster.local/ns/{ep.ISTIO_NAMESPACE}/sa/{ep.GATEWAY_RELEASE}"
    assert mesh.urls == {"kiali": ep.KIALI_URL, "jaeger": ep.JAEGER_QUERY_URL}
    assert mesh.ui_urls == {"kiali": "https://kiali.example.com/"}
    # Istio's CRDs come with the base chart; istiod injects the sidecars.
    assert (mesh.crds.pulumi_resource_name, mesh.injector.pulumi_resource_name) == ("mesh-base", "mesh-istiod")


def test_disabled_mesh_installs_nothing_and_names_the_clusters_gateway():
    plan, mesh = render({"mesh": {"enabled": False}})
    assert plan.children(plan.get("inference-platform:index:Mesh", "mesh")) == []
    assert (mesh.crds, mesh.injector, mesh.urls) == (None, None, {})
    assert mesh.gateway == f"{ep.ISTIO_NAMESPACE}/{ep.GATEWAY_NAME}"


@pytest.mark.parametrize("args,path", [
    ({"mesh": {"tracing_sampling_percent": 200}}, "mesh.tracing_sampling_percent"),
    ({"hosts": ["not a host"]}, "hosts[0]"),
    ({"production": True, "mesh": {"kiali_auth": "anonymous"}}, "mesh.kiali_auth"),
])
def test_a_bad_argument_names_the_component_and_the_key(args, path):
    with pytest.raises(ConfigError) as err:
        render(args)
    assert err.value.stack_file == "MeshArgs"
    assert err.value.paths == [path]
