"""Serving: Triton services, inference graphs, inference namespaces and model configs."""
