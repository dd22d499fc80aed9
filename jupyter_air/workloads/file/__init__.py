"""The workload file: its schema, loader, limits, problems in words, cron, and where it runs."""
