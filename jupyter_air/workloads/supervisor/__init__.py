"""The supervisor side: the detached process that runs a job's attempts, and everything it starts."""
