"""graph_app, the Serve application every RayService graph runs: its `args`, its tensors, and
the application itself on a real local Ray cluster of one node per worker group, deployed
the way KubeRay deploys serveConfigV2 (a PUT of the config to the dashboard's
/api/serve/applications/), with stand-in backends (tests/support/graph_stubs.py)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Optional

import numpy as np
import pytest
import ray
import yaml
from ray import serve
from ray._common.test_utils import wait_for_condition
from ray._private import ray_constants
from ray.autoscaler.v2.sdk import get_cluster_status
from ray.cluster_utils import Cluster
from ray.serve.schema import ServeDeploySchema

from graph_app import kserve
from graph_app.app import INGRESS, MAX_ONGOING_REQUESTS, build, load_backend
from graph_app.spec import DEFAULT_BACKEND, SpecError, parse
from graph_app.triton import TritonBackend, serve_metrics
from inference_platform.core import versions
from inference_platform.serving import graphs
from inference_platform.serving.model_config import ensemble_config, model_config_pb2, parse_model_config
from inference_platform.settings import graphs as graph_settings
from inference_platform.settings.graphs import Graph
from platformctl.plan import is_k8s_object, manifest
from tests.conftest import ROOT, RUN_SUMMARY, stack_plan
from tests.support import triton_http
from tests.support.netutil import free_port
from tests.support.triton_http import InferInput, InferRequestedOutput

STUBS = "tests.support.graph_stubs:ArithmeticBackend"
APP, ORPHAN = "chain", "orphan"


def step(name: str, model: str, inputs: dict, outputs: dict) -> dict:
    return {"name": name, "model": model, "model_repository": f"/models/{model}", "inputs": inputs, "outputs": outputs}


def tensor(name: str) -> dict:
    return {"name": name, "dataType": "TYPE_FP32", "dims": [-1, 2]}


def chain_graph(placement: str) -> Graph:
    """number -> add_one -> incremented -> double -> result, each model under tensor names of its
    own; rows of 2 numbers, as many rows as the caller sends (a batch: dims [-1, 2])."""
    def graph_step(name: str, model: str, inputs: dict, outputs: dict) -> dict:
        return {"name": name, "model": model, "image": "registry.example.com/triton-ray:1", "inputs": inputs,
                "outputs": outputs, "modelRepository": {"cache": "fileShare", "path": "models"}, "gpu": {"group": "gpu"}}
    return Graph.model_validate({
        "name": APP, "hosts": ["chain.example.com"], "placement": placement,
        "inputs": [tensor("number")], "outputs": [tensor("result"), tensor("incremented")],
        "steps": [graph_step("add", "add_one", {"X": "number"}, {"X_PLUS_ONE": "incremented"}),
                  graph_step("double", "double", {"VALUE": "incremented"}, {"TWICE": "result"})]})


# The args the platform renders for the chain on Ray (components/serving/graphs.py serve_config).
CHAIN_ARGS = graphs.serve_config(chain_graph("ray"), {"add": "/models", "double": "/models"})["applications"][0]["args"]


# --------------------------------------------------------------------------- the pin


def test_the_installed_ray_is_the_pinned_ray():
    pins = re.findall(r"^ray\[serve\]==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), re.M)
    assert pins == [versions.RAY_VERSION]
    assert ray.__version__ == versions.RAY_VERSION


# --------------------------------------------------------------------------- args and tensors


def test_args_declare_the_graph_its_tensors_and_steps():
    spec = parse(CHAIN_ARGS)
    assert [s.deployment for s in spec.steps] == ["step-add", "step-double"]
    assert spec.name == APP
    assert [(t.name, t.datatype, t.dims) for t in spec.inputs] == [("number", "FP32", (-1, 2))]
    assert [t.name for t in spec.outputs] == ["result", "incremented"]
    assert spec.backend == DEFAULT_BACKEND


def test_a_step_replica_can_run_as_many_requests_as_its_key_allows():
    assert MAX_ONGOING_REQUESTS == graph_settings.MAX_ONGOING_REQUESTS


@pytest.mark.parametrize("edit, message", [
    (lambda a: a["steps"][1].pop("model"), "args.steps[1]: unknown keys [], missing keys ['model']"),
    (lambda a: a["steps"][0]["inputs"].update(X="incremented"), "['incremented'] read before the step that makes them"),
    (lambda a: a["steps"][1]["outputs"].update(TWICE="incremented"), "args.steps[1].outputs: ['incremented'] already made"),
    (lambda a: a["outputs"].append({"name": "nowhere", "datatype": "FP32", "dims": [1]}),
     "args.outputs: ['nowhere'] made by no step"),
    (lambda a: a["inputs"][0].update(datatype="BF16"), "args.inputs[0].datatype: 'BF16' is not supported"),
    (lambda a: a["inputs"][0].update(dims=[0]), "args.inputs[0].dims: expected a non-empty list of sizes"),
    (lambda a: a["inputs"][0].update(name="other"), "args.inputs: ['number'] read by a step but not declared"),
    (lambda a: a["steps"][1].update(name="add"), "step names must be unique"),
    (lambda a: a["steps"][0].update(outputs={}), "args.steps[0].outputs: expected a non-empty mapping"),
    (lambda a: a.update(backend="tests.support.graph_stubs.ArithmeticBackend"), "args.backend: expected an import path 'module:callable'"),
    (lambda a: a.update(extra=1), "args: unknown keys ['extra']"),
])
def test_bad_args_name_the_key_at_fault(edit, message):
    args = json.loads(json.dumps(CHAIN_ARGS))
    edit(args)
    with pytest.raises(SpecError, match=re.escape(message)):
        parse(args)


def test_the_default_backend_is_triton_and_resolves_without_tritonserver():
    # The in-process API exists only in the step images: importing the module must not need it.
    assert load_backend(DEFAULT_BACKEND) is TritonBackend
    assert isinstance(build(CHAIN_ARGS), serve.Application)
    with pytest.raises(SpecError, match="cannot import 'graph_app.triton:Nope'"):
        load_backend("graph_app.triton:Nope")


def test_a_step_serves_its_tritons_metrics_on_tritons_metrics_path():
    """The in-process server's Prometheus text (Server.metrics) at /metrics, as tritonserver serves it."""
    text = 'nv_inference_request_success{model="whisper",version="1"} 3\n'
    server = serve_metrics(lambda: text, host="127.0.0.1", port=free_port())
    assert server is not None
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
            assert r.read().decode() == text and r.headers["Content-Type"].startswith("text/plain")
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"{base}/other", timeout=10)
        # A taken port leaves the replica serving, without metrics.
        assert serve_metrics(lambda: text, host="127.0.0.1", port=server.server_address[1]) is None
    finally:
        server.shutdown()
        server.server_close()


def test_the_rendered_serve_config_is_one_serve_and_graph_app_accept():
    """What components/serving/graphs.py renders for the example stack: Serve's own schema takes it,
    graph_app reads its args, and its deployment entries name graph_app's deployments."""
    (service,) = [manifest(r) for r in stack_plan("studio-dev").resources
                  if is_k8s_object(r) and r.inputs.get("kind") == "RayService"]
    config = ServeDeploySchema.model_validate(yaml.safe_load(service["spec"]["serveConfigV2"]))
    (app,) = config.applications
    assert app.import_path == "graph_app.app:build"
    spec = parse(app.args)
    options = {d.name: d.ray_actor_options for d in app.deployments}
    assert set(options) == {s.deployment for s in spec.steps} | {INGRESS}
    for s in spec.steps:
        assert options[s.deployment].resources == {s.deployment: 1}
    assert not options[INGRESS].resources
    # The Ray pods import the package from the ConfigMap the platform renders.
    (source,) = [manifest(r) for r in stack_plan("studio-dev").resources
                 if is_k8s_object(r) and r.inputs.get("kind") == "ConfigMap" and "app.py" in (r.inputs.get("data") or {})]
    assert source["data"] == {p.name: p.read_text() for p in sorted((ROOT / "graph_app").glob("*.py"))}


# --------------------------------------------------------------------------- on a real Ray cluster

# One node per worker group, each advertising its step's resource as a RayService worker
# does (2: room for the step's two replicas, as two workers of the group would give), with
# CPUs to spare so that only the resource keeps other steps off it. The head takes no work
# (num_cpus 0), as in the RayService.
NODES = {"step-add": 2, "step-double": 2}
NODE_CPUS = 4


def step_deployment(name: str, replicas: int) -> dict:
    """A step's entry as serveConfigV2 has it (components/serving/graphs.py), without GPUs."""
    return {"name": name,
            "autoscaling_config": {"min_replicas": replicas, "max_replicas": replicas, "target_ongoing_requests": 2},
            "ray_actor_options": {"num_cpus": 1, "num_gpus": 0, "resources": {name: 1}}}


def serve_config(http_port: int, add_replicas: int = 2) -> dict:
    # Every Serve proxy of this one machine would bind the same port: one proxy, on the head.
    return {
        "proxy_location": "HeadOnly",
        "http_options": {"host": "127.0.0.1", "port": http_port},
        "applications": [
            {"name": APP, "route_prefix": "/", "import_path": "graph_app.app:build",
             "args": {**CHAIN_ARGS, "backend": STUBS},
             "deployments": [step_deployment("step-add", add_replicas), step_deployment("step-double", 2),
                             {"name": INGRESS, "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.1}}]},
            # A step whose resource no node advertises.
            {"name": ORPHAN, "route_prefix": "/orphan", "import_path": "graph_app.app:build",
             "args": {"name": ORPHAN, "inputs": CHAIN_ARGS["inputs"], "outputs": CHAIN_ARGS["outputs"][1:],
                      "steps": [step("lost", "add_one", {"X": "number"}, {"X_PLUS_ONE": "incremented"})],
                      "backend": STUBS},
             "deployments": [step_deployment("step-lost", 1)]},
        ],
    }


class RayGraph:
    def __init__(self, cluster: Cluster, dashboard: str, http_port: int, node_of: dict[str, str]):
        self.cluster, self.dashboard, self.node_of = cluster, dashboard, node_of
        self.http_port, self.http = http_port, f"http://127.0.0.1:{http_port}/"

    def replicas(self, deployment: str) -> list[dict]:
        return self.details()["applications"][APP]["deployments"][deployment]["replicas"]

    def demands(self) -> list[dict]:
        """Ray's pending resource demands: what the autoscaler turns into workers."""
        status = get_cluster_status(self.cluster.address)
        return [b.bundle for d in status.resource_demands.ray_task_actor_demand for b in d.bundles_by_count]

    def details(self) -> dict:
        with urllib.request.urlopen(f"{self.dashboard}/api/serve/applications/", timeout=10) as r:
            return json.load(r)

    def infer(self, body: bytes, headers: dict[str, str], model: str = APP) -> tuple[int, dict, bytes]:
        """POST /v2/models/<model>/infer as tritonclient's HTTP client sends it."""
        request = urllib.request.Request(f"{self.http}v2/models/{model}/infer", data=body, method="POST",
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()


def deploy(dashboard: str, config: dict) -> None:
    """What KubeRay does with serveConfigV2: YAML to JSON, PUT to the dashboard
    (ray-operator v1.7.0, rayservice_controller.go updateServeDeployment and
    utils/dashboardclient/dashboard_httpclient.go UpdateDeployments)."""
    body = json.dumps(yaml.safe_load(yaml.safe_dump(config, sort_keys=False))).encode()
    request = urllib.request.Request(f"{dashboard}/api/serve/applications/", data=body, method="PUT",
                                     headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=60).close()
    except urllib.error.HTTPError as e:
        raise AssertionError(f"the dashboard refused the config: {e.code} {e.read().decode()}") from None


@contextlib.contextmanager
def local_cluster() -> Iterator[Cluster]:
    """A head and one node per worker group on 127.0.0.1, in a Ray directory of its own."""
    temp = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths must fit 107 bytes
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_TMPDIR", temp)  # sessions, logs and the address file: this run's own
        env.setenv("RAY_USAGE_STATS_ENABLED", "0")
        # Connecting to 127.0.0.1, Ray substitutes the host's routable address, where nothing
        # listens, unless the machine is no cluster (ray/_private/services.py,
        # get_node_ip_address): the switch in this process (read at import) and in Ray's own.
        env.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        env.setenv(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, "0")
        # Every Ray process imports graph_app (and the stubs) as a RayService pod does: PYTHONPATH.
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": True,
            "dashboard_host": "127.0.0.1", "dashboard_port": free_port(), "dashboard_agent_listen_port": free_port()})
        try:
            for resource, count in NODES.items():
                cluster.add_node(num_cpus=NODE_CPUS, resources={resource: count}, node_ip_address="127.0.0.1")
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, log_to_driver=False)
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()
            shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_graph(request):
    started = time.monotonic()
    with local_cluster() as cluster:
        up = time.monotonic()
        node_of = {r: n["NodeID"] for n in ray.nodes() for r in n["Resources"] if r in NODES}
        http_port = free_port()
        graph = RayGraph(cluster, f"http://{cluster.webui_url}", http_port, node_of)
        deploy(graph.dashboard, serve_config(http_port))

        def settled() -> bool:
            app = graph.details()["applications"].get(APP)
            return app is not None and app["status"] in ("RUNNING", "DEPLOY_FAILED")

        wait_for_condition(settled, timeout=60, retry_interval_ms=200)
        app = graph.details()["applications"][APP]
        assert app["status"] == "RUNNING", app["message"]
        deployed = time.monotonic()
        yield graph
    request.config.stash.setdefault(RUN_SUMMARY, []).append(
        f"graph_app on Ray {ray.__version__}: cluster up {up - started:.1f} s, applications running "
        f"{deployed - up:.1f} s, all with the tests and shutdown {time.monotonic() - started:.1f} s")


def numbers_request(numbers: np.ndarray, binary: bool, datatype: str = "FP32") -> tuple[bytes, dict[str, str]]:
    """The request tritonclient's InferenceServerClient.infer sends for the chain."""
    number = InferInput("number", list(numbers.shape), datatype)
    number.set_data_from_numpy(numbers, binary_data=binary)
    outputs = [InferRequestedOutput(t, binary_data=binary) for t in ("result", "incremented")]
    return triton_http.request_body([number], outputs=outputs)


def test_the_chain_runs_each_step_with_its_tensor_names(ray_graph):
    for numbers, binary in ((np.array([[1, 2], [3, 4]], np.float32), False), (np.array([[0.5, -1]], np.float32), True)):
        status, headers, body = ray_graph.infer(*numbers_request(numbers, binary))
        assert status == 200, body
        result = triton_http.response(body, headers)
        np.testing.assert_array_equal(result.as_numpy("result"), (numbers + 1) * 2)
        np.testing.assert_array_equal(result.as_numpy("incremented"), numbers + 1)


def ensemble_refusal(config, header: dict) -> Optional[str]:
    """What Triton refuses of a request to a model with `config`, in its words: each input by
    name, its datatype and its shape; without a batch dimension when max_batch_size is 0 (core
    src/infer_request.cc, InferenceRequest::Normalize; src/model.cc, GetInput)."""
    sent = {i["name"]: i for i in header["inputs"]}
    declared = {i.name: i for i in config.input}
    for name in sent:
        if name not in declared:
            return f"unexpected inference input '{name}' for model '{config.name}'"
    if set(sent) != set(declared):
        return f"expected {len(declared)} inputs but got {len(sent)} inputs for model '{config.name}'"
    for name, i in declared.items():
        datatype = graphs.kserve_datatype(model_config_pb2.DataType.Name(i.data_type))
        if sent[name]["datatype"] != datatype:
            return (f"inference input '{name}' data-type is '{sent[name]['datatype']}', but model "
                    f"'{config.name}' expects '{datatype}'")
        shape = sent[name]["shape"]
        dims = ([-1] if config.max_batch_size > 0 else []) + list(i.dims)
        if len(shape) != len(dims) or any(d not in (-1, s) for d, s in zip(dims, shape, strict=True)):
            return (f"unexpected shape for input '{name}' for model '{config.name}'. "
                    f"Expected {kserve.dims_text(dims)}, got {kserve.dims_text(shape)}")
    return None


def test_the_same_binary_batched_request_gets_the_same_answer_on_both_placements(ray_graph):
    """The chain as a Triton ensemble (the config.pbtxt the platform writes, read with Triton's
    own protobuf) and on Ray (the args the platform renders) take one request built by Triton's
    client, binary and batched, and answer alike; switching placement changes no client."""
    config = parse_model_config(ensemble_config(chain_graph("ensemble")), "chain ensemble")
    numbers = np.arange(6, dtype=np.float32).reshape(3, 2)  # a batch of 3 rows
    body, headers = numbers_request(numbers, binary=True)
    assert kserve.HEADER_LENGTH in headers  # binary data follows the JSON
    header = json.loads(body[:int(headers[kserve.HEADER_LENGTH])])
    assert ensemble_refusal(config, header) is None  # the ensemble takes it

    status, answer_headers, answer = ray_graph.infer(body, headers)
    assert status == 200, answer
    result = triton_http.response(answer, answer_headers)
    assert result.get_response()["model_name"] == config.name
    # What the ensemble answers: each output it declares, in its declared datatype, as the steps compute.
    expected = {"result": (numbers + 1) * 2, "incremented": numbers + 1}
    for output in config.output:
        got = result.get_output(output.name)
        assert got["datatype"] == graphs.kserve_datatype(model_config_pb2.DataType.Name(output.data_type))
        assert len(got["shape"]) == len(output.dims) and all(d in (-1, s) for d, s in zip(output.dims, got["shape"], strict=True))
        np.testing.assert_array_equal(result.as_numpy(output.name), expected[output.name])

    # And what the ensemble refuses, the Ray graph refuses too, in Triton's words.
    for refused in (numbers_request(numbers.astype(np.float64), True, "FP64"), numbers_request(numbers.reshape(6), True)):
        refusal = ensemble_refusal(config, json.loads(refused[0][:int(refused[1][kserve.HEADER_LENGTH])]))
        assert refusal is not None
        status, _, answer = ray_graph.infer(*refused)
        assert (status, json.loads(answer)["error"]) == (400, refusal)


def test_each_step_runs_only_on_the_node_with_its_resource(ray_graph):
    deployments = ray_graph.details()["applications"][APP]["deployments"]
    for name in NODES:
        replicas = deployments[name]["replicas"]
        assert len(replicas) == 2 and {r["state"] for r in replicas} == {"RUNNING"}
        assert {r["node_id"] for r in replicas} == {ray_graph.node_of[name]}
        # And the replicas themselves, asked through Serve's router, agree.
        handle = serve.get_deployment_handle(name, app_name=APP)
        try:
            nodes = {handle.where.remote().result(timeout_s=30) for _ in range(8)}
        finally:
            # Its router keeps calling Ray: left running, it would start a Ray of its own
            # once this cluster is gone.
            handle.shutdown()
        assert nodes == {ray_graph.node_of[name]}
    # The ingress asks for no step resource; the head (num_cpus 0) takes no work.
    (ingress,) = deployments[INGRESS]["replicas"]
    assert ingress["node_id"] in {ray_graph.node_of[n] for n in NODES}


@pytest.mark.parametrize("body, headers, error", [
    (b'{"inputs": []}', {}, "expected 1 inputs but got 0 inputs for model 'chain'"),
    (b'{"inputs": [{"name": "number", "shape": [1, 2], "datatype": "FP32", "data": [1]}]}', {},
     "Unable to parse 'data' of input 'number': 1 elements, the shape holds 2"),
    (b"not json", {}, "failed to parse the request JSON buffer"),
    (b'{"inputs": [{"name": "number", "shape": [1, 2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}]}', {},
     "must specify valid 'Inference-Header-Content-Length'"),
])
def test_a_bad_request_gets_400_and_one_line(ray_graph, body, headers, error):
    status, _, answer = ray_graph.infer(body, headers)
    assert status == 400
    message = json.loads(answer)["error"]
    assert message.startswith(error) and "\n" not in message


def test_the_graph_answers_only_its_own_model(ray_graph):
    status, _, answer = ray_graph.infer(*numbers_request(np.ones((1, 2), np.float32), False), model="other")
    assert status == 404 and "POST /v2/models/chain/infer" in json.loads(answer)["error"]
    with urllib.request.urlopen(f"{ray_graph.http}v2/models/{APP}", timeout=30) as r:
        assert json.load(r)["inputs"] == [{"name": "number", "datatype": "FP32", "shape": [-1, 2]}]


def test_a_step_whose_resource_no_node_has_stays_pending(ray_graph):
    """Ray reports the replica as demand for its resource (what the autoscaler turns into a
    worker of that group) and places it nowhere, though the other nodes have CPUs to spare."""

    wait_for_condition(lambda: {"CPU": 1.0, "step-lost": 1.0} in ray_graph.demands(), timeout=30, retry_interval_ms=200)
    status = get_cluster_status(ray_graph.cluster.address)
    spare = [n.available_resources().get("CPU", 0) for n in status.active_nodes + status.idle_nodes]
    assert max(spare) >= 1  # CPU alone would have placed it
    orphan = ray_graph.details()["applications"][ORPHAN]
    (replica,) = orphan["deployments"]["step-lost"]["replicas"]
    assert replica["state"] == "STARTING" and "node_id" not in replica
    assert orphan["status"] == "DEPLOYING"


def test_a_steps_new_range_reaches_its_running_replicas_in_place(ray_graph):
    """What the running cluster does with a step's new range: KubeRay keeps the cluster and
    puts the new serveConfigV2 to it (tests/plan/test_graphs.py, KubeRay's decision ported);
    Serve keeps the step's running replicas and asks for a third with the step's resource,
    the demand Ray's autoscaler turns into one more worker of the group. Last: it restores."""
    running = {r["replica_id"] for r in ray_graph.replicas("step-add")}
    try:
        deploy(ray_graph.dashboard, serve_config(ray_graph.http_port, add_replicas=3))
        wait_for_condition(lambda: len(ray_graph.replicas("step-add")) == 3, timeout=30, retry_interval_ms=200)
        wait_for_condition(lambda: {"CPU": 1.0, "step-add": 1.0} in ray_graph.demands(), timeout=30, retry_interval_ms=200)
        replicas = ray_graph.replicas("step-add")
        assert {r["replica_id"] for r in replicas if r["state"] == "RUNNING"} == running
        assert [r["state"] for r in replicas if r["replica_id"] not in running] == ["STARTING"]
    finally:
        deploy(ray_graph.dashboard, serve_config(ray_graph.http_port))
        wait_for_condition(lambda: len(ray_graph.replicas("step-add")) == 2, timeout=30, retry_interval_ms=200)
    assert {r["replica_id"] for r in ray_graph.replicas("step-add")} == running
