"""KServe v2 inference over HTTP as Triton's HTTP frontend speaks it, so a graph placed on Ray
takes the very request a `placement: ensemble` graph (a Triton ensemble) takes and answers alike.

Sources (triton-inference-server/server src/http_server.cc, core src/infer_request.cc, and the
protocol docs docs/protocol/extension_binary_data.md):
- a request is a JSON object, optionally followed by the binary data of the inputs whose
  `parameters.binary_data_size` is set, in input order; the `Inference-Header-Content-Length`
  header gives the JSON's length (HTTPAPIServer::GetInferenceHeaderLength, EVBufferToInput);
- JSON `data` may be nested or flat, row-major (ReadDataFromJsonHelper); FP16 and BF16 travel
  only as binary (ReadDataFromJson, WriteDataToJson); BYTES elements are a 4-byte
  little-endian length then the bytes;
- a request must send every input with the model's datatype and, the ensemble having
  `max_batch_size: 0` (serving/model_config.py ensemble_config), exactly the declared dims,
  -1 matching any size (InferenceRequest::Normalize);
- the response names the model and its version, and lists each output's datatype, shape and
  flat `data`, or its `binary_data_size` with the bytes after the JSON (InferRequestClass::
  FinalizeResponse); an output is binary when its request entry says `binary_data: true`, or,
  when the request lists no outputs, when `parameters.binary_data_output` is true.
Errors are one line, Triton's wording where it has one, answered as `{"error": ...}` with 400.
"""

from __future__ import annotations

import gzip
import json
import math
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .spec import TensorSpec

HEADER_LENGTH = "Inference-Header-Content-Length"
# The ensemble's only version directory (serving/triton.py model_configs_volume writes `<model>/1/`).
MODEL_VERSION = "1"
# Triton's KServe datatypes numpy holds, little-endian as the binary extension sends them.
NUMPY_TYPES = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype("u1"), "UINT16": np.dtype("<u2"), "UINT32": np.dtype("<u4"),
    "UINT64": np.dtype("<u8"), "INT8": np.dtype("i1"), "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"), "FP16": np.dtype("<f2"), "FP32": np.dtype("<f4"), "FP64": np.dtype("<f8"),
    "BYTES": np.dtype(object),
}
_BINARY_ONLY = frozenset({"FP16"})
_MAX_NESTING = 100  # HTTP_MAX_JSON_NESTING_DEPTH in server src/http_server.h
_LENGTH = struct.Struct("<I")


class ProtocolError(ValueError):
    """A request Triton would refuse; the message is one line."""

    def __init__(self, message: str):
        super().__init__(message.replace("\n", " "))


@dataclass(frozen=True)
class InferRequest:
    id: Optional[str]
    inputs: dict[str, np.ndarray]
    # The outputs asked for, each with whether it goes back as binary; None: all, as `binary_default`.
    outputs: Optional[tuple[tuple[str, bool], ...]]
    binary_default: bool


def dims_text(dims) -> str:
    """Triton's DimsListToString (triton-inference-server/common src/model_config.cc): `[-1,4]`."""
    return "[" + ",".join(str(d) for d in dims) + "]"


def _object(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise ProtocolError(f"Unable to parse '{what}': expected a JSON object")
    return value


def _header_length(value: Optional[str], body_length: int) -> int:
    if value is None:
        return body_length
    try:
        length = int(value)
    except ValueError:
        raise ProtocolError(f"Unable to parse {HEADER_LENGTH}, got: {value}") from None
    if not 0 < length <= body_length:
        raise ProtocolError(f"inference header size should be in range (0, {body_length}), got: {value}")
    return length


def decompressed(body: bytes, encoding: Optional[str]) -> bytes:
    """The body as sent before `Content-Encoding` (gzip or deflate, as Triton accepts)."""
    coding = (encoding or "identity").strip().lower()
    try:
        if coding == "gzip":
            return gzip.decompress(body)
        if coding == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error, EOFError) as e:
        raise ProtocolError(f"unable to decompress the request body ({coding}): {e}") from None
    if coding != "identity":
        raise ProtocolError(f"unsupported Content-Encoding {encoding!r}; allowed: gzip, deflate, identity")
    return body


def _flat(data: Any) -> list:
    """Nested JSON arrays, row-major, as one list."""
    out: list = []
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth >= _MAX_NESTING:
            raise ProtocolError(f"JSON nesting depth exceeds maximum allowed limit ({_MAX_NESTING})")
        if isinstance(value, list):
            stack.extend((v, depth + 1) for v in reversed(value))
        else:
            out.append(value)
    return out


def _element_ok(datatype: str, v: Any) -> bool:
    if datatype == "BOOL":
        return isinstance(v, bool)
    if datatype == "BYTES":
        return isinstance(v, str)
    if isinstance(v, bool):
        return False
    if datatype.startswith(("INT", "UINT")):
        info = np.iinfo(NUMPY_TYPES[datatype])
        return isinstance(v, int) and info.min <= v <= info.max
    return isinstance(v, (int, float))


def _from_json(spec: TensorSpec, data: Any, count: int) -> np.ndarray:
    if spec.datatype in _BINARY_ONLY:
        raise ProtocolError(f"receiving {spec.datatype} data via JSON is not supported. Please use the binary "
                            f"data format for input {spec.name}")
    flat = _flat(data) if isinstance(data, list) else [data]
    if len(flat) != count:
        raise ProtocolError(f"Unable to parse 'data' of input '{spec.name}': {len(flat)} elements, the shape holds {count}")
    bad = [v for v in flat if not _element_ok(spec.datatype, v)][:1]
    if bad:
        raise ProtocolError(f"Unable to parse 'data' of input '{spec.name}': {bad[0]!r} is no {spec.datatype} value")
    if spec.datatype == "BYTES":
        array = np.empty(count, dtype=object)
        array[:] = [v.encode("utf-8") for v in flat]
        return array
    return np.array(flat, dtype=NUMPY_TYPES[spec.datatype])


def _bytes_elements(chunk: bytes, count: int, name: str, model: str) -> np.ndarray:
    """BYTES binary data: each element a 4-byte little-endian length, then its bytes."""
    elements, offset = [], 0
    while offset < len(chunk):
        if offset + _LENGTH.size > len(chunk):
            raise ProtocolError(f"incomplete string length indicator for inference input '{name}' for model '{model}'")
        (length,) = _LENGTH.unpack_from(chunk, offset)
        offset += _LENGTH.size
        if offset + length > len(chunk):
            raise ProtocolError(f"incomplete string data for inference input '{name}' for model '{model}'")
        elements.append(chunk[offset:offset + length])
        offset += length
    if len(elements) != count:
        raise ProtocolError(f"unexpected number of string elements {len(elements)} for inference input '{name}' "
                            f"for model '{model}', expecting {count}")
    array = np.empty(count, dtype=object)
    array[:] = elements
    return array


def _from_binary(spec: TensorSpec, chunk: bytes, count: int, model: str) -> np.ndarray:
    if spec.datatype == "BYTES":
        return _bytes_elements(chunk, count, spec.name, model)
    dtype = NUMPY_TYPES[spec.datatype]
    if len(chunk) != count * dtype.itemsize:
        raise ProtocolError(f"input byte size mismatch for input '{spec.name}' for model '{model}'. "
                            f"Expected {count * dtype.itemsize}, got {len(chunk)}")
    return np.frombuffer(chunk, dtype=dtype).copy()


def _shape(raw: Any, name: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in raw):
        raise ProtocolError(f"Unable to parse 'shape' of input '{name}': expected a list of sizes of 0 or more")
    return tuple(raw)


def _check_against(spec: TensorSpec, datatype: Any, shape: tuple[int, ...], model: str) -> None:
    if datatype != spec.datatype:
        raise ProtocolError(f"inference input '{spec.name}' data-type is '{datatype}', but model '{model}' "
                            f"expects '{spec.datatype}'")
    if len(shape) != len(spec.dims) or any(d != -1 and d != s for d, s in zip(spec.dims, shape, strict=False)):
        raise ProtocolError(f"unexpected shape for input '{spec.name}' for model '{model}'. "
                            f"Expected {dims_text(spec.dims)}, got {dims_text(shape)}")


def _requested_outputs(raw: Any, declared: dict[str, TensorSpec], model: str) -> Optional[tuple[tuple[str, bool], ...]]:
    if not isinstance(raw, (list, type(None))):
        raise ProtocolError("Unable to parse 'outputs': expected a list")
    if not raw:  # none requested: Triton returns every output
        return None
    requested = []
    for entry in raw:
        entry = _object(entry, "outputs")
        name = entry.get("name")
        if name not in declared:
            raise ProtocolError(f"unexpected inference output '{name}' for model '{model}'")
        binary = _object(entry.get("parameters", {}), "parameters").get("binary_data", False)
        if not isinstance(binary, bool):
            raise ProtocolError("Unable to parse 'binary_data'")
        requested.append((name, binary))
    return tuple(requested)


def parse_request(body: bytes, header_length: Optional[str], model: str, inputs: tuple[TensorSpec, ...],
                  outputs: tuple[TensorSpec, ...]) -> InferRequest:
    """A KServe v2 inference request for `model`, checked against its declared tensors."""
    split = _header_length(header_length, len(body))
    try:
        header = json.loads(body[:split])
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"failed to parse the request JSON buffer: {e}") from None
    header = _object(header, "request")
    declared = {t.name: t for t in inputs}
    binary, offset = body[split:], 0
    arrays: dict[str, np.ndarray] = {}
    raw_inputs = header.get("inputs")
    if not isinstance(raw_inputs, list):
        raise ProtocolError("Unable to parse 'inputs': expected a list")
    for entry in raw_inputs:
        entry = _object(entry, "inputs")
        name = entry.get("name")
        if name not in declared:
            raise ProtocolError(f"unexpected inference input '{name}' for model '{model}'")
        if name in arrays:
            raise ProtocolError(f"input '{name}' already exists in request")
        spec = declared[name]
        shape = _shape(entry.get("shape"), name)
        _check_against(spec, entry.get("datatype"), shape, model)
        size = _object(entry.get("parameters", {}), "parameters").get("binary_data_size")
        if ("data" in entry) == (size is not None):
            raise ProtocolError("Input must set only one of the following fields: 'data', 'binary_data_size' in "
                                "'parameters'")
        count = math.prod(shape)
        if size is None:
            arrays[name] = _from_json(spec, entry["data"], count).reshape(shape)
            continue
        if header_length is None:
            raise ProtocolError(f"must specify valid '{HEADER_LENGTH}' in request header and 'binary_data_size' "
                                "when passing inputs in binary data format")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ProtocolError("Unable to parse 'binary_data_size'")
        if offset + size > len(binary):
            raise ProtocolError(f"unexpected size for input '{name}', expecting {offset + size - len(binary)} "
                                f"additional bytes for model '{model}'")
        arrays[name] = _from_binary(spec, binary[offset:offset + size], count, model).reshape(shape)
        offset += size
    if offset != len(binary):
        raise ProtocolError(f"unexpected additional input data for model '{model}'")
    missing = [t.name for t in inputs if t.name not in arrays]
    if missing:
        raise ProtocolError(f"expected {len(inputs)} inputs but got {len(arrays)} inputs for model '{model}'. "
                            f"Got input(s) {_names(arrays)}, but missing required input(s) {_names(missing)}. "
                            "Please provide all required input(s).")
    params = _object(header.get("parameters", {}), "parameters")
    if any(isinstance(k, str) and k.startswith("triton_") for k in params):
        raise ProtocolError("parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.")
    binary_default = params.get("binary_data_output", False)
    if not isinstance(binary_default, bool):
        raise ProtocolError("Unable to parse 'binary_data_output'")
    request_id = header.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise ProtocolError("Unable to parse 'id'")
    return InferRequest(id=request_id, inputs=arrays, binary_default=binary_default,
                        outputs=_requested_outputs(header.get("outputs"), {t.name: t for t in outputs}, model))


def _names(names) -> str:
    # As ValidateRequestInputs lists them (core src/infer_request.cc): ['a','b'].
    return "[" + ",".join(f"'{n}'" for n in names) + "]"


def _binary(array: np.ndarray, datatype: str) -> bytes:
    if datatype == "BYTES":
        return b"".join(_LENGTH.pack(len(e)) + e for e in (_as_bytes(v) for v in array.reshape(-1)))
    return np.ascontiguousarray(array, dtype=NUMPY_TYPES[datatype]).tobytes()


def _as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def _json_data(array: np.ndarray, datatype: str) -> list:
    if datatype in _BINARY_ONLY:
        raise ProtocolError(f"sending {datatype} data via JSON is not supported. Please use the binary data format for output")
    if datatype == "BYTES":
        return [_as_bytes(v).decode("utf-8", errors="replace") for v in array.reshape(-1)]
    return array.reshape(-1).tolist()


def typed(array: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """An output as its declared datatype (what Triton's ensemble checks its steps produce)."""
    array = np.asarray(array)
    if spec.datatype == "BYTES":
        return array.astype(object, copy=False)
    return array.astype(NUMPY_TYPES[spec.datatype], copy=False)


def encode_response(model: str, request: InferRequest, produced: dict[str, np.ndarray],
                    outputs: tuple[TensorSpec, ...]) -> tuple[bytes, dict[str, str]]:
    """The response body and its headers (Content-Type, and the header length when binary follows)."""
    declared = {t.name: t for t in outputs}
    chosen = request.outputs if request.outputs is not None else tuple((t.name, request.binary_default) for t in outputs)
    entries, blobs = [], []
    for name, as_binary in chosen:
        spec = declared[name]
        array = typed(produced[name], spec)
        entry: dict[str, Any] = {"name": name, "datatype": spec.datatype, "shape": list(array.shape)}
        if as_binary:
            blob = _binary(array, spec.datatype)
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = _json_data(array, spec.datatype)
        entries.append(entry)
    response = {**({"id": request.id} if request.id else {}), "model_name": model, "model_version": MODEL_VERSION,
                "outputs": entries}
    head = json.dumps(response, separators=(",", ":")).encode()
    if not blobs:
        return head, {"Content-Type": "application/json"}
    return head + b"".join(blobs), {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(head))}


def model_metadata(model: str, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...]) -> dict:
    """GET /v2/models/<model>, as Triton answers it for the ensemble (shape: the dims, no batch dimension)."""
    def tensors(ts):
        return [{"name": t.name, "datatype": t.datatype, "shape": list(t.dims)} for t in ts]
    return {"name": model, "versions": [MODEL_VERSION], "platform": "ensemble",
            "inputs": tensors(inputs), "outputs": tensors(outputs)}
