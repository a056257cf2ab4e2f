"""The mesh: Istio install order, mTLS, tracing, gateways, Jaeger and Kiali, against
the pinned charts' values and schema."""

from __future__ import annotations

import json

import jsonschema
import pytest

from inference_platform import platform
from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.mesh import mesh
from platformctl.engine import stack_settings
from platformctl.plan import HELM_RELEASE
from tests.conftest import base_config, render_raw, stack_plan
from tests.support.conformance import chart_values, reference_dir, unknown_values_keys

MESH = "inference-platform:index:Mesh"
ISTIO_GROUPS = ("networking.istio.io", "security.istio.io", "telemetry.istio.io")

# Keys the charts pass through without listing them in values.yaml.
FREE_FORM = {
    versions.ISTIOD: frozenset({"meshConfig.enableTracing", "meshConfig.extensionProviders"}),
    # Kiali's values are its config file; external_services takes the Kiali CR's fields.
    versions.KIALI: frozenset({"external_services.prometheus.url", "external_services.tracing", "external_services.grafana",
                               # Read by the chart's templates/service.yaml (kiali.io/external-url) and Kiali's config.
                               "server.web_fqdn", "server.web_schema",
                               # templates/deployment.yaml copies deployment.resources verbatim.
                               "deployment.resources.limits.cpu"}),
    # The chart writes userconfig verbatim as Jaeger's configuration file, and podSecurityContext
    # verbatim as the pod's securityContext, and jaeger.resources, which values.yaml does not list
    # (templates/jaeger/jaeger-deploy.yaml).
    versions.JAEGER: frozenset({"userconfig", "jaeger.resources", "jaeger.podSecurityContext.runAsNonRoot",
                                "jaeger.podSecurityContext.seccompProfile"}),
    # Pod annotations are free-form (the chart copies the map onto the pod template).
    versions.ISTIO_GATEWAY: frozenset({"podAnnotations"}),
}


def mesh_children(plan, stack_name):
    component = plan.get(MESH, f"{stack_name}-mesh")
    return component, plan.children(component)


def releases(plan) -> dict:
    return {r.inputs["name"]: r for r in plan.of_type(HELM_RELEASE)}


def chart_defaults(chart: versions.Chart) -> dict:
    values = dict(chart_values(versions.REFERENCE_DIR[chart], chart.version))
    # Istio charts keep their defaults under _internal_defaults_do_not_set; users set them at the top.
    return {**values.pop("_internal_defaults_do_not_set", {}), **values}


@pytest.mark.parametrize("stack", ["demo-dev", "acme-prod"])
def test_istio_installs_in_order_at_pinned_versions(stack, reference):
    plan = stack_plan(stack)
    rel = releases(plan)
    for release_name, chart in (
        (ep.ISTIO_BASE_RELEASE, versions.ISTIO_BASE), (ep.ISTIOD_RELEASE, versions.ISTIOD),
        (ep.GATEWAY_RELEASE, versions.ISTIO_GATEWAY), (ep.JAEGER_RELEASE, versions.JAEGER), (ep.KIALI_RELEASE, versions.KIALI),
    ):
        r = rel[release_name]
        assert (r.inputs["chart"], r.inputs["version"], r.inputs["repositoryOpts"]["repo"]) == chart
        assert r.inputs["namespace"] == ep.ISTIO_NAMESPACE
    base = rel[ep.ISTIO_BASE_RELEASE]
    assert base.urn in rel[ep.ISTIOD_RELEASE].depends_on
    assert rel[ep.ISTIOD_RELEASE].urn in rel[ep.GATEWAY_RELEASE].depends_on
    _, children = mesh_children(plan, stack)
    istio_crs = [c for c in children if c.type.split(":")[1].startswith(ISTIO_GROUPS)]
    assert {c.inputs["kind"] for c in istio_crs} >= {"PeerAuthentication", "Telemetry", "Gateway"}
    for c in istio_crs:
        assert base.urn in c.depends_on, c.name


def test_pinned_images():
    a = platform.mesh_inputs(stack_settings("demo-dev"))
    values = mesh.istiod_values(a)
    assert values["global"] == {"hub": "docker.io/istio", "tag": versions.ISTIOD.version}
    assert mesh.jaeger_values(a)["jaeger"]["image"]["tag"] == versions.JAEGER_IMAGE_TAG
    assert mesh.kiali_values(a)["deployment"]["image_version"] == versions.KIALI_IMAGE_TAG


def _custom(plan, kind):
    return [
        r for r in plan.resources
        if r.type.endswith(f":{kind}") and r.type.split(":")[1].startswith(ISTIO_GROUPS)
        and r.inputs["metadata"]["namespace"] == ep.ISTIO_NAMESPACE
    ]


def test_strict_mtls_and_tracing():
    plan = stack_plan("demo-dev")
    [peer] = _custom(plan, "PeerAuthentication")
    assert peer.inputs["metadata"]["name"] == "default" and peer.inputs["spec"] == {"mtls": {"mode": "STRICT"}}
    [telemetry] = _custom(plan, "Telemetry")
    tracing = telemetry.inputs["spec"]["tracing"][0]
    assert tracing["providers"] == [{"name": mesh.TRACING_PROVIDER}]
    assert tracing["randomSamplingPercentage"] == stack_settings("demo-dev").mesh.tracing_sampling_percent
    istiod = releases(plan)[ep.ISTIOD_RELEASE].inputs["values"]["meshConfig"]
    [provider] = istiod["extensionProviders"]
    assert provider == {"name": mesh.TRACING_PROVIDER, "opentelemetry": {"service": ep.JAEGER_HOST, "port": 4317}}


def test_sampling_percent_from_config():
    raw = base_config() | {"mesh": {"tracingSamplingPercent": 12.5}}
    [telemetry] = _custom(render_raw(raw), "Telemetry")
    assert telemetry.inputs["spec"]["tracing"][0]["randomSamplingPercentage"] == 12.5


def test_gateway_http_only_without_tls():
    plan = stack_plan("demo-dev")
    [gw] = _custom(plan, "Gateway")
    assert gw.inputs["apiVersion"] == "networking.istio.io/v1"
    assert gw.inputs["metadata"]["name"] == ep.GATEWAY_NAME
    assert gw.inputs["spec"]["selector"] == mesh.INGRESS_SELECTOR
    [server] = gw.inputs["spec"]["servers"]
    assert server["port"]["protocol"] == "HTTP" and "tls" not in server
    assert server["hosts"] == ["resnet.demo.example.com"]


def test_gateway_https_with_redirect_and_every_host():
    plan = stack_plan("acme-prod")
    [gw] = _custom(plan, "Gateway")
    # The services' servers; the UI hosts have servers of their own (see the UI tests below).
    servers = {s["port"]["name"]: s for s in gw.inputs["spec"]["servers"] if not s["port"]["name"].endswith("-ui")}
    assert servers["https"]["tls"] == {"mode": "SIMPLE", "credentialName": "acme-gateway-tls"}
    assert servers["http"]["tls"] == {"httpsRedirect": True}
    # An LLM service's hosts are on its own Gateway API Gateway (serving/llm_routing.py).
    hosts = [h for s in stack_settings("acme-prod").services if not s.llm_routed for h in s.hosts]
    for server in servers.values():
        assert server["hosts"] == hosts
        assert not any("*" in h for h in server["hosts"])


def test_gateway_service_is_a_load_balancer_with_annotations(reference):
    plan = stack_plan("acme-prod")
    values = releases(plan)[ep.GATEWAY_RELEASE].inputs["values"]
    assert values["service"] == {"type": "LoadBalancer", "annotations": {"loadbalancer.openstack.org/keep-floatingip": "true"}}


@pytest.mark.parametrize("stack", ["demo-dev", "acme-prod"])
def test_gateway_values_match_the_chart_schema(stack, reference):
    schema = json.loads((reference / "charts/istio-gateway" / versions.ISTIO_GATEWAY.version / "values.schema.json").read_text())
    values = releases(stack_plan(stack))[ep.GATEWAY_RELEASE].inputs["values"]
    validator = jsonschema.Draft7Validator(schema)
    validator.validate(values)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**values, "serviceType": "LoadBalancer"})


@pytest.mark.parametrize("stack", ["demo-dev", "acme-prod"])
def test_every_values_key_exists_in_the_pinned_chart(stack, reference):
    rel = releases(stack_plan(stack))
    for release_name, chart in (
        (ep.ISTIO_BASE_RELEASE, versions.ISTIO_BASE), (ep.ISTIOD_RELEASE, versions.ISTIOD),
        (ep.GATEWAY_RELEASE, versions.ISTIO_GATEWAY), (ep.JAEGER_RELEASE, versions.JAEGER), (ep.KIALI_RELEASE, versions.KIALI),
    ):
        values = rel[release_name].inputs.get("values") or {}
        assert unknown_values_keys(values, chart_defaults(chart), FREE_FORM.get(chart, frozenset())) == [], release_name


def test_jaeger_memory_by_default_and_persistent_on_request(reference):
    memory = releases(stack_plan("demo-dev"))[ep.JAEGER_RELEASE].inputs["values"]
    assert "userconfig" not in memory and "extraVolumes" not in memory["jaeger"]
    raw = base_config() | {"mesh": {"jaegerStorage": "persistent", "jaegerStorageSize": "30Gi"}}
    plan = render_raw(raw)
    claim = next(r for r in plan.of_type("kubernetes:core/v1:PersistentVolumeClaim") if r.inputs["metadata"]["name"] == mesh.JAEGER_DATA_CLAIM)
    assert claim.inputs["spec"]["resources"]["requests"]["storage"] == "30Gi"
    jaeger = releases(plan)[ep.JAEGER_RELEASE]
    assert claim.urn in jaeger.depends_on
    values = jaeger.inputs["values"]
    backend = values["userconfig"]["extensions"]["jaeger_storage"]["backends"]["badger_store"]["badger"]
    assert backend["ephemeral"] is False and backend["directories"]["keys"].startswith(mesh.JAEGER_DATA_PATH)
    assert values["jaeger"]["extraVolumes"][0]["persistentVolumeClaim"]["claimName"] == mesh.JAEGER_DATA_CLAIM
    assert values["jaeger"]["extraVolumeMounts"][0]["mountPath"] == mesh.JAEGER_DATA_PATH
    defaults = chart_defaults(versions.JAEGER)
    assert unknown_values_keys(values, defaults, FREE_FORM[versions.JAEGER]) == []


def test_kiali_wired_to_prometheus_jaeger_and_grafana():
    values = releases(stack_plan("acme-prod"))[ep.KIALI_RELEASE].inputs["values"]
    # acme-prod serves Kiali on a host, so it logs in through the identity provider.
    assert values["auth"] == {"strategy": "openid", "openid": {"issuer_uri": "https://sso.acme.example.com/realms/ops",
                                                               "client_id": "kiali", "username_claim": "sub"}}
    ext = values["external_services"]
    assert ext["prometheus"]["url"] == ep.PROMETHEUS_URL
    assert ext["tracing"]["internal_url"] == ep.JAEGER_QUERY_GRPC_URL and ext["tracing"]["use_grpc"] is True
    assert ext["grafana"]["internal_url"] == ep.GRAFANA_URL
    raw = base_config() | {"mesh": {"kialiAuth": "anonymous"}}
    assert releases(render_raw(raw))[ep.KIALI_RELEASE].inputs["values"]["auth"]["strategy"] == "anonymous"


def test_anonymous_kiali_is_refused_in_production():
    from inference_platform.settings.errors import ConfigError

    raw = base_config() | {"production": True, "mesh": {"kialiAuth": "anonymous"}}
    raw["services"][0]["auth"] = {"mode": "basic"}
    with pytest.raises(ConfigError, match="kialiAuth"):
        render_raw(raw)


def test_disabled_mesh_installs_nothing():
    raw = base_config() | {"mesh": {"enabled": False}}
    plan = render_raw(raw)
    component = plan.get(MESH, "test-dev-mesh")
    assert plan.children(component) == []
    assert ep.ISTIOD_RELEASE not in releases(plan)
    assert not _custom(plan, "Gateway")


def test_reference_present():
    assert reference_dir() is not None, "../shared/reference is required in CI"


def test_kiali_openid_wires_the_identity_provider():
    from inference_platform.mesh.mesh import kiali_values
    from inference_platform.settings.errors import ConfigError
    from inference_platform.settings.loader import parse_settings
    from tests.conftest import base_config

    raw = base_config()
    raw["mesh"] = {"kialiAuth": "openid", "kialiOpenid": {"issuerUri": "https://idp.example.com/realms/ops", "clientId": "kiali"}}
    auth = kiali_values(platform.mesh_inputs(parse_settings(raw, "stacks/Pulumi.test-dev.yaml")))["auth"]
    assert auth == {
        "strategy": "openid",
        "openid": {"issuer_uri": "https://idp.example.com/realms/ops", "client_id": "kiali", "username_claim": "sub"},
    }
    raw["mesh"] = {"kialiAuth": "openid"}
    with pytest.raises(ConfigError, match=r"inference-platform:mesh: kialiAuth 'openid' needs kialiOpenid"):
        parse_settings(raw, "stacks/Pulumi.test-dev.yaml")


# --------------------------------------------------------------------------- UIs through the gateway

UI_RAW = {
    "mesh": {"tls": {"enabled": True, "secretName": "test-tls"}},
    "ui": {"grafana": {"host": "grafana.example.com"}, "kiali": {"host": "kiali.example.com"}},
}
VIRTUAL_SERVICE = "kubernetes:networking.istio.io/v1:VirtualService"


@pytest.fixture(scope="module")
def ui_plan():
    return render_raw(base_config() | UI_RAW)


def _ui_virtual_services(plan) -> dict:
    return {r.inputs["metadata"]["name"]: r for r in plan.of_type(VIRTUAL_SERVICE) if r.inputs["metadata"]["name"].startswith("ui-")}


def test_ui_hosts_get_tls_servers_of_their_own_on_the_customer_gateway(ui_plan):
    [gw] = _custom(ui_plan, "Gateway")
    servers = {s["port"]["name"]: s for s in gw.inputs["spec"]["servers"]}
    assert set(servers) == {"https", "http", "https-ui", "http-ui"}
    assert servers["https-ui"]["hosts"] == ["grafana.example.com", "kiali.example.com"]
    assert servers["https-ui"]["tls"] == {"mode": "SIMPLE", "credentialName": "test-tls"}
    assert servers["http-ui"]["tls"] == {"httpsRedirect": True}
    # The services' servers still list only the services' hosts.
    assert servers["https"]["hosts"] == ["svc.example.com"]


def test_ui_virtual_services_route_each_host_to_its_service(ui_plan):
    vs = _ui_virtual_services(ui_plan)
    assert set(vs) == {"ui-grafana", "ui-kiali"}
    expected = {
        "ui-grafana": ("grafana.example.com", "kube-prometheus-stack-grafana.monitoring.svc.cluster.local", 80),
        "ui-kiali": ("kiali.example.com", "kiali.istio-system.svc.cluster.local", 20001),
    }
    base = releases(ui_plan)[ep.ISTIO_BASE_RELEASE]
    for name, (host, service, port) in expected.items():
        spec = vs[name].inputs["spec"]
        assert spec["hosts"] == [host] and spec["gateways"] == [f"{ep.ISTIO_NAMESPACE}/{ep.GATEWAY_NAME}"]
        [route] = spec["http"]
        assert route["route"] == [{"destination": {"host": service, "port": {"number": port}}}]
        assert base.urn in vs[name].depends_on


def test_ui_objects_validate_against_the_istio_crds(ui_plan, reference):
    import yaml

    docs = yaml.load_all((reference / "crds" / "istio-1.30.3.yaml").read_text(), Loader=yaml.CSafeLoader)
    schemas = {}
    for doc in docs:
        if doc and doc.get("kind") == "CustomResourceDefinition" and doc["spec"]["group"] == "networking.istio.io":
            for v in doc["spec"]["versions"]:
                if v["name"] == "v1":
                    schemas[doc["spec"]["names"]["kind"]] = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
    [gw] = _custom(ui_plan, "Gateway")
    jsonschema.validate(gw.inputs["spec"], schemas["Gateway"])
    for r in _ui_virtual_services(ui_plan).values():
        jsonschema.validate(r.inputs["spec"], schemas["VirtualService"])


def test_the_services_backing_the_ui_routes_are_the_charts_own(reference):
    """The names and ports the routes use are what the pinned charts render."""
    helm = reference / "helm"
    kiali = chart_defaults(versions.KIALI)
    assert ep.KIALI_SERVICE_HOST.split(".")[0] == kiali["deployment"]["instance_name"]
    assert ep.KIALI_SERVICE_PORT == kiali["server"]["port"]
    grafana = chart_values("grafana", "12.11.1")
    assert ep.GRAFANA_SERVICE_PORT == grafana["service"]["port"]
    assert ep.GRAFANA_SERVICE_HOST.startswith(f"{ep.KUBE_PROMETHEUS_RELEASE}-grafana.{ep.MONITORING_NAMESPACE}.")
    helpers = (helm / "kube-prometheus-stack/88.5.3/charts/grafana/templates/_helpers.tpl").read_text()
    assert 'printf "%s-%s" .Release.Name $name' in helpers


def test_kiali_links_to_the_public_grafana_and_serves_at_its_host_root(ui_plan):
    values = releases(ui_plan)[ep.KIALI_RELEASE].inputs["values"]
    assert values["server"] == {"web_fqdn": "kiali.example.com", "web_schema": "https", "web_root": "/"}
    ext = values["external_services"]
    assert ext["grafana"]["external_url"] == "https://grafana.example.com/"
    assert ext["grafana"]["internal_url"] == ep.GRAFANA_URL
    # Jaeger's UI is not public: no link a browser could not follow.
    assert "external_url" not in ext["tracing"] and ext["tracing"]["internal_url"] == ep.JAEGER_QUERY_GRPC_URL


def test_ui_values_keys_exist_in_the_pinned_charts(ui_plan, reference):
    values = releases(ui_plan)[ep.KIALI_RELEASE].inputs["values"]
    assert unknown_values_keys(values, chart_defaults(versions.KIALI), FREE_FORM[versions.KIALI]) == []
    service_template = (reference / "helm/kiali-server/2.29.0/templates/service.yaml").read_text()
    for key in ("web_fqdn", "web_schema"):
        assert f".Values.server.{key}" in service_template


def test_without_ui_hosts_nothing_is_exposed():
    plan = stack_plan("demo-dev")
    assert _ui_virtual_services(plan) == {}
    [gw] = _custom(plan, "Gateway")
    assert [s["port"]["name"] for s in gw.inputs["spec"]["servers"]] == ["http"]
    assert "server" not in releases(plan)[ep.KIALI_RELEASE].inputs["values"]


def test_plain_http_ui_only_when_a_dev_stack_opts_in():
    raw = base_config() | {"ui": {"kiali": {"host": "kiali.example.com"}, "allowPlainHttp": True}}
    plan = render_raw(raw)
    [gw] = _custom(plan, "Gateway")
    assert {s["port"]["name"]: s["port"]["protocol"] for s in gw.inputs["spec"]["servers"]} == {"http": "HTTP", "http-ui": "HTTP"}
    assert releases(plan)[ep.KIALI_RELEASE].inputs["values"]["server"]["web_schema"] == "http"
    assert plan.outputs["uiUrls"] == {"kiali": "http://kiali.example.com/"}


def test_acme_prod_exports_the_public_ui_urls():
    outputs = stack_plan("acme-prod").outputs
    assert outputs["uiUrls"] == {"grafana": "https://grafana.acme.example.com/", "kiali": "https://kiali.acme.example.com/"}
    assert "uiUrls" not in stack_plan("demo-dev").outputs


def test_jaeger_takes_spans_from_every_pod_and_shows_traces_only_to_grafana_and_kiali(reference):
    helpers = (reference / "helm" / "jaeger" / versions.JAEGER.version / "templates" / "_helpers.tpl").read_text()
    assert "app.kubernetes.io/name: {{ include \"jaeger.name\" . }}" in helpers  # the pods' labels
    plan = stack_plan("acme-prod")
    (policy,) = [r.inputs for r in plan.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
                 if r.inputs["metadata"]["name"] == ep.JAEGER_RELEASE]
    assert policy["metadata"]["namespace"] == ep.ISTIO_NAMESPACE
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "jaeger", "app.kubernetes.io/instance": ep.JAEGER_RELEASE}
    by_port = {rule["ports"][0]["port"]: rule["from"] for rule in spec["ingress"]}
    assert by_port[ep.JAEGER_OTLP_GRPC_PORT] == [{"namespaceSelector": {}}]
    kiali = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ep.ISTIO_NAMESPACE}},
             "podSelector": {"matchLabels": ep.KIALI_POD_LABELS}}
    for query in (16686, 16685):
        assert kiali in by_port[query]
        assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ep.MONITORING_NAMESPACE}}} in by_port[query]
        assert len(by_port[query]) == 2
    # Jaeger's own and Zipkin's receivers admit nothing.
    assert not {5775, 6831, 6832, 5778, 9411, 4318, 14268} & set(by_port)
