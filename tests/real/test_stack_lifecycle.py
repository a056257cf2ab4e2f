"""Each example stack under the real Pulumi engine, on a real control plane (KWOK nodes), in a network
namespace with only `lo`: the stack file as the CLI rewrites it plans the same, preview with the policy
pack gives the offline policy run's verdicts, `up` makes every workload ready on nodes its group allows,
refresh finds nothing changed, each day-2 edit previews exactly as `platformctl diff` classifies it and
applies, and `destroy` leaves no object of ours.
"""

from __future__ import annotations

import contextlib
import json

import pytest
import yaml

from platformctl.diff import diff_plans
from platformctl.engine import render_stack, stack_settings
from platformctl.policy import policy_config, run_policies
from tests.conftest import ROOT
from tests.real.stacks import PENDING_STACKS, REAL_STACKS, RealStack, example_stacks
from tests.support import real_checks
from tests.support.real_cluster import CloudStandIn, nodes_for
from tests.support.real_pulumi import Workspace, steps_by_op, unexplained_warnings
from tests.support.s3server import seaweedfs_in_namespace

pytestmark = pytest.mark.real


def _offline(stack: str, text: str, tmp_path, name: str):
    path = tmp_path / name / f"Pulumi.{stack}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return render_stack(stack, path), stack_settings(path)


def _edited(text: str, edit) -> str:
    raw = yaml.safe_load(text)
    edit(raw["config"])
    return yaml.safe_dump(raw, sort_keys=False)


def test_every_example_stack_runs_in_the_real_tier_or_says_what_stops_it():
    assert sorted([case.stack for case in REAL_STACKS] + [case.stack for case, _ in PENDING_STACKS]) == example_stacks()
    assert all(why.strip() for _, why in PENDING_STACKS)


@pytest.mark.parametrize("case", REAL_STACKS, ids=lambda c: c.stack)
def test_stack_lives_its_life_under_the_real_engine(case: RealStack, real_cluster_factory, tmp_path):
    stack = case.stack
    shipped = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    cluster = real_cluster_factory(stack, context=case.context(shipped["config"]))
    with contextlib.ExitStack() as running:
        endpoint = running.enter_context(seaweedfs_in_namespace(
            cluster.netns.prefix(), tmp_path / "seaweedfs", *case.s3_keys)) if case.s3_keys else ""
        _lifecycle(case, cluster, case.stack_text(endpoint), tmp_path)


def _lifecycle(case: RealStack, cluster, text: str, tmp_path) -> None:
    stack = case.stack
    plan, settings = _offline(stack, text, tmp_path, "offline")
    cluster.apply(nodes_for(settings, [r.to_json() for r in plan.resources]))
    ws = Workspace.create(tmp_path / "ws", cluster, case.environment(cluster))
    ws.write_stack(stack, text)

    # The CLI rewrites the stack file (config values as it stores them, an encryption salt): the
    # program must read the rewritten file as it read ours.
    ws.pulumi("stack", "select", "--create", stack)
    rewritten = ws.stack_file(stack).read_text()
    replan, _ = _offline(stack, rewritten, tmp_path, "rewritten")
    assert real_checks.plan_difference(plan.to_json(), replan.to_json()) == []

    # Preview under the policy pack: the same verdicts as the offline policy run.
    pack_config = tmp_path / "policy-config.json"
    pack_config.write_text(json.dumps(policy_config(settings)))
    preview = ws.pulumi("preview", "-s", stack, "--policy-pack", str(ws.policy_pack()),
                        "--policy-pack-config", str(pack_config), check=False)
    offline_verdicts = real_checks.offline_verdicts(run_policies(plan.to_json(), policy_config(settings)))
    assert real_checks.engine_verdicts(preview.stdout + preview.stderr) == offline_verdicts
    assert preview.returncode == (1 if any(v[0] == "mandatory" for v in offline_verdicts) else 0), preview.stdout[-3000:]

    cloud = CloudStandIn(cluster).start()
    try:
        # `up` under the policy pack too: its stack policies see the objects as the API server holds them.
        up = ws.pulumi("up", "-s", stack, "--yes", "--skip-preview", "--policy-pack", str(ws.policy_pack()),
                       "--policy-pack-config", str(pack_config), check=False)
        assert up.returncode == 0, (up.stdout[-4000:], real_checks.workload_problems(cluster, {}))
        assert real_checks.engine_verdicts(up.stdout + up.stderr) == offline_verdicts
        assert unexplained_warnings(up.stdout + up.stderr) == []
        assert real_checks.settled_workload_problems(cluster, case.allowed_unready) == []
        assert real_checks.placement_problems(cluster) == []
        ws.pulumi("refresh", "-s", stack, "--yes", "--expect-no-changes")

        before = replan.to_json()
        for edit_name, edit in case.day2_edits:
            edited = _edited(ws.stack_file(stack).read_text(), edit)
            after, _ = _offline(stack, edited, tmp_path, edit_name.replace(" ", "-"))
            expected = real_checks.classified(diff_plans(before, after.to_json()))
            ws.write_stack(stack, edited)
            real = ws.preview_json(stack)
            assert real["rc"] == 0, real.get("raw", "")[-3000:]
            assert real_checks.engine_steps(steps_by_op(real)) == expected, edit_name
            ws.pulumi("up", "-s", stack, "--yes", "--skip-preview")
            assert real_checks.settled_workload_problems(cluster, case.allowed_unready) == [], edit_name
            before = after.to_json()

        # The weight caches' claims and bucket are protected: destroy refuses them until a user
        # unprotects the stack on purpose (the bucket is also retained: it outlives the destroy).
        ws.pulumi("state", "unprotect", "--all", "--yes", "-s", stack)
        ws.pulumi("destroy", "-s", stack, "--yes", "--skip-preview", timeout=900)
        assert real_checks.leftovers(cluster) == []
    finally:
        cloud.stop()
    assert cloud.errors[-1:] == []
