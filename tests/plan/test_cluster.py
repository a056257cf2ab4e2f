"""The Magnum cluster under each driver: the labels it reads, the autoscaling it offers, the
API server reachable from where `pulumi up` runs, and a node subnet the file share agrees with."""

from __future__ import annotations

import pytest

from inference_platform.core.node_contract import MAGNUM_GROUP_LABELS
from platformctl.diff import diff_plans
from platformctl.engine import MOCK_SUBNET_CIDR, render_stack, stack_settings
from tests.conftest import HEAT, ROOT, as_magnum, base_config, on_heat, render_raw, stack_plan
from tests.support.variants import heat_plan

CLUSTER = "openstack:containerinfra/cluster:Cluster"
STACK = ROOT / "stacks" / "Pulumi.acme-prod.yaml"
TEMPLATE = "openstack:containerinfra/clusterTemplate:ClusterTemplate"
NODE_GROUP = "openstack:containerinfra/nodeGroup:NodeGroup"
SHARE_ACCESS = "openstack:sharedfilesystem/shareAccess:ShareAccess"
AUTOSCALER = "inference-platform:autoscaler:NodeGroupAutoscaler"
HEAT_TEMPLATE = HEAT["template"]


def one(plan, typ):
    (r,) = plan.of_type(typ)
    return r


def magnum(**magnum) -> dict:
    raw = as_magnum(base_config())
    if magnum.get("driver") == "heat":
        on_heat(raw, **magnum)
    else:
        raw["cluster"]["magnum"] = magnum
    raw["cluster"]["nodeGroups"][1]["flavor"] = "g1"
    raw["weightCaches"] = {"fileShare": {"mode": "manila", "sizeGb": 100}}
    return raw


@pytest.mark.parametrize("plan,driver", [(lambda: stack_plan("acme-prod"), "clusterApi"), (heat_plan, "heat")])
def test_every_group_autoscales_and_only_heat_gpu_groups_pass_kubelet_options(plan, driver):
    plan = plan()
    cluster, template = one(plan, CLUSTER), one(plan, TEMPLATE)
    labels = cluster.inputs["labels"]
    assert labels["auto_scaling_enabled"] == "true"
    assert (labels["min_node_count"], labels["max_node_count"]) == ("3", "6")
    assert labels["master_lb_floating_ip_enabled"] == "true"
    assert labels["fixed_subnet_cidr"] == "10.20.0.0/22"
    groups = {g.inputs["role"]: (g.inputs["minNodeCount"], g.inputs["maxNodeCount"]) for g in plan.of_type(NODE_GROUP)}
    assert groups == {"gpu-h100": (1, 8), "gpu-l4": (1, 4)}
    for r in [cluster, template]:
        assert "kubelet_options" not in r.inputs.get("labels", {}), r.name
    # Heat's GPU groups register their nodes with the GPU contract (test_heat_gpu_nodes_register_...).
    for r in plan.of_type(NODE_GROUP):
        assert ("kubelet_options" in r.inputs.get("labels", {})) == (driver == "heat"), r.name
    # Heat's default runtime is host-docker, gone since Kubernetes 1.24; Cluster API runs containerd.
    assert template.inputs["labels"].get("container_runtime") == ("containerd" if driver == "heat" else None)
    # Only Heat needs the platform's own autoscaler for the extra groups.
    assert bool(plan.of_type(AUTOSCALER)) == (driver == "heat")


def test_a_changed_template_is_a_new_template_and_the_cluster_moves_to_it(tmp_path):
    # Magnum refuses to update a template a cluster uses; a new one, then a cluster upgrade.
    before = stack_plan("acme-prod")
    assert one(before, TEMPLATE).replace_on_changes == ["*"]
    edited = tmp_path / "Pulumi.acme-prod.yaml"
    edited.write_text((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text().replace("kubernetesVersion: v1.34.1", "kubernetesVersion: v1.34.2"))
    d = diff_plans(before.to_json(), render_stack("acme-prod", edited).to_json())
    actions = {(c.action, c.key.rsplit("::", 1)[-1]) for c in d["changes"]}
    assert {("replace", "acme-prod-cluster-template"), ("update", "acme-prod-cluster-magnum")} <= actions
    (template,) = [c for c in d["changes"] if c.key.endswith("acme-prod-cluster-template")]
    assert not template.delete_first and "replaceOnChanges *" in template.reason
    assert d["errors"] == []


def _upgrade_diff(tmp_path, stack: str, source, edit=lambda text: text):
    """The diff of a Kubernetes patch upgrade of a stack file (after `edit`, applied to both sides)."""
    before_file, after_file = tmp_path / "before" / f"Pulumi.{stack}.yaml", tmp_path / "after" / f"Pulumi.{stack}.yaml"
    text = edit(source.read_text())
    for path, body in ((before_file, text), (after_file, text.replace("kubernetesVersion: v1.34.1", "kubernetesVersion: v1.34.2"))):
        path.parent.mkdir()
        path.write_text(body)
    return diff_plans(render_stack(stack, before_file).to_json(), render_stack(stack, after_file).to_json())


def test_a_kubernetes_upgrade_on_heat_is_refused_by_the_plan_not_by_a_failing_up(tmp_path):
    # Magnum's Heat driver refuses every cluster upgrade (heat/driver.py upgrade_cluster: NotSupported).
    assert one(heat_plan(), CLUSTER).replace_on_changes == ["clusterTemplateId"]
    d = _upgrade_diff(tmp_path, "acme-prod-heat", ROOT / "tests" / "data" / "Pulumi.acme-prod-heat.yaml")
    (error,) = [e for e in d["errors"] if "resource openstack:containerinfra/cluster:Cluster " in e]
    assert "replace of protected resource" in error and "clusterTemplateId" in error
    assert "heat refuses every upgrade" in error and "new cluster" in error


def test_a_template_change_on_magnum_cluster_api_is_refused_while_a_group_has_its_own_image(tmp_path):
    # magnum-cluster-api's upgrade puts the template's image on every group (driver.py upgrade_cluster).
    own_image = lambda text: text.replace("      - name: gpu-h100\n", "      - name: gpu-h100\n        image: ubuntu-24.04-nvidia\n        os: ubuntu-24.04\n", 1)  # noqa: E731
    assert own_image(STACK.read_text()) != STACK.read_text()
    d = _upgrade_diff(tmp_path, "acme-prod", STACK, own_image)
    assert any("replace of protected resource openstack:containerinfra/cluster:Cluster" in e
               and "magnum-cluster-api puts the template's image" in e for e in d["errors"])
    # Without a group image the cluster moves to the new template in place.
    assert one(stack_plan("acme-prod"), CLUSTER).replace_on_changes == []


def test_api_allow_list_goes_where_the_heat_driver_reads_it():
    plan = render_raw(magnum(driver="heat", kubernetesVersion="v1.34.1-rancher1",
                             apiAllowedCidrs=["203.0.113.0/24", "198.51.100.7/32"]))
    labels = one(plan, CLUSTER).inputs["labels"]
    assert labels["master_lb_allowed_cidrs"] == "203.0.113.0/24,198.51.100.7/32"
    assert "api_master_lb_allowed_cidrs" not in labels


def test_heat_nodes_get_a_containerd_whose_cri_the_kubelet_speaks():
    # Heat's default containerd 1.4.4 lacks CRI v1 (kubelet >= 1.26): nodes would never register.
    labels = one(heat_plan(), TEMPLATE).inputs["labels"]
    assert labels["containerd_version"] == "1.6.31"
    assert labels["containerd_tarball_sha256"] == "75afb9b9674ff509ae670ef3ab944ffcdece8ea9f7d92c42307693efa7b6109d"
    # Cluster API drivers take containerd from the node image: no such labels.
    assert "containerd_version" not in one(stack_plan("acme-prod"), TEMPLATE).inputs["labels"]


def test_no_floating_ip_only_when_asked():
    assert one(render_raw(magnum(apiFloatingIp=False)), CLUSTER).inputs["labels"]["master_lb_floating_ip_enabled"] == "false"


def test_share_access_follows_the_node_subnet():
    created = render_raw(magnum(subnetCidr="10.30.0.0/24"))
    assert [a.inputs["accessTo"] for a in created.of_type(SHARE_ACCESS)] == ["10.30.0.0/24"]
    assert one(created, CLUSTER).inputs["labels"]["fixed_subnet_cidr"] == "10.30.0.0/24"
    # An existing subnet: its CIDR as Neutron reports it, and Magnum is told the subnet, not a CIDR.
    existing = render_raw(magnum(fixedNetwork="acme-net", fixedSubnet="acme-nodes"))
    (access,) = existing.of_type(SHARE_ACCESS)
    assert access.inputs["accessTo"] == MOCK_SUBNET_CIDR and access.name.endswith("-share-access-nodes")
    cluster = one(existing, CLUSTER)
    assert (cluster.inputs["fixedNetwork"], cluster.inputs["fixedSubnet"]) == ("acme-net", "acme-nodes")
    assert "fixed_subnet_cidr" not in cluster.inputs["labels"]


@pytest.mark.parametrize("labeller,settings", [
    ("magnum-cluster-api", {}),
    ("magnum-capi-helm", {"clusterApiDriver": "magnum-capi-helm"}),
    ("heat", {"driver": "heat", "kubernetesVersion": "v1.34.1-rancher1"}),
])
def test_groups_are_selected_by_the_label_their_driver_gives_nodes(labeller, settings):
    from inference_platform.settings.loader import parse_settings

    s = parse_settings(magnum(**settings), "stacks/Pulumi.test-dev.yaml")
    key = MAGNUM_GROUP_LABELS[labeller]
    assert [g.selector for g in s.cluster.node_groups] == [{key: "default-worker"}, {key: "gpu"}]


def test_heat_gpu_nodes_register_with_the_gpu_taint_and_the_autoscalers_gpu_label():
    """Heat passes a node group's `kubelet_options` to its kubelets, so a GPU node is tainted and
    marked for the autoscaler before anything can schedule there; merged over the cluster's labels,
    so nothing else of the group changes, and the template's own kubelet options come first."""
    raw = magnum(driver="heat", template={**HEAT_TEMPLATE, "labels": {**HEAT_TEMPLATE["labels"], "kubelet_options": "--v=2"}})
    raw["cluster"]["nodeGroups"].append({"name": "mig-mixed", "flavor": "g1", "gpu": {
        "model": "A100-80GB", "sharing": {"mode": "mig", "migStrategy": "mixed", "migProfile": {"1g.10gb": 2}}}})
    raw["cluster"]["nodeGroups"].append({"name": "cpu-extra", "flavor": "c1"})
    groups = {g.inputs["name"]: g.inputs for g in render_raw(raw).of_type(NODE_GROUP)}
    taint = "--register-with-taints=nvidia.com/gpu=present:NoSchedule"
    assert groups["gpu"]["labels"] == {"kubelet_options": f"--v=2 {taint} --node-labels=magnum.openstack.org/gpu=true"}
    assert groups["gpu"]["mergeLabels"] is True
    # MIG mixed slices never show as nvidia.com/gpu: the label would keep the node unready for ever.
    assert groups["mig-mixed"]["labels"] == {"kubelet_options": f"--v=2 {taint}"}
    assert "labels" not in groups["cpu-extra"] and "mergeLabels" not in groups["cpu-extra"]


def test_cluster_api_node_groups_pass_no_labels():
    """Neither Cluster API driver carries a node group's labels onto its nodes: nothing is set."""
    for settings in ({}, {"clusterApiDriver": "magnum-capi-helm"}):
        for g in render_raw(magnum(**settings)).of_type(NODE_GROUP):
            assert "labels" not in g.inputs and "mergeLabels" not in g.inputs, (settings, g.name)


@pytest.mark.parametrize("settings,chained", [({"clusterApiDriver": "magnum-capi-helm"}, True), ({}, False)])
def test_capi_helm_creates_its_node_groups_one_after_another(settings, chained):
    """magnum-capi-helm upgrades the whole cluster's Helm release per group, unlocked: groups created
    at once race. There each group depends on the one before; the other drivers create them together."""
    raw = magnum(**settings)
    raw["cluster"]["nodeGroups"] += [{"name": "cpu-extra", "flavor": "c1"}, {"name": "cpu-more", "flavor": "c1"}]
    by_name = {g.inputs["name"]: g for g in render_raw(raw).of_type(NODE_GROUP)}
    groups = [by_name[g["name"]] for g in raw["cluster"]["nodeGroups"][1:]]
    assert len(groups) == 3
    for before, group in zip(groups, groups[1:], strict=False):
        assert (before.urn in group.depends_on) is chained, group.name


def test_a_cluster_upgrade_waits_as_long_as_replacing_every_node_takes():
    """A template move replaces every node in turn (the control plane, then each group one node after
    another); a GPU node's drain waits for its replica's cold start elsewhere. On magnum-cluster-api
    Cluster API's topology controller upgrades one MachineDeployment at a time, so the groups add up;
    magnum-capi-helm's groups roll together. The provider's own update wait is 30 minutes."""
    from inference_platform.timing.readiness import cluster_upgrade_budget, group_estimates, wait_seconds

    settings = stack_settings("acme-prod")
    assert settings.cluster.magnum.node_labeller == "magnum-cluster-api"
    cluster = one(stack_plan("acme-prod"), CLUSTER)
    boot = settings.cold_start.stage_seconds.node_boot
    estimates = group_estimates(settings)
    rolls = {g.name: g.max_nodes * (estimates[g.name].without_spare_seconds if g.name in estimates else boot)
             for g in settings.cluster.node_groups}
    assert len(rolls) == 3 and rolls["gpu-h100"] == 8 * estimates["gpu-h100"].without_spare_seconds
    control_plane = settings.cluster.magnum.master_count * boot
    budget = cluster_upgrade_budget(settings)
    assert budget.update_seconds == control_plane + sum(rolls.values())
    assert "the groups one after another" in budget.basis
    assert cluster.custom_timeouts == {"update": f"{wait_seconds(budget.update_seconds) // 60}m"}
    assert wait_seconds(budget.update_seconds) > 30 * 60

    capi_helm = settings.model_copy(update={"cluster": settings.cluster.model_copy(update={
        "magnum": settings.cluster.magnum.model_copy(update={"cluster_api_driver": "magnum-capi-helm"})})})
    assert capi_helm.cluster.magnum.node_labeller == "magnum-capi-helm"
    assert cluster_upgrade_budget(capi_helm).update_seconds == control_plane + max(rolls.values())


def test_removing_or_replacing_a_node_group_says_how_to_finish_when_the_provider_fails_the_delete():
    """terraform-provider-openstack v3.4.0 may fail a node group's delete while Magnum still runs it
    (#2066): the diff says what to do then, for a removed group and for a replaced one."""
    import copy

    raw = magnum()
    raw["cluster"]["nodeGroups"] += [{"name": "cpu-extra", "flavor": "c1"}, {"name": "cpu-more", "flavor": "c1"}]
    edited = copy.deepcopy(raw)
    edited["cluster"]["nodeGroups"] = [g for g in edited["cluster"]["nodeGroups"] if g["name"] != "cpu-extra"]
    next(g for g in edited["cluster"]["nodeGroups"] if g["name"] == "cpu-more")["flavor"] = "c2"
    d = diff_plans(render_raw(raw).to_json(), render_raw(edited).to_json())
    notes = [n for n in d["notes"] if "terraform-provider-openstack#2066" in n]
    assert [n.split("deletes Magnum node group ")[1].split(",")[0] for n in notes] == ["cpu-extra", "cpu-more"]
    assert all("`pulumi refresh` and `pulumi up` again" in n for n in notes)
