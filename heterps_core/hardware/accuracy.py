"""How far an estimated (not measured) figure may be from what the hardware does.

The band is what `bench/profiler.py --validate` found when the zoo's own models were
estimated against published training throughput (docs/benchmarks/profiler.md); every
estimated figure a user sees carries it, so "estimated" always comes with its error.
"""

from __future__ import annotations

# The largest |error| of a counted validation row, rounded up to 5%; the doc names each row.
# 2026-12-02 (zoo dlrm criteo-1tb, the chain contract without carried copies, the profiler
# counting a layer's own work): 20 counted rows, all estimated too slow, worst -23.7% (V100
# DGX-2 AMP, NVIDIA's June 2020 table).
ESTIMATE_ERROR_BAND = 0.25
ESTIMATE_BAND_SOURCE = "docs/benchmarks/profiler.md (GPU estimates against published figures)"
