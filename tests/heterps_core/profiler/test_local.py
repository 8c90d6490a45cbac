"""`--include-local`'s measurement: stages as the runtime runs them, the shard's time apart."""

from __future__ import annotations

import pytest
import torch

from heterps_core.profiler.local import LocalMeasure, runtime_steps
from heterps_core.profiler.measure import Precision, repeat_until_known
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.tables import sparse_tables

BATCH = 64


def _distinct_rows(model_name: str, size: str, batches: range) -> float:
    """The distinct (table, row) pairs per mini-batch of `batches`, counted independently."""
    zoo = resolve_model(model_name)
    config = zoo.config(size)
    model = zoo.build(config, seed=0)
    data = zoo.batches(config, BATCH, seed=0)
    seen: dict[int, list[torch.Tensor]] = {}
    for ref in sparse_tables(model):
        ref.module.register_forward_hook(
            lambda module, args, out, t=ref.table: seen.setdefault(t, []).append(
                args[0].reshape(-1)))
    counts = []
    for index in range(batches.stop):
        inputs, _ = next(data)
        if index not in batches:
            continue
        seen.clear()
        with torch.no_grad():
            model.layers[0].run(inputs)
        counts.append(sum(int(torch.cat(ids).unique().numel()) for ids in seen.values()))
    return sum(counts) / len(counts)


def test_sparse_layers_go_through_a_shard_and_count_their_rows() -> None:
    steps = runtime_steps("ctr_dnn", "tiny", BATCH, threads=1, repeats=3, optimizer="adam")
    # the mean over the timed batches (after two warm-up ones)
    assert steps.rows[0] == pytest.approx(_distinct_rows("ctr_dnn", "tiny", range(2, 5)))
    assert all(rows == 0 for rows in steps.rows[1:])  # dense layers pull nothing
    assert steps.row_s > 0
    assert all(seconds > 0 for seconds in steps.seconds)


def test_without_a_server_tables_stay_local() -> None:
    steps = runtime_steps("ctr_dnn", "tiny", BATCH, threads=1, repeats=2, optimizer="sgd",
                          with_server=False, statistic=min)
    assert steps.row_s == 0 and not any(steps.rows)


def test_the_local_types_carry_rows_and_row_time() -> None:
    from heterps_core.hardware import default_catalogue
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from heterps_core.profiler.instance_builder import build_instance

    profile = profile_zoo_model("ctr_dnn", ProfileOptions(threads=1, warmup=0, repeats=1),
                                size="tiny", batch_size=BATCH)
    seconds = tuple(0.001 for _ in profile.layers)
    rows = (500.0,) + (0.0,) * (len(profile.layers) - 1)
    local = LocalMeasure(seconds, 5.0, 1, "2026-12-01T00:00:00+00:00", rows, 3e-7)
    inst = build_instance(profile, default_catalogue(), 1000.0, local=local,
                          local_types=2).instance
    assert inst.layers[0].sparse_rows == 500.0
    assert inst.parameter_server is not None
    assert inst.parameter_server.row_s == {"local-1": 3e-7, "local-2": 3e-7}


def test_steps_repeat_until_every_layer_is_known_and_say_how_well() -> None:
    with repeat_until_known(Precision(target=0.5, max_repeats=30)):
        steps = runtime_steps("ctr_dnn", "tiny", BATCH, threads=1, repeats=3, optimizer="sgd")
    assert 6 <= steps.repeats <= 30  # an interval needs 6 samples; the cap bounds it
    assert len(steps.spreads) == len(steps.seconds)
    assert all(s is not None and (s <= 0.5 or steps.repeats == 30) for s in steps.spreads)
    assert steps.cpu_use is not None and steps.cpu_use.wall_s > 0
    assert steps.cpu_use.core_s == pytest.approx(steps.cpu_use.wall_s)  # one thread
    with repeat_until_known(Precision(target=1e-12, max_repeats=8)):
        capped = runtime_steps("ctr_dnn", "tiny", BATCH, threads=1, repeats=3)
    assert capped.repeats == 8


def test_the_servers_row_time_says_how_well_it_is_known() -> None:
    steps = runtime_steps("ctr_dnn", "tiny", BATCH, threads=1, repeats=3)
    assert steps.row_s > 0 and steps.row_s_spread is not None and steps.row_s_spread >= 0
