"""Kubeflow Trainer's release as the Training component plans it, rendered by a real `helm template`
of the vendored kubeflow-trainer 2.3.0 chart (with JobSet 0.12.0): it renders, every object
validates, our values reach it (controllers on the system nodes, hardened resources, the CRDs in
the release) and it makes none of the chart's own runtimes."""

from __future__ import annotations

import pytest

from inference_platform.core import versions
from tests.conftest import as_magnum, render_raw
from tests.support import conformance, helm
from tests.support.training_stacks import training_config

SYSTEM = {"node.cluster.x-k8s.io/nodegroup": "default-worker"}


@pytest.fixture(scope="module")
def release() -> dict:
    raw = as_magnum(training_config())
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    raw["weightCaches"] = {"fileShare": {"mode": "manila", "sizeGb": 100}}
    (found,) = [r for r in helm.releases(render_raw(raw)) if r["chart"].endswith("/kubeflow-trainer")]
    return found


def test_every_value_the_platform_sets_is_a_key_of_the_chart(release, reference):
    chart = versions.KUBEFLOW_TRAINER
    defaults = conformance.vendored_chart_values(chart.name, chart.version)
    assert conformance.unknown_values_keys(release["values"], defaults, frozenset({"nodeSelector"})) == []


def test_the_trainer_release_renders_and_every_object_validates(release, reference):
    docs = helm.helm_template(release)
    conformance.validate_rendered(docs)


def test_the_release_installs_trainers_crds_and_jobset_and_no_runtime_of_its_own(release, reference):
    docs = helm.helm_template(release)
    crds = {d["spec"]["names"]["kind"] for d in docs if d["kind"] == "CustomResourceDefinition"}
    assert {"TrainJob", "ClusterTrainingRuntime", "TrainingRuntime", "JobSet"} <= crds
    assert not [d for d in docs if d["kind"] in ("ClusterTrainingRuntime", "Job")]


def test_trainers_and_jobsets_controllers_run_on_the_system_nodes_with_bounded_resources(release, reference):
    deployments = {d["metadata"]["name"]: d for d in helm.installed(release) if d["kind"] == "Deployment"}
    assert sorted(deployments) == ["jobset-controller", "kubeflow-trainer-controller-manager"]
    for d in deployments.values():
        pod = d["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == SYSTEM
        for container in pod["containers"]:
            assert container["resources"]["limits"]["cpu"] and container["resources"]["requests"]["memory"]
