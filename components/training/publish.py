"""From a trained model to a canary: a TrainJob's `publish` step starts its service's model pipeline.

Kubeflow Trainer v2.3.0 has no completion hook (nothing in pkg/runtime or its jobset plugin runs
anything after a TrainJob), and no event source is installed, so the step is part of the job:
- The runtime variant `ip-<kind>[-...]-publish` ends in a replicated job `publish` that
  `dependsOn` the `node` job with status `Complete` (jobset v0.12.0 api/jobset/v1alpha2
  jobset_types.go DependsOn: the previous ReplicatedJob's Jobs all succeeded; pkg/controllers/
  depends_on.go). Trainer keeps a replicated job without its ancestor label as written
  (pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs checks only ancestors; the jobset
  plugin's Build copies the template's replicatedJobs), and JobSet's default success policy (All)
  completes the JobSet, so the TrainJob, only when `publish` has completed too.
- Each TrainJob fills the step through its runtimePatches (trainjob_types.go PodSpecPatch:
  serviceAccountName, volumes, and a container's volumeMounts; env and volumeMounts are refused
  for `node` and the initializers only, plugins/jobset/jobset.go Validate): its ServiceAccount and
  the ConfigMap holding the Workflow it creates.
- The step server-side applies that Workflow (`kubectl apply --server-side`): the pipeline's WorkflowTemplate by
  `workflowTemplateRef`, with arguments `version` and `onnx` only. Argo v4.0.6 with
  `templateReferencing: Strict` (tuning/pipeline.py argo_values) runs only such workflows and
  refuses any other spec field a submitter sets (workflow/util/merge.go ValidateUserOverrides:
  serviceAccountName, podSpecPatch, templates, ... are not permitted), so the workflow runs with
  the template's own ServiceAccount. The submitter needs `create workflows` in the service's
  namespace (RBAC cannot restrict a create by name or content) and `patch` of its jobs' Workflows
  by name, nothing else.

Pulumi creates the ConfigMap, ServiceAccount, Role, RoleBinding and NetworkPolicy; the Workflow
exists only once the job's nodes have completed, created by the job, never by `pulumi up`.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.core import versions
from inference_platform.core.common import COMPONENT_KEY, PART_OF, restricted_security_context, standard_labels
from inference_platform.settings.training import TrainingTeam, TrainJobSettings
from inference_platform.settings.training_publish import PipelineRef, onnx_path, publish_version, workflow_name
from inference_platform.training.runtimes import COMPONENT, NODE, ROLE_LABEL, pod_labels
from inference_platform.tuning.pipeline import PIPELINE_LABEL

PUBLISH = "publish"
WORKFLOW_VOLUME = "publish-workflow"
WORKFLOW_DIR = "/etc/inference-platform/publish"
WORKFLOW_FILE = "workflow.json"
TMP_VOLUME = "tmp"
# The distroless kubectl image's non-root user (gcr.io/distroless nonroot: 65532).
KUBECTL_UID = 65532
# Transient API errors are retried. The step server-side applies the Workflow, so a retry after the
# create went through (the pod died before it exited) applies the same manifest again, which changes
# nothing and succeeds, where a second `kubectl create` would fail the TrainJob; the fixed name still
# means one run.
BACKOFF_LIMIT = 3
FIELD_MANAGER = "inference-platform-publish"
# The pipeline's arguments (tuning/pipeline.py workflow_template_spec `arguments.parameters`).
VERSION_PARAMETER = "version"
ONNX_PARAMETER = "onnx"


def publish_job(kind: str, system_node_selector: dict[str, str]) -> dict[str, Any]:
    """The runtime's `publish` replicated job: after every node pod succeeded, one pod on the
    system nodes creates the Workflow its TrainJob mounts (ServiceAccount and ConfigMap come from
    the job's runtimePatches)."""
    container = {
        "name": PUBLISH,
        "image": versions.KUBECTL_IMAGE,
        "command": ["/usr/local/bin/kubectl", "apply", "--server-side", f"--field-manager={FIELD_MANAGER}",
                    "-f", f"{WORKFLOW_DIR}/{WORKFLOW_FILE}"],
        # kubectl keeps its discovery cache below $HOME.
        "env": [{"name": "HOME", "value": "/tmp"}],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "securityContext": restricted_security_context(runAsUser=KUBECTL_UID, runAsGroup=KUBECTL_UID),
        "volumeMounts": [{"name": TMP_VOLUME, "mountPath": "/tmp"}],
    }
    return {
        "name": PUBLISH,
        "dependsOn": [{"name": NODE, "status": "Complete"}],
        "template": {"spec": {"backoffLimit": BACKOFF_LIMIT, "template": {
            "metadata": {"labels": pod_labels(kind, PUBLISH)},
            "spec": {
                **({"nodeSelector": dict(system_node_selector)} if system_node_selector else {}),
                "containers": [container],
                "volumes": [{"name": TMP_VOLUME, "emptyDir": {}}],
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                # The one pod of a TrainJob that talks to the API server, with its own ServiceAccount.
                "automountServiceAccountToken": True,
            }}}},
    }


def workflow(job: TrainJobSettings, team: TrainingTeam, ref: PipelineRef) -> dict[str, Any]:
    """The Workflow a publishing job creates in its service's namespace: the pipeline's template
    with the new version's name and the job's ONNX file, and nothing else Strict mode refuses."""
    # Not Pulumi's: the job creates it, Argo deletes it (the template's ttlStrategy).
    labels = {"app.kubernetes.io/part-of": PART_OF, PIPELINE_LABEL: job.publish_to.service,
              "inference-platform/trained-by": f"{team.name}.{job.name}"}
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": workflow_name(job), "namespace": ref.namespace, "labels": labels},
        "spec": {"workflowTemplateRef": {"name": ref.template},
                 "arguments": {"parameters": [{"name": VERSION_PARAMETER, "value": publish_version(job)},
                                              {"name": ONNX_PARAMETER, "value": onnx_path(job)}]}},
    }


def config_map_name(job: TrainJobSettings) -> str:
    return f"{job.name}-publish"


def config_map_data(job: TrainJobSettings, team: TrainingTeam, ref: PipelineRef) -> dict[str, str]:
    return {WORKFLOW_FILE: json.dumps(workflow(job, team, ref), indent=2, sort_keys=True)}


def service_account_name(service: str) -> str:
    """The team namespace's ServiceAccount that starts `service`'s pipeline."""
    return f"publish-{service}"


# The platform's runtimePatches entry for the publish step (a domain-prefixed path, as jobs.py's).
PATCH_MANAGER = "inference-platform/publish"


def publish_patch(job: TrainJobSettings) -> dict[str, Any]:
    """The job's runtimePatches entry that fills its `publish` step: ServiceAccount and Workflow."""
    pod = {"serviceAccountName": service_account_name(job.publish_to.service),
           "volumes": [{"name": WORKFLOW_VOLUME, "configMap": {"name": config_map_name(job)}}],
           "containers": [{"name": PUBLISH, "volumeMounts": [
               {"name": WORKFLOW_VOLUME, "mountPath": WORKFLOW_DIR, "readOnly": True}]}]}
    return {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": PUBLISH, "template": {"spec": {"template": {"spec": pod}}}}]}}}}


def submit_role_name(ref: PipelineRef) -> str:
    return f"{ref.template}-publish"


def publish_rules(workflows: list[str]) -> list[dict[str, Any]]:
    """Only what a server-side apply of the jobs' Workflows needs: the request is a patch, and the
    API server also checks create when the patch creates the object (k8s.io/apiserver
    pkg/endpoints/handlers/patch.go createAuthorizerAttributes). RBAC cannot restrict a create to
    names, but a patch it can. (Argo's own submit role, manifests/quick-start/base/webhooks/
    submit-workflow-template-role.yaml, adds workflowtemplates get for `argo submit --from`.)"""
    return [{"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["patch"], "resourceNames": workflows}]


def publish_pod_labels() -> dict[str, str]:
    return {COMPONENT_KEY: COMPONENT, ROLE_LABEL: PUBLISH}


def publish_network_policy_spec() -> dict[str, Any]:
    """The publish pods take no traffic and reach the API server only. Its address cannot be named
    portably (the `kubernetes` Service's ClusterIP is translated to the control plane's addresses,
    which policies see after translation), so egress is its ports: 443 and 6443 (kube-apiserver's
    --secure-port default); kubectl takes the address from KUBERNETES_SERVICE_HOST, no DNS."""
    return {"podSelector": {"matchLabels": publish_pod_labels()}, "policyTypes": ["Ingress", "Egress"],
            "egress": [{"ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]}]}


def publishers(jobs: list[TrainJobSettings], teams: dict[str, TrainingTeam]) -> dict[str, list[TrainingTeam]]:
    """Per service published to, the teams whose jobs publish to it (in order, each once)."""
    out: dict[str, list[TrainingTeam]] = {}
    for job in jobs:
        if job.publish_to is not None and job.team in teams:
            listed = out.setdefault(job.publish_to.service, [])
            if teams[job.team] not in listed:
                listed.append(teams[job.team])
    return out


def publish_resources(name: str, a, teams: dict[str, TrainingTeam], namespaces: dict[str, pulumi.Resource],
                      opts: pulumi.ResourceOptions) -> dict[tuple[str, str], list[pulumi.Resource]]:
    """What the publish steps of `a.training.jobs` need: per team and service a ServiceAccount,
    per team namespace the NetworkPolicy, per service the Role and RoleBinding letting those
    accounts create Workflows there, per job its Workflow's ConfigMap. Returns, per (team, job),
    what its TrainJob waits for (the pod of its step needs them)."""
    jobs = [j for j in a.training.jobs if j.publish_to is not None and j.team in teams]
    in_team = {t: pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespaces[t]]))
               if t in namespaces else opts for t in teams}
    accounts: dict[tuple[str, str], pulumi.Resource] = {}
    policies: set[str] = set()
    for job in jobs:
        team, service = teams[job.team], job.publish_to.service
        if (team.name, service) not in accounts:
            accounts[(team.name, service)] = k8s.core.v1.ServiceAccount(
                f"{name}-publish-{team.name}-{service}", metadata={
                    "name": service_account_name(service), "namespace": team.namespace,
                    "labels": standard_labels(service_account_name(service), **{COMPONENT_KEY: COMPONENT})},
                opts=in_team[team.name])
        if team.name not in policies:
            policies.add(team.name)
            k8s.networking.v1.NetworkPolicy(
                f"{name}-publish-{team.name}-networkpolicy", metadata={
                    "name": f"{COMPONENT}-{PUBLISH}", "namespace": team.namespace,
                    "labels": standard_labels(f"{COMPONENT}-{PUBLISH}", **{COMPONENT_KEY: COMPONENT})},
                spec=publish_network_policy_spec(), opts=in_team[team.name])
    for service, teams_of in publishers(jobs, teams).items():
        ref = a.pipelines[service]
        meta = {"name": submit_role_name(ref), "namespace": ref.namespace,
                "labels": standard_labels(submit_role_name(ref), **{COMPONENT_KEY: COMPONENT, PIPELINE_LABEL: service})}
        workflows = sorted(workflow_name(j) for j in jobs if j.publish_to.service == service)
        role = k8s.rbac.v1.Role(f"{name}-publish-{service}-role", metadata=meta, rules=publish_rules(workflows), opts=opts)
        k8s.rbac.v1.RoleBinding(
            f"{name}-publish-{service}-rolebinding", metadata=meta,
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata["name"]},
            subjects=[{"kind": "ServiceAccount", "name": service_account_name(service), "namespace": t.namespace}
                      for t in teams_of], opts=opts)
    needs: dict[tuple[str, str], list[pulumi.Resource]] = {}
    for job in jobs:
        team, service = teams[job.team], job.publish_to.service
        k8s.core.v1.ConfigMap(
            f"{name}-job-{team.name}-{job.name}-publish", metadata={
                "name": config_map_name(job), "namespace": team.namespace,
                "labels": standard_labels(config_map_name(job), **{COMPONENT_KEY: COMPONENT})},
            data=config_map_data(job, team, a.pipelines[service]), opts=in_team[team.name])
        # The job waits for its step's account only. Not for the ConfigMap: a new version name
        # replaces it (pulumi-kubernetes replaces a ConfigMap whose data changes; its fixed name
        # deletes it first), and the engine would replace a dependent job too, running the
        # training again. The step reads the ConfigMap hours later; a pod whose ConfigMap is
        # missing waits for it.
        needs[(team.name, job.name)] = [accounts[(team.name, service)]]
    return needs
