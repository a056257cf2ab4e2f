"""Every Helm release of the example stacks, rendered by a real `helm template` of the vendored
chart (../shared/reference/helm), for the tests that check what the charts make."""

from __future__ import annotations

import functools
import json
import subprocess

import pytest
import yaml

from inference_platform.core import versions
from platformctl.plan import HELM_RELEASE
from tests.conftest import ROOT, STACKS, stack_plan
from tests.support import conformance

HELM = ROOT / ".tools" / "helm"
# What a Kubernetes 1.34 API server serves that `helm template` does not assume: charts choose
# apiVersions by it (prometheus-adapter's APIService would otherwise come out as the removed v1beta1).
API_VERSIONS = ("apiregistration.k8s.io/v1",)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader plus the `=` scalar the charts' CRD descriptions hold (YAML 1.1's
    value key type, which PyYAML has no constructor for)."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def _release_inputs(stack: str) -> list[dict]:
    return [{k: r.inputs[k] for k in ("name", "chart", "version", "namespace", "values")}
            for r in stack_plan(stack).of_type(HELM_RELEASE)]


def _releases() -> dict[str, dict]:
    """Each distinct release (chart, version, namespace, name, values) of the example stacks, by an id."""
    found: dict[str, dict] = {}
    for stack in STACKS:
        for inputs in _release_inputs(stack):
            if inputs not in found.values():
                found[f"{stack}:{inputs['name']}"] = inputs
    return found


RELEASES = _releases()


@functools.cache
def helm_template(release_id: str) -> list[dict]:
    """The objects `helm template` makes of a planned Helm release, CRDs included."""
    if not HELM.exists():
        pytest.skip("helm is not installed: run `make helm`")
    r = RELEASES[release_id]
    chart = conformance.reference_dir() / "helm" / r["chart"] / r["version"]
    run = subprocess.run([str(HELM), "template", r["name"], str(chart), "--namespace", r["namespace"],
                          "--kube-version", versions.KUBERNETES_VERSION, "--include-crds", "--values", "-",
                          *(f"--api-versions={v}" for v in API_VERSIONS)],
                         input=json.dumps(r["values"]), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return [doc for doc in yaml.load_all(run.stdout, Loader=_Loader) if doc]


def stack_release_ids(stack: str) -> list[str]:
    """The ids of every release of `stack` (a release alike in an earlier stack has that one's id)."""
    return [next(i for i, r in RELEASES.items() if r == inputs) for inputs in _release_inputs(stack)]
