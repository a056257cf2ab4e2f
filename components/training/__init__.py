"""Training: Kubeflow Trainer runtimes and jobs, and what Trainer hands each training node."""
