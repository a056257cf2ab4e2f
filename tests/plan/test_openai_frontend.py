"""An LLM version with `llm.openai` runs Triton inside the OpenAI-compatible frontend: the flags its
parser takes, the OpenAI port beside the KServe ones, readiness on the frontend, a drain that lets
the longest stream end, metrics scraped where the frontend serves them; classic versions unchanged."""

from __future__ import annotations

import copy

from inference_platform.serving.openai_frontend import FRONTEND_MAIN, OPENAI_FRONTEND_PORT
from inference_platform.serving.shutdown import ENDPOINT_REMOVAL_SECONDS, shutdown_problems
from tests.conftest import ROOT, base_config, render_raw
from tests.plan.test_triton import DEPLOYMENT, cr

LLAMA31_8B = {"parametersBillion": 8.03, "layers": 32, "kvHeads": 8, "headDim": 128}
VLLM_IMAGE = "nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3"


def frontend_catalogue() -> dict[str, str]:
    """main.py r25.01's options -> '' (takes a value), 'switch', or 'choices=a,b'."""
    rows = (ROOT / "tests" / "catalogues" / "openai-frontend-r25.01-flags.txt").read_text().splitlines()
    return {r.split()[0]: (r.split() + [""])[1] for r in rows if r and not r.startswith("#")}


def with_llm_version(openai: dict | None = None, timeout: int = 120) -> dict:
    """The base service with a second version, v2, serving Llama 3.1 8B on vLLM; with `openai`
    both versions serve it behind the frontend (a service whose versions serve the OpenAI API is
    routed through their InferencePools, so every version must, and its route takes no Basic Auth)."""
    raw = base_config()
    svc = raw["services"][0]
    svc["timeoutSeconds"] = timeout
    llm = {"engine": "vllm", "architecture": LLAMA31_8B, "maxContextTokens": 8192, "maxConcurrentSequences": 32}
    if openai is not None:
        llm["openai"] = openai
        svc["auth"] = {"mode": "none"}
        svc["versions"][0].update(image=VLLM_IMAGE, gpu={"group": "gpu"}, llm=copy.deepcopy(llm))
    svc["versions"][0]["weight"] = 90
    svc["versions"].append({"name": "v2", "image": VLLM_IMAGE, "weight": 10, "gpu": {"group": "gpu"},
                            "modelRepository": {"cache": "fileShare", "path": "svc/v2"}, "llm": llm})
    return raw


def pod(plan, version: str) -> dict:
    return plan.get(DEPLOYMENT, f"svc-{version}").inputs["spec"]["template"]


def test_an_llm_version_runs_the_openai_frontend_with_flags_its_parser_takes():
    container = pod(render_raw(with_llm_version({"tokenizer": "svc/v2/tokenizer"})), "v2")["spec"]["containers"][0]
    assert container["command"] == ["python3", FRONTEND_MAIN]
    catalogue = frontend_catalogue()
    assert len(catalogue) == 10  # main.py r25.01 parse_args: ten add_argument calls
    for arg in container["args"]:
        name, _, value = arg.removeprefix("--").partition("=")
        assert name in catalogue, f"{arg}: not an option of main.py r25.01"
        kind = catalogue[name]
        assert (value == "") == (kind == "switch"), f"{arg}: {kind or 'takes a value'}"
        if kind.startswith("choices="):
            assert value in kind.removeprefix("choices=").split(","), arg
    assert "--model-repository=/models/svc/v2" in container["args"]
    assert "--tokenizer=/models/svc/v2/tokenizer" in container["args"]
    assert {"--backend=vllm", "--enable-kserve-frontends", "--kserve-http-port=8000", "--kserve-grpc-port=8001",
            f"--openai-port={OPENAI_FRONTEND_PORT}"} <= set(container["args"])


def test_an_llm_version_exposes_the_openai_port_and_is_ready_on_the_frontend():
    container = pod(render_raw(with_llm_version({})), "v2")["spec"]["containers"][0]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8000, "grpc": 8001, "http-openai": 9000}
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health/ready", "port": "http-openai"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    # No restriction flags read the admin key, and no tokenizer flag without a tokenizer.
    assert "env" not in container
    assert not [a for a in container["args"] if a.startswith(("--tokenizer", "--http-restricted-api"))]


def test_a_tensorrt_llm_version_runs_the_frontend_in_orchestrator_mode():
    raw = with_llm_version({})
    version = raw["services"][0]["versions"][1]
    version["image"] = "registry.example.com/tritonserver:25.01-trtllm-openai"
    version["llm"]["engine"] = "tensorrtllm"
    container = pod(render_raw(raw), "v2")["spec"]["containers"][0]
    assert container["env"] == [{"name": "TRTLLM_ORCHESTRATOR", "value": "1"}]
    assert "--backend=tensorrtllm" in container["args"]


def test_a_frontend_pod_drains_for_the_route_timeout_before_sigterm():
    template = pod(render_raw(with_llm_version({}, timeout=600)), "v2")
    pre_stop = template["spec"]["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pre_stop == ENDPOINT_REMOVAL_SECONDS + 600
    # After SIGTERM: Triton's in-process exit timeout (30 s) and the slack.
    assert template["spec"]["terminationGracePeriodSeconds"] == pre_stop + 30 + 15
    assert shutdown_problems(template, 600) == []
    # The drain check notices a pause too short for the longest stream.
    short = copy.deepcopy(template)
    short["spec"]["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"] = 60
    assert any("OpenAI frontend's preStop 60s" in p for p in shutdown_problems(short, 600))


def test_without_llm_openai_a_service_runs_tritonserver_and_with_it_every_version_runs_the_frontend():
    without = render_raw(with_llm_version(None))
    with_frontend = render_raw(with_llm_version({}))
    # Without llm.openai the LLM version runs tritonserver, like the classic one beside it.
    assert [pod(without, v)["spec"]["containers"][0]["command"] for v in ("v1", "v2")] == [["tritonserver"]] * 2
    assert [pod(with_frontend, v)["spec"]["containers"][0]["command"] for v in ("v1", "v2")] == [["python3", FRONTEND_MAIN]] * 2


def test_frontend_pods_are_scraped_on_the_openai_port_and_only_its_metrics_path_is_open_to_prometheus():
    plan = render_raw(with_llm_version({}))
    endpoints = cr(plan, "PodMonitor", "svc").inputs["spec"]["podMetricsEndpoints"]
    assert [(e["port"], e["path"]) for e in endpoints] == [("http-metrics", "/metrics"), ("http-openai", "/metrics")]
    assert cr(plan, "PeerAuthentication", "svc").inputs["spec"]["portLevelMtls"]["9000"] == {"mode": "PERMISSIVE"}
    rules = cr(plan, "AuthorizationPolicy", "svc").inputs["spec"]["rules"]
    assert {"to": [{"operation": {"ports": ["9000"], "methods": ["GET"], "paths": ["/metrics"]}}]} in rules
    ingress = plan.get("kubernetes:networking.k8s.io/v1:NetworkPolicy", "svc-networkpolicy").inputs["spec"]["ingress"]
    assert 9000 in [p["port"] for p in ingress[1]["ports"]]
    # A service without frontend versions keeps its classic scrape and policies.
    classic = render_raw(with_llm_version(None))
    assert [e["port"] for e in cr(classic, "PodMonitor", "svc").inputs["spec"]["podMetricsEndpoints"]] == ["http-metrics"]
    assert "9000" not in cr(classic, "PeerAuthentication", "svc").inputs["spec"]["portLevelMtls"]
