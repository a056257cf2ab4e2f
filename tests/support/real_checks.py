"""What tests/real asserts of a real run: plans compared, policy verdicts read off the CLI's report,
workloads ready, pods where their groups allow, nothing of ours left after destroy."""

from __future__ import annotations

import re
from typing import Any, Iterable

from tests.support.real_cluster import KwokCluster

# A namespace, CRD or cluster-scoped object the control plane makes itself, not ours.
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def _urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def plan_difference(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """URNs whose type, inputs or options differ between two plans (or that only one has)."""
    ra = {r["urn"]: r for r in a["resources"]}
    rb = {r["urn"]: r for r in b["resources"]}
    keys = ("type", "inputs", "options", "dependencies", "parent", "provider")
    return sorted({*(set(ra) ^ set(rb)), *(u for u in set(ra) & set(rb) if any(ra[u].get(k) != rb[u].get(k) for k in keys))})


# --------------------------------------------------------------------------- policy verdicts

# The CLI's policy report (pkg/display), one line per violation under its pack:
# `        - [advisory]  <policy>  (<type>: <name>)`.
_VERDICT = re.compile(r"^\s*-\s*\[(advisory|mandatory|remediate)\]\s+(\S+)\s+\((.+): ([^:()]+)\)\s*$")


def engine_verdicts(text: str) -> list[tuple[str, str, str]]:
    """(level, policy, resource name) of every violation the real analyzer reported."""
    return sorted({(m[1], m[2], m[4]) for m in map(_VERDICT.match, text.splitlines()) if m})


def offline_verdicts(violations: Iterable[Any]) -> list[tuple[str, str, str]]:
    """The same triples from `platformctl policy`'s run (platformctl/policy.py Violation)."""
    return sorted({(v.level, v.policy, _urn_name(v.urn) if v.urn else "") for v in violations})


# --------------------------------------------------------------------------- day-2 previews

_REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}


def classified(diff: dict[str, Any]) -> set[tuple[str, str]]:
    """`platformctl diff`'s changes as (action, logical name)."""
    return {(c.action, _urn_name(c.key)) for c in diff["changes"]}


def engine_steps(ops: dict[str, list[str]]) -> set[tuple[str, str]]:
    """A real preview's steps as (action, logical name), a replacement's steps counted once."""
    return {("replace" if op in _REPLACE_OPS else op, _urn_name(urn)) for op, urns in ops.items() for urn in urns}


# --------------------------------------------------------------------------- workloads


def _pod_owner(pod: dict) -> str:
    refs = pod["metadata"].get("ownerReferences") or [{}]
    return refs[0].get("kind", "")


def settled_workload_problems(cluster: KwokCluster, allowed_unready: dict[str, str], within: float = 90) -> list[str]:
    """workload_problems once the controllers have caught up, or as they stand after `within` seconds:
    after `up`, an HPA may still raise a Deployment to its minReplicas and the new pod take a moment."""
    import time

    deadline = time.monotonic() + within
    while True:
        problems = workload_problems(cluster, allowed_unready)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(1)


def workload_problems(cluster: KwokCluster, allowed_unready: dict[str, str]) -> list[str]:
    """Every Deployment, StatefulSet and DaemonSet not fully ready, Job not complete and pod not
    running or done, except those whose `<namespace>/<name>` starts with a key of `allowed_unready`
    (its value says why it cannot be ready without a real operator or cloud)."""
    def allowed(ns: str, name: str) -> bool:
        return any(f"{ns}/{name}".startswith(k) for k in allowed_unready)

    problems = []
    for d in cluster.get("deployments,statefulsets,daemonsets,jobs", "-A"):
        m, spec, st = d["metadata"], d.get("spec", {}), d.get("status", {})
        kind = d["kind"]
        if allowed(m["namespace"], m["name"]):
            continue
        if kind == "Deployment" and st.get("availableReplicas", 0) < spec.get("replicas", 1):
            problems.append(f"Deployment {m['namespace']}/{m['name']}: {st.get('availableReplicas', 0)}/{spec.get('replicas', 1)} available")
        elif kind == "StatefulSet" and st.get("readyReplicas", 0) < spec.get("replicas", 1):
            problems.append(f"StatefulSet {m['namespace']}/{m['name']}: {st.get('readyReplicas', 0)}/{spec.get('replicas', 1)} ready")
        elif kind == "DaemonSet" and st.get("numberReady", 0) < st.get("desiredNumberScheduled", 0):
            problems.append(f"DaemonSet {m['namespace']}/{m['name']}: {st.get('numberReady', 0)}/{st.get('desiredNumberScheduled')} ready")
        elif kind == "Job" and not any(c["type"] == "Complete" and c["status"] == "True" for c in st.get("conditions", [])):
            problems.append(f"Job {m['namespace']}/{m['name']}: not complete")
    for pod in cluster.get("pods", "-A"):
        m, phase = pod["metadata"], pod.get("status", {}).get("phase")
        if phase not in ("Running", "Succeeded") and not allowed(m["namespace"], m["name"]):
            why = "; ".join(c.get("message", c.get("reason", "")) for c in pod.get("status", {}).get("conditions", [])
                            if c.get("status") != "True")
            problems.append(f"pod {m['namespace']}/{m['name']} ({_pod_owner(pod)}): {phase}: {why}")
    return sorted(problems)


def _gpu_request(pod: dict) -> bool:
    # Init containers too: a native sidecar (restartPolicy Always) may hold the pod's GPU.
    return any(k.startswith("nvidia.com/") for c in [*pod["spec"].get("initContainers", []), *pod["spec"].get("containers", [])]
               for k in (c.get("resources", {}).get("requests") or {}))


def placement_problems(cluster: KwokCluster) -> list[str]:
    """Pods on a node whose labels do not satisfy their nodeSelector, and pods that need no GPU
    (DaemonSets' excepted) holding room on a GPU node."""
    nodes = {n["metadata"]["name"]: n for n in cluster.get("nodes")}
    problems = []
    for pod in cluster.get("pods", "-A"):
        node = nodes.get(pod["spec"].get("nodeName", ""))
        if node is None:
            continue
        m, labels = pod["metadata"], node["metadata"].get("labels", {})
        wrong = {k: v for k, v in (pod["spec"].get("nodeSelector") or {}).items() if labels.get(k) != v}
        if wrong:
            problems.append(f"pod {m['namespace']}/{m['name']} on {node['metadata']['name']}: nodeSelector {wrong} unmet")
        gpu_node = any(k.startswith("nvidia.com/") for k in node["status"].get("capacity", {}))
        if gpu_node and not _gpu_request(pod) and _pod_owner(pod) != "DaemonSet":
            problems.append(f"pod {m['namespace']}/{m['name']} ({_pod_owner(pod)}) needs no GPU but runs on GPU node {node['metadata']['name']}")
    return sorted(problems)


# --------------------------------------------------------------------------- after destroy


def leftovers(cluster: KwokCluster) -> list[str]:
    """Objects the stack made that `destroy` left: namespaces, webhooks, API services,
    cluster roles and bindings, priority and storage classes, volumes."""
    left = [f"namespace {n['metadata']['name']} ({n.get('status', {}).get('phase')})"
            for n in cluster.get("namespaces") if n["metadata"]["name"] not in SYSTEM_NAMESPACES]
    # CRDs stay: Helm never deletes the CRDs of a chart's crds/ folder (helm.sh/docs/chart_best_practices/
    # custom_resource_definitions), which keeps every custom resource of the cluster from going with them.
    left += [f"{w['kind']} {w['metadata']['name']}" for w in
             cluster.get("mutatingwebhookconfigurations,validatingwebhookconfigurations")]
    left += [f"apiservice {a['metadata']['name']}" for a in cluster.get("apiservices") if a["spec"].get("service")]
    left += [f"{r['kind']} {r['metadata']['name']}" for r in cluster.get("clusterroles,clusterrolebindings")
             if not r["metadata"]["name"].startswith(("system:", "cluster-admin", "admin", "edit", "view", "kwok"))]
    left += [f"priorityclass {p['metadata']['name']}" for p in cluster.get("priorityclasses")
             if not p["metadata"]["name"].startswith("system-")]
    left += [f"storageclass {s['metadata']['name']}" for s in cluster.get("storageclasses")]
    left += [f"pv {v['metadata']['name']}" for v in cluster.get("pv")
             if v["metadata"].get("labels", {}).get("real-test/stand-in") != "volume"]
    return sorted(left)
