"""Benchmarks of jupyter_air; `python -m benchmarks` (or `make bench`) runs them all."""
