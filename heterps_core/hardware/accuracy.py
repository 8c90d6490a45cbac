"""How far an estimated (not measured) figure may be from what the hardware does.

The band is what `bench/profiler.py --validate` found when the zoo's own models were
estimated against published training throughput (docs/benchmarks/profiler.md); every
estimated figure a user sees carries it, so "estimated" always comes with its error.
"""

from __future__ import annotations

# The largest |error| of a counted validation row, rounded up; the doc names each row.
ESTIMATE_ERROR_BAND = 0.25
ESTIMATE_BAND_SOURCE = "docs/benchmarks/profiler.md (GPU estimates against published figures)"
