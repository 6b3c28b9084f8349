"""The lesson's experiments: divergence, polysemy, ranking, attention, probe, trace, and the demo run."""
