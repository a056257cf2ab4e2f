"""Stand-in step backends for the Ray tests of graph_app (Triton's in-process API is not
installable here): each model computes something the tests can check, under tensor names of
its own, as a Triton model would."""

from __future__ import annotations

import numpy as np

# model -> (input tensor, output tensor, function)
MODELS = {
    "add_one": ("X", "X_PLUS_ONE", lambda x: x + 1),
    "double": ("VALUE", "TWICE", lambda x: x * 2),
}


class ArithmeticBackend:
    def __init__(self, model: str, model_repository: str):
        self.input, self.output, self.fn = MODELS[model]

    def infer(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {self.output: self.fn(inputs[self.input])}
