"""What the charts let us harden in the workloads they install, as Helm values.

Each chart's entries are dotted values paths of the pinned chart (versions.py; the vendored
chart in ../shared/reference/helm) and what they are set to. `common.helm_release` merges them
under every release of that chart, the component's own values winning where both set a key.
What a chart cannot be made to do is an exception in hardening.py (CHARTS), with its reason.
"""

from __future__ import annotations

import copy
from typing import Any

from inference_platform.core import versions


def _resources(cpu: str, memory: str, cpu_limit: str, memory_limit: str) -> dict[str, Any]:
    """Requests that reserve what the pod needs at rest, limits that stop a runaway pod from
    starving its node (sizes for a cluster of a few dozen GPU nodes)."""
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu_limit, "memory": memory_limit}}


# A container that asks for nothing: no root, no escalation, no capability, the runtime's seccomp profile.
_RESTRICTED = {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
               "seccompProfile": {"type": "RuntimeDefault"}}

HARDENING: dict[str, dict[str, Any]] = {
    versions.KUBE_PROMETHEUS_STACK.name: {
        # grafana 12.11.1 values.yaml testFramework: a `helm test` hook Pod; a release installs
        # no test hooks and nothing runs `helm test`, so it is not rendered at all.
        "grafana.testFramework.enabled": False,
        # grafana 12.11.1 values.yaml `resources` (the grafana container) and `sidecar.resources`
        # (every k8s-sidecar container: the dashboards and datasources watchers).
        "grafana.resources": _resources("100m", "256Mi", "1", "1Gi"),
        "grafana.sidecar.resources": _resources("50m", "64Mi", "500m", "256Mi"),
        # kube-state-metrics 8.4.0, prometheus-node-exporter 4.56.1 values.yaml `resources`;
        # kube-prometheus-stack 88.5.3 values.yaml prometheusOperator.resources and the admission
        # webhook's certificate Jobs (prometheusOperator.admissionWebhooks.patch.resources).
        "kube-state-metrics.resources": _resources("50m", "128Mi", "500m", "512Mi"),
        "prometheus-node-exporter.resources": _resources("50m", "32Mi", "250m", "128Mi"),
        "prometheusOperator.resources": _resources("100m", "128Mi", "500m", "512Mi"),
        "prometheusOperator.admissionWebhooks.patch.resources": _resources("10m", "32Mi", "100m", "64Mi"),
        # kube-prometheus-stack 88.5.3 values.yaml prometheusOperator.admissionWebhooks.patch.securityContext
        # (uid 2000 by default): kube-webhook-certgen writes only through the API, so nobody's uid will do.
        "prometheusOperator.admissionWebhooks.patch.securityContext.runAsUser": 65534,
        "prometheusOperator.admissionWebhooks.patch.securityContext.runAsGroup": 65534,
    },
    # prometheus-adapter 5.3.0 values.yaml `resources`.
    versions.PROMETHEUS_ADAPTER.name: {"resources": _resources("100m", "128Mi", "1", "512Mi")},
    versions.LOKI.name: {
        # loki 18.11.0 values.yaml singleBinary.resources (the Loki StatefulSet) and
        # sidecar.resources (its rules sidecar, in the same pod).
        "singleBinary.resources": _resources("250m", "512Mi", "2", "4Gi"),
        "sidecar.resources": _resources("10m", "64Mi", "100m", "256Mi"),
    },
    versions.ALLOY.name: {
        # alloy 1.11.1 values.yaml alloy.resources; configReloader.resources (requests only by default).
        "alloy.resources": _resources("100m", "256Mi", "1", "1Gi"),
        "configReloader.resources": _resources("10m", "50Mi", "100m", "128Mi"),
        # alloy 1.11.1 templates/containers/_agent.yaml (alloy.securityContext) and
        # controllers/_pod.yaml (global.podSecurityContext). Alloy stays root: it tails the
        # kubelet's root-owned files under /var/log/pods (observability.alloy_config), which their
        # owner reads without any capability; its storage path is on the image, so not read-only.
        "alloy.securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                  "seccompProfile": {"type": "RuntimeDefault"}},
        "global.podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    },
    versions.JAEGER.name: {
        # jaeger 4.11.1 templates/jaeger/jaeger-service-account.yaml: Jaeger reads no Kubernetes
        # API (traces go to memory or Badger on its volume), so its ServiceAccount mounts no token.
        "jaeger.serviceAccount.automountServiceAccountToken": False,
        # jaeger 4.11.1 templates/jaeger/jaeger-deploy.yaml: .Values.jaeger.securityContext (the
        # container) and .Values.jaeger.podSecurityContext (the pod; its default runs as 10001).
        # Jaeger writes only to its Badger volume (mesh.jaeger_config), never to its image.
        "jaeger.securityContext": {**_RESTRICTED, "readOnlyRootFilesystem": True},
        "jaeger.podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        # The same template copies .Values.jaeger.resources; requests only (hardening.CHARTS).
        "jaeger.resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
    },
    versions.GPU_OPERATOR.name: {
        # node-feature-discovery 0.19.0 (vendored in gpu-operator v26.7.0) templates master.yaml,
        # worker.yaml, nfd-gc.yaml: <role>.podSecurityContext is the pod's; <role>.resources has
        # requests and a memory limit by default, a CPU limit added.
        **{f"node-feature-discovery.{role}.podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}}
           for role in ("master", "worker", "gc")},
        "node-feature-discovery.master.resources.limits.cpu": "1",
        "node-feature-discovery.worker.resources.limits.cpu": "200m",
        "node-feature-discovery.gc.resources.limits.cpu": "200m",
    },
    # gateway 1.30.3 templates/deployment.yaml: .Values.securityContext replaces the pod's default,
    # the unprivileged-port sysctl that lets Envoy bind 80 and 443 without root; kept, seccomp added.
    versions.ISTIO_GATEWAY.name: {"securityContext": {
        "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}],
        "seccompProfile": {"type": "RuntimeDefault"}}},
    # argo-workflows 1.0.18 values.yaml controller.resources (the pipeline sets the rest of it).
    versions.ARGO_WORKFLOWS.name: {"controller.resources.limits.cpu": "1"},
    # kubeflow-trainer 2.3.0 values.yaml manager.resources (empty by default; jobset 0.12.0's
    # controller.resources already has requests and limits).
    versions.KUBEFLOW_TRAINER.name: {"manager.resources": _resources("100m", "256Mi", "1", "1Gi")},
    # kuberay-operator 1.7.0 values.yaml podSecurityContext (empty by default; its container's
    # securityContext already runs non-root without escalation).
    versions.KUBERAY_OPERATOR.name: {"podSecurityContext": {"seccompProfile": {"type": "RuntimeDefault"}}},
    # kueue 0.19.2 values.yaml controllerManager.manager.podSecurityContext (runAsNonRoot and seccomp by
    # default): the uid and gid the image runs as (kubernetes-sigs/kueue v0.19.2 Dockerfile: USER 65532:65532).
    versions.KUEUE.name: {"controllerManager.manager.podSecurityContext.runAsUser": 65532,
                          "controllerManager.manager.podSecurityContext.runAsGroup": 65532},
    # llm-d-router-gateway v0.10.0 charts/router/values.yaml epp.resources: 8 CPUs and 8 GiB
    # requested by default, sized for pools of many model servers; a version's pool here is a
    # handful of pods. No CPU limit, as upstream: Istio streams every request and response body
    # through the picker (ext_proc FULL_DUPLEX_STREAMED), so CFS throttling there would add to
    # every token's latency (hardening ledger: the picker's CKV_K8S_11).
    versions.LLM_D_ROUTER.name: {"router.epp.resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                          "limits": {"memory": "4Gi"}}},
    versions.KIALI.name: {
        # kiali-server 2.29.0 values.yaml deployment.resources: requests and a memory limit by
        # default; a CPU limit added.
        "deployment.resources.limits.cpu": "1",
        # kiali-server 2.29.0 templates/networkpolicy.yaml admits ports 20001 and 9090 from any
        # pod; the Mesh declares a narrower one (mesh.kiali_network_policy_spec) instead.
        "deployment.network_policy.enabled": False,
    },
}


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in override.items()}}
    return copy.deepcopy(override)


def hardening_values(chart: str) -> dict[str, Any]:
    """The chart's hardening as the nested values Helm takes."""
    tree: dict[str, Any] = {}
    for path, value in HARDENING.get(chart, {}).items():
        *parents, key = path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[key] = copy.deepcopy(value)
    return tree


def hardened(chart: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values` over the chart's hardening: the component's own values win where both set a key."""
    return _merge(hardening_values(chart), values)
