"""The GPU half of the engine: compile (NVRTC, process pool, disk cache), run and time
(a killable child per GPU), the GPU measurer, baselines and apply-best."""
