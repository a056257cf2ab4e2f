"""Inference graphs (`graphs`): the stack-file checks, the RayService of a graph placed on Ray
(one worker group per step, pinned by a custom resource), its route through the mesh, and
the capacity its upgrades need."""

import copy
import json

import pytest
import yaml

from inference_platform.core import versions
from inference_platform.serving import graphs, model_config
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from platformctl.engine import stack_settings
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, STACKS, stack_plan
from tests.support import conformance, kuberay_upgrade

STACK = "studio-dev"
STACK_FILE = ROOT / "stacks" / f"Pulumi.{STACK}.yaml"


def raw_config() -> dict:
    return {k.split(":", 1)[1]: v for k, v in yaml.safe_load(STACK_FILE.read_text())["config"].items()}


def parse(raw: dict):
    return parse_settings(raw, "stacks/Pulumi.test.yaml")


def problems_of(edit) -> str:
    raw = copy.deepcopy(raw_config())
    edit(raw)
    with pytest.raises(ConfigError) as info:
        parse(raw)
    return info.value.one_line()


@pytest.fixture(scope="module")
def plan():
    return stack_plan(STACK)


def objects(plan, kind: str) -> list[dict]:
    return [manifest(r) for r in plan.resources if is_k8s_object(r) and r.inputs.get("kind") == kind]


@pytest.fixture(scope="module")
def ray_service(plan) -> dict:
    (service,) = [o for o in objects(plan, "RayService") if o["metadata"]["name"] == "speech-to-image"]
    return service


# --------------------------------------------------------------------------- the RayService


def test_ray_service_validates_against_the_kuberay_crd(ray_service, reference):
    conformance.validate_custom(ray_service)


def test_each_step_has_its_own_worker_group_pinned_by_its_resource(ray_service):
    cluster = ray_service["spec"]["rayClusterConfig"]
    assert cluster["rayVersion"] == versions.RAY_VERSION
    assert cluster["enableInTreeAutoscaling"] is True
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert "resources" not in head["rayStartParams"]
    by_group = {g["groupName"]: g for g in cluster["workerGroupSpecs"]}
    assert set(by_group) == {"transcribe", "draw"}
    images = {"transcribe": "registry.studio.example.com/triton-ray:25.01-whisper",
              "draw": "registry.studio.example.com/triton-ray:25.01-diffusion"}
    for name, group in by_group.items():
        params = group["rayStartParams"]
        assert params["num-gpus"] == "1"
        # JSON in single quotes: what both KubeRay and Ray's autoscaler parse.
        assert json.loads(params["resources"].strip("'")) == {f"step-{name}": 1}
        assert params["resources"][0] == params["resources"][-1] == "'"
        (container,) = group["template"]["spec"]["containers"]
        assert container["image"] == images[name]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert group["template"]["spec"]["nodeSelector"] == {"pool.studio.example.com/name": "gpu-t4"}
        # The group starts at the step's minimum; its bounds are wide and fixed, Serve holds the range.
        assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (1, 0, 100)


def test_serve_config_runs_graph_app_with_each_step_on_its_resource(ray_service):
    config = yaml.safe_load(ray_service["spec"]["serveConfigV2"])
    (app,) = config["applications"]
    assert app["import_path"] == "graph_app.app:build"
    assert [s["model"] for s in app["args"]["steps"]] == ["whisper", "stable_diffusion"]
    assert app["args"]["steps"][1]["inputs"] == {"PROMPT": "TEXT"}
    # Clients call the model named after the graph with the tensors it declares, as its ensemble takes them.
    assert app["args"]["name"] == "speech-to-image"
    assert app["args"]["inputs"] == [{"name": "AUDIO", "datatype": "FP32", "dims": [-1]}]
    assert app["args"]["outputs"] == [{"name": "IMAGE", "datatype": "UINT8", "dims": [512, 512, 3]}]
    deployments = {d["name"]: d for d in app["deployments"]}
    for step in ("transcribe", "draw"):
        d = deployments[f"step-{step}"]
        assert d["ray_actor_options"]["resources"] == {f"step-{step}": 1}
        assert d["ray_actor_options"]["num_gpus"] == 1
        assert (d["autoscaling_config"]["min_replicas"], d["autoscaling_config"]["max_replicas"]) == (1, 2)
        # Not Ray Serve's default of 5, which would starve Triton's dynamic batcher.
        assert d["max_ongoing_requests"] == 32
    # The ingress asks for no step resource and no GPU: it never takes a step's place; every
    # request passes through it, so it never rests on one node.
    assert "resources" not in deployments["graph"]["ray_actor_options"]
    assert deployments["graph"]["num_replicas"] >= 2
    assert app["args"]["steps"][0]["model_repository"] == "/models/speech-to-image"


def test_ray_ports_are_fixed_and_listed_for_the_mesh(ray_service, plan):
    (headless,) = [o for o in objects(plan, "Service") if o["metadata"]["name"] == "speech-to-image-ray"]
    # Its pods come later, from the RayService: `pulumi up` does not wait for its endpoints.
    assert headless["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    listed = {p["port"] for p in headless["spec"]["ports"]}
    cluster = ray_service["spec"]["rayClusterConfig"]
    for params in [cluster["headGroupSpec"]["rayStartParams"], *(g["rayStartParams"] for g in cluster["workerGroupSpecs"])]:
        fixed = {int(params[flag]) for flag in graphs.RAY_PORTS}
        assert fixed <= listed
        assert set(range(int(params["min-worker-port"]), int(params["max-worker-port"]) + 1)) <= listed
        assert params["node-ip-address"].endswith(".speech-to-image-ray.speech-to-image.svc.cluster.local")


def test_graph_route_reaches_serve_with_basic_auth(plan):
    (vs,) = [o for o in objects(plan, "VirtualService") if o["metadata"]["name"] == "speech-to-image"]
    route, unauthorized = vs["spec"]["http"]
    assert route["route"][0]["destination"] == {"host": "speech-to-image-serve-svc.speech-to-image.svc.cluster.local",
                                                "port": {"number": 8000}}
    assert route["timeout"] == "120s"
    assert route["match"][0]["headers"] == {"authorization": {"regex": "Basic [A-Za-z0-9+/]+={0,2}"}}
    assert unauthorized["directResponse"]["status"] == 401
    (policy,) = [o for o in objects(plan, "AuthorizationPolicy") if o["metadata"]["name"] == "speech-to-image"]
    first = policy["spec"]["rules"][0]
    assert first["to"] == [{"operation": {"ports": ["8000"]}}]


def test_only_the_operator_reaches_the_ray_dashboard_and_it_needs_a_token(ray_service, plan):
    """Job submission on the dashboard runs code: the operator alone may call it, with the
    token KubeRay makes; Ray's nodes still reach each other on every other port they use."""
    from platformctl.mesh_eval import allowed

    assert ray_service["spec"]["rayClusterConfig"]["authOptions"] == {"mode": "token"}
    (policy,) = [o["spec"] for o in objects(plan, "AuthorizationPolicy") if o["metadata"]["name"] == "speech-to-image"]
    operator = "cluster.local/ns/ray-system/sa/kuberay-operator"
    ray_node = "cluster.local/ns/speech-to-image/sa/speech-to-image-raycluster-7xk2p"
    assert allowed([policy], operator, 8265, "/api/serve/applications/")
    assert not allowed([policy], ray_node, 8265, "/api/jobs/")
    (headless,) = [o for o in objects(plan, "Service") if o["metadata"]["name"] == "speech-to-image-ray"]
    ray_ports = {p["port"] for p in headless["spec"]["ports"]} - {8265}
    assert all(allowed([policy], ray_node, port, "/") for port in ray_ports)
    (netpol,) = [o["spec"] for o in objects(plan, "NetworkPolicy") if o["metadata"]["name"] == "speech-to-image"]

    def admitted(rule: dict, port: int) -> bool:
        return "ports" not in rule or any(p["port"] <= port <= p.get("endPort", p["port"]) for p in rule["ports"])

    from_ray_nodes = [r for r in netpol["ingress"] if r["from"] == [{"podSelector": {"matchLabels": {graphs.GRAPH_LABEL: "speech-to-image"}}}]]
    assert all(any(admitted(r, port) for r in from_ray_nodes) for port in ray_ports)
    assert not any(admitted(r, 8265) for r in from_ray_nodes)
    assert [r["from"] for r in netpol["ingress"] if admitted(r, 8265)] == [
        [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ray-system"}},
          "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator",
                                          "app.kubernetes.io/instance": "kuberay-operator"}}}]]


def test_kuberay_operator_comes_first_and_runs_in_the_mesh(plan):
    release = plan.get("kubernetes:helm.sh/v3:Release", "studio-dev-kuberay")
    assert release.inputs["chart"] == "kuberay-operator" and release.inputs["version"] == versions.KUBERAY_OPERATOR.version
    assert {"name": "ENABLE_INIT_CONTAINER_INJECTION", "value": "false"} in release.inputs["values"]["env"]
    graph = plan.get("inference-platform:index:InferenceGraph", "speech-to-image")
    assert release.urn in graph.depends_on
    (ns,) = [o for o in objects(plan, "Namespace") if o["metadata"]["name"] == "ray-system"]
    assert ns["metadata"]["labels"]["istio-injection"] == "enabled"


def test_kuberay_values_exist_in_the_pinned_chart(reference):
    defaults = conformance.vendored_chart_values("kuberay-operator", versions.KUBERAY_OPERATOR.version)
    assert conformance.unknown_values_keys(graphs.kuberay_operator_values(), defaults) == []


# --------------------------------------------------------------------------- checks


def _graph(raw: dict, i: int = 0) -> dict:
    return raw["graphs"][i]


@pytest.mark.parametrize("case,edit,path,words", [
    ("unknown source tensor", lambda r: _graph(r)["steps"][1]["inputs"].update(PROMPT="WORDS"),
     "graphs[speech-to-image].steps[draw].inputs.PROMPT", ["'WORDS' is neither a graph input nor an earlier step's output", "AUDIO, TEXT"]),
    ("output nobody makes", lambda r: _graph(r)["outputs"][0].update(name="PICTURE"),
     "graphs[speech-to-image].outputs[0].name", ["no step outputs graph tensor 'PICTURE'"]),
    ("tensor defined twice", lambda r: _graph(r)["steps"][1]["outputs"].update(IMAGE="TEXT"),
     "graphs[speech-to-image].steps[draw].outputs.IMAGE", ["'TEXT' is already an output of step 'transcribe'"]),
    ("no such group", lambda r: _graph(r)["steps"][0]["gpu"].update(group="gpu-h100"),
     "graphs[speech-to-image].steps[transcribe].gpu.group", ["no GPU node group named 'gpu-h100'"]),
    ("duplicate step", lambda r: _graph(r)["steps"][1].update(name="transcribe"),
     "graphs[speech-to-image].steps[1].name", ["duplicate step name 'transcribe'"]),
    ("ensemble steps differ", lambda r: _graph(r, 1)["steps"][1].update(image="nvcr.io/nvidia/tritonserver:25.02-py3"),
     "graphs[speech-to-image-l4].steps[draw].image", ["placement 'ensemble' runs every step in one Triton server"]),
    ("host of another graph", lambda r: _graph(r, 1).update(hosts=["speech-to-image.studio.example.com"]),
     "graphs[speech-to-image-l4].hosts[0]", ["already served by graphs[0]"]),
    ("name of a graph", lambda r: _graph(r, 1).update(name="speech-to-image"),
     "graphs[1].name", ["already used by graphs[0]"]),
    ("cache not configured", lambda r: _graph(r)["steps"][0]["modelRepository"].update(cache="s3"),
     "graphs[speech-to-image].steps[transcribe].modelRepository.cache", ["weight cache 's3' is not configured"]),
    ("zero dimension", lambda r: _graph(r)["inputs"][0].update(dims=[0]),
     "graphs[speech-to-image].inputs[AUDIO].dims", ["a dimension of 0 holds nothing"]),
    ("hostile tensor name", lambda r: _graph(r)["inputs"][0].update(name='AUDIO"; rm -rf /'),
     "graphs[speech-to-image].inputs[0].name", ["should match pattern"]),
    ("model name leaving its repository", lambda r: _graph(r)["steps"][0].update(model="../whisper"),
     "graphs[speech-to-image].steps[transcribe].model", ["should match pattern"]),
    ("newline in a tensor map key", lambda r: _graph(r)["steps"][0]["inputs"].update({"X\n": "AUDIO"}),
     'graphs[speech-to-image].steps[transcribe].inputs["X\\n"]', ["should match pattern"]),
    # The ensemble's Triton loads every directory of its repository: a Ray step's repository inside it too.
    ("repository inside an ensemble's", lambda r: _graph(r)["steps"][1]["modelRepository"].update(path="speech-to-image/sd"),
     "graphs[speech-to-image].steps[draw].modelRepository.path",
     ["'speech-to-image/sd' is inside 'speech-to-image', the model repository of graph 'speech-to-image-l4'"]),
    ("bfloat16 on Ray", lambda r: _graph(r)["outputs"][0].update(dataType="TYPE_BF16"),
     "graphs[speech-to-image].outputs[IMAGE].dataType", ["placement 'ray' cannot carry TYPE_BF16 tensors"]),
    ("ongoing requests of an ensemble step", lambda r: _graph(r, 1)["steps"][0].update(maxOngoingRequests=64),
     "graphs[speech-to-image-l4].steps[transcribe].maxOngoingRequests", ["applies to placement 'ray' only"]),
    ("config variant on Ray", lambda r: _graph(r)["steps"][0].update(modelConfigName="t4"),
     "graphs[speech-to-image].steps[transcribe].modelConfigName", ["cannot select a config variant"]),
    ("config variants of ensemble steps differ", lambda r: _graph(r, 1)["steps"][0].update(modelConfigName="l4"),
     "graphs[speech-to-image-l4].steps[draw].modelConfigName", ["modelConfigName must equal steps[0]'s"]),
    ("ongoing requests beyond the bound", lambda r: _graph(r)["steps"][0].update(maxOngoingRequests=1025),
     "graphs[speech-to-image].steps[transcribe].maxOngoingRequests", ["less than or equal to 1024"]),
    # Each step holds its minimum twice while a new RayCluster replaces the old one.
    ("upgrade surge", lambda r: [s["replicas"].update(min=2, max=2) for s in _graph(r)["steps"]],
     "cluster.nodeGroups[gpu-t4].maxNodes", ["need 8 x nvidia.com/gpu", "maxNodes 6 offers 6"]),
], ids=lambda v: v if isinstance(v, str) and " " in v else None)
def test_bad_graph_names_path_and_problem(case, edit, path, words):
    line = problems_of(edit)
    assert f"inference-platform:{path}:" in line, line
    for w in words:
        assert w in line, f"{case}: {w!r} not in {line}"


def test_the_example_stack_is_valid_and_both_placements_are_used():
    settings = parse(raw_config())
    assert {g.placement for g in settings.graphs} == {"ensemble", "ray"}


# --------------------------------------------------------------------------- Ray's own reading


def test_rays_autoscaler_reads_each_worker_group_with_exactly_its_steps_resource(ray_service):
    """Ray's KubeRay autoscaling config code, at the pinned Ray, reads the rendered cluster
    spec: each worker group advertises its step's resource and one GPU; the head nothing."""
    import ray
    from ray.autoscaler._private.kuberay.autoscaling_config import _HEAD_GROUP_NAME, _derive_autoscaling_config_from_ray_cr

    assert ray.__version__ == versions.RAY_VERSION
    ray_cr = {"metadata": {"name": "speech-to-image-raycluster", "namespace": "speech-to-image"},
              "spec": ray_service["spec"]["rayClusterConfig"]}
    node_types = _derive_autoscaling_config_from_ray_cr(ray_cr)["available_node_types"]
    steps = {"transcribe", "draw"}
    assert set(node_types) == {_HEAD_GROUP_NAME, *steps}
    head = node_types[_HEAD_GROUP_NAME]["resources"]
    assert head["CPU"] == 0 and not any(k.startswith("step-") for k in head)
    for step in steps:
        node = node_types[step]
        advertised = {k: v for k, v in node["resources"].items() if k.startswith("step-")}
        assert advertised == {f"step-{step}": 1}
        assert node["resources"]["GPU"] == 1 and node["resources"]["CPU"] == 4
        assert (node["min_workers"], node["max_workers"]) == (0, 100)


def test_each_steps_object_store_stays_in_the_shared_memory_its_workers_mount(ray_service, monkeypatch, tmp_path):
    """Ray's own rules at the pinned Ray (ray/_private/utils.py resolve_object_store_memory,
    services.py determine_plasma_store_config), on each worker as rendered: /dev/shm of the
    volume's size, the container's memory limit as the node's memory. Left to Ray, the store
    would be 30% of 16Gi and go to /tmp past the 1Gi /dev/shm; the rendered one stays in memory."""
    from ray._common import utils as common_utils
    from ray._private import services
    from ray._private import utils as ray_utils

    from inference_platform.core.grammar import quantity

    for group in ray_service["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        (shm,) = [v["emptyDir"] for v in pod["volumes"] if v["name"] == "dshm"]
        assert shm["medium"] == "Memory"
        assert {"name": "dshm", "mountPath": "/dev/shm"} in pod["containers"][0]["volumeMounts"]  # KubeRay adds none then
        memory = int(quantity(pod["containers"][0]["resources"]["limits"]["memory"]))
        shm_bytes = int(quantity(shm["sizeLimit"]))
        monkeypatch.setattr(ray_utils, "get_shared_memory_bytes", lambda size=shm_bytes: size)
        monkeypatch.setattr(common_utils, "get_system_memory", lambda size=memory: size)
        store = int(group["rayStartParams"]["object-store-memory"])
        plasma_directory, _, kept = services.determine_plasma_store_config(store, str(tmp_path))
        assert (plasma_directory, kept) == ("/dev/shm", store)
        assert store >= 512 * 2**20
        default = ray_utils.resolve_object_store_memory(memory)
        assert services.determine_plasma_store_config(default, str(tmp_path))[0] == str(tmp_path)


@pytest.mark.parametrize("shm, memory, words", [
    ("64Mi", "16Gi", "holds an object store of 53687091 bytes (80% of shmSize), below Ray's minimum of 78643200; allowed: at least 94Mi"),
    ("20Gi", "16Gi", "20Gi exceeds the memory limit 16Gi that its memory-backed pages count against; allowed: at most 16Gi"),
])
def test_a_ray_step_whose_shared_memory_cannot_hold_its_object_store_is_refused(shm, memory, words):
    def edit(raw):
        raw["graphs"][0]["steps"][1]["resources"].update(shmSize=shm, memory=memory)

    message = problems_of(edit)
    assert "inference-platform:graphs[speech-to-image].steps[draw].resources.shmSize: " in message and words in message


def test_the_ensemble_keeps_its_shared_memory_rules():
    raw = copy.deepcopy(raw_config())
    raw["graphs"][1]["steps"][0]["resources"]["shmSize"] = raw["graphs"][1]["steps"][1]["resources"]["shmSize"] = "64Mi"
    parse(raw)


# --------------------------------------------------------------------------- the ensemble


def test_ensemble_config_is_triton_model_config_with_the_steps_in_order():
    from inference_platform.serving.model_config import parse_model_config

    graph = parse(raw_config()).graphs[1]
    config = parse_model_config(model_config.ensemble_config(graph), "test")
    assert (config.name, config.platform, config.max_batch_size) == ("speech-to-image-l4", "ensemble", 0)
    assert [(t.name, t.data_type, list(t.dims)) for t in config.input] == [("AUDIO", model_config.model_config_pb2.TYPE_FP32, [-1])]
    assert [list(t.dims) for t in config.output] == [[512, 512, 3]]
    steps = config.ensemble_scheduling.step
    assert [(s.model_name, s.model_version) for s in steps] == [("whisper", -1), ("stable_diffusion", -1)]
    assert dict(steps[0].output_map) == {"TRANSCRIPT": "TEXT"} and dict(steps[1].input_map) == {"PROMPT": "TEXT"}


def test_ensemble_is_served_beside_the_repository_and_rolls_on_change(plan, tmp_path):
    from platformctl.diff import diff_plans
    from platformctl.engine import render_stack

    (deployment,) = [o for o in objects(plan, "Deployment") if o["metadata"]["name"] == "speech-to-image-l4-v1"]
    pod = deployment["spec"]["template"]
    args = pod["spec"]["containers"][0]["args"]
    assert args[:2] == ["--model-repository=/models/speech-to-image", "--model-repository=/model-configs"]
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "model-configs"]
    assert {i["path"] for i in volume["configMap"]["items"]} == {"speech-to-image-l4/config.pbtxt", "speech-to-image-l4/1/README"}
    for o in [deployment, *objects(plan, "ConfigMap")]:
        conformance.validate_core(o)
    # A new tensor map makes a new (auto-named) ConfigMap; the Deployment rolls onto it, nothing else changes.
    raw = yaml.safe_load(STACK_FILE.read_text())
    raw["config"]["inference-platform:graphs"][1]["steps"][1]["inputs"] = {"TEXT_IN": "TEXT"}
    edited = tmp_path / f"Pulumi.{STACK}.yaml"
    edited.write_text(yaml.safe_dump(raw, sort_keys=False))
    d = diff_plans(plan.to_json(), render_stack(STACK, edited).to_json())
    assert {(c.action, c.key.rsplit("::", 1)[1]) for c in d["changes"]} == {
        ("replace", "speech-to-image-l4-triton-model-configs"), ("update", "speech-to-image-l4-triton-v1")}


def test_an_ensembles_tuned_config_variant_reaches_its_triton_server(tmp_path):
    from platformctl.engine import render_stack

    raw = yaml.safe_load(STACK_FILE.read_text())
    for step in raw["config"]["inference-platform:graphs"][1]["steps"]:
        step["modelConfigName"] = "l4"
    edited = tmp_path / f"Pulumi.{STACK}.yaml"
    edited.write_text(yaml.safe_dump(raw, sort_keys=False))
    (deployment,) = [o for o in objects(render_stack(STACK, edited), "Deployment")
                     if o["metadata"]["name"] == "speech-to-image-l4-v1"]
    # Triton picks configs/l4.pbtxt of each model that has one, config.pbtxt otherwise (the ensemble's).
    assert "--model-config-name=l4" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def ray_service_with(tmp_path, edit) -> dict:
    """The Ray graph's RayService after `edit` of its stack-file entry."""
    from platformctl.engine import render_stack

    raw = yaml.safe_load(STACK_FILE.read_text())
    edit(raw["config"]["inference-platform:graphs"][0])
    edited = tmp_path / f"Pulumi.{STACK}.yaml"
    edited.write_text(yaml.safe_dump(raw, sort_keys=False))
    (service,) = [o for o in objects(render_stack(STACK, edited), "RayService") if o["metadata"]["name"] == "speech-to-image"]
    return service


def test_a_steps_cpu_limit_reaches_its_workers(tmp_path):
    service = ray_service_with(tmp_path, lambda g: g["steps"][0]["resources"].update(cpuLimit="6"))
    limits = {g["groupName"]: g["template"]["spec"]["containers"][0]["resources"]["limits"]
              for g in service["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    assert limits["transcribe"]["cpu"] == "6" and "cpu" not in limits["draw"]


# --------------------------------------------------------------------------- edits of a running graph


def test_a_steps_new_replica_range_reaches_the_running_cluster(ray_service, tmp_path):
    """KubeRay's own decision (tests/support/kuberay_upgrade.py) on the applied and the edited
    RayService: raising a step's range from 1-2 to 2-4 keeps the running RayCluster (its
    hash leaves the replica fields out) and puts the new Serve config to it; Ray's autoscaler,
    reading that cluster, may then run the 2 to 4 workers that Serve's replicas ask for."""
    from ray.autoscaler._private.kuberay.autoscaling_config import _derive_autoscaling_config_from_ray_cr

    edited = ray_service_with(tmp_path, lambda g: g["steps"][0].update(replicas={"min": 2, "max": 4}))
    result = kuberay_upgrade.reconcile(ray_service["spec"], edited["spec"])
    assert (result.cluster_action, result.serve_config_submitted) == ("keep", True)
    (app,) = yaml.safe_load(edited["spec"]["serveConfigV2"])["applications"]
    serve = {d["name"]: d for d in app["deployments"]}["step-transcribe"]["autoscaling_config"]
    ray_cr = {"metadata": {"name": "speech-to-image-raycluster", "namespace": "speech-to-image"}, "spec": result.cluster_spec}
    workers = _derive_autoscaling_config_from_ray_cr(ray_cr)["available_node_types"]["transcribe"]
    # One worker per replica (each advertises one step-transcribe, each replica asks for one).
    fewest = max(serve["min_replicas"], workers["min_workers"])
    most = min(serve["max_replicas"], workers["max_workers"])
    assert (fewest, most) == (2, 4)


def test_a_steps_new_image_starts_a_new_cluster_with_it(ray_service, tmp_path):
    edited = ray_service_with(tmp_path, lambda g: g["steps"][1].update(image="registry.studio.example.com/triton-ray:25.02-diffusion"))
    result = kuberay_upgrade.reconcile(ray_service["spec"], edited["spec"])
    assert result.cluster_action == "new"
    images = {g["groupName"]: g["template"]["spec"]["containers"][0]["image"] for g in result.cluster_spec["workerGroupSpecs"]}
    assert images["draw"].endswith(":25.02-diffusion")


def test_a_new_graph_app_is_mounted_by_the_new_cluster_and_the_old_one_outlives_the_switch(plan, ray_service, monkeypatch):
    """An edit of graph_app replaces its ConfigMap (new name, created first) and so changes the
    RayService's cluster spec: KubeRay starts a new RayCluster beside the serving one. The engine
    deletes the old ConfigMap only after the RayService's wait, which holds until KubeRay reports
    traffic moved (no pending cluster at the new generation), so the old cluster never runs
    without the code it mounts (a pod it starts meanwhile could not mount a deleted ConfigMap)."""
    from platformctl.awaits import check
    from platformctl.diff import diff_plans
    from platformctl.engine import render_stack
    from platformctl.invariants import plan_resources

    shipped = graphs.graph_app_files()
    monkeypatch.setattr(graphs, "graph_app_files", lambda: {**shipped, "app.py": shipped["app.py"] + "\n# edited\n"})
    edited = render_stack(STACK)
    d = diff_plans(plan.to_json(), edited.to_json())
    by_name = {c.key.rsplit("::", 1)[1]: c for c in d["changes"]}
    app, rayservice = by_name["speech-to-image-app"], by_name["speech-to-image-rayservice"]
    assert (app.action, app.delete_first) == ("replace", False) and set(by_name) == {app.key.rsplit("::", 1)[1], "speech-to-image-rayservice"}
    assert rayservice.action == "update" and set(rayservice.unknown.values()) == {app.key}
    (note,) = [n for n in d["notes"] if n.startswith(f"note: {app.key}: the old object is deleted")]
    assert f"after {rayservice.key}, which takes the new one's name, has become ready" in note

    # KubeRay's decision: a new cluster; the wait holds until it has taken the traffic.
    (new_service,) = [o for o in objects(edited, "RayService") if o["metadata"]["name"] == "speech-to-image"]
    # The mock names the replacement as before; the engine gives it a new random suffix.
    (old_name,) = {v["configMap"]["name"] for v in ray_service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["volumes"]
                   if "configMap" in v}
    renamed = json.loads(json.dumps(new_service["spec"]).replace(f'"{old_name}"', f'"{old_name}x"'))
    assert kuberay_upgrade.reconcile(ray_service["spec"], renamed).cluster_action == "new"
    wait_for = new_service["metadata"]["annotations"]["pulumi.com/waitFor"]
    applied = {"metadata": {"generation": 2}}
    assert not kuberay_upgrade.wait_satisfied(wait_for, {**applied, "status": kuberay_upgrade.status(1, "old")})
    assert not kuberay_upgrade.wait_satisfied(wait_for, {**applied, "status": kuberay_upgrade.status(2, "old", "new")})
    assert kuberay_upgrade.wait_satisfied(wait_for, {**applied, "status": kuberay_upgrade.status(2, "new")})
    # ... and is long enough for the new cluster's workers to start on new GPU nodes.
    rows, problems = check(plan_resources(edited), stack_settings(STACK))
    (row,) = [r for r in rows if r.expectation.resource["type"] == "kubernetes:ray.io/v1:RayService"]
    assert row.wait.update >= row.expectation.budget.update_seconds > 0 and not problems


def test_each_worker_waits_for_the_heads_gcs_before_ray_starts(ray_service, tmp_path):
    """Without KubeRay's init container, a worker's `ray start` gives up on a GCS that is not up
    within about 20 s: each worker runs KubeRay's own check until the head answers, then starts.
    Run as KubeRay composes it (tests/support/kuberay_pod.py), with a `ray` that finds the GCS
    down twice and a `sleep` that returns at once."""
    import subprocess

    from tests.support import kuberay_pod

    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "ray").write_text('#!/bin/sh\necho "$*" >> "$LOG"\n'
                              '[ "$1" != health-check ] && exit 0\n'
                              'n=$(grep -c health-check "$LOG"); [ "$n" -gt 2 ]\n')
    (stub / "sleep").write_text("#!/bin/sh\nexit 0\n")
    for f in stub.iterdir():
        f.chmod(0o755)
    for group in ray_service["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        log = tmp_path / f"{group['groupName']}.log"
        script = kuberay_pod.container_script(group["template"]["spec"]["containers"][0], "ray start --address=head:6379 --block")
        env = {"PATH": f"{stub}:/usr/bin:/bin", "LOG": str(log), "FQ_RAY_IP": "speech-to-image-head-svc.ns.svc.cluster.local",
               "RAY_PORT": "6379", "HOME": str(tmp_path)}
        subprocess.run(script, env=env, check=True, capture_output=True, cwd=tmp_path, timeout=60)
        calls = log.read_text().splitlines()
        assert calls == ["health-check --address speech-to-image-head-svc.ns.svc.cluster.local:6379"] * 3 + [
            "start --address=head:6379 --block"], group["groupName"]


# --------------------------------------------------------------------------- scale-down and ingress

RAY_GRAPHS = [(stack, g.name) for stack in STACKS for g in stack_settings(stack).graphs if g.placement == "ray"]


@pytest.mark.parametrize("stack,graph", RAY_GRAPHS, ids=[f"{s}-{g}" for s, g in RAY_GRAPHS])
def test_no_ray_pod_keeps_an_idle_node_from_scaling_down(stack, graph):
    """cluster-autoscaler 1.34.5 utils/drain/drain.go HasBlockingLocalStorage: every disk-backed
    emptyDir of a pod blocks its node's scale-down unless safe-to-evict-local-volumes names it:
    the template's, the ones KubeRay adds (tests/support/kuberay_pod.py: the head's `ray-logs`
    under in-tree autoscaling) and the ones istiod's injector adds (istio 1.30.3
    injection-template.yaml: workload-socket, credential-socket, workload-certs, istio-data)."""
    from tests.support import kuberay_pod

    injected = {"workload-socket", "credential-socket", "workload-certs", "istio-data"}
    (service,) = [o for o in objects(stack_plan(stack), "RayService") if o["metadata"]["name"] == graph]
    cluster = service["spec"]["rayClusterConfig"]
    groups = [("head", True, cluster["headGroupSpec"]), *((g["groupName"], False, g) for g in cluster["workerGroupSpecs"])]
    for name, head, group in groups:
        template = group["template"]
        volumes = kuberay_pod.pod_volumes(template, head=head, in_tree_autoscaling=cluster["enableInTreeAutoscaling"],
                                          ray_start_params=group["rayStartParams"])
        disk = {v["name"] for v in volumes if "emptyDir" in v and v["emptyDir"].get("medium") != "Memory"}
        assert ("ray-logs" in disk) == head, name
        named = set((template["metadata"].get("annotations") or {}).get(
            "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes", "").split(","))
        assert disk | injected <= named, (name, sorted((disk | injected) - named))


def test_a_ray_graph_alone_admits_and_guards_only_the_ingress_pods_it_is_told():
    """Serve's port admits the pods `mesh.ingress_pod_labels` names in the ingress namespace, not
    the whole namespace, and Basic Auth's DENY policy in Istio's root namespace selects those
    pods: a gateway labelled otherwise than the default would otherwise lack it."""
    from inference_platform.mesh.ref import MeshRef
    from inference_platform.platform import graph_inputs
    from inference_platform.weights.inputs import WeightsRef
    from tests.plan.test_triton_alone import render

    settings = parse(raw_config())
    (index,) = [i for i, g in enumerate(settings.graphs) if g.placement == "ray"]
    labels = {"app": "edge", "istio": "edge"}
    args = graph_inputs(settings, index, MeshRef(ingress_pod_labels=labels), WeightsRef(claim_name="models"), [])
    assert args.graph.auth.mode == "basic"
    plan = render(lambda opts: graphs.InferenceGraph("speech-to-image", args, opts))
    spec = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "speech-to-image-networkpolicy").inputs["spec"]
    (serve,) = [r for r in spec["ingress"] if r["ports"] == [{"protocol": "TCP", "port": graphs.SERVE_PORT}]]
    assert serve["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "istio-system"}},
                              "podSelector": {"matchLabels": labels}}]
    (deny,) = [r.inputs for r in plan.resources if r.type == "kubernetes:security.istio.io/v1:AuthorizationPolicy"
               and r.inputs["metadata"]["namespace"] == "istio-system"]
    assert deny["spec"]["action"] == "DENY" and deny["spec"]["selector"] == {"matchLabels": labels}
