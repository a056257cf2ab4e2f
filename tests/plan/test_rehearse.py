"""`platformctl rehearse`: a stack's life played offline with what Magnum hands back on refresh.

acme-prod (magnum-cluster-api) and acme-prod-heat go through create, refresh, an everyday edit
(a canary version), a Kubernetes minor upgrade and the refresh after it without losing the cluster,
a node group, the share or the bucket; on magnum-capi-helm the labels Magnum reports against the
new template do not replace the cluster; node group bounds outside the live count are refused as
Magnum refuses them, with the key and what to run; a node group delete fails at the provider's
delete wait (terraform-provider-openstack#2066) and each step that creates one notes the converse
race at the create wait; a resize before the edit sticks on Heat and
magnum-capi-helm and is undone by magnum-cluster-api's monitor.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from platformctl.__main__ import main
from platformctl.diff import diff_plans
from platformctl.engine import render_stack, stack_settings
from platformctl.rehearse import rehearse
from tests.conftest import ROOT
from tests.support.variants import HEAT_FILE, HEAT_STACK

ACME = ROOT / "stacks" / "Pulumi.acme-prod.yaml"
L4_BOUNDS = "      - name: gpu-l4\n        flavor: g1.l4.1\n        minNodes: 1\n        maxNodes: 4\n"


def _variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    text = ACME.read_text()
    assert old in text
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text.replace(old, new))
    return path


def _capi_helm(tmp_path: Path) -> Path:
    """acme-prod on magnum-capi-helm, without what its cluster's own GPU operator refuses (driver
    settings, time-slicing)."""
    text = ACME.read_text()
    for old, new in (("    magnum:\n", "    magnum:\n      clusterApiDriver: magnum-capi-helm\n"),
                     ("          sharing:\n            mode: time-slicing\n            replicas: 4\n", ""),
                     ('  inference-platform:gpuOperator:\n    driver:\n      mode: precompiled\n      branch: "595"\n', "")):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "Pulumi.acme-prod-capi.yaml"
    path.write_text(text)
    return path


def _l4_bounds(tmp_path: Path, low: int, high: int) -> Path:
    return _variant(tmp_path, "acme-prod-l4", L4_BOUNDS, L4_BOUNDS.replace("minNodes: 1", f"minNodes: {low}")
                    .replace("maxNodes: 4", f"maxNodes: {high}"))


@pytest.mark.parametrize("stack, stack_file", [("acme-prod", ACME), (HEAT_STACK, HEAT_FILE)], ids=["magnum-cluster-api", "heat"])
def test_acme_prod_keeps_its_cluster_node_groups_share_and_bucket_through_an_edit_and_a_kubernetes_upgrade(stack, stack_file):
    result = rehearse(stack, stack_file)
    steps = {s.name: s for s in result.steps}
    assert list(steps) == ["create", "refresh", "edit", "upgrade", "after upgrade"]
    assert [s.stateful for s in result.steps] == [[]] * 5
    assert all(not s.diff["errors"] for s in result.steps if s.diff is not None and s.name != "upgrade")
    # The everyday edit goes through and shifts traffic to the new version.
    assert steps["edit"].refused_by == ""
    # acme-prod's first service is an LLM service: its canary is on its HTTPRoute (serving/llm_routing.py).
    assert any(c.type.endswith("HTTPRoute") and c.action == "update" for c in steps["edit"].diff["changes"])
    # Nothing changes after a refresh: Magnum's labels and the autoscaler's counts are not edits.
    for name in ("refresh", "after upgrade"):
        assert [c.action for c in steps[name].diff["changes"]] == [], name
    if stack == HEAT_STACK:
        # The Heat driver refuses cluster upgrades, so a template change is a new cluster, which the
        # protected production cluster refuses at preview: nothing applied, the reason and what to do shown.
        upgrade = steps["upgrade"]
        assert upgrade.refused_by == "Pulumi"
        [line] = [r for r in upgrade.refused if r.startswith("error: replace of protected resource openstack:containerinfra/cluster:")]
        assert "protected" in line and "new cluster in a new stack" in line
        assert result.exit_code() == 1
    else:
        assert steps["upgrade"].refused_by == ""
        cluster = [c for c in steps["upgrade"].diff["changes"] if c.type == "openstack:containerinfra/cluster:Cluster"]
        assert [c.action for c in cluster] == ["update"]
        assert result.exit_code() == 0


def test_on_magnum_capi_helm_the_labels_magnum_reports_after_an_upgrade_do_not_replace_the_cluster(tmp_path):
    # magnum-capi-helm moves the cluster to the new template and keeps its old kube_tag label, which
    # the provider then reads back into the cluster's ForceNew labels.
    result = rehearse("acme-prod", _capi_helm(tmp_path))
    after = result.steps[-1]
    assert after.name == "after upgrade"
    assert [c.action for c in after.diff["changes"]] == []
    assert after.stateful == [] and result.exit_code() == 0


def test_raising_min_nodes_above_the_live_count_is_refused_naming_the_key_the_live_count_and_the_resize_to_run(tmp_path):
    result = rehearse("acme-prod", ACME, _l4_bounds(tmp_path, 3, 4), {"gpu-l4": 2})
    edit = result.steps[2]
    assert edit.refused_by == "Magnum"
    [line] = edit.refused
    assert line.startswith("inference-platform:cluster.nodeGroups[gpu-l4].minNodes: 3 is above the live node count 2")
    # acme-prod is on magnum-cluster-api, whose monitor sets a resized count back from the
    # autoscaled MachineDeployment: the remedy is the autoscaler's, not a resize.
    assert "first let the autoscaler grow the group to 3" in line and "does not stick" in line
    assert result.exit_code() == 1


def test_the_live_count_remedy_is_a_resize_where_the_driver_keeps_it():
    from platformctl.cloud_refresh import node_bound_refusals

    heat = stack_settings(HEAT_FILE)
    group = heat.cluster.node_groups[1]
    [line] = node_bound_refusals(group.name, 1, {"minNodeCount": 3}, 2, heat, group.name)
    assert f"`openstack coe cluster resize <cluster> 3 --nodegroup {group.name}`, then `pulumi up`" in line


def test_lowering_max_nodes_below_the_live_count_is_refused_and_within_it_goes_through(tmp_path):
    edited = _l4_bounds(tmp_path, 1, 2)
    refused = rehearse("acme-prod", ACME, edited, {"gpu-l4": 3}).steps[2]
    assert refused.refused_by == "Magnum"
    assert refused.refused[0].startswith("inference-platform:cluster.nodeGroups[gpu-l4].maxNodes: 2 is below the live node count 3")
    applied = rehearse("acme-prod", ACME, edited, {"gpu-l4": 2}).steps[2]
    assert applied.refused_by == "" and applied.stateful == []
    assert [c.action for c in applied.diff["changes"] if c.type.endswith("NodeGroup")] == ["update"]


def test_the_diff_of_a_raised_minimum_notes_the_live_count_condition_and_what_to_run(tmp_path):
    old = render_stack("acme-prod").to_json()
    new = render_stack("acme-prod", _l4_bounds(tmp_path, 3, 4)).to_json()
    [note] = [n for n in diff_plans(old, new)["notes"] if "minNodes" in n]
    assert "inference-platform:cluster.nodeGroups[gpu-l4].minNodes rises to 3" in note
    assert "live node count is within [3, 4]" in note and "openstack coe cluster resize" in note


def test_the_rehearse_command_prints_each_step_and_exits_1_when_magnum_would_refuse(tmp_path, capsys):
    assert main(["rehearse", "acme-prod"]) == 0
    out = capsys.readouterr().out
    for step in ("step 1 create", "step 2 refresh", "step 3 edit", "step 4 upgrade", "step 5 after upgrade"):
        assert step in out
    assert out.rstrip().endswith("rehearsal ok: no stateful resource replaced or deleted")
    assert main(["rehearse", "acme-prod", "--edited-file", str(_l4_bounds(tmp_path, 3, 4))]) == 1
    assert "refused by Magnum" in capsys.readouterr().out


DEMO = ROOT / "stacks" / "Pulumi.demo-dev.yaml"


@pytest.mark.parametrize("old, new", [
    ("          weight: 90\n", "          weight: 95\n"),  # weights that sum to 105
    ("  inference-platform:weightCaches:\n", "  inference-platform:weightCache:\n"),  # an unknown key
], ids=["weights-sum-105", "unknown-key"])
def test_a_step_the_settings_refuse_fails_the_rehearsal_with_exit_1(tmp_path, capsys, old, new):
    text = DEMO.read_text()
    assert old in text
    edited = tmp_path / "Pulumi.demo-dev.yaml"
    edited.write_text(text.replace(old, new))
    assert main(["rehearse", "demo-dev", "--edited-file", str(edited)]) == 1
    out = capsys.readouterr().out
    assert "step 3 edit" in out and "refused by the settings; nothing applied:" in out
    assert out.rstrip().endswith("rehearsal FAILED: see the errors above")


# --------------------------------------------------------------------------- faults of the drivers and the provider


def test_magnum_refuses_the_upgrade_of_a_cluster_a_failed_update_left_behind(capsys):
    # magnum cluster_conductor.py cluster_upgrade: NotSupported unless the status is one of the *_COMPLETE.
    steps = {s.name: s for s in rehearse("acme-prod", ACME, cluster_status="UPDATE_FAILED").steps}
    assert steps["upgrade"].refused_by == "Magnum"
    (line,) = steps["upgrade"].refused
    assert line.startswith("Magnum refuses the cluster upgrade while the cluster is UPDATE_FAILED")
    assert "`openstack coe cluster show <cluster>`" in line
    # The everyday edit is no upgrade, and a healthy cluster upgrades.
    assert steps["edit"].refused_by == ""
    assert rehearse("acme-prod", ACME, cluster_status="UPDATE_COMPLETE").steps[3].refused_by == ""
    assert main(["rehearse", "acme-prod", "--cluster-status", "UPDATE_FAILED"]) == 1
    assert "Magnum refuses the cluster upgrade while the cluster is UPDATE_FAILED" in capsys.readouterr().out
    assert main(["rehearse", "acme-prod", "--cluster-status", "BROKEN"]) == 2
    assert "--cluster-status 'BROKEN': not a Magnum cluster status; allowed: CREATE_COMPLETE" in capsys.readouterr().err


def test_an_upgrade_that_outlasts_the_providers_update_wait_fails_the_up():
    from inference_platform.timing.readiness import cluster_upgrade_budget
    from platformctl.cloud_refresh import Cloud
    from platformctl.invariants import plan_resources

    settings = stack_settings("acme-prod")
    plan = {"stack": "acme-prod", "resources": plan_resources(render_stack("acme-prod"))}
    cloud = Cloud(settings)
    # As planned: the update wait covers replacing every node.
    assert cloud.upgrade_timeouts(plan) == []
    # Without it (a cluster made before the wait, or the component alone): the provider's 30 minutes.
    cluster = next(r for r in plan["resources"] if r["type"] == "openstack:containerinfra/cluster:Cluster")
    cluster["customTimeouts"] = {}
    (line,) = cloud.upgrade_timeouts(plan)
    budget = cluster_upgrade_budget(settings).update_seconds
    assert budget > 1800
    assert line.startswith("terraform-provider-openstack stops waiting for the cluster upgrade after 1800s (its 30-minute default)")
    assert f"it may take {budget}s" in line and "customTimeouts.update" in line
    # The rehearsal's upgrade step fails on it: a cluster moved to a new template.
    from platformctl.diff import Change

    moved = [Change(cluster["urn"].split("::", 1)[-1], "update", cluster["type"], ["inputs.clusterTemplateId"])]
    assert cloud.refusals(plan, plan, moved) == [line]
    assert cloud.refusals(plan, plan, []) == []


# A Magnum node group delete: terraform-provider-openstack v3.4.0 waits with Pending DELETE_IN_PROGRESS and
# no Delay, but Magnum deletes in the background, so the first poll reads CREATE_COMPLETE
# (terraform-provider-openstack#2066).
UNPROTECTED = ("  inference-platform:production: true\n",
               "  inference-platform:production: false\n  inference-platform:nonProductionReason: load-test copy\n")


def _edited(tmp_path: Path, source: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = source.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def _with_batch_group(tmp_path: Path, source: Path) -> Path:
    """The stack unprotected, with a CPU NodeGroup (not the first group, Magnum's default-worker) that
    nothing else names: one an edit can remove."""
    text = source.read_text()
    at = text.index("- name: gpu-h100\n")
    indent = " " * (at - text.rindex("\n", 0, at) - 1)
    group = f"- name: batch\n{indent}  flavor: m1.large\n{indent}  minNodes: 1\n{indent}  maxNodes: 2\n{indent}"
    return _edited(tmp_path, source, f"{source.stem}-batch", UNPROTECTED, ("- name: gpu-h100\n", group + "- name: gpu-h100\n"))


@pytest.mark.parametrize("stack, stack_file", [("acme-prod", ACME), (HEAT_STACK, HEAT_FILE)], ids=["magnum-cluster-api", "heat"])
def test_removing_a_node_group_fails_the_up_at_the_providers_delete_wait_naming_the_group_the_error_the_state_and_the_way_through(
        tmp_path, stack, stack_file):
    with_batch = _with_batch_group(tmp_path, stack_file)
    without = _edited(tmp_path, stack_file, f"{stack}-unprotected", UNPROTECTED)
    edit = rehearse(stack, with_batch, without).steps[2]
    assert edit.refused_by == "Magnum"
    [line] = edit.refused
    assert line.startswith("openstack:containerinfra/nodeGroup:NodeGroup acme-prod-cluster-batch: terraform-provider-openstack "
                           "v3.4.0 fails the delete of Magnum node group batch")
    assert "to become deleted: unexpected state 'CREATE_COMPLETE', wanted target 'DELETE_COMPLETE'" in line
    assert "Pulumi keeps the group in its state" in line
    assert line.endswith("no longer lists batch, then `pulumi refresh` (it drops the group) and `pulumi up` again")


@pytest.mark.parametrize("stack, stack_file", [("acme-prod", ACME), (HEAT_STACK, HEAT_FILE)], ids=["magnum-cluster-api", "heat"])
def test_a_flavor_change_that_unprotects_a_node_group_replaces_it_delete_first_and_the_up_fails_creating_nothing(
        tmp_path, capsys, stack, stack_file):
    # Unprotecting and replacing in one `up` passes the preview (diff.py); the named group goes first.
    edited = _edited(tmp_path, stack_file, f"{stack}-flavor", UNPROTECTED, ("flavor: g1.l4.1", "flavor: g1.l4.2"))
    assert main(["rehearse", stack, "--stack-file", str(stack_file), "--edited-file", str(edited)]) == 1
    out = capsys.readouterr().out
    step = out[out.index("step 3 edit"):out.index("step 4")]
    assert "refused by Magnum, or failed by its provider, during `pulumi up`" in step
    assert "fails the delete of Magnum node group gpu-l4" in step and "terraform-provider-openstack#2066" in step
    assert ("Pulumi keeps the old group in its state and creates no replacement (the group goes first: it is named)"
            in step)
    assert "then `pulumi refresh` (it drops the old group) and `pulumi up` again, which creates the new one" in step


CREATE_RACE = "and the provider may fail it with \"unexpected state 'DELETE_COMPLETE', wanted target 'CREATE_COMPLETE'\""


@pytest.mark.parametrize("stack, stack_file", [("acme-prod", ACME), (HEAT_STACK, HEAT_FILE)], ids=["magnum-cluster-api", "heat"])
def test_each_step_that_creates_a_node_group_notes_the_providers_create_race_with_the_way_through(tmp_path, stack, stack_file):
    """Magnum's conductor stores a new group after the API has answered, and the provider's first
    poll takes the 404 for DELETE_COMPLETE: the first `up` notes it for every group it creates, an
    edit for the group it adds, and a step that creates none says nothing of it."""
    groups = [g.name for g in stack_settings(stack_file).cluster.node_groups[1:]]
    steps = rehearse(stack, stack_file, _with_batch_group(tmp_path, stack_file)).steps
    create, refresh, edit = steps[:3]

    def raced(step):
        return [n.split("creates Magnum node group ")[1].split(",")[0] for n in step.notes if CREATE_RACE in n]

    assert raced(create) == sorted(groups)
    assert raced(refresh) == []
    assert raced(edit) == ["batch"] and edit.refused_by == ""
    [note] = [n for n in edit.notes if CREATE_RACE in n]
    assert note.endswith("wait until `openstack coe nodegroup show <cluster> batch` says CREATE_COMPLETE, then "
                         "`pulumi refresh` and `pulumi up` again (what runs on the group waits for it)")
    assert not create.failed  # the conductor usually stores the group first: a note, not a failure


def test_an_upgrade_notes_the_surge_node_that_passes_the_gpu_quota_on_magnum_cluster_api_only(tmp_path):
    """Cluster API replaces a node by starting one more first (maxSurge 1), a group at a time: with
    acme-prod's GPU groups at their maxNodes (16 GPUs, its gpuQuota) each group's roll needs one node
    more; at their minimums it fits; capi-helm-charts' groups surge none."""
    at_max = {"gpu-h100": 8, "gpu-l4": 4}
    upgrade = rehearse("acme-prod", ACME, live_nodes=at_max).steps[3]
    assert upgrade.name == "upgrade" and upgrade.refused_by == ""
    surges = [n for n in upgrade.notes if n.startswith("note: cluster.gpuQuota: ")]
    assert [n.split("GPU group ")[1].split(" ")[0] for n in surges] == ["gpu-h100", "gpu-l4"]
    assert "17 GPUs with the groups at their live counts (gpu-h100 8, gpu-l4 4), over gpuQuota 16" in surges[0]
    assert "18 GPUs" in surges[1]  # an L4 node carries 2
    assert not [n for n in rehearse("acme-prod", ACME).steps[3].notes if "gpuQuota" in n]
    assert not [n for s in rehearse("acme-prod-capi", _capi_helm(tmp_path), live_nodes=at_max).steps for n in s.notes
                if "gpuQuota" in n]


# A resize on magnum-cluster-api: the monitor sets node_count back from the autoscaled MachineDeployment
# (monitor.py poll_nodegroup_replicas); Heat and magnum-capi-helm keep it.


def _heat_l4_min(tmp_path: Path, low: int) -> Path:
    return _edited(tmp_path, HEAT_FILE, "acme-prod-heat-l4", ("      flavor: g1.l4.1\n      minNodes: 1\n",
                                                              f"      flavor: g1.l4.1\n      minNodes: {low}\n"))


def test_on_magnum_cluster_api_a_resize_before_the_edit_is_undone_by_the_monitor_and_the_raised_minimum_is_refused_again(
        tmp_path, capsys):
    edited = _l4_bounds(tmp_path, 3, 4)
    edit = rehearse("acme-prod", ACME, edited, resized={"gpu-l4": 3}).steps[2]
    assert edit.refused_by == "Magnum"
    [line] = edit.refused
    assert line.startswith("inference-platform:cluster.nodeGroups[gpu-l4].minNodes: 3 is above the live node count 1 of "
                           "group gpu-l4 (the resize to 3 before this step did not stick: magnum-cluster-api's monitor set "
                           "the count back to the MachineDeployment's replicas, 1, at its next health poll")
    assert "first let the autoscaler grow the group to 3" in line
    assert main(["rehearse", "acme-prod", "--edited-file", str(edited), "--resized", "gpu-l4=3"]) == 1
    out = capsys.readouterr().out
    assert "after `openstack coe cluster resize` of gpu-l4 to 3" in out and "did not stick" in out


@pytest.mark.parametrize("driver", ["heat", "magnum-capi-helm"])
def test_on_heat_and_magnum_capi_helm_a_resize_before_the_edit_sticks_and_the_raised_minimum_goes_through(tmp_path, capsys, driver):
    if driver == "heat":
        stack, stack_file, edited = HEAT_STACK, HEAT_FILE, _heat_l4_min(tmp_path, 3)
    else:
        stack_file = _capi_helm(tmp_path)
        stack, edited = "acme-prod", _edited(tmp_path, stack_file, "capi-l4", (L4_BOUNDS, L4_BOUNDS.replace("minNodes: 1", "minNodes: 3")))
    assert rehearse(stack, stack_file, edited).steps[2].refused_by == "Magnum"  # at the autoscaler's 1
    edit = rehearse(stack, stack_file, edited, resized={"gpu-l4": 3}).steps[2]
    assert edit.refused_by == "" and edit.refused == []
    assert [c.action for c in edit.diff["changes"] if c.type.endswith("NodeGroup")] == ["update"]
    main(["rehearse", stack, "--stack-file", str(stack_file), "--edited-file", str(edited), "--resized", "gpu-l4=3"])
    out = capsys.readouterr().out
    step = out[out.index("step 3 edit"):out.index("step 4")]
    assert "after `openstack coe cluster resize` of gpu-l4 to 3" in step and "refused" not in step


@pytest.mark.parametrize("driver, read", [("magnum-cluster-api", 1), ("heat", 3)])
def test_a_refresh_after_a_resize_reads_the_machine_deployments_replicas_on_magnum_cluster_api_and_the_resized_count_on_heat(
        driver, read):
    from platformctl.cloud_refresh import MAGNUM_NODE_GROUP, Cloud
    from platformctl.invariants import plan_resources

    stack, stack_file = ("acme-prod", ACME) if driver == "magnum-cluster-api" else (HEAT_STACK, HEAT_FILE)
    settings = stack_settings(stack_file)
    assert settings.cluster.magnum.node_labeller == driver
    state = {"stack": stack, "resources": plan_resources(render_stack(stack, stack_file))}
    cloud = Cloud(settings, {g.name: g.min_nodes for g in settings.cluster.node_groups})
    cloud.resize({"gpu-l4": 3})
    [l4] = [r for r in cloud.refreshed(state)["resources"]
            if r["type"] == MAGNUM_NODE_GROUP and r["inputs"].get("role") == "gpu-l4"]
    assert l4["outputs"]["nodeCount"] == read


@pytest.mark.parametrize("option", ["--live-nodes", "--resized"])
def test_a_count_for_an_unknown_group_is_one_line_naming_the_option_and_the_groups(capsys, option):
    assert main(["rehearse", "acme-prod", option, "gpu-a100=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"{option} gpu-a100=2: no Magnum node group 'gpu-a100'")
    assert "allowed: cpu, gpu-h100, gpu-l4" in err
    assert main(["rehearse", "acme-prod", option, "gpu-l4"]) == 2
    assert f"{option} 'gpu-l4': expected GROUP=COUNT" in capsys.readouterr().err


def test_a_resize_outside_the_groups_bounds_is_one_line_as_magnum_refuses_it(capsys):
    assert main(["rehearse", "acme-prod", "--resized", "gpu-l4=5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("--resized gpu-l4=5: Magnum refuses a resize outside the group's bounds in stacks/Pulumi.acme-prod.yaml "
                   "(NGResizeOutBounds); allowed: 1 to 4")
