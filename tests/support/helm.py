"""What `helm template` makes of a planned Helm release: the vendored chart of
../shared/reference/helm rendered by a real helm (`make helm`), shared by the tests that
validate those objects (tests/conformance/test_helm_render.py) and scan them
(tests/conformance/test_hardening.py)."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from inference_platform.core import versions
from platformctl.plan import HELM_RELEASE
from tests.support import conformance

HELM = Path(__file__).resolve().parents[2] / ".tools" / "helm"
# What a Kubernetes 1.34 API server serves that `helm template` does not assume: charts choose
# apiVersions by it (prometheus-adapter's APIService would otherwise come out as the removed v1beta1).
# What the cluster serves when the platform installs a chart: the monitoring CRDs come first
# (JobSet's chart fails without the ServiceMonitor kind).
API_VERSIONS = ("apiregistration.k8s.io/v1", "monitoring.coreos.com/v1/ServiceMonitor")
RELEASE_KEYS = ("name", "chart", "version", "namespace", "values")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader plus the `=` scalar the charts' CRD descriptions hold (YAML 1.1's
    value key type, which PyYAML has no constructor for)."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def releases(plan) -> list[dict]:
    """The Helm releases of a plan as `helm template` needs them (name, chart, version, namespace, values)."""
    return [{k: r.inputs[k] for k in RELEASE_KEYS} for r in plan.of_type(HELM_RELEASE)]


def helm_template(release: dict, include_crds: bool = True) -> list[dict]:
    """The objects `helm template` makes of a planned Helm release (CRDs too unless told not)."""
    if not HELM.exists():
        pytest.skip("helm is not installed: run `make helm`")
    return _render(json.dumps(release, sort_keys=True), include_crds)


@functools.cache
def _render(release_json: str, include_crds: bool) -> list[dict]:
    r = json.loads(release_json)
    # An OCI chart is planned by its full reference (oci://.../<name>); the vendored folder is its name.
    chart = conformance.reference_dir() / "helm" / r["chart"].rsplit("/", 1)[-1] / r["version"]
    run = subprocess.run([str(HELM), "template", r["name"], str(chart), "--namespace", r["namespace"],
                          "--kube-version", versions.KUBERNETES_VERSION, "--values", "-",
                          *(["--include-crds"] if include_crds else []),
                          *(f"--api-versions={v}" for v in API_VERSIONS)],
                         input=json.dumps(r["values"]), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return [doc for doc in yaml.load_all(run.stdout, Loader=_Loader) if doc]


# Kinds the charts make that live outside any namespace: Helm installs everything else into the
# release's namespace when the template names none (jaeger 4.11.1's objects name none).
CLUSTER_SCOPED = frozenset({"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
                            "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService",
                            "PriorityClass", "StorageClass", "CSIDriver", "IngressClass", "RuntimeClass",
                            "PersistentVolume", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"})


def installed_by_release(plan) -> dict[str, list[dict]]:
    """`<namespace>/<name>` of each Helm release of a plan -> the objects it puts in the cluster (installed)."""
    return {f"{r['namespace']}/{r['name']}": installed(r) for r in releases(plan)}


def installed(release: dict) -> list[dict]:
    """The objects a release puts in the cluster as `helm install` places them: no CRDs (not
    workloads), every namespaced object in the release's namespace unless it names its own."""
    objects = []
    for doc in helm_template(release, include_crds=False):
        if doc["kind"] not in CLUSTER_SCOPED and not doc["metadata"].get("namespace"):
            doc = {**doc, "metadata": {**doc["metadata"], "namespace": release["namespace"]}}
        objects.append(doc)
    return objects
