"""The process backend: one OS process per worker, this process as the parameter server.

Workers really run in parallel on the wall clock; only the per-worker slowdown is injected
(a sleep of (slowdown - 1) x the measured compute after every step). The sync modes, the
compression, the straggler detector and the events are the ones the emulated engine uses.
See docs/sync-modes.md, "Backends".
"""
