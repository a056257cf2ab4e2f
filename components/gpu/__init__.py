"""GPU nodes: the GPU operator, the node contract and its NFD rules, GPU profiles, cold start."""
