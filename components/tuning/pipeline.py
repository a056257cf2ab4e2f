"""The model pipeline on Argo Workflows (`modelPipeline.enabled`, a service's `pipeline`).

Argo Workflows runs as its controller alone, in namespace `argo`: no Argo Server (workflows
are submitted with `argo submit --from workflowtemplate/...` or kubectl), CRDs from the chart,
no artifact repository. The controller runs only workflows that reference a WorkflowTemplate
(`templateReferencing: Strict`), and the platform's templates exist only in the namespaces
of services with a pipeline. Argo v4.0.6 cannot watch a list of namespaces: its
`controller.workflowNamespaces` value only places the chart's workflow RBAC, which the
platform makes itself, per service.

Per service with `pipeline`, in the service's namespace (beside its weight cache's claim or
S3 Secret, weights.py): a ServiceAccount for the workflow pods with a Role allowing exactly
what Argo's executor needs (docs/workflow-rbac.md at v4.0.6: workflowtaskresults create and
patch), a Role `<service>-pipeline-submit` for the people and CI who run it (bound to
`modelPipeline.submitters`), and the WorkflowTemplate `<service>-pipeline` with two arguments, `version` (the new
version's name) and `onnx` (the trained model's ONNX file, a path in the base version's
cache). Its steps, each a pod, share a work volume (an ephemeral claim of the workflow: an
emptyDir would not outlive its pod), and all run on the base version's GPU group (the claim
binds where the first runs):

1. export (rclone): checks the arguments and that `<repositoryPrefix>/<version>/` is still
   empty, copies the ONNX file from the cache (the claim read-only, or S3 with the weights
   Secret's keys) and lays out the repository with the engine's config.pbtxt.
2. build: trtexec in the TensorRT image of the base version's Triton release, on the base
   version's GPU group and share (an engine runs only on the TensorRT release and GPU model
   that built it), writes `<model>/1/model.plan` for a batch of 1 up to `maxBatchSize`.
3. analyze: Model Analyzer (tuning/runs.py) against a Triton server of the base version's image
   and GPU share in the same pod, serving the new repository with explicit model control; Perf
   Analyzer sends the shapes the engine was built for (`inputs`).
4. publish (model_tools/publish.py): the best variants as `<model>/configs/tuned-<version>-<rank>.pbtxt`
   and the stack-file patch that adds the version as a canary.
5. upload (rclone): copies the repository to `<repositoryPrefix>/<version>/` in the base
   version's cache (copy, never sync) and prints the patch, also the workflow's output
   parameter `stack-patch`.

Promotion stays a reviewed edit: `platformctl patch` applies the patch to the stack file and
`pulumi up` deploys the canary. Nothing in the pipeline can write an object Pulumi owns.
"""

import hashlib
import json
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml
from google.protobuf import text_format

from inference_platform.args import ModelPipelineArgs
from inference_platform.core import endpoints as ep
from inference_platform.core import versions
from inference_platform.core.common import (
    COMPONENT_KEY,
    from_namespace,
    helm_release,
    init_component,
    namespace,
    resource_opts,
    restricted_security_context,
    standard_labels,
    with_node_selector,
)
from inference_platform.gpu.profiles import container_resources
from inference_platform.observability.metrics import pod_monitor_spec
from inference_platform.serving.model_config import model_config_pb2, parse_model_config
from inference_platform.serving.triton_server import analysis_server
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.component_args import validated
from inference_platform.settings.serving import Service, Version
from inference_platform.settings.tuning import PipelineSubmitter, ServicePipeline, TuningGoals
from inference_platform.tuning.inputs import ModelPipelineInputs
from inference_platform.tuning.runs import (
    ANALYZER_CONFIG,
    HTTP_PORT,
    TOOL_RESOURCES,
    TOOLS_UID,
    WORK_DIR,
    WORK_MOUNT,
    analyzer_config,
    analyzer_container,
    config_tag,
    gpu_placement,
    publish_args,
    publish_container,
    rclone_env,
    sdk_image,
    shape_flags,
    tensorrt_image,
    tool_security_context,
    tools_files,
    tools_volume,
)
from inference_platform.weights.inputs import WeightsRef

NAMESPACE = ep.ARGO_NAMESPACE
RELEASE = "argo-workflows"
COMPONENT = "model-pipeline"
PIPELINE_LABEL = "inference-platform/pipeline"
STEPS = ("export", "build", "analyze", "publish", "upload")
VERSION_ARG = "{{workflow.parameters.version}}"
ONNX_ARG = "{{workflow.parameters.onnx}}"
WORKFLOW_NAME_ARG = "{{workflow.name}}"
ONNX_FILE = f"{WORK_DIR}/model.onnx"
REPOSITORY_DIR = f"{WORK_DIR}/repository"
PATCH_FILE = f"{WORK_DIR}/stack-patch.json"
ENGINE_CONFIG = "config.pbtxt"
ENGINE_CONFIG_DIR = "/opt/inference-platform/engine"
# The NGC TensorRT images install trtexec with TensorRT's Debian packages (libnvinfer-bin).
TRTEXEC = "/usr/src/tensorrt/bin/trtexec"
# The ONNX file, the engine (about the model's size) and Model Analyzer's results: an ONNX file
# without external data holds at most 2 GiB (protobuf's limit).
WORK_SIZE = "20Gi"
# Export and build take minutes; Model Analyzer's search takes hours.
DEADLINE_SECONDS = 12 * 3600
# A finished workflow (and its `stack-patch` output) is kept a week, then deleted with its pods.
KEEP_SECONDS = 7 * 24 * 3600
# How long Model Analyzer waits for the Triton beside it: the sidecar's image is pulled after
# the main container's, and a tritonserver image takes minutes.
SERVER_WAIT_SECONDS = 1800
MODELS_VOLUME = "models"

# Arguments land in the environment, never in a script's text, and are checked before use:
# `version` is a DNS label, `onnx` a relative path of plain names ending in .onnx.
CHECK_ARGUMENTS = """
case "$VERSION" in ""|-*|*-|*[!a-z0-9-]*)
  echo "version '$VERSION': a version name is a DNS label: a-z, 0-9 and '-', not at either end" >&2; exit 2;; esac
if [ "${#VERSION}" -gt 63 ]; then echo "version '$VERSION': at most 63 characters" >&2; exit 2; fi
case "/$ONNX/" in *//*|*/./*|*/../*|*[!A-Za-z0-9._/-]*)
  echo "onnx '$ONNX': a relative path in the weight cache, of A-Z, a-z, 0-9, '.', '_', '-' and '/'" >&2; exit 2;; esac
case "$ONNX" in *.onnx) ;; *) echo "onnx '$ONNX': not an .onnx file" >&2; exit 2;; esac
"""
# A version's repository is written once: a name in use fails the run, and so does a listing
# that fails for another reason than the directory not existing (rclone's exit code 3).
CHECK_DESTINATION = """
dest="$CACHE/$PREFIX/$VERSION"
mkdir -p "$TMPDIR"
listed=0
rclone lsf "$dest" >"$TMPDIR/listing" 2>"$TMPDIR/listing.err" || listed=$?
if [ "$listed" -eq 0 ] && [ -s "$TMPDIR/listing" ]; then
  echo "$dest already holds files: choose a version name not used before" >&2; exit 3
elif [ "$listed" -ne 0 ] && [ "$listed" -ne 3 ]; then
  cat "$TMPDIR/listing.err" >&2; echo "cannot tell whether $dest is free (rclone lsf exit $listed)" >&2; exit 1
fi
"""
EXPORT_SCRIPT = "set -eu\n" + CHECK_ARGUMENTS + CHECK_DESTINATION + f"""
mkdir -p "$REPOSITORY/$MODEL/1"
cp "{ENGINE_CONFIG_DIR}/{ENGINE_CONFIG}" "$REPOSITORY/$MODEL/{ENGINE_CONFIG}"
rclone copyto --checksum "$CACHE/$ONNX" "{ONNX_FILE}"
"""
UPLOAD_SCRIPT = "set -eu\n" + CHECK_DESTINATION + f"""
rclone copy --checksum "$REPOSITORY" "$dest"
cat "{PATCH_FILE}"
"""
# Model Analyzer starts once the Triton beside it is ready (Argo starts a pod's containers
# together: docs/walk-through/sidecars.md).
WAIT_FOR_SERVER = f"""python3 -c '
import time, urllib.request
for _ in range({SERVER_WAIT_SECONDS // 5}):
    try:
        urllib.request.urlopen("http://localhost:{HTTP_PORT}/v2/health/ready", timeout=5)
        break
    except OSError:
        time.sleep(5)
else:
    raise SystemExit("the Triton server beside Model Analyzer did not become ready")
'"""


def argo_values(system_node_selector: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """The argo-workflows chart: the controller alone, hardened, running only template-made workflows."""
    # argo-workflows 1.0.18 values.yaml controller.nodeSelector (Helm merges it with the chart's
    # kubernetes.io/os: linux); the server is off.
    return with_node_selector({
        # The chart's own CRDs, installed with the release; the full ones would come from a
        # pre-install Job that downloads them from GitHub. The tests check the templates
        # against the full schemas.
        "crds": {"full": False},
        "server": {"enabled": False},
        # Each pipeline's ServiceAccount and Role come from the platform, in its service's namespace.
        "workflow": {"rbac": {"create": False}},
        "controller": {
            "workflowRestrictions": {"templateReferencing": "Strict"},
            "clusterWorkflowTemplates": {"enabled": False},
            # The chart's container securityContext is restricted but for the seccomp profile, set here.
            "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        },
        # The init and wait containers of every workflow pod: the executor image built to run as non-root.
        "executor": {"image": {"tag": f"{versions.ARGO_WORKFLOWS_VERSION}-nonroot"}, "securityContext": restricted_security_context()},
    }, system_node_selector or {}, "controller.nodeSelector")


# The controller's Prometheus metrics: on by default (argo-workflows config/config.go
# MetricsConfig.Enabled, "Default is true"; docs/metrics.md: port 9090, path /metrics), and the
# chart's controller container declares that port whatever its metricsConfig says (argo-workflows
# 1.0.18 templates/controller/workflow-controller-deployment.yaml, values controller.metricsConfig.port).
CONTROLLER_METRICS_PORT = 9090
# The controller pod's labels (argo-workflows 1.0.18 templates/_helpers.tpl: component and instance).
CONTROLLER_POD_LABELS = {"app.kubernetes.io/component": "workflow-controller", "app.kubernetes.io/instance": RELEASE}


def argo_network_policy_spec(monitoring_namespace: str = ep.MONITORING_NAMESPACE) -> dict[str, Any]:
    """In namespace `argo`, only Prometheus may reach anything, and only the controller's metrics
    port: the controller is called by no one else (it watches and writes through the API server)."""
    return {"podSelector": {}, "policyTypes": ["Ingress"],
            "ingress": [{"from": from_namespace(monitoring_namespace),
                         "ports": [{"protocol": "TCP", "port": CONTROLLER_METRICS_PORT}]}]}


# --------------------------------------------------------------------------- the engine


def shapes(pipeline: ServicePipeline, batch: int) -> str:
    """trtexec's shape spec of every input at `batch`; names in single quotes, which trtexec
    strips, so a name holding ':' stays one name."""
    return ",".join(f"'{name}':{'x'.join(str(d) for d in (batch, *dims))}" for name, dims in pipeline.inputs.items())


def trtexec_command(pipeline: ServicePipeline) -> list[str]:
    """Build the engine for batches of 1 to maxBatchSize, tuned for the largest (dynamic
    batching fills batches), and exit without benchmarking it."""
    top = pipeline.max_batch_size
    command = [TRTEXEC, f"--onnx={ONNX_FILE}", f"--saveEngine={REPOSITORY_DIR}/{pipeline.model}/1/model.plan",
               f"--minShapes={shapes(pipeline, 1)}", f"--optShapes={shapes(pipeline, top)}",
               f"--maxShapes={shapes(pipeline, top)}", "--skipInference"]
    return command + (["--fp16"] if pipeline.precision == "fp16" else [])


def engine_config(pipeline: ServicePipeline) -> str:
    """The engine's config.pbtxt, checked with Triton's ModelConfig. Inputs and outputs come
    from the engine itself: Triton completes a TensorRT model's config (auto-complete, which
    serverArgs cannot turn off)."""
    config = model_config_pb2.ModelConfig(name=pipeline.model, platform="tensorrt_plan",
                                          max_batch_size=pipeline.max_batch_size)
    text = text_format.MessageToString(config)
    parse_model_config(text, f"engine config of model {pipeline.model!r}")
    return text


def analysis_goals(pipeline: ServicePipeline) -> TuningGoals:
    """The pipeline's tuning goals, searching no batch larger than the engine takes."""
    search = pipeline.tuning.search
    capped = search.model_copy(update={"max_batch_size": min(search.max_batch_size, pipeline.max_batch_size)})
    return pipeline.tuning.model_copy(update={"search": capped})


def pipeline_analyzer_config(pipeline: ServicePipeline) -> dict[str, Any]:
    """Model Analyzer's config for the engine, with Perf Analyzer's shapes: the engine's own.
    Triton completes the engine's config from its bindings, where a dimension the ONNX left
    variable stays -1 even though the build fixed it (tensorrt_backend src/model_state.cc GetRefIO
    and InitIODims read getBindingDimensions), and Perf Analyzer sends no -1 without a `--shape`;
    it ignores the shape of an input whose dims are fixed (perf_analyzer src/model_parser.cc
    InitTriton uses a user shape only for a dynamic input)."""
    config = analyzer_config(analysis_goals(pipeline), pipeline.model)
    config["perf_analyzer_flags"] = {"shape": shape_flags(pipeline.inputs)}
    return config


def config_map_data(pipeline: ServicePipeline) -> dict[str, str]:
    """model_tools, Model Analyzer's config and the engine's config.pbtxt."""
    analyzer = yaml.safe_dump(pipeline_analyzer_config(pipeline), sort_keys=True)
    return {**tools_files(), ANALYZER_CONFIG: analyzer, ENGINE_CONFIG: engine_config(pipeline)}


# --------------------------------------------------------------------------- the template


def base_version(service: Service) -> Version:
    return next(v for v in service.versions if v.name == service.pipeline.base_version)


def pod_labels(service: Service) -> dict[str, str]:
    # Not injected: a workflow pod ends when its step does, and a classic Istio sidecar would
    # keep it running (and Argo's executor could stop it only with pods/exec). No step serves
    # or calls a mesh workload.
    return {**standard_labels(COMPONENT), COMPONENT_KEY: COMPONENT, PIPELINE_LABEL: service.name,
            "sidecar.istio.io/inject": "false"}


def _cache(service: Service, weights: WeightsRef) -> tuple[pulumi.Input[str], list[dict], list[dict]]:
    """Where the base version's cache is for rclone, and the environment that reaches it."""
    base = base_version(service)
    if base.model_repository.cache == "fileShare":
        return weights.mount_path, [{"name": "HOME", "value": WORK_DIR}], []
    return (pulumi.Output.concat("weights:", weights.s3_bucket), rclone_env(weights.s3_endpoint, weights.s3_secret_name),
            [{"secretRef": {"name": weights.s3_secret_name}}])


def _rclone_step(name: str, script: str, env: list[dict], env_from: list[dict], mounts: list[dict]) -> dict:
    container = {"name": name, "image": versions.RCLONE_IMAGE, "command": ["sh", "-c", script], "env": env,
                 "resources": TOOL_RESOURCES, "securityContext": tool_security_context(), "volumeMounts": mounts}
    if env_from:
        container["envFrom"] = env_from
    return container


def templates(service: Service, group: NodeGroup, weights: WeightsRef,
              priority_class: Optional[pulumi.Input[str]]) -> tuple[list[dict], list[dict]]:
    """The entry template and one per step, and the volumes they use beside the work claim."""
    pipeline, base = service.pipeline, base_version(service)
    cache, cache_env, cache_env_from = _cache(service, weights)
    file_share = base.model_repository.cache == "fileShare"
    env = [*cache_env, {"name": "CACHE", "value": cache}, {"name": "PREFIX", "value": pipeline.repository_prefix.strip("/")},
           {"name": "VERSION", "value": VERSION_ARG}, {"name": "MODEL", "value": pipeline.model},
           {"name": "REPOSITORY", "value": REPOSITORY_DIR}, {"name": "TMPDIR", "value": f"{WORK_DIR}/tmp"}]
    models = {"name": MODELS_VOLUME, "mountPath": weights.mount_path}
    export = _rclone_step("export", EXPORT_SCRIPT, [*env, {"name": "ONNX", "value": ONNX_ARG}], cache_env_from,
                          [WORK_MOUNT, {"name": "engine-config", "mountPath": ENGINE_CONFIG_DIR, "readOnly": True},
                           *([{**models, "readOnly": True}] if file_share else [])])
    upload = _rclone_step("upload", UPLOAD_SCRIPT, env, cache_env_from, [WORK_MOUNT, *([models] if file_share else [])])

    build = {"name": "build", "image": tensorrt_image(base.image), "command": trtexec_command(pipeline),
             "workingDir": WORK_DIR, "env": [{"name": "HOME", "value": WORK_DIR}, {"name": "TMPDIR", "value": f"{WORK_DIR}/tmp"}],
             "resources": container_resources(base.resources, base.gpu, group),
             "securityContext": tool_security_context(), "volumeMounts": [WORK_MOUNT]}

    sdk = sdk_image(base.image)
    analyze = analyzer_container(sdk)
    analyze["command"] = [*analyze["command"][:-1], f"{WAIT_FOR_SERVER} && {analyze['command'][-1]}"]
    server, server_volumes = analysis_server(base, group, REPOSITORY_DIR, None, None, weights.mount_path)
    server["volumeMounts"] = [*server["volumeMounts"], {**WORK_MOUNT, "readOnly": True}]

    patch = [f"--patch={PATCH_FILE}", f"--service={service.name}", f"--base-version={base.name}", f"--version={VERSION_ARG}",
             f"--cache={base.model_repository.cache}", f"--path={pipeline.repository_prefix.strip('/')}/{VERSION_ARG}",
             f"--weight={pipeline.canary_weight}",
             # Provenance the patch records on the new version (Argo's global variables, docs/variables.md).
             f"--workflow={WORKFLOW_NAME_ARG}", f"--onnx={ONNX_ARG}", f"--onnx-file={ONNX_FILE}"]
    publish = publish_container(sdk, publish_args(pipeline.model, config_tag(VERSION_ARG), pipeline.tuning.keep,
                                                  f"{REPOSITORY_DIR}/{pipeline.model}") + patch, [])

    # Every step on the base version's group, on the terms of a tuning run: the work claim is
    # ReadWriteOnce and binds where its first pod runs (WaitForFirstConsumer: node-local or zonal
    # storage), so a step placed elsewhere could leave the GPU steps nowhere to go. Only build
    # and analyze request a GPU.
    placement = gpu_placement(service, base, group, priority_class)
    steps = [
        # Argo names each template's container `main`.
        {"name": "export", "container": export, **placement},
        {"name": "build", "container": build, **placement},
        {"name": "analyze", "container": analyze, "sidecars": [server], **placement},
        {"name": "publish", "container": publish, **placement},
        {"name": "upload", "container": upload, **placement, "outputs": {"parameters": [
            {"name": "stack-patch", "globalName": "stack-patch", "valueFrom": {"path": PATCH_FILE},
             "description": "The stack-file patch adding the new version as a canary (platformctl patch applies it)."}]}},
    ]
    entry = {"name": "pipeline", "steps": [[{"name": s["name"], "template": s["name"]}] for s in steps]}
    volumes = [*server_volumes]
    if file_share:
        volumes.append({"name": MODELS_VOLUME, "persistentVolumeClaim": {"claimName": weights.claim_name}})
    return [entry, *steps], volumes


def workflow_template_spec(service: Service, group: NodeGroup, weights: WeightsRef, config_map: pulumi.Input[str],
                           priority_class: Optional[pulumi.Input[str]] = None) -> dict:
    steps, volumes = templates(service, group, weights, priority_class)
    data = config_map_data(service.pipeline)
    tools = tools_volume(config_map, {k: v for k, v in data.items() if k != ENGINE_CONFIG})
    engine = {"name": "engine-config", "configMap": {"name": config_map, "items": [{"key": ENGINE_CONFIG, "path": ENGINE_CONFIG}]}}
    return {
        "entrypoint": "pipeline",
        "arguments": {"parameters": [
            {"name": "version", "description": "Name of the new version, a DNS label the service has not used (its "
                                               f"repository becomes {service.pipeline.repository_prefix.strip('/')}/<version>)."},
            {"name": "onnx", "description": "Path of the trained model's ONNX file in the base version's weight cache."},
        ]},
        "serviceAccountName": pipeline_name(service),
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        # Failed pods stay for their logs until the workflow goes.
        "podGC": {"strategy": "OnPodSuccess"},
        "ttlStrategy": {"secondsAfterCompletion": KEEP_SECONDS},
        "podMetadata": {"labels": pod_labels(service)},
        "securityContext": {"runAsNonRoot": True, "runAsUser": TOOLS_UID, "runAsGroup": TOOLS_UID, "fsGroup": TOOLS_UID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeClaimTemplates": [{"metadata": {"name": WORK_MOUNT["name"]},
                                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": WORK_SIZE}}}}],
        "volumeClaimGC": {"strategy": "OnWorkflowCompletion"},
        "volumes": [tools, engine, *volumes],
        "templates": steps,
    }


def pipeline_name(service: Service) -> str:
    """The WorkflowTemplate, ServiceAccount and Role of a service's pipeline."""
    return f"{service.name}-pipeline"


def tools_name(service: Service, data: dict[str, str]) -> str:
    """The ConfigMap of a pipeline's tools and configs, named by its content: a change makes a
    new one, which the template names, and removes the old one, which a workflow still running
    would mount in its later steps (docs/tuning.md: change a pipeline between runs)."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:10]
    return f"{pipeline_name(service)}-{digest}"


# What a person or CI needs to run one pipeline through the Kubernetes API (no Argo Server):
# Argo's own "just enough permissions to submit a workflow template" (manifests/quick-start/base/
# webhooks/submit-workflow-template-role.yaml: workflowtemplates get, workflows create; its
# workfloweventbindings list serves webhooks only), plus workflows get, list and watch for
# `argo submit --wait` and `argo get @latest`. Only this service's template.
def submit_rules(template: str) -> list[dict]:
    return [{"apiGroups": ["argoproj.io"], "resources": ["workflowtemplates"], "resourceNames": [template], "verbs": ["get"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create", "get", "list", "watch"]}]


def submit_subjects(submitters: list[PipelineSubmitter]) -> list[dict]:
    """RoleBinding subjects (rbac.authorization.k8s.io/v1: apiGroup for User and Group, namespace for ServiceAccount)."""
    return [{"kind": s.kind, "name": s.name, "namespace": s.namespace} if s.kind == "ServiceAccount"
            else {"kind": s.kind, "name": s.name, "apiGroup": "rbac.authorization.k8s.io"} for s in submitters]


# What Argo's executor needs of the API and nothing more (docs/workflow-rbac.md, v4.0.6): each
# pod's wait container reports its step's outputs and progress as a WorkflowTaskResult.
EXECUTOR_RULES = [{"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}]


def pipeline_network_policy_spec(service: Service) -> dict:
    """Nothing reaches a pipeline's pods (Model Analyzer calls the Triton in its own pod). Egress
    stays open: each pod's executor reports to the API server, whose address a NetworkPolicy
    cannot name portably, and an S3 cache is outside the cluster."""
    return {"podSelector": {"matchLabels": {COMPONENT_KEY: COMPONENT, PIPELINE_LABEL: service.name}},
            "policyTypes": ["Ingress"]}


class ModelPipeline(pulumi.ComponentResource):
    """Argo Workflows and, per service with `pipeline`, the WorkflowTemplate that builds, tunes and publishes a new version of its model."""

    workflow_templates: pulumi.Output[dict[str, str]]
    """Per service, `<namespace>/<name>` of its WorkflowTemplate (`argo submit -n <namespace> --from workflowtemplate/<name> -p version=... -p onnx=...`)."""

    def __init__(self, name: str, args: ModelPipelineArgs, opts: Optional[pulumi.ResourceOptions] = None):
        a = validated(ModelPipelineInputs, args, "ModelPipeline")
        init_component(self, "ModelPipeline", name, opts)
        argo_namespace = namespace(f"{name}-namespace", NAMESPACE, resource_opts(self), app=RELEASE, pod_security="restricted")
        in_namespace = resource_opts(self, depends_on=[argo_namespace])
        k8s.networking.v1.NetworkPolicy(
            f"{name}-networkpolicy",
            metadata={"name": RELEASE, "namespace": NAMESPACE, "labels": standard_labels(RELEASE)},
            spec=argo_network_policy_spec(), opts=in_namespace)
        self.release = helm_release(f"{name}-release", RELEASE, versions.ARGO_WORKFLOWS, NAMESPACE, argo_values(a.system_node_selector), in_namespace)
        # Prometheus scrapes the controller's metrics port (the chart names it `metrics`; the
        # argo NetworkPolicy admits the monitoring namespace to it).
        k8s.apiextensions.CustomResource(
            f"{name}-podmonitor", api_version="monitoring.coreos.com/v1", kind="PodMonitor",
            metadata={"name": "workflow-controller", "namespace": NAMESPACE, "labels": standard_labels(RELEASE)},
            spec=pod_monitor_spec(CONTROLLER_POD_LABELS, "metrics"),
            opts=resource_opts(self, depends_on=[self.release]))
        groups = {g.name: g for g in a.gpu_groups}
        refs: dict[str, pulumi.Input[str]] = {}
        for service in a.services:
            group = groups[base_version(service).gpu.group]
            template = self._pipeline(name, service, group, a.weights[service.k8s_namespace], a.priority_class, a.submitters)
            refs[service.name] = pulumi.Output.concat(service.k8s_namespace, "/", template.metadata["name"])
        self.workflow_templates = pulumi.Output.all(**refs) if refs else pulumi.Output.from_input({})
        self.register_outputs({"workflowTemplates": self.workflow_templates})

    def _pipeline(self, name: str, service: Service, group: NodeGroup, weights: WeightsRef,
                  priority_class: Optional[pulumi.Input[str]],
                  submitters: list[PipelineSubmitter]) -> k8s.apiextensions.CustomResource:
        ns, own = service.k8s_namespace, pipeline_name(service)
        logical = f"{name}-{service.name}"
        labels = standard_labels(own, **{COMPONENT_KEY: COMPONENT, PIPELINE_LABEL: service.name})
        meta = {"name": own, "namespace": ns, "labels": labels}
        opts = resource_opts(self)
        account = k8s.core.v1.ServiceAccount(f"{logical}-sa", metadata=meta, opts=opts)
        role = k8s.rbac.v1.Role(f"{logical}-role", metadata=meta, rules=EXECUTOR_RULES, opts=opts)
        k8s.rbac.v1.RoleBinding(
            f"{logical}-rolebinding", metadata=meta,
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata["name"]},
            subjects=[{"kind": "ServiceAccount", "name": account.metadata["name"], "namespace": ns}], opts=opts)
        submit = {**meta, "name": f"{own}-submit"}
        submit_role = k8s.rbac.v1.Role(f"{logical}-submitters", metadata=submit, rules=submit_rules(own), opts=opts)
        if submitters:
            k8s.rbac.v1.RoleBinding(
                f"{logical}-submitters-binding", metadata=submit,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": submit_role.metadata["name"]},
                subjects=submit_subjects(submitters), opts=opts)
        k8s.networking.v1.NetworkPolicy(f"{logical}-networkpolicy", metadata=meta,
                                        spec=pipeline_network_policy_spec(service), opts=opts)
        data = config_map_data(service.pipeline)
        config_map = k8s.core.v1.ConfigMap(
            f"{logical}-tools", metadata={"name": tools_name(service, data), "namespace": ns, "labels": labels},
            data=data, opts=opts)
        return k8s.apiextensions.CustomResource(
            f"{logical}-workflowtemplate", api_version="argoproj.io/v1alpha1", kind="WorkflowTemplate", metadata=meta,
            spec=workflow_template_spec(service, group, weights, config_map.metadata["name"], priority_class),
            # The chart installs the WorkflowTemplate CRD.
            opts=resource_opts(self, depends_on=[self.release]))
