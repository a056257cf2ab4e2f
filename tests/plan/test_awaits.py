"""Await budgets: every wait `pulumi up` will do is at least what the cold-start model says
the object may need, on every example stack and random valid stacks; pods Pending by
design are not awaited; nothing depends on a slow rollout; a too-short wait fails."""

from __future__ import annotations

import copy

import pytest

from inference_platform.settings.errors import ConfigError
from inference_platform.timing.readiness import HEADROOM, rollout_budget, wait_seconds
from platformctl import awaits
from platformctl.__main__ import main
from platformctl.engine import render_stack, stack_settings
from platformctl.invariants import PlanInvariantError, check_plan, plan_resources, problems
from tests.conftest import ROOT, STACKS, base_config, clashing_deployment_names, render_raw, stack_plan
from tests.support.random_stacks import SEEDS, random_plan

DATA_STACKS = sorted(ROOT.glob("tests/data/Pulumi.*.yaml"))
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


def acme() -> tuple[list[dict], object]:
    return copy.deepcopy(plan_resources(stack_plan("acme-prod"))), stack_settings("acme-prod")


def find(resources: list[dict], type_suffix: str, name: str) -> dict:
    (r,) = [r for r in resources if r["type"].endswith(type_suffix) and r["name"] == name]
    return r


def await_problems(resources, settings) -> list[str]:
    return awaits.check(resources, settings)[1]


# --------------------------------------------------------------------------- every stack


@pytest.mark.parametrize("stack", STACKS)
def test_no_wait_is_shorter_than_the_model_on_example_stacks(stack):
    rows, found = problems(stack_plan(stack), stack_settings(stack))
    assert found == []
    tritons = [r for r in stack_plan(stack).of_type(DEPLOYMENT) if r.outputs["metadata"]["name"].startswith(("llm", "embed", "resnet"))]
    assert {row.expectation.resource["urn"] for row in rows} >= {t.urn for t in tritons}


@pytest.mark.parametrize("path", DATA_STACKS, ids=lambda p: p.name)
def test_no_wait_is_shorter_than_the_model_on_test_stacks(path):
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert problems(render_stack(stack, path), stack_settings(path))[1] == []


@pytest.mark.parametrize("seed", SEEDS)
def test_no_wait_is_shorter_than_the_model_on_random_stacks(seed):
    plan, settings = random_plan(seed)
    rows, found = problems(plan, settings)
    assert found == []
    tritons = [r for r in plan.of_type(DEPLOYMENT) if r.parent and "TritonService" in r.parent]
    assert tritons and {t.urn for t in tritons} <= {row.expectation.resource["urn"] for row in rows}


# --------------------------------------------------------------------------- acme-prod


def test_acme_prod_budgets_follow_the_cold_start_model():
    rows, _ = problems(stack_plan("acme-prod"), stack_settings("acme-prod"))
    by_label = {awaits.label(row.expectation.resource): row for row in rows}
    v7 = by_label["Deployment llm-chat/llm-chat-v7"]
    # Create: gpu-h100 starts with 1 node (magnum-cluster-api: Cluster API starts it at minNodes 1)
    # but v7 and v8 need 4 at their fewest, and the autoscaler adds the other 3 only
    # once the first advertises its GPUs (boot 120 + driver 180): 300 s, then a new node's 1080 s (boot
    # 120 + driver 180 + pull 360 + load 420). Update: that new node, then 3 more replicas (of its 4 at most), each after
    # the old frontend pod's 180 s drain (15 s endpoint removal + the 120 s route timeout before SIGTERM,
    # then Triton's 30 s exit and 15 s) on the GPU it frees: 420 s load.
    assert (v7.expectation.budget.create_seconds, v7.expectation.budget.update_seconds) == (300 + 1080, 2880)
    assert (v7.wait.create, v7.wait.update, v7.wait.source) == (1740, 3600, "customTimeouts")
    embed = by_label["Deployment embed/embed-v1"]
    # embed reads from S3: every start also downloads the repository (weight fetch 210 s):
    # 1290 s on a new node, after gpu-l4's first node's 300 s on create (it starts at 1 of at most 4
    # nodes, so a replica may need one the autoscaler adds), then 2 x (85 s drain for its 60 s timeout
    # + 210 s fetch + 420 s load).
    assert (embed.expectation.budget.create_seconds, embed.expectation.budget.update_seconds) == (300 + 1290, 2730)
    assert embed.wait.update == 3420
    assert by_label["Service llm-chat/llm-chat"].expectation.budget.create_seconds == 910
    kps = by_label["Release monitoring/kube-prometheus-stack"]
    assert (kps.expectation.budget.seconds, kps.wait.create, kps.wait.source) == (660, 840, "timeout input")
    pending = [row for row in rows if row.expectation.pending_by_design]
    assert len(pending) == 4 and all(row.wait.source == "pulumi.com/skipAwait" for row in pending)


def test_plan_prints_the_await_budgets(capsys, tmp_path):
    assert main(["plan", "acme-prod", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Await budgets" in out
    line = next(line for line in out.splitlines() if "Deployment llm-chat/llm-chat-v7 " in line)
    assert "1380s / 2880s" in line and "1740s / 3600s (customTimeouts)" in line


def test_plan_with_a_too_short_wait_exits_2_with_one_line(capsys, tmp_path, monkeypatch):
    import inference_platform.serving.triton

    monkeypatch.setattr(inference_platform.serving.triton, "custom_timeouts", lambda budget: None)
    assert main(["plan", "acme-prod", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("plan check failed: ") and "but `pulumi up` waits 600s (default)" in err[0]


# --------------------------------------------------------------------------- negative cases


def test_a_too_short_custom_timeout_is_caught():
    resources, settings = acme()
    find(resources, ":Deployment", "llm-chat-v7")["customTimeouts"] = {"create": "19m", "update": "30m"}
    basis = "first up 1380s (300s until a GPU node is ready), new node 1080s, then 3 x (drain 180s + 420s on the freed GPU)"
    assert await_problems(resources, settings) == [
        f"Deployment llm-chat/llm-chat-v7 may need 1380s to become ready on create ({basis}) but `pulumi up` waits 1140s (customTimeouts)",
        f"Deployment llm-chat/llm-chat-v7 may need 2880s to become ready on update ({basis}) but `pulumi up` waits 1800s (customTimeouts)",
    ]


def test_the_default_wait_is_caught_for_triton_and_its_service():
    resources, settings = acme()
    find(resources, ":Deployment", "embed-v1")["customTimeouts"] = {}
    find(resources, ":Service", "embed-service")["customTimeouts"] = {}
    found = await_problems(resources, settings)
    assert len(found) == 4
    assert "Deployment embed/embed-v1 may need 1590s to become ready on create" in found[0]
    assert "Service embed/embed may need 910s" in found[2] and "waits 600s (default)" in found[2]


def test_an_annotation_counts_when_no_custom_timeout_is_set():
    resources, settings = acme()
    d = find(resources, ":Deployment", "embed-v1")
    d["customTimeouts"] = {}
    d["inputs"]["metadata"]["annotations"] = {"pulumi.com/timeoutSeconds": "3200"}
    assert await_problems(resources, settings) == []


def test_awaited_placeholders_are_caught():
    resources, settings = acme()
    del find(resources, ":Deployment", "acme-prod-coldstart-placeholder-gpu-h100")["inputs"]["metadata"]["annotations"]
    (problem,) = await_problems(resources, settings)
    assert problem.startswith("Deployment gpu-coldstart/acme-prod-coldstart-placeholder-gpu-h100")
    assert "placeholder pods stay Pending until a node arrives" in problem


def test_an_unawaited_triton_rollout_is_caught():
    resources, settings = acme()
    find(resources, ":Deployment", "embed-v1")["inputs"]["metadata"]["annotations"] = {"pulumi.com/skipAwait": "true"}
    (problem,) = await_problems(resources, settings)
    assert problem.startswith("Deployment embed/embed-v1 is not awaited (pulumi.com/skipAwait)")


def test_a_release_on_helm_default_is_caught_where_gpu_nodes_join():
    resources, settings = acme()
    del find(resources, ":Release", "acme-prod-observability-alloy")["inputs"]["timeout"]
    found = await_problems(resources, settings)
    # boot 120 + driver 180 + pull 360: the DaemonSet's image queues behind the others.
    assert found and all(p.startswith("Release monitoring/alloy may need 660s") for p in found)
    assert "waits 300s (Helm default)" in found[0]


def test_depending_on_a_slow_rollout_is_caught():
    resources, settings = acme()
    hpa = find(resources, ":HorizontalPodAutoscaler", "llm-chat-v7-hpa")
    hpa["dependsOn"].append(find(resources, ":Deployment", "llm-chat-v7")["urn"])
    (problem,) = await_problems(resources, settings)
    assert problem.startswith("HorizontalPodAutoscaler llm-chat/llm-chat-v7-hpa-")
    assert problem.endswith(" depends on Deployment llm-chat/llm-chat-v7, whose rollout may take 2880s: "
                            "refer to it by a stable name instead of its outputs")


def test_check_plan_raises_one_line():
    resources, settings = acme()
    find(resources, ":Deployment", "llm-chat-v8")["customTimeouts"] = {}
    with pytest.raises(PlanInvariantError) as err:
        check_plan(resources, settings)
    assert "\n" not in str(err.value) and str(err.value).endswith("(and 1 more)")


# --------------------------------------------------------------------------- stable names


def test_hpa_names_its_deployment_and_waits_for_nothing_of_it():
    plan = stack_plan("acme-prod")
    for version in ("v7", "v8"):
        deployment = plan.get(DEPLOYMENT, f"llm-chat-{version}")
        hpa = plan.get(HPA, f"llm-chat-{version}-hpa")
        assert deployment.inputs["metadata"]["name"] == f"llm-chat-{version}"
        assert deployment.delete_before_replace
        assert hpa.inputs["spec"]["scaleTargetRef"]["name"] == f"llm-chat-{version}"
        assert deployment.urn not in hpa.depends_on


def test_progress_deadline_covers_a_cold_start():
    spec = stack_plan("acme-prod").get(DEPLOYMENT, "llm-chat-v7").inputs["spec"]
    # The create wait: the first `up`'s 1380 s with a quarter more, in whole minutes.
    assert spec["progressDeadlineSeconds"] == 1740


def test_clashing_deployment_names_are_refused():
    raw = clashing_deployment_names()
    with pytest.raises(ConfigError) as err:
        render_raw(raw)
    assert "inference-platform:services[a].versions[0].name: Deployment name 'a-b-c' in namespace 'shared'" in str(err.value)


def test_longer_stages_lengthen_every_wait():
    raw = base_config() | {"coldStart": {"stageSeconds": {"nodeBoot": 900}}}
    plan = render_raw(raw)
    deployment = plan.get(DEPLOYMENT, "svc-v1")
    # 900 boot + 180 driver + 360 pull (one image at a time, after the driver) + 420 load = 1860 s, after
    # the first node's 900 + 180 s on create (the group starts at 1 of at most 2 nodes).
    assert deployment.custom_timeouts["create"] == f"{wait_seconds(900 + 180 + 1860) // 60}m"
    release = next(r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == "alloy")
    assert release.inputs["timeout"] == wait_seconds(900 + 180 + 360)


# --------------------------------------------------------------------------- rules and model


def test_custom_timeouts_reach_resources_json():
    d = next(r for r in plan_resources(stack_plan("acme-prod")) if r["name"] == "llm-chat-v7")
    assert d["customTimeouts"] == {"create": "29m", "update": "60m"}
    assert find(plan_resources(stack_plan("acme-prod")), ":HorizontalPodAutoscaler", "llm-chat-v7-hpa")["customTimeouts"] == {}


@pytest.mark.parametrize("text,seconds", [("69m", 4140), ("1h30m", 5400), ("1.5h", 5400), ("90s", 90),
                                          ("500ms", 0.5), ("0", 0), ("2h0m10s", 7210)])
def test_go_durations(text, seconds):
    assert awaits.go_duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "m", "1d", "5 m", "1h-2m"])
def test_bad_go_durations(text):
    with pytest.raises(ValueError):
        awaits.go_duration_seconds(text)


def k8s(kind: str, api: str = "v1", annotations=None, timeouts=None, **spec) -> dict:
    return {"urn": kind, "type": f"kubernetes:x:{kind}", "name": kind, "customTimeouts": timeouts or {},
            "inputs": {"apiVersion": api, "kind": kind, "metadata": {"annotations": annotations or {}}, "spec": spec}}


def test_wait_precedence_follows_the_provider():
    deployment = k8s("Deployment", "apps/v1", annotations={"pulumi.com/timeoutSeconds": "900"})
    assert awaits.effective_wait(deployment) == awaits.Wait(900, 900, "pulumi.com/timeoutSeconds")
    deployment["customTimeouts"] = {"update": "20m"}
    assert awaits.effective_wait(deployment) == awaits.Wait(900, 1200, "customTimeouts/pulumi.com/timeoutSeconds")
    deployment["inputs"]["metadata"]["annotations"]["pulumi.com/skipAwait"] = "true"
    assert not awaits.effective_wait(deployment).awaited
    assert awaits.effective_wait(k8s("Deployment", "apps/v1")) == awaits.Wait(600, 600, "default")


def test_claims_wait_at_most_five_minutes_and_custom_resources_not_at_all():
    claim = k8s("PersistentVolumeClaim", timeouts={"create": "1h"})
    assert awaits.effective_wait(claim).create == 300
    assert not awaits.effective_wait(k8s("PodMonitor", "monitoring.coreos.com/v1")).awaited
    waited = k8s("PodMonitor", "monitoring.coreos.com/v1", annotations={"pulumi.com/waitFor": "jsonpath={.status}"})
    assert awaits.effective_wait(waited).create == 600


def test_helm_release_waits_for_its_timeout_input():
    release = {"urn": "r", "type": awaits.HELM_RELEASE, "name": "r", "inputs": {"chart": "loki"}}
    assert awaits.effective_wait(release) == awaits.Wait(300, 300, "Helm default")
    release["inputs"]["timeout"] = 900
    assert awaits.effective_wait(release).create == 900
    release["inputs"]["skipAwait"] = True
    assert not awaits.effective_wait(release).awaited


def test_every_kind_rule_names_its_source():
    assert all(rule.source.startswith("provider/pkg/") for rule in awaits.AWAIT_RULES.values())
    assert awaits.AWAIT_RULES["apps/v1/Deployment"].default_seconds == 600
    assert awaits.HELM_RULE.default_seconds == 300


def test_rollout_model():
    from inference_platform.timing.estimates import GroupEstimate, Stage

    estimate = GroupEstimate(group="g", new_node=[Stage(name="node boot", seconds=100), Stage(name="model load", seconds=200)],
                             spare=[Stage(name="model load", seconds=200)])
    assert rollout_budget(estimate, 0, 60).seconds == 0
    assert (rollout_budget(estimate, 1, 60).create_seconds, rollout_budget(estimate, 1, 60).update_seconds) == (300, 300)
    assert rollout_budget(estimate, 4, 60).update_seconds == 300 + 3 * 260
    # A quarter more, rounded up to whole minutes.
    assert wait_seconds(300) == 420 and wait_seconds(3300) == 4140 >= 3300 * HEADROOM


def test_a_long_table_ends_in_a_count():
    rows, _ = problems(stack_plan("acme-prod"), stack_settings("acme-prod"))
    text = awaits.format_rows(rows, limit=3)
    assert len(text.splitlines()) == 5
    assert text.splitlines()[1].lstrip().startswith("Deployment llm-chat/llm-chat-v")
    assert text.endswith(f"... and {len(rows) - 3} more with smaller budgets")


def test_zero_custom_timeouts_and_atomic_releases_follow_the_provider():
    deployment = k8s("Deployment", "apps/v1", timeouts={"create": "0s"})
    assert awaits.effective_wait(deployment).create == 600
    release = {"urn": "r", "type": awaits.HELM_RELEASE, "name": "r", "inputs": {"skipAwait": True, "atomic": True}}
    assert awaits.effective_wait(release).create == 300


def test_a_version_without_replicas_keeps_the_default_wait():
    raw = base_config()
    raw["services"][0]["autoscaling"] = {"enabled": False}
    raw["services"][0]["versions"][0]["replicas"] = 0
    deployment = render_raw(raw).get(DEPLOYMENT, "svc-v1")
    assert deployment.custom_timeouts == {} and "progressDeadlineSeconds" not in deployment.inputs["spec"]
