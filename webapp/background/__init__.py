"""Background work: one record per long action, progress pushed live to websockets."""
