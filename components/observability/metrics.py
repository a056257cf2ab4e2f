"""Metric names shared by the Triton HPAs and the prometheus-adapter rules, and how
Prometheus scrapes the serving workloads."""

# Per-pod average time a request waits in Triton's queue, microseconds, derived by
# prometheus-adapter from nv_inference_queue_duration_us / nv_inference_request_success
# per model: the pod's worst model, or the model an HPA names in its metric selector.
QUEUE_TIME_METRIC = "avg_time_queue_us"
# The label Triton puts on every per-model series; an HPA metric selector on it picks one model.
TRITON_MODEL_LABEL = "model"
# Per-pod requests waiting in Triton's queue (nv_inference_pending_request_count, a gauge: Triton
# core infer_request.cc counts a request from enqueue to execution), the pod's worst model or the
# model an HPA names. Unlike queue time, which Triton adds for successful requests only (core
# infer_stats.cc UpdateSuccess; UpdateFailure adds none), it keeps rising when requests are
# rejected or time out, so an HPA on it still scales out at saturation.
PENDING_REQUESTS_METRIC = "triton_pending_requests"
# LLM engines, per pod (tests/catalogues/tensorrtllm-backend.txt and vllm-backend.txt): requests
# TensorRT-LLM's batch manager holds (nv_trt_llm_request_metrics request_type="active"); the share of
# its KV-cache blocks in use (kv_cache_block_type "used" / "max"); and vLLM's requests in flight, by
# Little's law from the latency its requests spent (rate of vllm:e2e_request_latency_seconds_sum:
# the vLLM backend exports no running/waiting gauge). One name per engine: prometheus-adapter keeps
# one query per metric name.
TRTLLM_ACTIVE_METRIC = "trtllm_requests_active"
TRTLLM_KV_CACHE_METRIC = "trtllm_kv_cache_use"
VLLM_IN_FLIGHT_METRIC = "vllm_requests_in_flight"
# Per-pod successful inference requests per second.
REQUEST_RATE_METRIC = "triton_requests_per_second"
# Triton's metrics port.
TRITON_METRICS_PORT = 8002


def pod_monitor_spec(selector: dict[str, str], *ports: str) -> dict:
    """A PodMonitor's spec: the selected pods' `/metrics` on each named port, every 15 s (a pod
    without a port of that name is not scraped on it)."""
    return {"selector": {"matchLabels": selector},
            "podMetricsEndpoints": [{"port": port, "path": "/metrics", "interval": "15s"} for port in ports]}
