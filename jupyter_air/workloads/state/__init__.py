"""The state of jobs under AIR_HOME: records, the job store and its schema, per-node logs, permissions."""
