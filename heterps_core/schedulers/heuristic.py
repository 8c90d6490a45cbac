"""`heuristic`: the paper's rule of thumb, sparse layers on a CPU and dense layers on a GPU.

Embedding/sparse layers go to the cheapest CPU that can hold them all as one stage (the
cheapest CPU that runs them if none can); dense layers go to the GPU with the best
throughput per dollar on the dense layers. A layer that cannot run on its pick goes to the
cheapest resource that runs it.
"""

from __future__ import annotations

from heterps_core.costmodels import cost_model_for
from heterps_core.costmodels.common import stages_of
from heterps_core.instance import Instance, Layer, Resource
from heterps_core.plan import Plan
from heterps_core.progress import ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register


@register
class HeuristicScheduler(Scheduler):
    name = "heuristic"
    summary = "Sparse layers on the cheapest adequate CPU, dense on the best samples/s per $ GPU."

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        return cost_model_for(instance).evaluate(heuristic_assignment(instance), self.name)


def heuristic_assignment(instance: Instance) -> list[str]:
    sparse = [layer for layer in instance.layers if layer.is_sparse]
    dense = [layer for layer in instance.layers if not layer.is_sparse]
    cpu = _cheapest_adequate_cpu(instance, sparse)
    gpu = _best_value_gpu(instance, dense)
    assignment = []
    for layer in instance.layers:
        wanted = cpu if layer.is_sparse else gpu
        assignment.append(wanted if wanted and layer.runs_on(wanted) else _cheapest_host(
            instance, layer
        ))
    return assignment


def _cheapest_adequate_cpu(instance: Instance, sparse: list[Layer]) -> str | None:
    cpus = sorted(
        (r for r in instance.resources if r.kind == "cpu"), key=lambda r: r.price_per_hour
    )
    runs_all = [r for r in cpus if all(layer.runs_on(r.name) for layer in sparse)]
    if not sparse or not runs_all:
        return runs_all[0].name if runs_all else None
    model = cost_model_for(instance)
    blocks = [(f, la) for f, la, kind in stages_of(kinds(instance)) if kind == "sparse"]

    def adequate(res: str) -> bool:
        # Each contiguous sparse block, as one stage, meets the target within the count.
        return all(not isinstance(model.stage(f, la, res), str) for f, la in blocks)

    return next((r.name for r in runs_all if adequate(r.name)), runs_all[0].name)


def kinds(instance: Instance) -> list[str]:
    return ["sparse" if layer.is_sparse else "dense" for layer in instance.layers]


def _best_value_gpu(instance: Instance, dense: list[Layer]) -> str | None:
    gpus = [r for r in instance.resources if r.kind != "cpu"]
    usable = [r for r in gpus if all(layer.runs_on(r.name) for layer in dense)] or gpus
    if not usable:
        return None

    def samples_per_dollar(res: Resource) -> float:
        seconds = sum(layer.compute_s.get(res.name, float("inf")) for layer in dense)
        return instance.batch_size / seconds / res.price_per_hour if seconds else 0.0

    return max(usable, key=samples_per_dollar).name


def _cheapest_host(instance: Instance, layer: Layer) -> str:
    return min(layer.compute_s, key=lambda r: instance.resource(r).price_per_hour)
