"""MLflow plumbing shared by notebook runs and workloads: the store, run links and system metrics."""
