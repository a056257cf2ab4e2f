"""Training: Kubeflow Trainer (TrainJobs on ClusterTrainingRuntimes, on JobSet) beside serving, and what
Trainer hands each training node."""
