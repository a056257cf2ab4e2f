"""The objects each example stack's Helm releases make, written out as Helm installs them, for
checkov: a namespaced object the chart leaves without a namespace lands in the release's
(`helm install --namespace`), so it is given that namespace here too."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.helm_render import RELEASES, helm_template, stack_release_ids

# Kinds without a namespace (Kubernetes 1.34 API); every other kind a chart makes is namespaced.
CLUSTER_SCOPED = frozenset({
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "PriorityClass", "StorageClass", "CSIDriver", "APIService", "Namespace", "RuntimeClass", "IngressClass",
    "NodeFeatureRule", "ClusterPolicy", "NVIDIADriver",
})
SEPARATOR = "--"  # <chart>--<release>.yaml: a report's file path names the chart


def write_release_objects(stack: str, out: Path) -> Path:
    """The objects of every Helm release of `stack`, one file per release, CRDs left out (checkov
    has no checks for them)."""
    out.mkdir(parents=True, exist_ok=True)
    for release_id in stack_release_ids(stack):
        release = RELEASES[release_id]
        docs = []
        for doc in helm_template(release_id):
            if doc.get("kind") == "CustomResourceDefinition":
                continue
            if doc.get("kind") not in CLUSTER_SCOPED:
                doc.setdefault("metadata", {}).setdefault("namespace", release["namespace"])
            docs.append(doc)
        (out / f"{release['chart']}{SEPARATOR}{release['name']}.yaml").write_text(yaml.safe_dump_all(docs))
    return out


def chart_of(file_path: str) -> str:
    return Path(file_path).name.split(SEPARATOR, 1)[0]
