"""Schedules: kept in the job store, fired by an idempotent tick that any driver may call."""
