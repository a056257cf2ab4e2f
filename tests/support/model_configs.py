"""Model configs the tuning tests check, as real models' config.pbtxt files read."""

# acme-prod's embedding model (bge-large) as exported to ONNX: a variable sequence length on
# every input.
TEXT_MODEL = """name: "bge-large"
platform: "onnxruntime_onnx"
max_batch_size: 32
input [
  { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] },
  { name: "token_type_ids" data_type: TYPE_INT64 dims: [ -1 ] }
]
output [{ name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, 1024 ] }]
dynamic_batching { }
"""
