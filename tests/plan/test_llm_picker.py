"""The endpoint picker of every LLM version, as each stack's plan configures it: every plugin and
parameter is one the llm-d router v0.10.0 knows, it scores on what it can see behind Triton's
OpenAI frontend, and its metrics scrape reaches the pods through every policy on the way."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from platformctl import mesh_eval
from platformctl.gateway_pods import matches
from platformctl.invariants import plan_resources
from tests.conftest import STACKS, stack_plan

CATALOGUE = Path(__file__).resolve().parents[1] / "catalogues" / "llm-d-router-plugins.txt"
RELEASE = "kubernetes:helm.sh/v3:Release"
PICKER_LABEL = "llm-d-router-gateway"  # charts/router/templates/_helpers.tpl llm-d-router.selectorLabels


def plugin_catalogue() -> dict[str, set[str]]:
    known = {}
    for line in CATALOGUE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, keys, _ = line.split()
            known[name] = set() if keys == "-" else set(keys.split(","))
    return known


def router_releases(resources: list[dict]) -> list[dict]:
    return [r for r in resources if r["type"] == RELEASE and r["inputs"].get("chart", "").endswith("llm-d-router-gateway")]


def picker_config(release: dict) -> dict:
    epp = release["inputs"]["values"]["router"]["epp"]
    return yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])


def _kind(resources: list[dict], kind: str, namespace: str) -> list[dict[str, Any]]:
    return [r["inputs"] for r in resources if r["type"].endswith(f":{kind}") and r["type"].startswith("kubernetes:")
            and (r["inputs"].get("metadata") or {}).get("namespace") == namespace]


def mtls_mode(peer_authentications: list[dict], labels: dict[str, str], port: int) -> str:
    """The mTLS mode a pod's sidecar applies on `port`: its workload PeerAuthentication's port-level
    mode, else that policy's mode, else the namespace's; UNSET inherits (istio/api security/v1
    peer_authentication.proto; the mesh-wide default, with no policy, is PERMISSIVE)."""
    workload = [p["spec"] for p in peer_authentications if p["spec"].get("selector") and matches(p["spec"]["selector"], labels)]
    namespace = [p["spec"] for p in peer_authentications if not p["spec"].get("selector")]
    for spec in workload:
        mode = ((spec.get("portLevelMtls") or {}).get(str(port)) or {}).get("mode", "UNSET")
        if mode != "UNSET":
            return mode
    for spec in (*workload, *namespace):
        mode = (spec.get("mtls") or {}).get("mode", "UNSET")
        if mode != "UNSET":
            return mode
    return "PERMISSIVE"


def scrape_problems(resources: list[dict]) -> list[str]:
    """Each picker scrapes `/metrics` on every pod of its pool: on the metrics source's port, else
    the pool's target port (llm-d-router v0.10.0 datalayer/source/metrics/datasource.go `port`). A
    pod must listen there, its NetworkPolicies must admit the picker's pods on it, and, the picker
    running without a sidecar, the port must take plaintext and the pods' AuthorizationPolicies
    admit a caller with no principal."""
    found = []
    for release in router_releases(resources):
        name, ns = release["inputs"]["name"], release["inputs"]["namespace"]
        router = release["inputs"]["values"]["router"]
        (source,) = [p for p in picker_config(release)["plugins"] if p["type"] == "metrics-data-source"]
        params = source.get("parameters") or {}
        port = params.get("port") or router["modelServers"]["targetPorts"][0]["number"]
        path = params.get("path", "/metrics")
        picker = {PICKER_LABEL: f"{name}-epp"}
        pods = [d for d in _kind(resources, "Deployment", ns)
                if matches({"matchLabels": router["modelServers"]["matchLabels"]},
                           d["spec"]["template"]["metadata"]["labels"])]
        if not pods:
            found.append(f"{name}: no Deployment has the pool's pods")
        for deployment in pods:
            labels = deployment["spec"]["template"]["metadata"]["labels"]
            what = f"{name} -> {deployment['metadata']['name']}:{port}{path}"
            listening = {p["containerPort"] for c in deployment["spec"]["template"]["spec"]["containers"]
                         for p in c.get("ports") or ()}
            if port not in listening:
                found.append(f"{what}: no container listens on {port} (ports {sorted(listening)})")
            isolating = [p for p in _kind(resources, "NetworkPolicy", ns) if matches(p["spec"]["podSelector"], labels)
                         and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])]
            if isolating and not any(
                    any("podSelector" in peer and "namespaceSelector" not in peer and matches(peer["podSelector"], picker)
                        for peer in rule.get("from") or ())
                    and any(p.get("port") == port for p in rule.get("ports") or ())
                    for policy in isolating for rule in policy["spec"].get("ingress") or ()):
                found.append(f"{what}: no NetworkPolicy admits the picker's pods on {port}")
            mode = mtls_mode(_kind(resources, "PeerAuthentication", ns), labels, port)
            if mode not in ("PERMISSIVE", "DISABLE"):
                found.append(f"{what}: the port's mTLS mode is {mode}, and the picker has no sidecar")
            policies = [p["spec"] for p in _kind(resources, "AuthorizationPolicy", ns)
                        if matches(p["spec"].get("selector"), labels)]
            if not mesh_eval.allowed(policies, principal="", port=port, path=path, method="GET"):
                found.append(f"{what}: the pods' AuthorizationPolicy refuses a plaintext GET")
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_picker_scrape_reaches_its_pods_through_every_policy(stack):
    assert scrape_problems(plan_resources(stack_plan(stack))) == []


def test_the_scrape_invariant_names_a_port_the_pods_do_not_listen_on():
    resources = copy.deepcopy(plan_resources(stack_plan("acme-prod")))  # the session's plan stays as rendered
    release = next(r for r in router_releases(resources) if r["inputs"]["name"] == "llm-chat-v7")
    config = picker_config(release)
    for plugin in config["plugins"]:
        if plugin["type"] == "metrics-data-source":
            plugin["parameters"]["port"] = 8002  # Triton's metrics port, which the OpenAI frontend never opens
    epp = release["inputs"]["values"]["router"]["epp"]
    epp["pluginsCustomConfig"] = {epp["pluginsConfigFile"]: yaml.safe_dump(config)}
    found = scrape_problems([release] + [r for r in resources if r is not release])
    assert "llm-chat-v7 -> llm-chat-v7:8002/metrics: no container listens on 8002 (ports [8000, 8001, 9000])" in found


@pytest.mark.parametrize("stack", STACKS)
def test_every_picker_plugin_and_parameter_is_one_the_router_knows(stack):
    known = plugin_catalogue()
    for release in router_releases(plan_resources(stack_plan(stack))):
        config = picker_config(release)
        declared = {p.get("name", p["type"]) for p in config["plugins"]}
        for plugin in config["plugins"]:
            assert plugin["type"] in known, plugin
            assert set(plugin.get("parameters") or {}) <= known[plugin["type"]], plugin
            for engine in (plugin.get("parameters") or {}).get("engineConfigs") or ():
                assert set(engine) <= known[f"{plugin['type']}.engineConfigs"], engine
        refs = [p["pluginRef"] for profile in config["schedulingProfiles"] for p in profile["plugins"]]
        refs += [p["pluginRef"] for p in config["requestHandler"]["parsers"]]
        assert set(refs) <= declared


def test_the_picker_reads_the_prompt_and_scores_what_it_counts_itself():
    """The OpenAI parser feeds the prefix-cache scorer; the engine exports no load gauge, so the
    load scorer is the picker's own count of requests in flight, and the metrics extractor reads
    Triton's pending count as the queue and no cumulative counter as running requests."""
    (release, _) = router_releases(plan_resources(stack_plan("acme-prod")))
    config = picker_config(release)
    assert config["requestHandler"] == {"parsers": [{"pluginRef": "openai-parser"}]}
    (profile,) = config["schedulingProfiles"]
    assert {p["pluginRef"]: p["weight"] for p in profile["plugins"]} == {"active-request-scorer": 4,
                                                                         "prefix-cache-scorer": 3}
    (extractor,) = [p["parameters"] for p in config["plugins"] if p["type"] == "core-metrics-extractor"]
    (engine,) = extractor["engineConfigs"]
    assert engine["name"] == extractor["defaultEngine"]
    assert engine["queuedRequestsSpec"] == "nv_inference_pending_request_count"
    assert engine["runningRequestsSpec"] == "" and engine["kvUsageSpec"] == ""


@pytest.mark.parametrize("stack", STACKS)
def test_every_picker_runs_unthrottled_as_one_replica_helm_can_wait_for(stack):
    """No CPU limit: every streamed chunk passes through the picker (Istio 1.30.3
    route/route.go: ext_proc FULL_DUPLEX_STREAMED both ways), so throttling would slow every
    token. One replica: with more, the chart turns on leader election, and a standby never passes
    its readiness check (llm-d-router v0.10.0 cmd/epp/runner/health.go: readiness needs
    isLeader), so Helm's wait for the chart's Recreate Deployment (all replicas ready) would never
    end and the release's `up` would time out."""
    for release in router_releases(plan_resources(stack_plan(stack))):
        epp = release["inputs"]["values"]["router"]["epp"]
        resources = epp["resources"]
        assert "cpu" not in resources.get("limits", {}), release["name"]
        assert resources["requests"]["cpu"] and resources["limits"]["memory"], release["name"]
        assert epp.get("replicas", 1) == 1, release["name"]
