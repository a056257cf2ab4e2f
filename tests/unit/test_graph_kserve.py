"""graph_app/kserve.py: a graph on Ray reads the requests and writes the answers of Triton's
KServe v2 HTTP protocol, checked against Triton's own client encoding (tests/support/triton_http.py)."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from graph_app import kserve
from graph_app.spec import DATATYPES, TensorSpec
from tests.support import triton_http
from tests.support.triton_http import InferInput, InferRequestedOutput

MODEL = "chain"
INPUTS = (TensorSpec("number", "FP32", (-1, 2)), TensorSpec("words", "BYTES", (-1,)))
OUTPUTS = (TensorSpec("result", "FP32", (-1, 2)), TensorSpec("label", "BYTES", (-1,)),
           TensorSpec("half", "FP16", (2,)))
NUMBERS = np.arange(6, dtype=np.float32).reshape(3, 2)
WORDS = np.array([b"a cat", "ein Hund \N{DOG}".encode(), b""], dtype=object)


def client_inputs(binary: bool, numbers=NUMBERS, words=WORDS, number_type: str = "FP32"):
    a = InferInput("number", list(numbers.shape), number_type)
    a.set_data_from_numpy(numbers, binary_data=binary)
    b = InferInput("words", list(words.shape), "BYTES")
    b.set_data_from_numpy(words, binary_data=binary)
    return [a, b]


def parse(body: bytes, headers: dict[str, str]) -> kserve.InferRequest:
    return kserve.parse_request(body, headers.get(kserve.HEADER_LENGTH), MODEL, INPUTS, OUTPUTS)


@pytest.mark.parametrize("binary", [True, False])
def test_tritons_client_request_is_read_as_the_client_sent_it(binary):
    body, headers = triton_http.request_body(client_inputs(binary), request_id="r-1")
    assert (kserve.HEADER_LENGTH in headers) is binary
    request = parse(body, headers)
    assert request.id == "r-1"
    assert request.inputs["number"].dtype == np.float32
    np.testing.assert_array_equal(request.inputs["number"], NUMBERS)
    assert request.inputs["words"].tolist() == WORDS.tolist()
    # No outputs listed: tritonclient asks for every output as binary.
    assert request.outputs is None and request.binary_default is True


def test_json_data_may_be_nested_or_flat_and_gzip_compressed():
    nested = {"inputs": [{"name": "number", "shape": [3, 2], "datatype": "FP32", "data": NUMBERS.tolist()},
                         {"name": "words", "shape": [3], "datatype": "BYTES", "data": ["a", "b", "c"]}]}
    flat = json.loads(json.dumps(nested))
    flat["inputs"][0]["data"] = NUMBERS.reshape(-1).tolist()
    for body in (nested, flat):
        raw = kserve.decompressed(gzip.compress(json.dumps(body).encode()), "gzip")
        np.testing.assert_array_equal(parse(raw, {}).inputs["number"], NUMBERS)


@pytest.mark.parametrize("binary", [True, False])
def test_the_answer_reads_with_tritons_client_as_triton_writes_it(binary):
    outputs = [InferRequestedOutput("result", binary_data=binary), InferRequestedOutput("label", binary_data=binary)]
    body, headers = triton_http.request_body(client_inputs(True), outputs=outputs, request_id="r-2")
    request = parse(body, headers)
    produced = {"result": NUMBERS.astype(np.float64) * 2, "label": WORDS, "half": np.ones(2, np.float16)}
    content, out_headers = kserve.encode_response(MODEL, request, produced, OUTPUTS)
    assert (kserve.HEADER_LENGTH in out_headers) is binary
    result = triton_http.response(content, out_headers)
    answer = result.get_response()
    assert (answer["id"], answer["model_name"], answer["model_version"]) == ("r-2", MODEL, "1")
    assert [o["name"] for o in answer["outputs"]] == ["result", "label"]
    # The declared datatype, whatever the backend computed in.
    assert result.get_output("result")["datatype"] == "FP32"
    np.testing.assert_array_equal(result.as_numpy("result"), NUMBERS * 2)
    assert result.as_numpy("result").dtype == np.float32
    assert result.as_numpy("label").tolist() == (WORDS.tolist() if binary else [w.decode() for w in WORDS])


@pytest.mark.parametrize("listed", [{}, {"outputs": []}])
def test_without_a_list_of_outputs_every_output_comes_back_binary_or_json_as_asked(listed):
    body = json.dumps({"inputs": [{"name": "number", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]},
                                  {"name": "words", "shape": [1], "datatype": "BYTES", "data": ["x"]}],
                       "parameters": {"binary_data_output": True}, **listed}).encode()
    produced = {"result": np.zeros((1, 2)), "label": np.array([b"x"], dtype=object), "half": np.ones(2, np.float16)}
    content, headers = kserve.encode_response(MODEL, parse(body, {}), produced, OUTPUTS)
    result = triton_http.response(content, headers)
    assert [o["name"] for o in result.get_response()["outputs"]] == ["result", "label", "half"]
    np.testing.assert_array_equal(result.as_numpy("half"), np.ones(2, np.float16))


def test_model_metadata_lists_the_declared_tensors_as_triton_does_for_the_ensemble():
    metadata = kserve.model_metadata(MODEL, INPUTS, OUTPUTS)
    assert metadata["inputs"][0] == {"name": "number", "datatype": "FP32", "shape": [-1, 2]}
    assert metadata["versions"] == ["1"] and metadata["platform"] == "ensemble"


def test_every_graph_datatype_has_its_numpy_type():
    assert tuple(kserve.NUMPY_TYPES) == DATATYPES


def _json(inputs, **extra) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


NUMBER_JSON = {"name": "number", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}
WORDS_JSON = {"name": "words", "shape": [1], "datatype": "BYTES", "data": ["x"]}


def _binary_number(size_delta: int = 0, extra: bytes = b"") -> tuple[bytes, dict[str, str]]:
    head = _json([{**NUMBER_JSON, "data": None, "parameters": {"binary_data_size": 8}}, WORDS_JSON])
    head = head.replace(b'"data": null, ', b"")
    data = np.array([1, 2], np.float32).tobytes()
    return head + data[:len(data) + size_delta] + extra, {kserve.HEADER_LENGTH: str(len(head))}


# Each message as Triton words it (server src/http_server.cc, core src/infer_request.cc, src/model.cc).
REFUSED = [
    ((_json([{**NUMBER_JSON, "datatype": "FP64"}, WORDS_JSON]), {}),
     "inference input 'number' data-type is 'FP64', but model 'chain' expects 'FP32'"),
    ((_json([{**NUMBER_JSON, "shape": [2], "data": [1, 2]}, WORDS_JSON]), {}),
     "unexpected shape for input 'number' for model 'chain'. Expected [-1,2], got [2]"),
    ((_json([{**NUMBER_JSON, "shape": [1, 3], "data": [1, 2, 3]}, WORDS_JSON]), {}),
     "unexpected shape for input 'number' for model 'chain'. Expected [-1,2], got [1,3]"),
    ((_json([NUMBER_JSON]), {}),
     "expected 2 inputs but got 1 inputs for model 'chain'. Got input(s) ['number'], but missing required input(s) ['words']"),
    ((_json([NUMBER_JSON, WORDS_JSON, {**WORDS_JSON, "name": "extra"}]), {}), "unexpected inference input 'extra' for model 'chain'"),
    ((_json([{**NUMBER_JSON, "data": [1, 2, 3]}, WORDS_JSON]), {}), "Unable to parse 'data' of input 'number'"),
    ((_json([{**NUMBER_JSON, "data": [1, "2"]}, WORDS_JSON]), {}), "Unable to parse 'data' of input 'number': '2' is no FP32 value"),
    ((_json([NUMBER_JSON, WORDS_JSON], outputs=[{"name": "nope"}]), {}), "unexpected inference output 'nope' for model 'chain'"),
    ((_json([{**NUMBER_JSON, "parameters": {"binary_data_size": 8}}, WORDS_JSON]), {}),
     "Input must set only one of the following fields: 'data', 'binary_data_size'"),
    ((_binary_number()[0], {}), "failed to parse the request JSON buffer"),
    (_binary_number(size_delta=-4), "unexpected size for input 'number', expecting 4 additional bytes for model 'chain'"),
    (_binary_number(extra=b"\0"), "unexpected additional input data for model 'chain'"),
    ((b"{}", {kserve.HEADER_LENGTH: "9"}), "inference header size should be in range (0, 2), got: 9"),
    ((_json([NUMBER_JSON, WORDS_JSON], parameters={"triton_x": 1}), {}), "parameter keys starting with 'triton_' are reserved"),
]


@pytest.mark.parametrize("sent, message", REFUSED)
def test_a_request_triton_would_refuse_gets_its_message_on_one_line(sent, message):
    body, headers = sent
    with pytest.raises(kserve.ProtocolError, match="^" + re.escape(message)) as refused:
        parse(body, headers)
    assert "\n" not in str(refused.value)


def test_fp16_travels_only_as_binary_as_in_triton():
    half = (TensorSpec("h", "FP16", (2,)),)
    body = _json([{"name": "h", "shape": [2], "datatype": "FP16", "data": [1, 2]}])
    with pytest.raises(kserve.ProtocolError, match="receiving FP16 data via JSON is not supported"):
        kserve.parse_request(body, None, MODEL, half, OUTPUTS)
    request = kserve.InferRequest(id=None, inputs={}, outputs=(("half", False),), binary_default=False)
    with pytest.raises(kserve.ProtocolError, match="sending FP16 data via JSON is not supported"):
        kserve.encode_response(MODEL, request, {"half": np.ones(2, np.float16)}, OUTPUTS)


def test_bytes_elements_must_fill_the_shape():
    inputs = client_inputs(True)
    body, headers = triton_http.request_body(inputs)
    doctored = body.replace(b'"shape":[3]', b'"shape":[4]')
    with pytest.raises(kserve.ProtocolError, match="unexpected number of string elements 3 for inference input 'words'"):
        parse(doctored, {kserve.HEADER_LENGTH: str(int(headers[kserve.HEADER_LENGTH]))})
