"""Training beside serving on the GPU groups: Kubeflow Trainer (TrainJobs on ClusterTrainingRuntimes,
on JobSet), what Trainer hands each training node, Kueue queues derived from the node contract, and
the serving-first capacity proof."""
