"""Training: Kubeflow Trainer (TrainJobs on ClusterTrainingRuntimes, on JobSet) beside serving."""
