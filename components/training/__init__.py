"""Training beside serving on the GPU groups: Kueue queues derived from the node contract, and the
serving-first capacity proof."""
