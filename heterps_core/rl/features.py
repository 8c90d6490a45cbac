"""What the policy sees of an instance: per-layer features and per-(layer, resource) features.

Raw sizes differ by orders of magnitude between instances, so besides the logs of the raw
numbers (compute time, output/sync/memory sizes) every (layer, resource) pair also carries its
*price-weighted* share of the plan: the dollars per hour that the layer's compute, boundary
traffic and gradient sync would cost on that resource at the throughput target, divided by a
per-instance reference cost. Those ratios mean the same thing on every instance, which is what
lets one pretrained policy plan models it never saw. Resources are padded to `MAX_RESOURCES`
and scored one by one (see `policy.py`), so their order and number do not matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from heterps_core.errors import InstanceError
from heterps_core.instance import Instance

MAX_RESOURCES = 8
LAYER_FEATURES = 10
PAIR_FEATURES = 14
_SPARSE_KINDS = ("embedding", "sparse")
_DENSE_KINDS = ("dense", "fc", "mlp", "linear")


@dataclass(frozen=True)
class InstanceFeatures:
    """Arrays for one instance. `mask[l, r]` is True when layer l may use resource r."""

    layer: np.ndarray  # [n_layers, LAYER_FEATURES]
    pair: np.ndarray  # [n_layers, MAX_RESOURCES, PAIR_FEATURES]
    mask: np.ndarray  # [n_layers, MAX_RESOURCES] bool
    reference_cost: float  # dollars per hour the features (and rewards) are divided by

    @property
    def n_layers(self) -> int:
        return int(self.layer.shape[0])


def check_size(instance: Instance) -> None:
    if len(instance.resources) > MAX_RESOURCES:
        raise InstanceError(
            "resources",
            f"the RL scheduler handles at most {MAX_RESOURCES} resources, "
            f"this instance has {len(instance.resources)}",
        )


def usable(instance: Instance) -> np.ndarray:
    """The action mask: layer l can use resource r if it has a compute time there and some unit
    count can hold its memory (non-shardable memory must fit one unit; shardable memory must
    fit when spread over every unit that exists)."""
    check_size(instance)
    mask = np.zeros((len(instance.layers), MAX_RESOURCES), dtype=bool)
    for l_i, layer in enumerate(instance.layers):
        for r_i, res in enumerate(instance.resources):
            if not layer.runs_on(res.name):
                continue
            per_unit = layer.memory_gb / res.count if layer.shardable else layer.memory_gb
            mask[l_i, r_i] = per_unit <= res.memory_gb * (1 + 1e-9)
    return mask


def reference_cost(instance: Instance) -> float:
    """A per-instance dollar scale: the lower bound on the compute bill, i.e. every layer on
    its cheapest resource with fractional units and no traffic. Always positive and finite."""
    rate = instance.throughput_target / instance.batch_size
    total = 0.0
    for layer in instance.layers:
        options = [
            res.price_per_hour * rate * layer.compute_s[res.name]
            for res in instance.resources
            if layer.runs_on(res.name)
        ]
        total += min(options) if options else 0.0
    return total if total > 0 else 1.0


def featurize(instance: Instance) -> InstanceFeatures:
    check_size(instance)
    mask = usable(instance)
    ref = reference_cost(instance)
    n = len(instance.layers)
    rate = instance.throughput_target / instance.batch_size  # batches per second
    layer = np.zeros((n, LAYER_FEATURES), dtype=np.float32)
    pair = np.zeros((n, MAX_RESOURCES, PAIR_FEATURES), dtype=np.float32)
    prices = [r.price_per_hour for r in instance.resources]
    mean_log_price = float(np.mean(np.log(prices)))
    for l_i, lyr in enumerate(instance.layers):
        kind = lyr.kind.lower()
        prev_out = instance.input_mb if l_i == 0 else instance.layers[l_i - 1].output_mb
        layer[l_i] = [
            kind in _SPARSE_KINDS,
            kind in _DENSE_KINDS,
            kind not in _SPARSE_KINDS + _DENSE_KINDS,
            l_i / max(1, n - 1),
            math.log1p(lyr.output_mb),
            math.log1p(lyr.sync_mb),
            math.log1p(lyr.memory_gb),
            float(lyr.shardable),
            l_i == n - 1,
            math.log1p(prev_out),
        ]
        compute_costs = []
        for res in instance.resources:
            seconds = lyr.compute_s.get(res.name)
            compute_costs.append(
                res.price_per_hour * rate * seconds / ref if seconds is not None else math.inf
            )
        finite = [c for c in compute_costs if math.isfinite(c)]
        cheapest = min(finite) if finite else 1.0
        for r_i, res in enumerate(instance.resources):
            if not mask[l_i, r_i]:
                continue
            seconds = lyr.compute_s[res.name]
            bw = res.bandwidth_bytes_per_s
            dollars_per_s = res.price_per_hour * rate / ref  # one second per batch, in ref units
            traffic_in = (prev_out if l_i else instance.input_mb) * 2e6 / bw
            traffic_out = lyr.output_mb * 2e6 / bw
            sync = lyr.sync_mb * 2e6 / bw
            per_unit_mem = lyr.memory_gb / (res.count if lyr.shardable else 1)
            units_for_compute = rate * seconds
            pair[l_i, r_i] = [
                1.0,
                compute_costs[r_i],
                math.log(compute_costs[r_i] + 1e-6),
                math.log(compute_costs[r_i] / cheapest),
                dollars_per_s * traffic_in,
                dollars_per_s * traffic_out,
                dollars_per_s * sync,
                math.log(seconds),
                per_unit_mem / res.memory_gb,
                res.price_per_hour * lyr.memory_gb / res.memory_gb / ref,
                math.log(res.price_per_hour) - mean_log_price,
                min(units_for_compute / res.count, 4.0),
                math.log1p(units_for_compute),
                compute_costs[r_i] == cheapest,
            ]
    # Traffic and sync ratios can be huge on slow networks; squash them to a usable range.
    for col in (4, 5, 6, 9):
        pair[:, :, col] = np.log1p(pair[:, :, col])
    return InstanceFeatures(layer=layer, pair=pair, mask=mask, reference_cost=ref)
