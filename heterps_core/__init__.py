"""HeterPS domain core: planning, profiling, RL scheduling and runtime. No Django here."""

__version__ = "0.1.0"
