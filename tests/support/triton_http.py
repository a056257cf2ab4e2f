"""Triton's own HTTP client encoding (tritonclient.http, pinned in pyproject.toml), without its
transport: the package's `__init__` imports gevent for its client, which the project does not
install, while request encoding (`_utils._get_inference_request`, what `InferenceServerClient.
generate_request_body` calls), `InferInput`, `InferRequestedOutput` and response decoding
(`InferResult.from_response_body`) need only numpy and rapidjson. So a test builds its
requests and reads its answers exactly as a Triton client does."""

from __future__ import annotations

import importlib
import sys
import types

from inference_platform.serving.model_config import tritonclient_dir

HEADER_LENGTH = "Inference-Header-Content-Length"


def _http_package() -> types.ModuleType:
    name = "tritonclient.http"
    if name in sys.modules:
        return sys.modules[name]
    # The package without its __init__: its submodules import only numpy and rapidjson.
    package = types.ModuleType(name)
    package.__path__ = [str(tritonclient_dir() / "http")]
    sys.modules[name] = package
    return package


_http_package()
_utils = importlib.import_module("tritonclient.http._utils")
InferInput = importlib.import_module("tritonclient.http._infer_input").InferInput
InferRequestedOutput = importlib.import_module("tritonclient.http._requested_output").InferRequestedOutput
InferResult = importlib.import_module("tritonclient.http._infer_result").InferResult


def request_body(inputs, outputs=None, request_id: str = "") -> tuple[bytes, dict[str, str]]:
    """Body and headers as InferenceServerClient.infer sends them (tritonclient/http/_client.py:
    generate_request_body, then the Inference-Header-Content-Length header when binary follows)."""
    body, json_size = _utils._get_inference_request(
        inputs=inputs, request_id=request_id, outputs=outputs, sequence_id=0, sequence_start=False,
        sequence_end=False, priority=0, timeout=None, custom_parameters=None)
    headers = {} if json_size is None else {HEADER_LENGTH: str(json_size)}
    return body, headers


def response(body: bytes, headers) -> InferResult:
    """The answer as InferenceServerClient.infer reads it (header names in any case, as HTTP has them)."""
    length = {k.lower(): v for k, v in headers.items()}.get(HEADER_LENGTH.lower())
    return InferResult.from_response_body(body, False, None if length is None else int(length), None)
