"""Tuning: Model Analyzer runs, batching presets and the model pipeline on Argo Workflows."""
