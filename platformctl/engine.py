"""Render the Pulumi program in-process under the SDK's mock runtime.

One engine serves the offline plan and the tests: it runs the program (a stack
file through ``__main__.py``, a settings object straight into the platform, or
another program such as those in examples/), waits for every registration and
returns a ``Plan``: every resource with its type, logical name, parent, provider,
dependencies, options and inputs, secrets redacted.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import runpy
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import pulumi
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import config as runtime_config
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.mocks import MockMonitor, MockResourceArgs, Mocks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import massage
from pulumi.runtime.sync_await import _ensure_event_loop

from inference_platform.settings.errors import ConfigError, RawKey
from inference_platform.settings.loader import settings_from_config
from inference_platform.settings.stack import Settings, plain_text_in_secrets, secure_outside_secrets

from .aliases import new_urn, qualified_type
from .autonaming import bridged_name, kubernetes_name
from .errors import UsageError
from .kube_provider import active_cluster_digest, pinned_provider_environment
from .objects import DuplicateObjectError, check_unique_objects
from .plan_facts import plan_facts
from .plan_model import SECRET, UNKNOWN, Plan, Resource
from .secret_digests import digest_key, key_id, secret_digests
from .stack_keys import stack_keys
from .stack_names import check_stack_name
from .stackfile import read_stack_config

PROJECT = "inference-platform"
ROOT = Path(__file__).resolve().parent.parent
SECURE_PLACEHOLDER = "[secure-placeholder]"

# Pulumi's wire signatures (sdk/python/lib/pulumi/runtime/rpc.py).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
STACK_REFERENCE = "pulumi:pulumi:StackReference"


# --------------------------------------------------------------------------- values


def plain(value: Any) -> Any:
    """A wire value as plain JSON: secrets redacted, unknowns marked, whole floats as ints."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return SECRET
        if sig == _RESOURCE_SIG:
            return value.get("urn")
        if sig is not None:  # assets and archives
            return {k: plain(v) for k, v in value.items() if k != _SIG_KEY}
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if value == _UNKNOWN_VALUE:
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _struct(message) -> dict[str, Any]:
    return plain(json_format.MessageToDict(message)) if message is not None else {}


def _is_secret(value: dict[str, Any]) -> bool:
    return value.get(_SIG_KEY) == _SECRET_SIG


def _inputs_and_digests(message, key: bytes) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """A request's inputs on the wire (kept in memory only), as plain JSON (secrets redacted),
    and the keyed digests of its secret values."""
    if message is None:
        return {}, {}, {}
    wire = json_format.MessageToDict(message)
    inputs = plain(wire)
    return wire, inputs, (secret_digests(wire, _is_secret, key) if _holds_secret(inputs) else {})


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:7]


def _custom_timeouts(request) -> dict[str, str]:
    """The operations a RegisterResourceRequest sets a custom timeout for (the protocol leaves the others empty)."""
    if not request.HasField("customTimeouts"):
        return {}
    timeouts = request.customTimeouts
    return {op: getattr(timeouts, op) for op in ("create", "update", "delete") if getattr(timeouts, op)}


def _aliases(request) -> list[dict[str, Any]]:
    """A RegisterResourceRequest's alias specs as plain dicts, unset fields left out (they
    default to the resource's own name, type, stack, project and parent)."""
    out: list[dict[str, Any]] = []
    for alias in request.aliases:
        if alias.WhichOneof("alias") == "urn":
            out.append({"urn": alias.urn})
            continue
        spec = alias.spec
        fields = {k: getattr(spec, k) for k in ("name", "type", "stack", "project", "parentUrn") if getattr(spec, k)}
        out.append(fields | ({"noParent": True} if spec.noParent else {}))
    return out


# --------------------------------------------------------------------------- mocks


FAKE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: mock, cluster: {server: "https://10.0.0.10:6443"}}]
contexts: [{name: mock, context: {cluster: mock, user: mock}}]
current-context: mock
users: [{name: mock, user: {token: mock}}]
"""


MOCK_SUBNET_CIDR = "192.168.64.0/20"


def _as_wire_secrets(value: Any) -> Any:
    """A Plan's redacted secrets as secret values again, the way the engine returns a stack's outputs."""
    if value == SECRET:
        return {_SIG_KEY: _SECRET_SIG, "value": SECRET}
    if isinstance(value, dict):
        return {k: _as_wire_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_wire_secrets(v) for v in value]
    return value


def _holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_secret(v) for v in value)
    return value == SECRET


class PlatformMocks(Mocks):
    """Believable outputs for the computed fields the program reads.

    `stack_outputs` are the outputs of the stacks a program reads through a StackReference,
    by the stack's name, as a Plan records them: a value `[secret]` is a secret output."""

    def __init__(self, stack_outputs: Optional[dict[str, dict[str, Any]]] = None):
        super().__init__()
        self.stack_outputs = stack_outputs or {}

    def stack_reference(self, stack: str) -> dict[str, Any]:
        """What the engine reads for a StackReference: the outputs, secret ones still secret, and
        which of them hold a secret (`get_output` marks those secret, the others not)."""
        if stack not in self.stack_outputs:
            known = ", ".join(sorted(self.stack_outputs)) or "none"
            raise UsageError(f"the program references stack {stack!r}, whose outputs were not given (given: {known})")
        outputs = self.stack_outputs[stack]
        return {
            "name": stack,
            "outputs": _as_wire_secrets(outputs),
            "secretOutputNames": sorted(k for k, v in outputs.items() if _holds_secret(v)),
        }

    def new_resource(self, args: MockResourceArgs):
        typ, name = args.typ, args.name
        if typ == STACK_REFERENCE:
            # A read: its id is the referenced stack's name.
            return args.resource_id, self.stack_reference(args.resource_id)
        rid = f"{name}-id"
        if typ.startswith("kubernetes:") and not typ.startswith("kubernetes:helm.sh"):
            # Only metadata is read back from Kubernetes objects; echoing whole specs would
            # cost a serialisation round trip per resource for nothing.
            meta = dict(args.inputs.get("metadata") or {})
            # Auto-naming: the provider appends a random suffix; a stable one keeps plans comparable.
            meta.setdefault("name", kubernetes_name(name))
            outputs = {k: args.inputs[k] for k in ("apiVersion", "kind") if k in args.inputs}
            outputs["metadata"] = meta
            return rid, outputs
        outputs = dict(args.inputs)
        given = bridged_name(typ, name, args.inputs)
        if given is not None:
            outputs["name"] = given
        if typ == "kubernetes:helm.sh/v3:Release":
            outputs.pop("values", None)
            outputs.setdefault("name", kubernetes_name(name))
            outputs["status"] = {"status": "deployed", "namespace": outputs.get("namespace", "default")}
        elif typ == "openstack:containerinfra/cluster:Cluster":
            outputs["kubeconfig"] = {
                "raw_config": FAKE_KUBECONFIG,
                "host": "https://10.0.0.10:6443",
                "cluster_ca_certificate": "mock-ca",
                "client_key": "mock-key",
                "client_certificate": "mock-cert",
            }
        elif typ == "openstack:sharedfilesystem/share:Share":
            outputs["exportLocations"] = [
                {"path": f"10.0.0.50:/volumes/_nogroup/{_short_hash(name)}", "preferred": True}
            ]
        elif typ in ("random:index/randomPassword:RandomPassword", "random:index/randomString:RandomString"):
            length = int(outputs.get("length", 24))
            outputs["result"] = (hashlib.sha256(name.encode()).hexdigest() * 4)[:length]
            rid = "none"
        return rid, outputs

    def call(self, args):
        if args.token == "openstack:networking/getSubnet:getSubnet":
            # The CIDR Neutron would report for the cluster's existing subnet.
            return {"id": f"{_short_hash(str(args.args))}-id", "cidr": MOCK_SUBNET_CIDR}
        return {}


class RecordingMonitor(MockMonitor):
    """MockMonitor that also records each registration's options, which Mocks cannot see."""

    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.records: list[Resource] = []
        self.stack_outputs: dict[str, Any] = {}
        self.stack_urn: Optional[str] = None
        self.digest_key = digest_key()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The base class puts only the parent's own type (and the root stack's) before the
        # type; the engine puts the parent's whole chain, which aliases must reproduce.
        return new_urn(runtime_settings.get_stack(), runtime_settings.get_project(), qualified_type(parent) if parent else None, type_, name)

    def ReadResource(self, request):
        """A read of an existing resource (a StackReference): recorded like a registration, with
        the id read and no options; answered without the SDK's async serialisers, as below."""
        urn = self.make_urn(request.parent, request.type, request.name)
        inputs = _struct(request.properties)
        rid, state = self.mocks.new_resource(MockResourceArgs(
            typ=request.type, name=request.name, inputs=inputs, provider=request.provider, resource_id=request.id))
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, rid, state)
        self.records.append(Resource(
            urn=urn, type=request.type, name=request.name, parent=request.parent or None, custom=True,
            provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
            depends_on=sorted(set(request.dependencies)), protect=False, retain_on_delete=False,
            delete_before_replace=False, ignore_changes=[], inputs={**inputs, "id": rid}, outputs=state,
        ))
        state_struct = struct_pb2.Struct()
        state_struct.update(state)
        return resource_pb2.ReadResourceResponse(urn=urn, properties=state_struct)

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = urn
            return resource_pb2.RegisterResourceResponse(urn=urn)
        # The base class converts through the SDK's async (de)serialisers on a worker
        # thread; plain protobuf conversion gives the same values at a fraction of the
        # cost. Mocks see secrets redacted, which none of them reads.
        wire, inputs, digests = _inputs_and_digests(request.object, self.digest_key)
        rid, state = self.mocks.new_resource(
            MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=inputs,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
            )
        )
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, rid, state)
        self.records.append(
            Resource(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent or None,
                custom=bool(request.custom),
                # A provider reference is "<urn>::<id>"; the plan records the URN.
                provider=request.provider.rsplit("::", 1)[0] if request.provider else None,
                depends_on=sorted(set(request.dependencies)),
                property_dependencies={k: sorted(set(v.urns)) for k, v in request.propertyDependencies.items() if v.urns},
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                delete_before_replace=bool(request.deleteBeforeReplace),
                ignore_changes=list(request.ignoreChanges),
                replace_on_changes=list(request.replaceOnChanges),
                inputs=inputs,
                outputs=state,
                custom_timeouts=_custom_timeouts(request),
                aliases=_aliases(request),
                secret_digests=digests,
                active_cluster_digest=active_cluster_digest(request.type, wire, _is_secret, self.digest_key),
            )
        )
        state_struct = struct_pb2.Struct()
        state_struct.update(state)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=rid, object=state_struct)

    def RegisterResourceOutputs(self, request):
        if request.urn == self.stack_urn:
            self.stack_outputs = _struct(request.outputs)
        return super().RegisterResourceOutputs(request)


# --------------------------------------------------------------------------- running


def _without_source_positions() -> None:
    """Skip the SDK's per-resource stack walk: source positions only annotate engine
    diagnostics, and the walk is a sixth of the plan's time."""
    sdk = pulumi.runtime.resource
    if hasattr(sdk, "_get_stack_trace"):
        sdk._get_stack_trace = lambda: sdk.source_pb2.StackTrace()


def _plain_urns() -> None:
    """Before each registration the SDK derives the URN a missing monitor would have
    given, through four Outputs and their tasks, and discards it when there is a
    monitor: a seventh of a plan's time and memory. The same string, computed at once
    when name, type and parent URN are plain strings (every registration's case)."""
    sdk = pulumi.runtime.resource
    original = getattr(sdk.create_urn, "__wrapped__", sdk.create_urn)

    def create_urn(name, type_, parent=None, project=None, stack=None):
        if isinstance(name, str) and isinstance(type_, str) and isinstance(parent, str):
            return pulumi.Output.from_input(parent[0 : parent.rfind("::")] + "$" + type_ + "::" + name)
        return original(name, type_, parent, project, stack)

    create_urn.__wrapped__ = original
    sdk.create_urn = create_urn


# The process's resident memory right after the last full collection (`_few_collections`).
_RESIDENT_AFTER_FULL_COLLECTION = [0]


def _resident_bytes() -> Optional[int]:
    """Resident memory from /proc (Linux), or None where there is none."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def _few_collections():
    """A plan allocates hundreds of thousands of long-lived objects (Outputs, futures);
    the cyclic collector's default thresholds rescan them over and over, which cost
    40% of a 200-service plan. While rendering, collect only the youngest generation:
    what survives it lives until the plan is done, and rescanning the older ones made
    a 1,000-service plan an eighth slower without freeing memory. Afterwards the plan's
    objects stay frozen (one pass over them costs seconds at that size). A later plan in
    the same process (a diff, a rehearsal, the tests) releases and collects them first
    once the process holds half as much memory again as after the last such collection:
    collecting before every plan rescanned everything else that lives on (cached plans, a
    test session's heap) each time, a fifth of a small plan's time. Objects nothing refers
    to are freed at once, frozen or not: what waits is only garbage in reference cycles."""
    thresholds = gc.get_threshold()
    resident = _resident_bytes()
    if resident is None or resident > 1.5 * _RESIDENT_AFTER_FULL_COLLECTION[0]:
        gc.unfreeze()
        gc.collect()
        _RESIDENT_AFTER_FULL_COLLECTION[0] = _resident_bytes() or 0
    gc.freeze()
    gc.set_threshold(20_000, 1_000_000, 1_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.freeze()


@contextlib.contextmanager
def _monitor_calls_inline():
    """The SDK sends every registration to the monitor through the event loop's thread
    pool, built for a real engine's gRPC round trip. The recording monitor answers at
    once, so the hop only adds a thread switch and a loop wake-up per resource (a tenth
    of a large plan): run the calls in place while rendering."""
    loop = _ensure_event_loop()

    def run_in_place(executor, func, *args):
        future = loop.create_future()
        try:
            future.set_result(func(*args))
        except Exception as exn:  # delivered to the awaiting coroutine, as from the pool
            future.set_exception(exn)
        return future

    loop.run_in_executor = run_in_place
    try:
        yield
    finally:
        del loop.run_in_executor


def _run(stack: str, config: dict[str, str], secret_keys: list[str], program: Callable[[], None],
         project: str = PROJECT, mocks: Optional[PlatformMocks] = None, shown: Optional[str] = None) -> Plan:
    """The plan of `program`; `shown` names the stack file the config came from, in errors."""

    with _few_collections(), _monitor_calls_inline(), pinned_provider_environment():
        plan = _render(stack, config, secret_keys, program, project, mocks or PlatformMocks())
    try:
        check_unique_objects(plan)
    except DuplicateObjectError as err:
        if shown is None:
            raise
        # Again, naming the stack keys that made each resource (the settings parse only on failure).
        try:
            check_unique_objects(plan, stack_keys(plan, settings_from_config(config, secret_keys, shown)))
        except DuplicateObjectError as traced:
            raise DuplicateObjectError(f"{shown}: {traced}") from None
        raise err
    return plan


def _render(stack: str, config: dict[str, str], secret_keys: list[str], program: Callable[[], None],
            project: str, mocks: PlatformMocks) -> Plan:
    _without_source_positions()
    _plain_urns()
    monitor = RecordingMonitor(mocks)
    # set_mocks keeps a previous run's root stack; each plan needs its own.
    runtime_settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    runtime_config.set_all_config(config, secret_keys)

    @pulumi.runtime.test
    def execute():
        program()
        # Under mocks the root stack registered its (empty) outputs before the program ran;
        # register the exports now so the monitor sees them.
        root = runtime_settings.get_root_resource()
        root.register_outputs(massage(root.outputs, []))

    execute()
    monitor.records.sort(key=lambda r: r.urn)
    return Plan(stack=stack, resources=monitor.records, outputs=monitor.stack_outputs,
                secret_digest_key=key_id(monitor.digest_key))


def _encode_config_value(value: Any) -> str:
    # The engine hands structured values to the program as JSON text, scalars as strings.
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _replace_secure(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECURE_PLACEHOLDER, True
        out, secret = {}, False
        for k, v in value.items():
            out[k], s = _replace_secure(v)
            secret |= s
        return out, secret
    if isinstance(value, list):
        items = [_replace_secure(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def stack_config(stack_file: Path, project: str = PROJECT) -> tuple[dict[str, str], list[str]]:
    """A stack file's config as the engine would pass it (bare keys in the `project`'s namespace);
    secure values become a marked placeholder."""
    shown = shown_path(stack_file)
    return checked_engine_config(read_stack_config(stack_file, shown), shown, project)


def checked_engine_config(stack_file_config: dict[str, Any], shown: str,
                          project: str = PROJECT) -> tuple[dict[str, str], list[str]]:
    """engine_config, after refusing plain text inside a secret key: the engine marks only
    top-level keys secret, so the program cannot tell a plain value beside a secure one."""
    problems = (plain_text_in_secrets(stack_file_config) + secure_outside_secrets(stack_file_config)
                + keys_read_as_one(stack_file_config, project))
    if problems:
        raise ConfigError(shown, problems, source={k.rpartition(":")[2]: v for k, v in stack_file_config.items()})
    return engine_config(stack_file_config, project)


def keys_read_as_one(stack_file_config: dict[str, Any], project: str = PROJECT) -> list[tuple[tuple, str]]:
    """(key, problem) for every key the engine reads as one written before it: a bare key is the
    project's (`customer` is `inference-platform:customer`), and the engine keeps only the later."""
    first: dict[str, str] = {}
    problems: list[tuple[tuple, str]] = []
    for key in stack_file_config:
        full = _namespaced(key, project)
        if full in first:
            problems.append(((RawKey(key),), f"the same key as {first[full]!r} to the Pulumi engine, which would keep only "
                                             f"the later value; allowed: one of the two"))
        else:
            first[full] = key
    return problems


def engine_config(stack_file_config: dict[str, Any], project: str = PROJECT) -> tuple[dict[str, str], list[str]]:
    """A stack file's `config:` mapping (keys as written) as the engine would pass it."""
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in stack_file_config.items():
        key = _namespaced(key, project)
        value, secret = _replace_secure(value)
        config[key] = _encode_config_value(value)
        if secret:
            secret_keys.append(key)
    return config, secret_keys


def shown_path(stack_file: Path) -> str:
    """The stack file as errors name it: relative to the project where it lies inside."""
    try:
        return str(stack_file.resolve().relative_to(ROOT))
    except ValueError:
        return str(stack_file)


def stack_settings(stack_or_file: Union[str, Path]) -> Settings:
    """A stack file's validated settings, as the program sees them (a stack name or a file)."""
    path = stack_or_file if isinstance(stack_or_file, Path) else stack_path(stack_or_file)
    config, secret_keys = stack_config(path)
    return settings_from_config(config, secret_keys, shown_path(path))


def stack_path(stack: str) -> Path:
    """stacks/Pulumi.STACK.yaml; raises InvalidStackName for a name that could leave stacks/."""
    return ROOT / "stacks" / f"Pulumi.{check_stack_name(stack)}.yaml"


def render_stack(stack: str, stack_file: Optional[Path] = None) -> Plan:
    """Run ``__main__.py`` with a stack file's config; raises ConfigError on invalid config."""
    path = stack_file or stack_path(stack)
    config, secret_keys = stack_config(path)
    return render_config(stack, config, secret_keys, shown_path(path))


def render_config(stack: str, config: dict[str, Any], secret_keys: list[str] = (), shown: Optional[str] = None) -> Plan:
    """Run ``__main__.py`` with config given as a dict of `namespace:key` -> value (from the stack
    file `shown`, which errors name)."""
    encoded = {k: _encode_config_value(v) for k, v in config.items()}

    def program():
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")

    plan = _run(stack, encoded, list(secret_keys), program, shown=shown)
    plan.facts = plan_facts(settings_from_config(config, list(secret_keys), shown or stack, stack))
    return plan


def render_settings(settings, stack: str = "test") -> Plan:
    """Build the platform straight from a Settings object (no stack file)."""
    from inference_platform.platform import InferencePlatform

    plan = render_function(lambda: InferencePlatform(f"{settings.customer}-{settings.environment}", settings), stack)
    plan.facts = plan_facts(settings)
    return plan


def render_function(program: Callable[[], None], stack: str = "test") -> Plan:
    """Run a function that declares resources under the mocks, with no config."""
    return _run(stack, {}, [], program)


def _namespaced(key: str, project: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def program_project(program_dir: Path) -> str:
    """The project name of a Pulumi program, from its Pulumi.yaml."""
    project_file = program_dir / "Pulumi.yaml"
    try:
        project = yaml.safe_load(project_file.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise UsageError(f"{shown_path(project_file)}: not a readable Pulumi project file: {err}") from None
    name = project.get("name") if isinstance(project, dict) else None
    if not isinstance(name, str) or not name:
        raise UsageError(f"{shown_path(project_file)}: the project has no name")
    return name


def render_program(
    program_dir: Path,
    stack: str,
    config: dict[str, Any],
    secret_keys: Sequence[str] = (),
    stack_outputs: Optional[dict[str, dict[str, Any]]] = None,
) -> Plan:
    """Run another Pulumi program (`program_dir/__main__.py`, e.g. one of examples/) as the
    Pulumi CLI would: in its own directory, under its project's name, with `config` keys in
    its project's namespace unless they name one (`kubernetes:context`). The components
    package is importable, as the examples' `-e ../..` requirement makes it. A StackReference
    reads the outputs given in `stack_outputs` under the referenced stack's name (secret ones,
    `[secret]` as a Plan records them, stay secret)."""
    program_dir = program_dir.resolve()
    project = program_project(program_dir)
    encoded = {_namespaced(k, project): _encode_config_value(v) for k, v in config.items()}

    def program():
        with contextlib.chdir(program_dir):
            runpy.run_path(str(program_dir), run_name="__main__")

    return _run(stack, encoded, [_namespaced(k, project) for k in secret_keys], program,
                project=project, mocks=PlatformMocks(stack_outputs))


def render_program_stack(program_dir: Path, stack_file: Path, stack_outputs: Optional[dict[str, dict[str, Any]]] = None) -> Plan:
    """Run a program with one of its stack files (`Pulumi.<stack>.yaml`), secure values as placeholders."""
    program_dir = program_dir.resolve()
    stack = stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
    config, secret_keys = stack_config(stack_file, program_project(program_dir))
    return render_program(program_dir, stack, config, secret_keys, stack_outputs)
