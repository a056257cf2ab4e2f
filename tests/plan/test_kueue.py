"""Kueue on the GPU groups (training/kueue.py), as the plan of the training test stack declares it:
flavors placed exactly as serving's pods, quotas that are the serving-first proof's numbers, every
Kueue object after the release that installs its CRDs, and nothing of it in a stack without training."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest

from inference_platform.core import versions
from inference_platform.gpu.profiles import gpu_scheduling
from inference_platform.training.capacity import group_proofs
from platformctl.engine import render_stack, stack_settings
from platformctl.ordering import violations
from platformctl.plan import HELM_RELEASE
from tests.conftest import ROOT, STACKS, render_raw, stack_plan
from tests.support import conformance
from tests.support.training_stacks import train_dev_with_topology, training_config

TRAIN_DEV = ROOT / "stacks" / "Pulumi.train-dev.yaml"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"


@functools.cache
def plan():
    return render_stack("train-dev", TRAIN_DEV)


def kueue_objects(kind: str) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in plan().of_type(KUEUE + kind)}


def release():
    (r,) = [r for r in plan().of_type(HELM_RELEASE) if r.inputs["chart"].endswith("/kueue")]
    return r


def test_kueue_comes_from_its_pinned_oci_chart_and_queues_only_training_kinds():
    r = release()
    assert (r.inputs["chart"], r.inputs["version"]) == ("oci://registry.k8s.io/kueue/charts/kueue", versions.KUEUE.version)
    assert "repositoryOpts" not in r.inputs  # an OCI chart has no repository index
    config = json.loads(r.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["integrations"] == {"frameworks": ["trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset"]}
    assert config["resources"] == {"quotaCheckStrategy": "IgnoreUndeclared"}


def test_kueue_values_and_hardening_exist_in_the_pinned_chart(reference):
    from inference_platform.core.chart_hardening import hardened
    from inference_platform.training.kueue import kueue_values

    defaults = conformance.vendored_chart_values("kueue", versions.KUEUE.version)
    values = hardened(versions.KUEUE.name, kueue_values({"pool": "system"}))
    # The pod security context is a map the chart copies whole (templates/manager/manager.yaml toYaml).
    free = frozenset({"controllerManager.manager.podSecurityContext"})
    assert values["controllerManager"]["nodeSelector"] == {"pool": "system"}
    assert conformance.unknown_values_keys(values, defaults, free) == []
    assert conformance.unknown_values_keys({"controllerManager": {"nodeSelectors": {}}}, defaults, free) != []


def test_each_flavor_places_pods_exactly_as_serving_pods_of_its_group_are_placed():
    settings = stack_settings(TRAIN_DEV)
    flavors = kueue_objects("ResourceFlavor")
    assert sorted(flavors) == sorted(g.name for g in settings.gpu_groups)
    for group in settings.gpu_groups:
        spec = flavors[group.name]["spec"]
        sched = gpu_scheduling(group)
        # No topology: both groups autoscale, and Kueue admits a topology-aware job only onto nodes that exist.
        assert spec == {"nodeLabels": sched.node_selector, "tolerations": sched.tolerations}
    assert kueue_objects("Topology") == {}


@functools.cache
def topology_plan():
    return render_stack("train-dev", train_dev_with_topology(Path(tempfile.mkdtemp())))


def test_with_topology_levels_on_fixed_size_groups_every_flavor_names_the_topology():
    (topology,) = [r.inputs for r in topology_plan().of_type(KUEUE + "Topology")]
    assert topology["spec"]["levels"] == [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kubernetes.io/hostname"}]
    flavors = [r.inputs for r in topology_plan().of_type(KUEUE + "ResourceFlavor")]
    assert len(flavors) == 2
    for flavor in flavors:
        assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]
        # Kueue refuses changes of a topology flavor's spec: its name carries a digest of it.
        assert flavor["metadata"]["name"].rsplit("-", 1)[0] in ("gpu-h100", "gpu-mig")


def _quotas(spec: dict) -> dict[tuple[str, str], dict]:
    return {(f["name"], q["name"]): q
            for rg in spec["resourceGroups"] for f in rg["flavors"] for q in f["resources"]}


def test_queues_hold_the_proofs_numbers_serving_its_peak_each_team_its_guarantee_the_cohort_the_rest():
    queues = kueue_objects("ClusterQueue")
    serving = _quotas(queues["serving-reservation"]["spec"])
    research = _quotas(queues["training-research"]["spec"])
    applied = _quotas(queues["training-applied"]["spec"])
    cohort = _quotas(kueue_objects("Cohort")["gpu"]["spec"])
    proofs = group_proofs(stack_settings(TRAIN_DEV))
    assert set(serving) == set(cohort) == {(p.group, p.resource) for p in proofs}
    for p in proofs:
        key = (p.group, p.resource)
        assert serving[key] == {"name": p.resource, "nominalQuota": p.peak, "borrowingLimit": 0, "lendingLimit": 0}
        assert cohort[key] == {"name": p.resource, "nominalQuota": p.rest}
        guaranteed = dict(p.guaranteed)
        assert (research[key]["nominalQuota"], applied[key]["nominalQuota"]) == (guaranteed["research"], guaranteed["applied"])
        # Everything the cohort holds is the group's capacity: nothing more can be admitted.
        assert p.peak + sum(guaranteed.values()) + p.rest == p.capacity
    assert queues["serving-reservation"]["spec"]["stopPolicy"] == "Hold"
    assert "namespaceSelector" not in queues["serving-reservation"]["spec"]
    # The stack's own limits, and the defaults: borrow all training may use beyond the guarantee, lend it all.
    h100 = ("gpu-h100", "nvidia.com/gpu")
    assert (research[h100]["borrowingLimit"], research[h100]["lendingLimit"]) == (8, 8)
    assert (applied[h100]["borrowingLimit"], applied[h100]["lendingLimit"]) == (48 - 10 - 4, 2)


def test_each_team_has_its_namespace_a_local_queue_there_and_a_queue_that_admits_only_that_namespace():
    queues = kueue_objects("ClusterQueue")
    local = {(q["metadata"]["namespace"], name): q["spec"] for name, q in kueue_objects("LocalQueue").items()}
    assert local == {("research", "research"): {"clusterQueue": "training-research"},
                     ("applied-ml", "applied"): {"clusterQueue": "training-applied"}}
    assert queues["training-applied"]["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "applied-ml"}}
    assert queues["training-applied"]["spec"]["preemption"] == {
        "withinClusterQueue": "Never", "reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "Never"}}
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"] for r in plan().of_type("kubernetes:core/v1:Namespace")}
    assert namespaces["applied-ml"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert "istio-injection" not in namespaces["applied-ml"]


def test_training_pods_rank_below_serving_and_tuning_and_preempt_nothing():
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in plan().of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")}
    training = classes["gpu-training"]
    assert -10 <= training["value"] < 0 and training["preemptionPolicy"] == "Never"
    assert training["value"] > classes["gpu-placeholder"]["value"]
    workload = kueue_objects("WorkloadPriorityClass")
    assert {name: w["value"] for name, w in workload.items()} == {"training": 100, "training-urgent": 1000}
    assert all("spec" not in w and w["apiVersion"] == "kueue.x-k8s.io/v1beta2" for w in workload.values())


def test_every_kueue_object_waits_for_the_release_that_installs_its_crds():
    urn = release().urn
    objects = [r for r in plan().resources if r.type.startswith(KUEUE)]
    assert len(objects) == 10
    assert all(urn in r.depends_on for r in objects)
    assert violations([r.to_json() for r in plan().resources]) == []


def test_a_kueue_object_created_before_the_release_breaks_the_ordering_rule():
    resources = [r.to_json() for r in plan().resources]
    urn = release().urn
    for r in resources:
        if r["type"].startswith(KUEUE):
            r["dependsOn"] = [d for d in r["dependsOn"] if d != urn]
            r["parent"] = None
    assert any("kueue-crds" in v for v in violations(resources))


@pytest.mark.parametrize("stack", [s for s in STACKS if stack_settings(s).training is None])
def test_a_stack_without_training_declares_no_kueue(stack):
    types = {r.type for r in stack_plan(stack).resources}
    assert not any(t.startswith(KUEUE) for t in types)
    assert not [r for r in stack_plan(stack).of_type(HELM_RELEASE) if "kueue" in r.inputs["chart"]]


def _edited_plan(tmp_path, edit, stack_file=TRAIN_DEV):
    import yaml

    doc = yaml.safe_load(stack_file.read_text())
    edit(doc["config"]["inference-platform:training"])
    edited = tmp_path / "Pulumi.train-dev.yaml"
    edited.write_text(yaml.safe_dump(doc, sort_keys=False))
    return render_stack("train-dev", edited)


def _actions(before, after) -> dict[str, tuple[str, bool]]:
    from platformctl.diff import diff_plans

    d = diff_plans(before.to_json(), after.to_json())
    return {c.key.rsplit("::", 1)[-1]: (c.action, c.delete_first) for c in d["changes"]}


def test_a_new_guarantee_only_updates_the_teams_queue_and_the_cohorts_rest(tmp_path):
    # research's borrowingLimit is its own (8), so its queue stays as it is.
    after = _edited_plan(tmp_path, lambda t: t["teams"][1]["quotas"][0].update(gpus=2))
    assert _actions(plan(), after) == {"train-dev-queue-applied": ("update", False), "train-dev-cohort": ("update", False)}


def test_new_topology_levels_make_a_new_topology_and_flavors_before_the_old_ones_go(tmp_path):
    # Kueue refuses to change a Topology's levels or a topology flavor's spec: new names, created
    # first (no delete-before-replace), the queues moved to them by an update, the old ones deleted last.
    (tmp_path / "before").mkdir()
    before = train_dev_with_topology(tmp_path / "before")
    after = _edited_plan(tmp_path, lambda t: t.update(topologyLevels=["kubernetes.io/hostname"]), before)
    actions = _actions(render_stack("train-dev", before), after)
    assert actions["train-dev-topology"] == ("replace", False)
    assert actions["train-dev-flavor-gpu-h100"] == actions["train-dev-flavor-gpu-mig"] == ("replace", False)
    assert actions["train-dev-queue-research"] == ("update", False)


def test_every_trainjob_names_one_of_kueues_workload_priority_classes():
    """Without the label Kueue takes a workload's priority from its pods' PriorityClass (-8 for all),
    so the team queues' withinClusterQueue: LowerPriority never preempts, and a job labelled by hand
    would outrank every other."""
    from inference_platform.training.kueue import WORKLOAD_PRIORITIES

    raw = training_config()
    raw["training"]["jobs"][1]["priority"] = "training-urgent"
    plan = render_raw(raw)
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in plan.resources
               if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"}
    labels = {r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"].get("kueue.x-k8s.io/priority-class")
              for r in plan.resources if r.type == "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"}
    assert labels == {"ddp": "training", "llm": "training-urgent"}
    assert set(labels.values()) <= set(classes) == set(WORKLOAD_PRIORITIES)
    assert classes["training-urgent"]["value"] > classes["training"]["value"]
