"""GPU sources (NVML, simulated, none), the shared sampler and its history."""
