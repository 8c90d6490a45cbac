"""The parameter server's storage: rows that exist when touched, and their optimisers.

| module | holds |
|---|---|
| `rowinit.py` | `RowInit`: a row's first value from (seed, row id); `fill_table_` (plain loops) |
| `index.py` | `RowIndex`: id -> slot, vectorised open addressing |
| `arena.py` | `Arena`: rows by slot, grown by chunks |
| `optim.py` | the registry of sparse optimisers (`sgd`, `adagrad`, `adam`) |
| `store.py` | `RowStore`: one table on one shard (pull, push, evict, checkpoint) |
| `tableset.py` | `TableSet`: a shard's tables of one layout, one pass per message |
| `shard.py` | `Shard`: a shard's table sets and when pushes apply (sync, async) |
"""

from heterps_core.ps.optim import SparseOptimizer, UnknownOptimizerError, create, get, names
from heterps_core.ps.rowinit import FirstRows, RowInit, WeightRows, fill_table_, initial_rows
from heterps_core.ps.store import RowStore

__all__ = [
    "FirstRows",
    "RowInit",
    "RowStore",
    "SparseOptimizer",
    "UnknownOptimizerError",
    "WeightRows",
    "create",
    "fill_table_",
    "get",
    "initial_rows",
    "names",
]
