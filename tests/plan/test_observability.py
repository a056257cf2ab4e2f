"""Observability: kube-prometheus-stack, prometheus-adapter, Loki, Alloy, Grafana
dashboards and rules, against the pinned charts' values."""

from __future__ import annotations

import json

import pytest

from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.observability import alerts, observability
from inference_platform.observability.metrics import (
    PENDING_REQUESTS_METRIC,
    QUEUE_TIME_METRIC,
    REQUEST_RATE_METRIC,
    TRTLLM_ACTIVE_METRIC,
    TRTLLM_KV_CACHE_METRIC,
    VLLM_IN_FLIGHT_METRIC,
)
from platformctl.engine import stack_settings
from platformctl.plan import HELM_RELEASE
from tests.conftest import STACKS, base_config, observability_inputs, render_raw, stack_plan
from tests.support.conformance import chart_values, unknown_values_keys
from tests.support.metric_catalogue import known_metrics, metric_names

OBS = "inference-platform:index:Observability"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
POD_MONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"

# Keys the charts pass through without listing them in values.yaml.
FREE_FORM = {
    versions.KUBE_PROMETHEUS_STACK: frozenset({
        "grafana.additionalDataSources",
        # Grafana subchart values (not in the parent chart's values.yaml); checked against the
        # grafana chart in test_grafana_values_exist_in_the_grafana_subchart.
        "grafana.grafana.ini", "grafana.envValueFrom",
        # A kube-state-metrics subchart value (not in the parent chart's values.yaml).
        "kube-state-metrics.metricLabelsAllowlist",
        # Subchart values (grafana 12.11.1, kube-state-metrics: `nodeSelector: {}` in their values.yaml).
        "grafana.nodeSelector", "kube-state-metrics.nodeSelector",
        # Subchart values of core/chart_hardening.py, checked against the vendored subcharts in
        # tests/conformance/test_hardening.py.
        "grafana.testFramework", "grafana.resources", "grafana.sidecar.resources",
        "kube-state-metrics.resources", "prometheus-node-exporter.resources",
    }),
    versions.PROMETHEUS_ADAPTER: frozenset({"rules.custom"}),
    # alloy 1.11.1 templates/containers/_watch.yaml copies configReloader.resources verbatim.
    versions.ALLOY: frozenset({"configReloader.resources.limits"}),
    # Loki's own configuration blocks, rendered into its config file.
    versions.LOKI: frozenset({"loki.limits_config.retention_period", "loki.storage.bucketNames"}),
}
S3_RAW = {
    "weightCaches": {
        "fileShare": {"mode": "existing", "server": "10.0.0.2", "path": "/models"},
        "s3": {"endpoint": "https://s3.example.cloud", "bucket": "weights"},
    },
    "s3AccessKeyId": "AKIA-test-key-id",
    "s3SecretAccessKey": "test-secret-access-key",
    "observability": {"lokiStorage": "s3"},
}


def releases(plan) -> dict:
    return {r.inputs["name"]: r for r in plan.of_type(HELM_RELEASE)}


def s3_plan():
    raw = base_config() | S3_RAW
    return render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_values_key_exists_in_the_pinned_chart(stack, reference):
    rel = releases(stack_plan(stack))
    for name, chart in (
        (ep.KUBE_PROMETHEUS_RELEASE, versions.KUBE_PROMETHEUS_STACK), (ep.ADAPTER_RELEASE, versions.PROMETHEUS_ADAPTER),
        (ep.LOKI_RELEASE, versions.LOKI), (ep.ALLOY_RELEASE, versions.ALLOY),
    ):
        r = rel[name]
        assert (r.inputs["chart"], r.inputs["version"], r.inputs["repositoryOpts"]["repo"]) == chart
        assert r.inputs["namespace"] == ep.MONITORING_NAMESPACE
        defaults = chart_values(versions.REFERENCE_DIR[chart], chart.version)
        assert unknown_values_keys(r.inputs["values"], defaults, FREE_FORM.get(chart, frozenset())) == [], name


# Grafana's own configuration sections (grafana.ini is rendered verbatim into Grafana's ini file).
GRAFANA_FREE_FORM = frozenset({"additionalDataSources", "grafana.ini.server.root_url", "grafana.ini.security",
                               "grafana.ini.auth.generic_oauth", "grafana.ini.auth"})


@pytest.mark.parametrize("stack", STACKS)
def test_grafana_values_exist_in_the_grafana_subchart(stack, reference):
    grafana = releases(stack_plan(stack))[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]
    defaults = chart_values("grafana", "12.11.1")
    assert unknown_values_keys(grafana, defaults, GRAFANA_FREE_FORM) == []


def test_loki_s3_values_exist_in_the_chart(reference):
    values = releases(s3_plan())[ep.LOKI_RELEASE].inputs["values"]
    defaults = chart_values(versions.REFERENCE_DIR[versions.LOKI], versions.LOKI.version)
    assert unknown_values_keys(values, defaults, FREE_FORM[versions.LOKI]) == []


def test_prometheus_selects_everything_and_keeps_configured_data():
    plan = stack_plan("acme-prod")
    spec = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["ruleSelectorNilUsesHelmValues"] is False
    assert spec["retention"] == "30d"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "200Gi"


def test_grafana_admin_password_is_a_generated_secret():
    plan = stack_plan("demo-dev")
    values = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]
    assert "adminPassword" not in values
    secret_name = values["admin"]["existingSecret"]
    secret = next(r for r in plan.of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == secret_name)
    assert secret.inputs["metadata"]["namespace"] == ep.MONITORING_NAMESPACE
    assert secret.inputs["stringData"] == "[secret]"
    password = next(r for r in plan.of_type("random:index/randomPassword:RandomPassword") if "grafana" in r.name)
    assert password.outputs["result"] not in json.dumps(plan.to_json())
    kps = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE]
    assert secret.urn in kps.depends_on
    assert plan.outputs["grafanaAdminPassword"] == "[secret]"


def test_datasources_prometheus_loki_jaeger(reference):
    values = releases(stack_plan("demo-dev"))[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]
    sources = {d["type"]: d for d in values["additionalDataSources"]}
    assert sources["loki"]["url"] == ep.LOKI_URL
    assert sources["jaeger"]["url"] == ep.JAEGER_QUERY_URL
    # Prometheus is the chart's own default datasource.
    kps = chart_values(versions.REFERENCE_DIR[versions.KUBE_PROMETHEUS_STACK], versions.KUBE_PROMETHEUS_STACK.version)
    assert kps["grafana"]["sidecar"]["datasources"]["defaultDatasourceEnabled"] is True


def test_dashboards_are_configmaps_with_the_sidecar_label(reference):
    plan = stack_plan("demo-dev")
    kps = chart_values(versions.REFERENCE_DIR[versions.KUBE_PROMETHEUS_STACK], versions.KUBE_PROMETHEUS_STACK.version)
    sidecar = kps["grafana"]["sidecar"]["dashboards"]
    assert (observability.DASHBOARD_LABEL, observability.DASHBOARD_LABEL_VALUE) == (sidecar["label"], sidecar["labelValue"])
    maps = [r for r in plan.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"].startswith("dashboard-")]
    files = observability.provisioned_dashboards(stack_settings("demo-dev").services)
    assert len(maps) == len(files) >= 6
    for cm in maps:
        assert cm.inputs["metadata"]["labels"][sidecar["label"]] == sidecar["labelValue"]
        assert cm.inputs["metadata"]["namespace"] == ep.MONITORING_NAMESPACE
        [(key, text)] = cm.inputs["data"].items()
        assert json.loads(text) == json.loads((observability.DASHBOARDS_DIR / key).read_text())


def test_adapter_exposes_the_hpa_metric_names(reference):
    values = releases(stack_plan("demo-dev"))[ep.ADAPTER_RELEASE].inputs["values"]
    assert values["prometheus"] == {"url": f"http://{ep.PROMETHEUS_HOST}", "port": 9090}
    names = {r["name"]["as"] for r in values["rules"]["custom"]}
    # Every metric an HPA asks for is served (an unserved one leaves the HPA without a value);
    # acme-prod's LLM versions scale on vLLM's signal, TensorRT-LLM's are the live test's.
    hpas = [h for stack in ("demo-dev", "acme-prod")
            for h in stack_plan(stack).of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")]
    wanted = {m["pods"]["metric"]["name"] for h in hpas for m in h.inputs["spec"]["metrics"]}
    assert wanted == {QUEUE_TIME_METRIC, PENDING_REQUESTS_METRIC, VLLM_IN_FLIGHT_METRIC}
    assert names == wanted | {REQUEST_RATE_METRIC, TRTLLM_ACTIVE_METRIC, TRTLLM_KV_CACHE_METRIC}
    for rule in values["rules"]["custom"]:
        query = rule["metricsQuery"].replace("<<.Series>>", rule["name"]["matches"].strip("^$"))
        assert metric_names(query) <= known_metrics()
        assert metric_names(rule["seriesQuery"]) <= known_metrics()


def test_loki_single_binary_filesystem_by_default():
    values = releases(stack_plan("demo-dev"))[ep.LOKI_RELEASE].inputs["values"]
    assert values["deploymentMode"] == "Monolithic"
    assert values["singleBinary"]["replicas"] == 1
    assert values["loki"]["storage"] == {"type": "filesystem"}
    assert values["loki"]["schemaConfig"]["configs"][0]["object_store"] == "filesystem"
    assert values["loki"]["limits_config"]["retention_period"] == "168h"
    assert {values[k]["replicas"] for k in ("read", "write", "backend")} == {0}
    assert values["lokiCanary"]["enabled"] is False and values["test"]["enabled"] is False


def test_loki_s3_keeps_credentials_in_a_secret():
    plan = s3_plan()
    text = json.dumps(plan.to_json())
    assert "test-secret-access-key" not in text and "AKIA-test-key-id" not in text
    values = releases(plan)[ep.LOKI_RELEASE].inputs["values"]
    assert values["loki"]["storage"]["type"] == "s3"
    assert values["loki"]["storage"]["s3"]["endpoint"] == "https://s3.example.cloud"
    assert values["loki"]["storage"]["bucketNames"]["chunks"] == "weights-logs"
    assert values["singleBinary"]["extraEnvFrom"] == [{"secretRef": {"name": observability.LOKI_S3_SECRET}}]
    secret = next(r for r in plan.of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == observability.LOKI_S3_SECRET)
    assert secret.inputs["stringData"] == "[secret]"


def test_alloy_daemonset_ships_pod_logs_to_loki():
    values = releases(stack_plan("demo-dev"))[ep.ALLOY_RELEASE].inputs["values"]
    assert values["controller"]["type"] == "daemonset"
    assert values["alloy"]["mounts"]["varlog"] is True
    config = values["alloy"]["configMap"]["content"]
    assert f'url = "{ep.LOKI_URL}/loki/api/v1/push"' in config
    assert 'sys.env("NODE_NAME")' in config and values["alloy"]["extraEnv"][0]["name"] == "NODE_NAME"
    assert config.count("{") == config.count("}")


def test_rules_and_monitors_depend_on_the_operator_crds():
    plan = stack_plan("demo-dev")
    kps = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE]
    [rule] = plan.of_type(RULE)
    assert kps.urn in rule.depends_on
    assert rule.inputs["spec"]["groups"] == alerts.rule_groups(observability_inputs(stack_settings("demo-dev")))
    envoy = next(r for r in plan.of_type(POD_MONITOR) if r.inputs["metadata"]["name"] == "envoy-stats")
    assert kps.urn in envoy.depends_on
    assert envoy.inputs["spec"]["namespaceSelector"] == {"any": True}


def test_urls_are_exported():
    outputs = stack_plan("demo-dev").outputs
    assert outputs["urls"] == {
        "grafana": ep.GRAFANA_URL, "prometheus": ep.PROMETHEUS_URL, "kiali": ep.KIALI_URL, "jaeger": ep.JAEGER_QUERY_URL,
    }


def test_disabled_observability_installs_nothing():
    raw = base_config() | {"observability": {"enabled": False}}
    plan = render_raw(raw)
    component = plan.get(OBS, "test-dev-observability")
    assert plan.children(component) == []
    assert ep.KUBE_PROMETHEUS_RELEASE not in releases(plan)


def test_loki_s3_bucket_is_created_before_loki():
    plan = s3_plan()
    bucket = plan.get("pulumi-python:dynamic/s3:Bucket", "test-dev-observability-loki-bucket")
    assert bucket.inputs["bucket"] == "weights-logs"
    assert bucket.inputs["versioning"] is False
    assert bucket.inputs["endpoint"] == "https://s3.example.cloud"
    assert bucket.inputs["secretAccessKey"] == "[secret]"
    assert bucket.urn in releases(plan)[ep.LOKI_RELEASE].depends_on


def test_loki_bucket_is_protected_in_production():
    raw = base_config() | S3_RAW | {"production": True, "mesh": {"tls": {"enabled": True, "secretName": "test-tls"}}}
    plan = render_raw(raw, secret_keys=("s3AccessKeyId", "s3SecretAccessKey"))
    bucket = plan.get("pulumi-python:dynamic/s3:Bucket", "test-dev-observability-loki-bucket")
    assert bucket.protect and bucket.retain_on_delete


# --------------------------------------------------------------------------- Grafana on its own host

GRAFANA_UI_RAW = {
    "mesh": {"tls": {"enabled": True, "secretName": "test-tls"}},
    "ui": {"grafana": {"host": "grafana.example.com", "auth": "oidc", "oidc": {
        "authUrl": "https://sso.example.com/auth", "tokenUrl": "https://sso.example.com/token",
        "apiUrl": "https://sso.example.com/userinfo", "clientId": "grafana",
        "roleAttributePath": "contains(groups[*], 'ops') && 'Admin' || 'Viewer'"}}},
    "grafanaOidcClientSecret": "oidc-client-secret-value",
}


@pytest.fixture(scope="module")
def grafana_ui_plan():
    return render_raw(base_config() | GRAFANA_UI_RAW, secret_keys=("grafanaOidcClientSecret",))


def test_grafana_knows_its_public_url_and_signs_in_through_oidc(grafana_ui_plan):
    grafana = releases(grafana_ui_plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]
    ini = grafana["grafana.ini"]
    assert ini["server"]["root_url"] == "https://grafana.example.com/"
    assert ini["security"] == {"cookie_secure": True}
    oauth = ini["auth.generic_oauth"]
    assert oauth["enabled"] is True and oauth["client_id"] == "grafana"
    assert (oauth["auth_url"], oauth["token_url"], oauth["api_url"]) == (
        "https://sso.example.com/auth", "https://sso.example.com/token", "https://sso.example.com/userinfo")
    assert oauth["scopes"] == "openid email profile"
    assert oauth["role_attribute_path"] == "contains(groups[*], 'ops') && 'Admin' || 'Viewer'"
    assert "client_secret" not in oauth
    # No password form beside single sign-on; the admin credential stays for the API (the
    # sidecars' reloads, recovery), so basic auth is not turned off.
    assert ini["auth"] == {"disable_login_form": True}
    assert "auth.basic" not in ini
    assert grafana["admin"]["existingSecret"] == observability.GRAFANA_ADMIN_SECRET


def test_oidc_client_secret_reaches_grafana_only_through_a_secret(grafana_ui_plan):
    release = releases(grafana_ui_plan)[ep.KUBE_PROMETHEUS_RELEASE]
    assert "oidc-client-secret-value" not in json.dumps(release.inputs)
    env = release.inputs["values"]["grafana"]["envValueFrom"]
    assert env == {"GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET": {"secretKeyRef": {"name": "grafana-oidc", "key": "client-secret"}}}
    [secret] = [r for r in grafana_ui_plan.of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "grafana-oidc"]
    assert secret.inputs["metadata"]["namespace"] == ep.MONITORING_NAMESPACE
    assert secret.inputs["stringData"] == "[secret]"  # a Pulumi secret, redacted in the plan
    assert secret.urn in release.depends_on


def test_grafana_oidc_env_is_rendered_by_the_pinned_chart(reference):
    """envValueFrom entries become the Grafana container's env (the subchart's _pod.tpl)."""
    pod = (reference / "helm/kube-prometheus-stack/88.5.3/charts/grafana/templates/_pod.tpl").read_text()
    assert "range $key, $value := .Values.envValueFrom" in pod


def test_grafana_without_a_host_keeps_the_chart_defaults():
    grafana = releases(stack_plan("demo-dev"))[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]["grafana"]
    assert "grafana.ini" not in grafana and "envValueFrom" not in grafana
    assert not [r for r in stack_plan("demo-dev").of_type("kubernetes:core/v1:Secret") if r.inputs["metadata"]["name"] == "grafana-oidc"]


def test_grafana_ui_values_exist_in_the_charts(grafana_ui_plan, reference):
    values = releases(grafana_ui_plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]
    chart = versions.KUBE_PROMETHEUS_STACK
    defaults = chart_values(versions.REFERENCE_DIR[chart], chart.version)
    assert unknown_values_keys(values, defaults, FREE_FORM[chart]) == []
    assert unknown_values_keys(values["grafana"], chart_values("grafana", "12.11.1"), GRAFANA_FREE_FORM) == []


def test_grafana_ui_url_is_exported(grafana_ui_plan):
    assert grafana_ui_plan.outputs["uiUrls"] == {"grafana": "https://grafana.example.com/"}
    # The in-cluster URLs stay as they were, for port-forwarding.
    assert grafana_ui_plan.outputs["urls"]["grafana"] == ep.GRAFANA_URL


def test_grafana_oidc_values_hold_no_secret_literal(grafana_ui_plan):
    """The policy pack's no-secret-literals rule reads the OAuth endpoints as addresses."""
    from policies.rules.secrets import secret_literals

    values = releases(grafana_ui_plan)[ep.KUBE_PROMETHEUS_RELEASE].inputs["values"]
    assert list(secret_literals(values)) == []
    assert list(secret_literals({"grafana.ini": {"auth.generic_oauth": {"client_secret": "s3cr3t"}}})) != []
    # An address key is no hiding place for a password written into the URL.
    assert list(secret_literals({"oauth": {"token_url": "https://grafana:s3cr3t@idp.example.com/token"}})) == [
        "oauth.token_url"
    ]


SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"


def test_alertmanager_reads_its_config_from_a_secret_never_from_values():
    plan = stack_plan("acme-prod")  # PagerDuty and Slack receivers with secure credentials
    kps = releases(plan)[ep.KUBE_PROMETHEUS_RELEASE]
    spec = kps.inputs["values"]["alertmanager"]["alertmanagerSpec"]
    assert kps.inputs["values"]["alertmanager"] == {"alertmanagerSpec": spec}
    assert {k: v for k, v in spec.items() if k != "nodeSelector"} == {"useExistingSecret": True}
    secret = next(r for r in plan.of_type("kubernetes:core/v1:Secret")
                  if r.inputs["metadata"]["name"] == observability.ALERTMANAGER_CONFIG_SECRET)
    assert secret.inputs["metadata"]["namespace"] == ep.MONITORING_NAMESPACE
    assert secret.inputs["stringData"] == "[secret]"
    assert secret.urn in kps.depends_on
    text = json.dumps(plan.to_json())
    # Receivers' fields (pagerduty_configs.routing_key, slack_configs.api_url) stay inside the Secret.
    assert "routing_key" not in text and "slack_configs" not in text and "AAABAMock" not in text


def test_alertmanager_secret_bears_the_name_the_operator_reads(reference):
    """alertmanager-<Alertmanager name>, the name the chart's own Secret would have: <fullname>-alertmanager,
    where fullname is the release name because it contains the chart's name (at most 26 characters)."""
    helpers = (reference / "helm" / "kube-prometheus-stack" / "88.5.3" / "templates" / "_helpers.tpl").read_text()
    assert 'print (include "kube-prometheus-stack.fullname" .) "-alertmanager"' in helpers
    secret_template = (reference / "helm" / "kube-prometheus-stack" / "88.5.3" / "templates" / "alertmanager" / "secret.yaml").read_text()
    assert 'name: alertmanager-{{ template "kube-prometheus-stack.alertmanager.crname" . }}' in secret_template
    assert "alertmanager.yaml:" in secret_template and observability.ALERTMANAGER_CONFIG_KEY == "alertmanager.yaml"
    assert "kube-prometheus-stack" in ep.KUBE_PROMETHEUS_RELEASE and len(ep.KUBE_PROMETHEUS_RELEASE) <= 26
    assert observability.ALERTMANAGER_CONFIG_SECRET == f"alertmanager-{ep.KUBE_PROMETHEUS_RELEASE}-alertmanager"


def test_envoy_monitor_selects_sidecars_and_the_ingress_gateway(reference):
    """Both injection templates set the selected label; only the sidecar one sets tlsMode."""
    files = reference / "helm" / "istiod" / "1.30.3" / "files"
    [expr] = observability.envoy_pod_monitor_spec()["selector"]["matchExpressions"]
    assert expr["operator"] == "Exists"
    gateway_template = (files / "gateway-injection-template.yaml").read_text()
    assert f"{expr['key']}:" in (files / "injection-template.yaml").read_text()
    assert f"{expr['key']}:" in gateway_template
    assert "security.istio.io/tlsMode" not in gateway_template
    [endpoint] = observability.envoy_pod_monitor_spec()["podMetricsEndpoints"]
    deployment = (reference / "helm" / "gateway" / "1.30.3" / "templates" / "deployment.yaml").read_text()
    assert f"name: {endpoint['port']}" in deployment and f"name: {endpoint['port']}" in gateway_template


def test_istiod_service_monitor_matches_the_istiod_service(reference):
    plan = stack_plan("demo-dev")
    monitor = next(r for r in plan.of_type(SERVICE_MONITOR) if r.inputs["metadata"]["name"] == "istiod")
    assert releases(plan)[ep.KUBE_PROMETHEUS_RELEASE].urn in monitor.depends_on
    spec = monitor.inputs["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [ep.ISTIO_NAMESPACE]}
    service = (reference / "helm" / "istiod" / "1.30.3" / "templates" / "service.yaml").read_text()
    for key, value in spec["selector"]["matchLabels"].items():
        assert f"    {key}: {value}\n" in service
    assert f"name: {spec['endpoints'][0]['port']}" in service


def _admits(spec: dict, namespace: str, labels: dict) -> bool:
    """Whether an ingress NetworkPolicy spec admits a pod of `namespace` with `labels` (on some port)."""
    def peer(p: dict) -> bool:
        ns = p.get("namespaceSelector", {}).get("matchLabels", {})
        pods = p.get("podSelector", {}).get("matchLabels", {})
        return ns.items() <= {"kubernetes.io/metadata.name": namespace}.items() and pods.items() <= labels.items()
    return any(any(peer(p) for p in rule.get("from", [])) for rule in spec["ingress"])


@pytest.mark.parametrize("backend,app,crd", [("prometheus", "prometheus", "crd-prometheuses.yaml"),
                                             ("alertmanager", "alertmanager", "crd-alertmanagers.yaml")])
def test_prometheus_and_alertmanager_admit_the_monitoring_namespace_and_kiali_not_every_pod(backend, app, crd, reference):
    # The operator's reserved pod label, as its CRD states it (podMetadata cannot override it).
    crds = reference / "helm" / "kube-prometheus-stack" / versions.KUBE_PROMETHEUS_STACK.version / "charts" / "crds" / "crds"
    assert f'"app.kubernetes.io/name" label, set to "{app}"' in (crds / crd).read_text()
    plan = stack_plan("acme-prod")
    policy = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", f"acme-prod-observability-{backend}-networkpolicy").inputs
    assert policy["metadata"]["namespace"] == ep.MONITORING_NAMESPACE
    spec = policy["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": app}}
    assert _admits(spec, ep.MONITORING_NAMESPACE, ep.GRAFANA_POD_LABELS)
    assert not _admits(spec, "embed", {"app": "embed", "version": "v1"})
    assert not _admits(spec, ep.ISTIO_NAMESPACE, ep.INGRESS_POD_LABELS)
    assert _admits(spec, ep.ISTIO_NAMESPACE, ep.KIALI_POD_LABELS) == (backend == "prometheus")


def test_loki_admits_only_the_monitoring_namespace(reference):
    helpers = (reference / "helm" / "loki" / versions.LOKI.version / "templates" / "_helpers.tpl").read_text()
    assert "app.kubernetes.io/name: {{ include \"loki.name\" . }}" in helpers  # the pods' labels
    plan = stack_plan("acme-prod")
    spec = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "acme-prod-observability-loki-networkpolicy").inputs["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "loki", "app.kubernetes.io/instance": ep.LOKI_RELEASE}}
    assert _admits(spec, ep.MONITORING_NAMESPACE, {"app.kubernetes.io/name": "alloy"})
    assert not _admits(spec, "embed", {"app": "embed", "version": "v1"})
    assert not _admits(spec, ep.ISTIO_NAMESPACE, ep.KIALI_POD_LABELS)
