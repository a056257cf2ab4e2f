"""`platformctl rehearse`: a stack's life played offline with what Magnum hands back on refresh.

acme-prod (magnum-cluster-api) and acme-prod-heat go through create, refresh, an everyday edit
(a canary version), a Kubernetes minor upgrade and the refresh after it without losing the cluster,
a node group, the share or the bucket; on magnum-capi-helm the labels Magnum reports against the
new template do not replace the cluster; node group bounds outside the live count are refused as
Magnum refuses them, with the key and what to run.
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


def test_live_nodes_of_an_unknown_group_is_one_line_naming_the_groups(capsys):
    assert main(["rehearse", "acme-prod", "--live-nodes", "gpu-a100=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "gpu-a100" in err and "cpu, gpu-h100, gpu-l4" in err


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
