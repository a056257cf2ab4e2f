"""A training job's secrets reach its pods only through a Secret: a `secure:` value in a job's env
is refused (the engine would pass all of `training` decrypted), `secretEnv` reads `trainingSecrets`
from a Secret of the job's namespace, and no plan holds a secret in an object that is not a Secret."""

from __future__ import annotations

import json

import pytest
import yaml

from platformctl import secret_leaks
from platformctl.__main__ import main
from platformctl.invariants import plan_resources
from tests.conftest import ROOT, STACKS, render_raw, stack_plan
from tests.support.training_stacks import training_config

TRAINJOB = "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"
SECRET = "kubernetes:core/v1:Secret"
TOKEN = "hf_token_value_that_must_stay_secret"


def _train_dev_with(tmp_path, edit) -> str:
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.train-dev.yaml").read_text())
    edit(doc["config"])
    path = tmp_path / "Pulumi.train-dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_a_secure_value_in_a_jobs_env_is_refused_with_one_line_naming_it_and_secret_env(tmp_path, capsys):
    def edit(config):
        config["inference-platform:training"]["jobs"][0]["env"] = {"HF_TOKEN": {"secure": "v1:abc"}}
    stack_file = _train_dev_with(tmp_path, edit)
    assert main(["plan", "train-dev", "--stack-file", stack_file, "--out", str(tmp_path / "plan")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "inference-platform:training.jobs[resnet-ddp].env.HF_TOKEN: a secret in training" in line
    assert "trainingSecrets.<name>" in line and "secretEnv" in line
    assert not (tmp_path / "plan").exists()


def test_the_engine_marking_a_non_secret_key_secret_is_refused_at_that_key():
    # Under `pulumi up` the program only learns that all of `training` is secret.
    raw = training_config()
    with pytest.raises(Exception) as err:
        render_raw(raw, secret_keys=("training",))
    assert "inference-platform:training: a secret in training, which is not a secret key" in str(err.value)


def _with_secret_env():
    raw = training_config()
    raw["training"]["jobs"][0]["secretEnv"] = {"HF_TOKEN": "hf"}
    raw["trainingSecrets"] = {"hf": TOKEN}
    return raw


def test_secret_env_reaches_the_pods_only_through_a_secret_of_the_jobs_namespace():
    plan = render_raw(_with_secret_env(), secret_keys=("trainingSecrets",))
    job = next(r for r in plan.of_type(TRAINJOB) if r.inputs["metadata"]["name"] == "ddp")
    env = {e["name"]: e for e in job.inputs["spec"]["trainer"]["env"]}
    ref = env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]
    (secret,) = [s for s in plan.of_type(SECRET) if s.inputs["metadata"]["name"] == ref["name"]]
    assert secret.inputs["metadata"]["namespace"] == job.inputs["metadata"]["namespace"] == "vision-train"
    assert secret.inputs["stringData"] == "[secret]" or secret.inputs["stringData"][ref["key"]] == "[secret]"
    assert secret.urn in job.depends_on
    assert TOKEN not in json.dumps(plan.to_json())
    assert secret_leaks.violations(plan_resources(plan)) == []


@pytest.mark.parametrize("problem,edit", [
    ("no secret 'hf' in trainingSecrets", lambda raw: raw.pop("trainingSecrets")),
    ("no job's secretEnv names it", lambda raw: raw["trainingSecrets"].update(other=TOKEN)),
    ("also set in env", lambda raw: raw["training"]["jobs"][0].update(env={"HF_TOKEN": "x"})),
])
def test_secret_env_names_a_training_secret_used_by_a_job_and_not_set_in_env(problem, edit):
    raw = _with_secret_env()
    edit(raw)
    with pytest.raises(Exception) as err:
        render_raw(raw, secret_keys=tuple(k for k in ("trainingSecrets",) if k in raw))
    assert problem in str(err.value) and len(str(err.value).splitlines()) == 1


def test_the_leak_invariant_names_a_secret_or_secure_value_outside_a_secret():
    resources = [{"type": TRAINJOB, "name": "a", "inputs": {"spec": {"env": [{"value": "[secret]"}]}}},
                 {"type": "kubernetes:apps/v1:Deployment", "name": "b", "inputs": {"x": "[secure-placeholder]"}},
                 {"type": SECRET, "name": "c", "inputs": {"stringData": "[secret]"}}]
    found = secret_leaks.violations(resources)
    assert [f.split(" holds")[0] for f in found] == [f"{TRAINJOB} a", "kubernetes:apps/v1:Deployment b"]


@pytest.mark.parametrize("stack", STACKS)
def test_no_stacks_plan_holds_a_secret_outside_a_secret(stack):
    assert secret_leaks.violations(plan_resources(stack_plan(stack))) == []
