"""Who is notified and what is silenced, in a real Alertmanager (Debian's, on loopback) running
the rendered configuration: a critical alert silences warnings about the same GPU node, pod,
Triton service or graph, never about another node, namespace or graph, and every other alert reaches the
receivers of its severity (through a webhook receiver this test runs)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import yaml

from inference_platform.observability import alerts, graph_alerts
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.live.test_alerts import FAKE_SECRETS, ROUTED

KSM = {"service": "kube-prometheus-stack-kube-state-metrics", "job": "kube-state-metrics"}
DCGM = {"namespace": "gpu-operator", "service": "nvidia-dcgm-exporter", "job": "nvidia-dcgm-exporter"}


GROUPS = alerts.rule_groups(observability_inputs(ROUTED))


def rule(name: str) -> dict:
    """The rendered alert rule (first of its name) of the routed demo-dev stack."""
    return next(r for g in GROUPS for r in g["rules"] if r.get("alert") == name)


def fired(name: str, **series: str) -> dict:
    """An alert as Prometheus sends it: the series' labels, then the rule's own labels."""
    return {"alertname": name, **series, **rule(name)["labels"]}


SERVICE = alerts.SERVICE_LABEL
GRAPH = graph_alerts.GRAPH_LABEL
[RAY_GRAPH] = [g for g in stack_settings("studio-dev").graphs if g.placement == "ray"]
GRAPH_RULES = graph_alerts.graph_rules([RAY_GRAPH], 0.05)


def graph_fired(name: str, step: str, **series: str) -> dict:
    """A graph alert as Prometheus sends it, from the rendered rule of the step."""
    [labels] = [r["labels"] for r in GRAPH_RULES if r["alert"] == name and r["labels"]["step"] == step]
    return {"alertname": name, **series, **labels}


ALERTS = {
    # One GPU node's hardware fault, and GPU warnings on that node and on another one.
    "xid-node-a": fired("GpuXidFault", **DCGM, Hostname="node-a", gpu="0"),
    "memory-node-a": fired("GpuMemoryNearlyFull", **DCGM, Hostname="node-a", gpu="1"),
    "memory-node-b": fired("GpuMemoryNearlyFull", **DCGM, Hostname="node-b", gpu="0"),
    # A volume fault (kube-state-metrics, cluster-scoped) and Triton warnings from the same exporter.
    "volume": {"alertname": "KubePersistentVolumeErrors", "severity": "critical", "namespace": "monitoring",
               "persistentvolume": "pv-1", "phase": "Failed", **KSM},
    "pod-team-a": fired("TritonPodNotReady", **KSM, namespace="team-a", pod="resnet-v1-5d9f", label_app="resnet",
                        label_version="v1", **{SERVICE: "resnet"}),
    "hpa-team-a": fired("TritonHpaAtMax", **KSM, namespace="team-a", horizontalpodautoscaler="resnet-v1-hpa"),
    # A canary that serves nothing, and warnings about the same service and about another one.
    "canary-down": {**fired("CanaryNotServing"), "namespace": "team-b", SERVICE: "chat"},
    "pod-team-b": fired("TritonPodNotReady", **KSM, namespace="team-b", pod="chat-v2-7c1a", label_app="chat",
                        label_version="v2", **{SERVICE: "chat"}),
    "canary-errors-team-b": {**fired("CanaryErrorRatioAboveStable"), "namespace": "team-b", SERVICE: "chat"},
    # A graph step that fails, a slow step of the same graph, and one of another graph in its namespace.
    "graph-step-errors": graph_fired("GraphStepErrorRatioHigh", "draw"),
    "graph-step-slow": graph_fired("GraphStepLatencyHigh", "transcribe"),
    "other-graph-step-slow": {**graph_fired("GraphStepLatencyHigh", "transcribe"), GRAPH: "other-graph"},
}
SILENCED = {"memory-node-a", "pod-team-b", "canary-errors-team-b", "graph-step-slow"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Webhook:
    """Records which receiver got which alerts (each receiver posts to /<its name>)."""

    def __init__(self):
        self.received: dict[str, set[str]] = {}
        self.lock = threading.Lock()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with hook.lock:
                    for a in body["alerts"]:
                        hook.received.setdefault(self.path.strip("/"), set()).add(a["labels"]["case"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, receiver: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{receiver}"

    def snapshot(self) -> dict[str, set[str]]:
        with self.lock:
            return {k: set(v) for k, v in self.received.items()}


def webhook_config(webhook: Webhook) -> dict:
    """The rendered configuration, each receiver a webhook to this test and no waiting to group."""
    config = alerts.alertmanager_config(ROUTED.observability.alerting, FAKE_SECRETS)
    config["receivers"] = [{"name": r["name"], **({"webhook_configs": [{"url": webhook.url(r["name"])}]}
                                                  if r["name"] != alerts.NULL_RECEIVER else {})}
                           for r in config["receivers"]]
    config["route"].update(group_wait="0s", group_interval="1s")
    return config


def until(check, what: str, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            assert result, what
            return result
        time.sleep(0.1)


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    binary = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    assert binary, "alertmanager is missing: make tools (apt-get install prometheus-alertmanager)"
    webhook = Webhook()
    tmp = tmp_path_factory.mktemp("alertmanager")
    (tmp / "alertmanager.yml").write_text(yaml.safe_dump(webhook_config(webhook), sort_keys=False))
    port = free_port()
    proc = subprocess.Popen([binary, f"--config.file={tmp / 'alertmanager.yml'}", f"--storage.path={tmp}",
                             f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    api = f"http://127.0.0.1:{port}/api/v2"
    try:
        until(lambda: _ready(api, proc), "alertmanager did not start")
        yield api, webhook
    finally:
        proc.terminate()
        proc.wait(10)
        webhook.server.shutdown()


def _ready(api: str, proc) -> bool:
    assert proc.poll() is None, proc.stderr.read().decode()
    try:
        with urllib.request.urlopen(f"{api}/status", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def post(api: str, cases: list[str]) -> None:
    body = json.dumps([{"labels": {**ALERTS[c], "case": c}} for c in cases]).encode()
    request = urllib.request.Request(f"{api}/alerts", body, {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=5) as r:
        assert r.status == 200


def states(api: str) -> dict[str, str]:
    with urllib.request.urlopen(f"{api}/alerts", timeout=5) as r:
        return {a["labels"]["case"]: a["status"]["state"] for a in json.load(r)}


def test_criticals_silence_warnings_about_the_same_node_pod_service_or_graph_only(alertmanager):
    api, webhook = alertmanager
    criticals = [c for c, labels in ALERTS.items() if labels["severity"] == "critical"]
    warnings = [c for c in ALERTS if c not in criticals]
    # Criticals first, as they fire first in a real fault, so the inhibitor knows them.
    post(api, criticals)
    until(lambda: set(criticals) <= webhook.snapshot().get("oncall", set()), "criticals never reached oncall")
    post(api, warnings)
    expected = {c: "suppressed" if c in SILENCED else "active" for c in ALERTS}
    until(lambda: states(api) == expected, f"alert states {states(api)} != {expected}")
    notified = set(warnings) - SILENCED
    # Each severity reaches every receiver of its own (each receiver is notified on its own
    # schedule: wait for all of them), and a silenced warning none.
    expected_by_receiver = {"oncall": set(criticals), "team-chat": set(criticals) | notified,
                            "ops-mail": notified, "ticketing": notified}
    got = until(lambda: all(want <= webhook.snapshot().get(r, set()) for r, want in expected_by_receiver.items())
                and webhook.snapshot(), f"receivers got {webhook.snapshot()}, not {expected_by_receiver}")
    assert {r: got.get(r, set()) for r in expected_by_receiver} == expected_by_receiver
