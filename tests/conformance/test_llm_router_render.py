"""The llm-d router chart as `helm template` renders it for acme-prod's LLM versions: our values
reach the InferencePool and the endpoint picker (serving/llm_routing.py)."""

import yaml

from inference_platform.core import versions
from tests.conftest import stack_plan
from tests.support.helm import installed, releases


def _rendered(version: str) -> dict[str, dict]:
    (release,) = [r for r in releases(stack_plan("acme-prod")) if r["name"] == f"llm-chat-{version}"]
    assert release["chart"] == f"{versions.LLM_D_ROUTER.repository}/{versions.LLM_D_ROUTER.name}"
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in installed(release)}


def test_each_versions_pool_selects_its_pods_on_the_openai_port_through_its_own_picker(reference):
    for version in ("v7", "v8"):
        objects = _rendered(version)
        pool = objects[f"InferencePool/llm-chat-{version}"]["spec"]
        assert pool["selector"]["matchLabels"] == {"app": "llm-chat", "version": version}
        assert pool["targetPorts"] == [{"number": 9000}]
        assert pool["endpointPickerRef"] == {"name": f"llm-chat-{version}-epp", "port": {"number": 9002},
                                             "failureMode": "FailOpen"}


def test_the_picker_parses_openai_scrapes_the_pool_port_and_runs_outside_the_mesh(reference):
    objects = _rendered("v7")
    picker = objects["Deployment/llm-chat-v7-epp"]["spec"]["template"]
    (container,) = picker["spec"]["containers"]
    file = container["args"][container["args"].index("--config-file") + 1]
    config = yaml.safe_load(objects["ConfigMap/llm-chat-v7-epp"]["data"][file.removeprefix("/config/")])
    plugins = {p["type"]: p.get("parameters") for p in config["plugins"]}
    # No port: the pool's target port, the OpenAI frontend's 9000, where /metrics is (it opens no 8002).
    assert plugins["metrics-data-source"] == {"scheme": "http", "path": "/metrics"}
    assert plugins["core-metrics-extractor"]["defaultEngine"] == "triton-openai"
    assert config["requestHandler"] == {"parsers": [{"pluginRef": "openai-parser"}]}
    assert "passthrough-parser" not in plugins
    assert picker["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    # The platform's sizing, with no CPU limit (every streamed chunk passes through the picker).
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}
    # The gateway originates TLS to the picker (it serves ext_proc over its own certificate).
    assert objects["DestinationRule/llm-chat-v7-epp"]["spec"]["trafficPolicy"]["tls"]["mode"] == "SIMPLE"
    # Prometheus scrapes the picker with the token its /metrics asks for.
    monitor = objects["ServiceMonitor/llm-chat-v7-epp-monitor"]["spec"]["endpoints"][0]
    assert monitor["port"] == "http-metrics" and "authorization" in monitor
    # Its own token Secret: the chart's default name is one for every release in the namespace.
    assert monitor["authorization"]["credentials"]["name"] == "llm-chat-v7-epp-metrics-reader"
    assert objects["Secret/llm-chat-v7-epp-metrics-reader"]["type"] == "kubernetes.io/service-account-token"


def test_the_picker_alerts_name_the_scrape_job_the_charts_servicemonitor_gives_it(reference):
    """prometheus-operator names a ServiceMonitor's job after the Service it scrapes unless the
    Service carries the label `jobLabel` names (pkg/prometheus/promcfg.go): the EndpointPickerDown
    rules' `up{job=...}` (observability/llm_alerts.py) must be that name."""
    from inference_platform.observability import alerts
    from platformctl.engine import stack_settings
    from tests.conftest import observability_inputs

    groups = alerts.rule_groups(observability_inputs(stack_settings("acme-prod")))
    down = [r for g in groups for r in g["rules"] if r.get("alert") == "EndpointPickerDown"]
    assert {r["labels"]["version"] for r in down} == {"v7", "v8"}
    for rule in down:
        objects = _rendered(rule["labels"]["version"])
        (monitor,) = [o for o in objects.values() if o["kind"] == "ServiceMonitor"]
        selected = [o for o in objects.values() if o["kind"] == "Service"
                    and monitor["spec"]["selector"]["matchLabels"].items() <= (o["metadata"].get("labels") or {}).items()
                    and any(p["name"] == monitor["spec"]["endpoints"][0]["port"] for p in o["spec"]["ports"])]
        (service,) = selected
        assert monitor["spec"]["jobLabel"] not in service["metadata"]["labels"]
        job = service["metadata"]["name"]
        assert f'up{{job="{job}",namespace="{service["metadata"]["namespace"]}"}}' in rule["expr"]
