"""Actor, learner, workers and wire-protocol codecs; filled by the host-agents issues."""
