from __future__ import annotations

import pytest

from heterps_core.runtime import sync
from heterps_core.runtime.errors import RunConfigError


def test_registry_holds_bsp_and_the_ps_modes() -> None:
    assert {"bsp", "async"} <= set(sync.names())
    assert sync.get("bsp").ps_synchronous
    assert not sync.get("async").ps_synchronous


def test_a_new_mode_is_one_class_and_one_decorator() -> None:
    @sync.register
    class LocalOnly(sync.PipelineSync):
        name = "test-local-only"
        summary = "never synchronise (for this test)"

    try:
        assert isinstance(sync.get("test-local-only"), LocalOnly)
        with pytest.raises(ValueError, match="registered twice"):
            sync.register(LocalOnly)
    finally:
        sync._MODES.pop("test-local-only")


def test_unknown_modes_list_the_known_ones() -> None:
    with pytest.raises(RunConfigError, match="sync: unknown sync mode 'ssp'; known: async, bsp"):
        sync.get("ssp")


def test_only_async_lets_an_embedding_only_stage_run_ahead() -> None:
    assert sync.get("bsp").run_ahead(has_dense=False) == 0
    assert sync.get("async").run_ahead(has_dense=False) == 1
    assert sync.get("async").run_ahead(has_dense=True) == 0  # its graph would go stale
