"""A job that serving preempts, a drain or a crash interrupts comes back: the JobSet restarts every
pod (a disrupted node pod without counting, any other failure within the runtime's maxRestarts),
a failed publish step fails the job rather than train again, and Kueue requeues an evicted job for
ever. The rules are evaluated here as JobSet v0.12.0 does (pkg/controllers/failure_policy.go)."""

from __future__ import annotations

import json
import re

import pytest

from platformctl.plan import manifest
from tests.conftest import render_raw
from tests.plan.test_training_publish import publishing, replicated_jobs
from tests.support.training_stacks import training_config

RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# jobset v0.12.0 pkg/webhooks/jobset_webhook.go: validOnJobFailureReasons and ruleNameFmt.
JOB_FAILURE_REASONS = {"BackoffLimitExceeded", "DeadlineExceeded", "FailedIndexes", "MaxFailedIndexesExceeded",
                       "PodFailurePolicy"}
RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def runtimes(raw: dict) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: manifest(r) for r in render_raw(raw).of_type(RUNTIME)}


def action(jobset: dict, failed_job: str, reason: str) -> str:
    """What JobSet does when a Job of `failed_job` fails with `reason` (executeFailurePolicy: no
    policy fails the JobSet; the first rule whose reasons and targets match acts; none: RestartJobSet)."""
    policy = jobset.get("failurePolicy")
    if policy is None:
        return "FailJobSet"
    for rule in policy.get("rules", []):
        if (not rule.get("onJobFailureReasons") or reason in rule["onJobFailureReasons"]) and (
                not rule.get("targetReplicatedJobs") or failed_job in rule["targetReplicatedJobs"]):
            return rule["action"]
    return "RestartJobSet"


def node_job(runtime: dict) -> dict:
    return replicated_jobs(runtime)["node"]["template"]["spec"]


@pytest.fixture(scope="module")
def plain():
    raw = training_config()
    raw["training"]["runtimes"] = [{"kind": "torch-ddp", "maxRestarts": 5}, {"kind": "torch-fsdp-tp"}]
    return runtimes(raw)


def test_a_disrupted_node_pod_fails_its_job_by_a_reason_the_jobset_restarts_without_counting(plain):
    for name, runtime in plain.items():
        job = node_job(runtime)
        # The scheduler's preemption and an eviction set DisruptionTarget on the pod; the rule fails the Job
        # at once with reason PodFailurePolicy (it needs restartPolicy Never, which JobSet would default otherwise).
        assert job["podFailurePolicy"]["rules"] == [
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}], name
        assert job["template"]["spec"]["restartPolicy"] == "Never", name
        assert action(runtime["spec"]["template"]["spec"], "node", "PodFailurePolicy") == "RestartJobSetAndIgnoreMaxRestarts"


def test_any_other_failure_restarts_every_pod_within_the_runtimes_max_restarts(plain):
    for name, want in (("ip-torch-ddp", 5), ("ip-torch-fsdp-tp", 3)):
        jobset = plain[name]["spec"]["template"]["spec"]
        # One crashed rank fails the node Job (torchrun cannot take one pod back), and the JobSet starts over.
        assert node_job(plain[name])["backoffLimit"] == 0
        assert action(jobset, "node", "BackoffLimitExceeded") == "RestartJobSet"
        assert jobset["failurePolicy"]["maxRestarts"] == want
        # Every old pod is gone before the new ones start their rendezvous.
        assert jobset["failurePolicy"]["restartStrategy"] == "BlockingRecreate"


def test_a_failed_publish_step_fails_the_job_instead_of_training_it_again():
    jobset = runtimes(publishing())["ip-torch-ddp-publish"]["spec"]["template"]["spec"]
    assert action(jobset, "publish", "BackoffLimitExceeded") == "FailJobSet"
    assert action(jobset, "node", "PodFailurePolicy") == "RestartJobSetAndIgnoreMaxRestarts"


def test_the_failure_policy_passes_jobsets_webhook(plain):
    for runtime in [*plain.values(), runtimes(publishing())["ip-torch-ddp-publish"]]:
        jobset = runtime["spec"]["template"]["spec"]
        names = {j["name"] for j in jobset["replicatedJobs"]}
        rules = jobset["failurePolicy"]["rules"]
        assert len({r["name"] for r in rules}) == len(rules) and all(RULE_NAME.match(r["name"]) for r in rules)
        assert all(set(r.get("targetReplicatedJobs", [])) <= names for r in rules)
        assert all(set(r.get("onJobFailureReasons", [])) <= JOB_FAILURE_REASONS for r in rules)


def test_kueue_requeues_an_evicted_job_for_ever_after_a_backoff():
    (release,) = [r for r in render_raw(training_config()).of_type(HELM_RELEASE) if r.inputs["chart"].endswith("/kueue")]
    ready = json.loads(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])["waitForPodsReady"]
    # Kueue 0.19.2 waits for pods ready whatever the configuration says (v1beta2 defaults.go); a job whose
    # pods are not ready again in time is evicted and requeued, never deactivated (no backoffLimitCount).
    assert ready["recoveryTimeout"] and ready["blockAdmission"] is False
    assert "backoffLimitCount" not in ready["requeuingStrategy"]
    assert ready["requeuingStrategy"]["backoffMaxSeconds"] >= ready["requeuingStrategy"]["backoffBaseSeconds"] > 0
