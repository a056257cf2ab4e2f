"""The model pipeline's Helm release rendered by a real `helm template` of the vendored chart
(../shared/reference/helm): it renders, every object it makes validates, and the values do
what pipeline.py says they do."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from components import versions
from platformctl.plan import HELM_RELEASE
from tests import conformance
from tests.conftest import ROOT, stack_plan

HELM = ROOT / ".tools" / "helm"


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader plus the `=` scalar the charts' CRD descriptions hold (YAML 1.1's
    value key type, which PyYAML has no constructor for)."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def helm_template(release: dict) -> list[dict]:
    """The objects `helm template` makes of a planned Helm release, CRDs included."""
    inputs = release.inputs
    chart = conformance.reference_dir() / "helm" / inputs["chart"] / inputs["version"]
    run = subprocess.run([str(HELM), "template", inputs["name"], str(chart), "--namespace", inputs["namespace"],
                          "--kube-version", versions.KUBERNETES_VERSION, "--include-crds", "--values", "-"],
                         input=yaml.safe_dump(inputs["values"]), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return [doc for doc in yaml.load_all(run.stdout, Loader=_Loader) if doc]


@pytest.fixture(scope="module")
def argo(reference) -> list[dict]:
    if not HELM.exists():
        pytest.skip("helm is not installed: run `make helm`")
    (release,) = [r for r in stack_plan("demo-dev").of_type(HELM_RELEASE) if r.inputs["chart"] == versions.ARGO_WORKFLOWS.name]
    return helm_template(release)


def test_the_argo_release_renders_and_every_object_validates(argo):
    kinds = sorted({doc["kind"] for doc in argo})
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition", "Deployment",
                     "ServiceAccount"]
    for doc in argo:
        conformance.validate(doc)


def test_the_argo_values_reach_the_controller(argo):
    (deployment,) = [d for d in argo if d["kind"] == "Deployment"]
    # The controller alone: no Argo Server.
    assert deployment["metadata"]["name"].endswith("workflow-controller")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    (controller,) = pod["containers"]
    args = controller["args"]
    assert args[args.index("--executor-image") + 1] == f"quay.io/argoproj/argoexec:{versions.ARGO_WORKFLOWS_VERSION}-nonroot"
    (config_map,) = [d for d in argo if d["kind"] == "ConfigMap"]
    config = yaml.safe_load(config_map["data"]["config"])
    assert config["workflowRestrictions"] == {"templateReferencing": "Strict"}
    assert config["executor"]["securityContext"]["runAsNonRoot"] is True
