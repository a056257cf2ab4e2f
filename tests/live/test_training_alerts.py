"""The training alerts: promtool checks their group, and unit tests show each one firing on the
series of a failing job or a stuck queue (as kube-state-metrics, JobSet's and Kueue's controllers
export them) and staying quiet on a healthy one."""

from __future__ import annotations

import subprocess

import yaml

from inference_platform.observability import alerts, training_alerts
from platformctl.engine import stack_settings
from tests.conftest import observability_inputs
from tests.live import test_alerts
from tests.live.test_alerts import case, fired, write_rules
from tests.support.metric_catalogue import known_metrics, metric_names

promtool = test_alerts.promtool  # the fixture that finds promtool

TEAMS = {"vision": "team-vision", "speech": "team-speech"}  # ClusterQueue -> namespace
INPUTS = observability_inputs(stack_settings("demo-dev")).model_copy(
    update={"training_namespaces": sorted(TEAMS.values()), "training_cluster_queues": sorted(TEAMS)})
GROUPS = alerts.rule_groups(INPUTS)
TRAINING_ALERTS = {"TrainJobFailed", "TrainJobRestarting", "TrainingWorkloadsInadmissible", "TrainingQueueStalled"}
NS = "team-vision"


def owned(job: str, jobset: str, namespace: str = NS) -> dict[str, str]:
    return {f'kube_job_owner{{namespace="{namespace}",job_name="{job}",owner_kind="JobSet",owner_name="{jobset}",'
            f'owner_is_controller="true"}}': "1x90"}


def created(job: str, values: str, namespace: str = NS) -> dict[str, str]:
    return {f'kube_job_created{{namespace="{namespace}",job_name="{job}"}}': values}


def jobset_failed(jobset: str, values: str, namespace: str = NS) -> dict[str, str]:
    # Scraped from JobSet's controller in its own namespace: the JobSet's namespace is exported_namespace.
    return {f'jobset_failed_total{{namespace="jobset-system",exported_namespace="{namespace}",jobset_name="{jobset}"}}': values}


def pending(queue: str, status: str, values: str) -> dict[str, str]:
    return {f'kueue_pending_workloads{{namespace="kueue-system",cluster_queue="{queue}",status="{status}",replica_role="standalone"}}': values}


def admitted(queue: str, values: str) -> dict[str, str]:
    return {f'kueue_admitted_workloads_total{{namespace="kueue-system",cluster_queue="{queue}",priority_class="",replica_role="standalone"}}': values}


JOB = {"namespace": NS, "train_job": "ddp"}
RESTARTED_TWICE = {**owned("ddp-node-0", "ddp"), **owned("ddp-node-1", "ddp"),
                   # The JobSet recreated its Jobs at minutes 10 and 20 (a new creation time each time).
                   **created("ddp-node-0", "100x9 700x10 1300x70"), **created("ddp-node-1", "100x9 700x10 1300x70")}
CASES = {
    "restarted-twice-fires": case(
        RESTARTED_TWICE, "TrainJobRestarting",
        [fired("TrainJob ddp in team-vision restarted 2 times in the last hour (a node pod keeps failing: see its logs "
               "and the node's GPU faults)", severity="warning", **JOB)]),
    "restarted-once-quiet": case(
        {**owned("ddp-node-0", "ddp"), **created("ddp-node-0", "100x9 700x80")}, "TrainJobRestarting", []),
    # The same restarts in a namespace no team trains in: not ours to page about.
    "other-namespace-quiet": case(
        {**owned("ddp-node-0", "ddp", "default"), **created("ddp-node-0", "100x9 700x10 1300x70", "default")},
        "TrainJobRestarting", []),
    # A Job of no JobSet (a tuning run) changing is not a TrainJob restart.
    "plain-job-quiet": case(created("tune-0", "100x9 700x10 1300x70"), "TrainJobRestarting", []),
    # JobSet creates the series with the first failure, already at 1 (no 0 sample before it): the
    # series appears at minute 30.
    "failed-fires": case(
        jobset_failed("fsdp", "_x30 1x60"), "TrainJobFailed",
        [fired("TrainJob fsdp in team-vision failed: its JobSet used up its restarts (see `kubectl describe trainjob` "
               "and its node pods' logs)", severity="warning", namespace=NS, train_job="fsdp")], eval_time="35m"),
    # A JobSet of the same name failing a second time: the series rises from 1.
    "failed-again-fires": case(
        jobset_failed("fsdp", "1x30 2x60"), "TrainJobFailed",
        [fired("TrainJob fsdp in team-vision failed: its JobSet used up its restarts (see `kubectl describe trainjob` "
               "and its node pods' logs)", severity="warning", namespace=NS, train_job="fsdp")], eval_time="35m"),
    # A failure an hour old pages no more.
    "failed-long-ago-quiet": case(jobset_failed("fsdp", "_x10 1x80"), "TrainJobFailed", [], eval_time="60m"),
    "never-failed-quiet": case({**owned("fsdp-node-0", "fsdp")}, "TrainJobFailed", [], eval_time="35m"),
    "inadmissible-fires": case(
        pending("vision", "inadmissible", "2x90"), "TrainingWorkloadsInadmissible",
        [fired("ClusterQueue vision holds 2 training workloads Kueue cannot admit (more than its quota and what it may "
               "borrow, or no flavor fits: `kubectl describe workload`)", severity="warning", cluster_queue="vision")]),
    "waiting-their-turn-quiet": case(pending("vision", "active", "2x90"), "TrainingWorkloadsInadmissible", []),
    "stalled-fires": case(
        {**pending("speech", "active", "1x150"), **admitted("speech", "3x150")}, "TrainingQueueStalled",
        [fired("ClusterQueue speech has training workloads waiting and admitted none for an hour (its quota is in use, "
               "or borrowed by serving and other teams)", severity="warning", cluster_queue="speech")], eval_time="150m"),
    "admitting-quiet": case(
        {**pending("speech", "active", "1x150"), **admitted("speech", "0+1x150")}, "TrainingQueueStalled", [],
        eval_time="150m"),
}


def training_group() -> dict:
    [group] = [g for g in GROUPS if g["name"] == "inference-platform.training"]
    return group


def test_the_training_group_passes_promtool_check(promtool, tmp_path):
    path = write_rules(tmp_path / "training.yml", [training_group()])
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_training_alerts_exist_only_where_teams_train_and_read_real_metrics():
    assert alerts.alert_names(GROUPS) >= TRAINING_ALERTS
    assert not alerts.alert_names(alerts.rule_groups(observability_inputs(stack_settings("demo-dev")))) & TRAINING_ALERTS
    for rule in training_group()["rules"]:
        assert metric_names(rule["expr"]) <= known_metrics(), rule["alert"]
    assert training_alerts.restarts_expr(["a"], 3).endswith(">= 3")


def test_every_training_alert_has_a_firing_and_a_quiet_case():
    tested: dict[str, set[bool]] = {}
    for c in CASES.values():
        test = c["alert_rule_test"][0]
        tested.setdefault(test["alertname"], set()).add(bool(test["exp_alerts"]))
    assert tested == {name: {True, False} for name in TRAINING_ALERTS}


def test_promtool_unit_tests(promtool, tmp_path):
    """All cases in one promtool run; its output names the case that fails."""
    rules = write_rules(tmp_path / "rules.yml", [training_group()])
    tests = tmp_path / "tests.yml"
    named = [{**c, "name": name} for name, c in CASES.items()]
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": named}))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _failed_panel_expr() -> str:
    from tests.support.dashboards import dashboards, panels, substitute

    (panel,) = [p for p in panels(dashboards()["training"]) if p["title"] == "Failed for good"]
    (target,) = panel["targets"]
    return substitute(target["expr"].replace("$__range", "1h"))


def test_the_dashboards_failed_panel_counts_first_failures_as_jobset_exports_them(promtool, tmp_path):
    """Over the last hour at minute 90: fsdp's series appeared at minute 60 at 1 (its first failure),
    llm's appeared at minute 70 and rose to 2, ddp failed before the hour and again in it, old
    failed only before it."""
    series = {**jobset_failed("fsdp", "_x60 1x40"), **jobset_failed("llm", "_x70 1x5 2x25"),
              **jobset_failed("ddp", "1x50 2x50"), **jobset_failed("old", "1x100")}
    expected = {"fsdp": 1, "llm": 2, "ddp": 1, "old": 0}
    test = {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series.items()],
            "promql_expr_test": [{"expr": f"round({_failed_panel_expr()})", "eval_time": "90m", "exp_samples": [
                {"labels": f'{{exported_namespace="{NS}",jobset_name="{name}"}}', "value": n} for name, n in expected.items()]}]}
    rules = write_rules(tmp_path / "rules.yml", [training_group()])
    tests = tmp_path / "tests.yml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [test]}))
    result = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
