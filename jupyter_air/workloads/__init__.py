"""Workloads submitted with the `air` command: spec, job store, executors and the detached supervisor."""
