"""Sync modes for heterogeneous data-parallel training (see docs/sync-modes.md)."""

# Registration order is the order forms and tables list the modes in: classic ones first.
from heterps_core.dataparallel.modes import classic  # noqa: F401, I001
from heterps_core.dataparallel.modes import adsp, ashl  # noqa: F401
from heterps_core.dataparallel.modes.base import RoundPlan, SyncMode, SyncView
from heterps_core.dataparallel.modes.registry import create, get, names, register, schemas

__all__ = ["RoundPlan", "SyncMode", "SyncView", "create", "get", "names", "register", "schemas"]
