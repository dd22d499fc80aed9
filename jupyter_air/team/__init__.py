"""The team deployment: ``air-jobs``, the job service JupyterHub runs for its users."""
