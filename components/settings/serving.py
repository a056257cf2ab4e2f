"""`services`: each Triton service, its versions, auth, autoscaling, retries and mirror, with the
checks of one service.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal, Mapping, Optional

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from inference_platform.core import grammar
from inference_platform.settings.base import (
    DnsLabel,
    Host,
    HttpsUrl,
    Image,
    Model,
    Number,
    Quantity,
    RelativePath,
    ShortName,
    Subdomain,
    Text,
    _checked,
    _mode_settings,
)
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.llm import ITL_BOUNDS_MS, TTFT_BOUNDS_MS, Llm, LlmObjectives, LlmRouting, llm_setting_problems
from inference_platform.settings.triton_flags import EXIT_TIMEOUT_FLAG, FlagValue, _flag_values_as_text, triton_flag_problem
from inference_platform.settings.tuning import (
    TRITON_IMAGE,
    ServicePipeline,
    Tuning,
    TuningGoals,
    llm_tuning_problems,
    mig_goal_problems,
)


class JwtAuth(Model):
    issuer: Text
    """Token issuer (`iss`)."""
    jwks_uri: HttpsUrl
    """URL of the issuer's JSON Web Key Set."""
    audiences: list[Text] = []
    """Accepted audiences (`aud`); empty accepts any, which a production stack refuses."""


class BasicAuthRotation(Model):
    generation: int = Field(default=1, ge=1, le=1000)
    """The credential clients are given (the Secret and the `credentials` output). Raise it by one to rotate: a new username and password are generated, and the gateway accepts them beside the `previous` generation's. Generation 1 has the username `<name>`, generation n the username `<name>-g<n>`."""
    previous: Optional[int] = Field(default=None, ge=1, le=1000)
    """A generation the gateway still accepts while clients move to the new one (lower than `generation`); remove the key to revoke it."""

    @model_validator(mode="after")
    def _previous_before_current(self) -> "BasicAuthRotation":
        if self.previous is not None and self.previous >= self.generation:
            raise ValueError(f"basic.previous {self.previous} must be lower than basic.generation {self.generation}; "
                             "allowed: an earlier generation still accepted during a rotation")
        return self


class AuthSettings(Model):
    mode: Literal["basic", "jwt", "none"] = "basic"
    """`basic`: generated credentials checked at the mesh; `jwt`: tokens from an identity provider; `none`: open (non-production stacks only)."""
    realm: Optional[Annotated[str, AfterValidator(grammar.header_token)]] = None
    """Basic Auth realm (default: the service name) of the VirtualService's 401 to a request with no Basic credential, the gate behind the gateway's basic_auth filter: 1-64 printable ASCII characters without `"` or `\\`. The filter answers first, with the request's URL as the realm."""
    jwt: Optional[JwtAuth] = None
    """Identity provider, for mode `jwt`."""
    basic: Optional[BasicAuthRotation] = None
    """Basic Auth credential rotation, for mode `basic` (default: generation 1, no previous). See the rotation procedure in docs/operations.md."""

    @model_validator(mode="after")
    def _jwt_needs_issuer(self) -> "AuthSettings":
        _mode_settings("mode", self.mode, "jwt", "jwt", self.jwt, "jwt.issuer and jwt.jwksUri")
        if self.basic is not None and self.mode != "basic":
            raise ValueError(f"basic applies to mode 'basic' only, mode is '{self.mode}'")
        return self


def _triton_model_label(value: str) -> str:
    try:
        usable = bool(grammar.label_value(value))  # a label value may be empty; a model name may not
    except ValueError:
        usable = False
    if not usable:
        raise ValueError(f"{value!r} is not a Triton model name usable as a Kubernetes label value; allowed: "
                         "1-63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric")
    return value


# A Triton model name used as a Prometheus label matcher through a Kubernetes label selector.
TritonModelLabel = Annotated[str, AfterValidator(_triton_model_label)]


class Autoscaling(Model):
    enabled: bool = True
    """Scale each version with an HPA on Triton's average queue time and its backlog of waiting requests."""
    min_replicas: int = Field(default=1, ge=1, le=1000)
    """Fewest replicas per version."""
    max_replicas: int = Field(default=3, ge=1, le=1000)
    """Most replicas per version."""
    queue_time_target_us: int = Field(default=50000, ge=100, le=600_000_000)
    """Target per-pod average queue time, microseconds."""
    pending_requests_target: int = Field(default=16, ge=1, le=100_000)
    """Target per-pod number of requests waiting in Triton's queue (the pod's worst model, or `queueTimeModel`), a second HPA metric beside queue time; the HPA follows whichever asks for more replicas. Triton adds queue time only for requests that succeed, so when a saturated server rejects or times out requests its queue time falls while this backlog keeps rising. Set it to about twice what one replica batches at once (preferred batch size times instances): lower scales out under normal load."""
    scale_down_stabilization_seconds: int = Field(default=300, ge=0, le=3600)
    """How long load must stay low before replicas are removed."""
    queue_time_model: Optional[TritonModelLabel] = None
    """Triton model whose queue time and backlog the HPA scales on (e.g. the bottleneck step of an ensemble). Default: the worst model of each pod, i.e. the highest per-model values. It becomes a selector on Triton's `model` label, so it must also be a Kubernetes label value (at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric). A name no pod serves gives the HPA no metric, and it keeps the current replica count."""

    @model_validator(mode="after")
    def _ordered(self) -> "Autoscaling":
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas ({self.min_replicas}) exceeds maxReplicas ({self.max_replicas})")
        return self


# Envoy retry conditions that only fire when the request never reached Triton (or Triton
# refused it before running it): retrying them never runs a model twice.
SAFE_RETRY_CONDITIONS = "connect-failure,refused-stream,unavailable"


class Retries(Model):
    attempts: int = Field(default=2, ge=0, le=10)
    """Retries per request after the first try (0 disables retries: Istio then sets no retry policy at all, rather than its own default of 2 retries)."""
    per_try_timeout_seconds: Optional[Number] = Field(default=None, ge=0.001, le=3600)
    """Timeout of each try, seconds (0.001-3600; default: the service's `timeoutSeconds`, so a long inference is never cut and re-run). At most `timeoutSeconds`: the route timeout bounds all tries together. A shorter per-try timeout retries a slow try only if `retryOn` holds `5xx`, `gateway-error` or `reset` (Envoy counts an expired try as a reset), which runs the model again."""
    retry_on: Annotated[str, AfterValidator(grammar.retry_conditions)] = SAFE_RETRY_CONDITIONS
    """Envoy retry conditions, comma-separated (HTTP ones of `x-envoy-retry-on`, gRPC ones of `x-envoy-retry-grpc-on`, or HTTP status codes). The default retries only requests Triton never ran: `connect-failure` (no connection to the pod), `refused-stream` (HTTP/2 REFUSED_STREAM, sent before processing), `unavailable` (gRPC status 14, which Triton returns while it is not ready). `5xx`, `gateway-error`, `reset` and status codes also retry requests that reached Triton and may have run on a GPU."""


class Mirror(Model):
    version: DnsLabel
    """Version that receives a copy of live traffic (its responses are discarded)."""
    percent: Number = Field(default=100.0, ge=0.0001, le=100)
    """Share of requests copied."""


class ModelRepository(Model):
    cache: Literal["fileShare", "s3"]
    """Weight cache holding the model repository."""
    path: RelativePath
    """Path inside the file share, or key prefix inside the bucket (relative, no `..`)."""


class GpuRequest(Model):
    group: DnsLabel
    """GPU node group the version runs on."""
    count: int = Field(default=1, ge=1, le=16)
    """GPUs (or GPU slices / shares) per replica."""
    mig_profile: Optional[str] = Field(default=None, pattern=r"^[0-9]g\.[0-9]+gb(\+me)?$")
    """MIG profile of the slice, for groups with MIG strategy `mixed` (e.g. `1g.10gb`)."""


class Resources(Model):
    cpu: Quantity = "4"
    """CPU request per replica."""
    memory: Quantity = "16Gi"
    """Memory request per replica."""
    cpu_limit: Optional[Quantity] = None
    """CPU limit (default: no CPU limit, avoiding throttling); at least the request."""
    memory_limit: Optional[Quantity] = None
    """Memory limit (default: the memory request); at least the request."""
    shm_size: Quantity = "1Gi"
    """Size of the memory-backed /dev/shm."""

    @model_validator(mode="after")
    def _limits_cover_requests(self) -> "Resources":
        for limit, request, key in ((self.cpu_limit, self.cpu, "cpuLimit"), (self.memory_limit, self.memory, "memoryLimit")):
            if limit is not None and grammar.quantity(limit) < grammar.quantity(request):
                raise ValueError(f"{key} {limit} is below the request {request}; allowed: a limit at least the request")
        return self


class ModelControl(Model):
    mode: Literal["none", "poll", "explicit"] = "none"
    """Triton `--model-control-mode`: load all at start, poll the repository, or load only `load`. In every mode Triton's model-control API is closed to clients (only the service's admin key, in the Secret `<service>-triton-admin-key`, opens it)."""
    load: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")]] = []
    """Models to load, mode `explicit` only (model directory names)."""
    poll_seconds: int = Field(default=30, ge=1, le=86400)
    """Repository poll interval, mode `poll`."""

    @model_validator(mode="after")
    def _load_only_explicit(self) -> "ModelControl":
        if self.mode == "explicit" and not self.load:
            raise ValueError("mode 'explicit' needs load: the models to load")
        if self.mode != "explicit" and self.load:
            raise ValueError(f"load applies to mode 'explicit' only, mode is '{self.mode}'")
        return self


class Provenance(Model):
    """Where a version made by the model pipeline came from (its stack-file patch records it)."""

    workflow: Subdomain
    """The Argo workflow that built and tuned it (`argo get -n <namespace> <workflow>`)."""
    onnx: RelativePath
    """The trained model's ONNX file in the base version's weight cache, as the workflow was given it."""
    onnx_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of that ONNX file as the workflow read it."""


class Version(Model):
    name: Annotated[str, _checked(grammar.dns_label, 20)]
    """Version name (DNS label): the pods' `version` label and the Istio subset."""
    image: Image
    """Triton container image, with a pinned tag or digest."""
    weight: int = Field(ge=0, le=100)
    """Percent of the service's traffic (weights of a service sum to 100; 0 keeps the version deployed without traffic)."""
    model_repository: ModelRepository
    """Where the version's model repository lives."""
    gpu: GpuRequest
    """GPU placement and share of each replica."""
    resources: Resources = Resources()
    """CPU, memory and /dev/shm of each replica."""
    model_control: ModelControl = ModelControl()
    """Triton model control."""
    model_load_seconds: int = Field(default=420, ge=10, le=7200)
    """Expected model load time; the startup probe allows at least this."""
    startup_budget_seconds: int = Field(default=900, ge=30, le=7200)
    """How long the startup probe waits for readiness before restarting the pod."""
    server_args: Annotated[dict[str, FlagValue], BeforeValidator(_flag_values_as_text)] = {}
    """Extra Triton server flags without the leading `--`, e.g. `{log-verbose: "1"}`; only flags the platform does not set itself are allowed (see TRITON_SERVER_FLAGS), each value in that flag's grammar (integer, true/false, a choice, or one printable token). Flags Triton accepts several times (backend-config, metrics-config, cache-config, trace-config, rate-limit-resource, host-policy, model-load-gpu-limit, cuda-memory-pool-byte-size) take a list, rendered as one `--flag=value` per item in order. `exit-timeout-secs` may only raise the platform's value, the service's timeoutSeconds (docs/serving.md: Graceful shutdown)."""
    model_config_name: Optional[str] = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$")
    """Tuned config variant, Triton's `--model-config-name` (from the model's `configs/` folder)."""
    replicas: int = Field(default=1, ge=0, le=1000)
    """Fixed replica count, used only when autoscaling is disabled."""
    autoscaling: Optional[Autoscaling] = None
    """Autoscaling of this version (default: the service's)."""
    tuning: Optional[Tuning] = None
    """Tune this version's model: a Job on the version's GPU group and share. Model Analyzer writes the best configurations to the weight cache; for a version with an LLM engine, GenAI-Perf finds the most requests in flight that meet the service's llmObjectives (`tuning.llm`; docs/tuning.md)."""
    provenance: Optional[Provenance] = None
    """Set by the model pipeline's patch: the workflow and the ONNX file (path and SHA-256) the version was built from, recorded as annotations on its Deployment."""
    llm_backend: Optional[Literal["tensorrtllm", "vllm"]] = None
    """LLM backend the version's models run on (`tensorrtllm`, `vllm`): its LLM dashboard panels are shown, and the GPU memory alert skips its pods, since both engines reserve most GPU memory for their KV cache by design."""
    llm: Optional[Llm] = None
    """The large language model the version serves: engine, architecture, context, concurrency, data types and tensor parallelism; the plan checks that it fits the version's GPU share (docs/serving.md: LLM memory fit)."""

    @field_validator("server_args")
    @classmethod
    def _allowed_flags(cls, args: dict[str, FlagValue]) -> dict[str, FlagValue]:
        for flag, value in args.items():
            problem = triton_flag_problem(flag, value)
            if problem:
                raise ValueError(problem)
        return args

    @model_validator(mode="after")
    def _one_llm_engine(self) -> "Version":
        if self.llm is None:
            return self
        if self.llm_backend is None:
            object.__setattr__(self, "llm_backend", self.llm.engine)  # frozen model: set once, at validation
        elif self.llm_backend != self.llm.engine:
            raise ValueError(f"llmBackend {self.llm_backend} differs from llm.engine {self.llm.engine}; "
                             "allowed: the same backend, or llmBackend left out")
        return self

    @property
    def serves_openai(self) -> bool:
        """Whether the version's Triton runs inside the OpenAI-compatible frontend (`llm.openai`)."""
        return self.llm is not None and self.llm.openai is not None

    @model_validator(mode="after")
    def _budget_covers_load(self) -> "Version":
        if self.startup_budget_seconds < self.model_load_seconds:
            raise ValueError(
                f"startupBudgetSeconds ({self.startup_budget_seconds}) is shorter than modelLoadSeconds "
                f"({self.model_load_seconds}); allowed: startupBudgetSeconds >= modelLoadSeconds"
            )
        return self


class Service(Model):
    name: ShortName
    """Service name (DNS label): the Kubernetes Service and, by default, the namespace."""
    namespace: Optional[DnsLabel] = None
    """Namespace (default: the service name); services may share one. Not a system namespace (`default`, `kube-*`) nor one the platform creates (docs/reference.md: Reserved namespaces)."""
    hosts: list[Host] = Field(min_length=1)
    """Host names served through the customer Gateway (no wildcards)."""
    auth: AuthSettings = AuthSettings()
    """Client authentication at the mesh."""
    autoscaling: Autoscaling = Autoscaling()
    """Autoscaling of every version (a version may override)."""
    timeout_seconds: Number = Field(default=60, ge=0.001, le=3600)
    """Request timeout at the mesh, seconds (0.001-3600): the longest a request may take, all retries included. Triton's exit timeout and the pods' termination grace period follow it, so a rollout or scale-down lets requests of this length finish."""
    retries: Retries = Retries()
    """Retries at the mesh (docs/serving.md: Timeouts and retries)."""
    mirror: Optional[Mirror] = None
    """Copy a share of live traffic to a shadow version."""
    versions: list[Version] = Field(min_length=1)
    """Deployed versions; weights sum to 100."""
    llm_objectives: Optional[LlmObjectives] = None
    """Latency objectives of the service's LLM versions (those with `llm`), each with multi-window burn-rate alerts."""
    llm_routing: LlmRouting = LlmRouting()
    """Routing of an LLM service (one whose versions have `llm.openai`): the endpoint pickers' failure mode (docs/serving.md: LLM routing)."""
    pipeline: Optional[ServicePipeline] = None
    """The model pipeline (needs modelPipeline.enabled): an Argo WorkflowTemplate that builds, tunes and publishes a new version of this service's model and ends in a stack-file patch for it as a canary."""

    @property
    def k8s_namespace(self) -> str:
        return self.namespace or self.name

    @property
    def llm_routed(self) -> bool:
        """An LLM service served through the OpenAI frontend (a version has `llm.openai`): routed
        through the Gateway API Inference Extension. A version with `llm` alone keeps Triton's own
        endpoints behind the classic VirtualService."""
        return any(v.serves_openai for v in self.versions)

    @property
    def per_try_timeout_seconds(self) -> float:
        """Each try's timeout: the one set, or the whole route timeout."""
        per_try = self.retries.per_try_timeout_seconds
        return self.timeout_seconds if per_try is None else per_try

    @property
    def route_timeout_whole_seconds(self) -> int:
        """The route timeout rounded up to whole seconds (Triton's exit timeout is in seconds)."""
        return math.ceil(self.timeout_seconds)

    def timing_problems(self) -> list[tuple[KeyPath, str]]:
        """Retry and shutdown timings that contradict the route timeout (paths relative to the service)."""
        problems: list[tuple[KeyPath, str]] = []
        per_try = self.retries.per_try_timeout_seconds
        if per_try is not None and per_try > self.timeout_seconds:
            problems.append((("retries", "perTryTimeoutSeconds"),
                             f"{per_try:g} s exceeds the service's timeoutSeconds ({self.timeout_seconds:g} s), "
                             "which bounds all tries together; allowed: at most timeoutSeconds (leave it unset for the same value)"))
        for vi, version in enumerate(self.versions):
            exit_timeout = version.server_args.get(EXIT_TIMEOUT_FLAG)
            if isinstance(exit_timeout, str) and int(exit_timeout) < self.route_timeout_whole_seconds:
                problems.append((("versions", vi, "serverArgs", EXIT_TIMEOUT_FLAG),
                                 f"{exit_timeout} s is shorter than the service's timeoutSeconds ({self.timeout_seconds:g} s): "
                                 "a rollout or scale-down would cut requests still within their timeout; "
                                 f"allowed: at least {self.route_timeout_whole_seconds} (or leave it out: the platform sets it)"))
        return problems


def gpu_request_problems(gpu: GpuRequest, groups: Mapping[str, NodeGroup]) -> list[tuple[KeyPath, str]]:
    """A GPU request against the node groups (paths relative to the request): its group is a
    GPU group, and it names a MIG slice exactly when the group's MIG strategy is mixed."""
    group = groups.get(gpu.group)
    if group is None or not group.is_gpu:
        gpu_names = sorted(name for name, g in groups.items() if g.is_gpu)
        return [(("gpu", "group"), f"no GPU node group named {gpu.group!r}; GPU groups: {', '.join(gpu_names) or 'none'}")]
    mixed = group.gpu.sharing.mode == "mig" and group.gpu.sharing.effective_mig_strategy == "mixed"
    if gpu.mig_profile is not None and not mixed:
        return [(("gpu", "migProfile"), f"migProfile applies to groups with MIG strategy 'mixed'; group {group.name!r} is not one")]
    if mixed and gpu.mig_profile is None:
        return [(("gpu", "migProfile"), f"group {group.name!r} uses MIG strategy 'mixed': say which slice with migProfile")]
    return []


def service_problems(svc: Service, groups: Mapping[str, NodeGroup]) -> list[tuple[KeyPath, str]]:
    """What one service's own settings contradict, against the node groups its versions name
    (paths relative to the service): timings, weights, version names, GPU groups and MIG
    profiles, the mirror's version. The stack file's cross checks and a TritonService used
    alone both run it."""
    problems: list[tuple[KeyPath, str]] = list(svc.timing_problems())
    total = sum(v.weight for v in svc.versions)
    if total != 100:
        weights = " + ".join(str(v.weight) for v in svc.versions)
        problems.append((("versions",), f"version weights sum to {total} ({weights}); they must sum to 100"))
    version_names: set[str] = set()
    for vi, v in enumerate(svc.versions):
        vpath: KeyPath = ("versions", vi)
        if v.name in version_names:
            problems.append((vpath + ("name",), f"duplicate version name {v.name!r} in service {svc.name!r}"))
        version_names.add(v.name)
        problems += [(vpath + path, problem) for path, problem in gpu_request_problems(v.gpu, groups)]
        if v.tuning is not None and v.tuning.sdk_image is None and not TRITON_IMAGE.match(v.image):
            problems.append((vpath + ("tuning", "sdkImage"), f"required: image {v.image!r} is not tagged "
                             "<registry>/tritonserver:<YY.MM>-<flavour>, so the Triton SDK image of its release is unknown; "
                             "allowed: a Model Analyzer image of the same Triton release"))
        problems += tuning_share_problems(v, groups, vpath + ("tuning",), v.tuning)
        problems += [(vpath + path, why) for path, why in engine_image_problems(v)]
        problems += [(vpath + path, why) for path, why in openai_frontend_problems(v)]
        if v.llm is not None:
            problems += [(vpath + ("llm", *path), why) for path, why in llm_setting_problems(v.llm)]
        problems += [(vpath + path, why) for path, why in vllm_repository_problems(v)]
        if v.tuning is not None:
            problems += [(vpath + ("tuning", *path), why) for path, why in llm_tuning_problems(
                v.tuning, v.llm_backend, v.llm.max_concurrent_sequences if v.llm else None,
                v.llm.max_context_tokens if v.llm else None, svc.llm_objectives is not None)]
    if svc.pipeline is not None:
        base = next((v for v in svc.versions if v.name == svc.pipeline.base_version), None)
        if base is not None:
            problems += tuning_share_problems(base, groups, ("pipeline", "tuning"), svc.pipeline.tuning)
    if svc.mirror is not None and svc.mirror.version not in version_names:
        problems.append((("mirror", "version"), f"no version named {svc.mirror.version!r}; versions: {', '.join(sorted(version_names))}"))
    return problems + objective_problems(svc) + llm_routing_problems(svc)


# llm-d-router-gateway v0.10.0 charts/router/templates/_helpers.tpl "llm-d-router.name": the
# endpoint picker's objects are named after the release's first 40 characters plus `-epp`.
ENDPOINT_PICKER_RELEASE_MAX = 40


def llm_basic_auth_reach_problems(svc: Service, reaches_its_gateway: bool, needs: str) -> list[tuple[KeyPath, str]]:
    """Basic Auth on an LLM service is checked by a filter and a DENY policy without a selector in
    the ingress gateway's namespace (mesh/basic_auth.py); the service's own Gateway runs in the
    service's namespace, so they reach it only from Istio's root namespace (istio/istio 1.30.3
    pilot/pkg/model/authorization.go: policies are looked up in the root namespace and the
    workload's own). `reaches_its_gateway`: they are put there; else one problem, `needs` saying
    what would. The stack's check and TritonService's own input check both run this."""
    if reaches_its_gateway or not (svc.llm_routed and svc.auth.mode == "basic"):
        return []
    return [(("auth", "mode"), f"basic on a service whose versions serve the OpenAI API needs {needs} (the check of its "
             "own Gateway lives in Istio's root namespace, the only namespace whose policies reach it); allowed: jwt, "
             "or none outside production")]


def llm_routing_problems(svc: Service) -> list[tuple[KeyPath, str]]:
    """What the Gateway API routing of an LLM service cannot do (docs/serving.md: LLM routing)."""
    if not svc.llm_routed:
        if "llm_routing" in svc.model_fields_set:
            return [(("llmRouting",), "the service has no version with `llm.openai`, so nothing is routed by an endpoint "
                     "picker; allowed: llmRouting on a service whose versions serve the OpenAI API")]
        return []
    problems: list[tuple[KeyPath, str]] = []
    if svc.mirror is not None:
        problems.append((("mirror",), "not available for an LLM service: each version's endpoint picker chooses the pod; "
                         "allowed: no mirror (shift a small weight to the new version instead)"))
    if "retries" in svc.model_fields_set:
        problems.append((("retries",), "not available for an LLM service: its route never retries a generation; "
                         "allowed: no retries key"))
    for vi, v in enumerate(svc.versions):
        if not v.serves_openai:
            where = ("versions", vi, "llm") + (("openai",) if v.llm is not None else ())
            problems.append((where, "required: every version of a service whose versions serve the OpenAI API is reached "
                             "through the OpenAI frontend its InferencePool targets; allowed: llm.openai on every "
                             "version, or the version in another service"))
        release = deployment_name(svc, v)
        if len(release) > ENDPOINT_PICKER_RELEASE_MAX:
            problems.append((("versions", vi, "name"), f"the version's endpoint picker release {release!r} has {len(release)} "
                             f"characters; allowed: service and version names of at most {ENDPOINT_PICKER_RELEASE_MAX} together "
                             "with the dash (llm-d-router-gateway truncates longer ones)"))
    return problems


def objective_problems(svc: Service) -> list[tuple[KeyPath, str]]:
    """LLM objectives need LLM versions whose engines measure them, at a bound of their histograms."""
    o = svc.llm_objectives
    if o is None:
        return []
    engines = sorted({v.llm.engine for v in svc.versions if v.llm is not None})
    if not engines:
        return [(("llmObjectives",), "the service has no version with `llm`, so nothing measures its objectives; "
                 "allowed: llmObjectives on a service with LLM versions")]
    problems: list[tuple[KeyPath, str]] = []
    for key, value, bounds, what in (("timeToFirstTokenMs", o.time_to_first_token_ms, TTFT_BOUNDS_MS, "time to first token"),
                                     ("interTokenLatencyMs", o.inter_token_latency_ms, ITL_BOUNDS_MS, "inter-token latency")):
        if value is None:
            continue
        for engine in engines:
            if engine not in bounds:
                problems.append((("llmObjectives", key), f"engine {engine} exports no {what} metric at the pinned "
                                 f"release; allowed: this objective only on services whose LLM versions run {', '.join(bounds)}"))
            elif value not in bounds[engine]:
                problems.append((("llmObjectives", key), f"{value:g} ms is not a bound of {engine}'s {what} histogram, "
                                 f"so no series counts the requests within it; allowed: {', '.join(f'{b:g}' for b in bounds[engine])}"))
    if o.time_to_first_token_ms is not None:
        problems += first_response_histogram_problems(svc)
    return problems


# Triton core's first-response histogram (the time to first token of TensorRT-LLM) is off unless
# the server is started with this setting (triton-inference-server/core r25.01
# src/metric_model_reporter.cc: latency_histograms_enabled_ only on histogram_latencies=true;
# server docs/user_guide/metrics.md "Histograms").
FIRST_RESPONSE_HISTOGRAM_SETTING = "histogram_latencies=true"


def _histogram_latencies_on(version: Version) -> bool:
    settings = version.server_args.get("metrics-config", [])
    return FIRST_RESPONSE_HISTOGRAM_SETTING in ([settings] if isinstance(settings, str) else settings)


def first_response_histogram_problems(svc: Service) -> list[tuple[KeyPath, str]]:
    """A TensorRT-LLM version of a service with a time-to-first-token objective must export
    Triton's first-response histogram: behind the OpenAI frontend it cannot (main.py r25.01
    starts Triton with no metrics setting), and tritonserver needs the setting in serverArgs."""
    problems: list[tuple[KeyPath, str]] = []
    for vi, v in enumerate(svc.versions):
        if v.llm is None or v.llm.engine != "tensorrtllm":
            continue
        if v.serves_openai:
            problems.append((("llmObjectives", "timeToFirstTokenMs"), f"version {v.name} runs TensorRT-LLM behind the "
                             "OpenAI frontend, which starts Triton without its first-response histogram, so no series "
                             "measures the objective; allowed: the objective on services whose TensorRT-LLM versions "
                             "run tritonserver (no llm.openai), or on vLLM versions"))
        elif not _histogram_latencies_on(v):
            problems.append((("versions", vi, "serverArgs", "metrics-config"), "a time-to-first-token objective on "
                             "TensorRT-LLM is measured by Triton's first-response histogram, which is off by default; "
                             f"allowed: metrics-config: [{FIRST_RESPONSE_HISTOGRAM_SETTING}] in the version's serverArgs"))
    return problems


# NGC images whose tag ends so lack the OpenAI frontend's Python packages: the server's
# python/openai/README.md (r25.01 to r26.06), section TensorRT-LLM, has the user
# `pip install /opt/tritonserver/python/triton*.whl` and the frontend's requirements.txt in the
# container before starting it; its vLLM section starts it at once in the -vllm-python-py3 image.
FRONTEND_LESS_IMAGE = re.compile(r"(^|/)tritonserver:[0-9]{2}\.[0-9]{2}-trtllm-python-py3$")
# The LLM backends each NGC Triton image flavour carries, by tag `<yy.mm>-<flavour>` of
# nvcr.io/nvidia/tritonserver. NGC's catalog overview: `-py3` holds the TensorFlow, PyTorch,
# TensorRT, ONNX and OpenVINO backends, `-pyt-python-py3` PyTorch and Python only, `-tf2-python-py3`
# TensorFlow 2 and Python only; triton-inference-server/server#7346 (a maintainer, 24.05):
# "-trtllm-python-py3 only has TRTLLM and Python backends"; #7637: "vLLM container image does not
# carry any other backends", and vllm_backend's README pulls `<xx.yy>-vllm-python-py3` for vLLM
# (since 23.10) or adds the backend to the default container by hand. Other flavours (`-py3-min`,
# `-py3-sdk`, `-py3-igpu`) and every other image are not judged.
NGC_TRITON_IMAGE = re.compile(r"^nvcr\.io/nvidia/tritonserver:(?P<release>[0-9]{2}\.[0-9]{2})-(?P<flavour>[a-z0-9-]+?)(@sha256:[0-9a-f]{64})?$")
NGC_LLM_BACKENDS: dict[str, frozenset[str]] = {
    "py3": frozenset(),
    "pyt-python-py3": frozenset(),
    "tf2-python-py3": frozenset(),
    "vllm-python-py3": frozenset({"vllm"}),
    "trtllm-python-py3": frozenset({"tensorrtllm"}),
}
LLM_BACKEND_FLAVOUR = {"vllm": "vllm-python-py3", "tensorrtllm": "trtllm-python-py3"}
LLM_BACKEND_TITLE = {"vllm": "vLLM", "tensorrtllm": "TensorRT-LLM"}


def engine_image_problems(version: Version) -> list[tuple[KeyPath, str]]:
    """An LLM backend (`llm.engine`, or `llmBackend`) on an NGC Triton image that does not carry
    it: Triton would fail to load the model (`unable to find backend`). Images other than NGC's
    known flavours cannot be judged and are accepted (docs/serving.md: Images and engines)."""
    backend = version.llm_backend
    match = NGC_TRITON_IMAGE.match(version.image)
    if backend is None or match is None or match["flavour"] not in NGC_LLM_BACKENDS:
        return []
    if backend in NGC_LLM_BACKENDS[match["flavour"]]:
        return []
    key = "llm.engine" if version.llm is not None else "llmBackend"
    return [(("image",), f"{version.image} has no {LLM_BACKEND_TITLE[backend]} backend (NGC's -{match['flavour']} "
             f"image), so Triton cannot load the version's model with {key} {backend}; allowed: "
             f"nvcr.io/nvidia/tritonserver:{match['release']}-{LLM_BACKEND_FLAVOUR[backend]}, or an image of your own "
             "that carries the backend")]


# The serverArgs the frontend passes on to its in-process Triton, as its own flag.
FRONTEND_SERVER_ARGS = frozenset({"log-verbose"})


def openai_frontend_problems(version: Version) -> list[tuple[KeyPath, str]]:
    """What a version behind the OpenAI frontend asks for that the frontend cannot do. Its
    main.py (triton-inference-server/server r25.01, python/openai/openai_frontend/main.py)
    starts Triton in-process with the model repository and a log level only: every model of
    the repository loaded, no other server flag."""
    if not version.serves_openai:
        return []
    problems: list[tuple[KeyPath, str]] = []
    if FRONTEND_LESS_IMAGE.search(version.image):
        problems.append((("image",), f"{version.image} does not ship the OpenAI frontend's Python packages (the server's "
                         "python/openai README installs them by hand in that image; the platform installs nothing at "
                         "pod start); allowed: a -vllm-python-py3 image, or an image built from this one with them "
                         "installed (docs/serving.md: OpenAI-compatible endpoints)"))
    for flag in sorted(set(version.server_args) - FRONTEND_SERVER_ARGS):
        problems.append((("serverArgs", flag), "the OpenAI frontend starts Triton with its model repository and log "
                         f"level only, so --{flag} would be ignored; allowed with llm.openai: "
                         f"{', '.join(sorted(FRONTEND_SERVER_ARGS))}"))
    if version.model_control.mode != "none":
        problems.append((("modelControl", "mode"), f"is {version.model_control.mode}, but the OpenAI frontend loads "
                         "every model of the repository (no --model-control-mode at the pinned release); allowed with "
                         "llm.openai: none"))
    if version.model_config_name is not None:
        problems.append((("modelConfigName",), "the OpenAI frontend has no --model-config-name at the pinned release; "
                         "allowed with llm.openai: none (put the tuned config in the model's config.pbtxt)"))
    if version.llm.openai.tokenizer is not None and version.model_repository.cache != "fileShare":
        problems.append((("llm", "openai", "tokenizer"), "the frontend reads the tokenizer from a local folder, and "
                         f"modelRepository.cache {version.model_repository.cache} is not mounted in the pod; allowed: "
                         "a tokenizer with modelRepository.cache fileShare"))
    return problems


def vllm_repository_problems(version: Version) -> list[tuple[KeyPath, str]]:
    """A vLLM version's model.json names its checkpoint by a path in the pod (`model`), and the
    pod checks model.json before the engine starts (serving/llm_engine.py): both need the file
    share. Triton copies an s3 repository into a new temporary folder at each load
    (LocalizePath), which no model.json can name."""
    if version.llm is None or version.llm.engine != "vllm" or version.model_repository.cache == "fileShare":
        return []
    return [(("modelRepository", "cache"), f"is {version.model_repository.cache}, but a vLLM version's model.json "
             "names its checkpoint by a folder in the pod, and Triton copies an s3 repository to a new temporary "
             "folder at each load; allowed with llm.engine vllm: fileShare")]


def tuning_share_problems(version: Version, groups: Mapping[str, NodeGroup], at: KeyPath,
                          goals: Optional[TuningGoals]) -> list[tuple[KeyPath, str]]:
    """Tuning goals (a version's `tuning`, or a pipeline's measured on `version`) that its GPU
    share cannot honour: GPU metrics on MIG (an LLM version's `tuning`: llm_tuning_problems)."""
    if goals is None:
        return []
    problems: list[tuple[KeyPath, str]] = []
    group = groups.get(version.gpu.group)
    if group is not None and group.is_gpu and group.gpu.sharing.mode == "mig":
        problems += [(at + path, why) for path, why in mig_goal_problems(goals)]
    return problems


def pipeline_problems(svc: Service) -> list[tuple[KeyPath, str]]:
    """A service's pipeline builds for a version it has, whose image names the TensorRT release
    (key paths within the service)."""
    names = [v.name for v in svc.versions]
    base = next((v for v in svc.versions if v.name == svc.pipeline.base_version), None)
    if base is None:
        return [(("pipeline", "baseVersion"), f"no version named {svc.pipeline.base_version!r}; versions: {', '.join(names)}")]
    if not TRITON_IMAGE.match(base.image):
        # A TensorRT engine runs only under the TensorRT release that built it (tuning.tensorrt_image).
        return [(("pipeline", "baseVersion"), f"version {base.name!r} runs {base.image!r}, not an image tagged "
                 "<registry>/tritonserver:<YY.MM>-<flavour>, so the TensorRT release its engine needs is unknown; "
                 "allowed: a base version running such an image")]
    return []


def deployment_name(service: Service, version: Version) -> str:
    """A version's Deployment name: a DNS label (service <= 40, version <= 20 characters)."""
    return f"{service.name}-{version.name}"
