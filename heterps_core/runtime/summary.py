"""A finished run's `RunResult`, assembled once the launcher has stopped its processes: the
plan with its binding noted, the collector's losses, steady throughput and busy/idle totals,
the last sample, and each process's stats from the store (result.py holds the type).
"""

from __future__ import annotations

import torch.distributed as dist

from heterps_core.runtime.compile import RunConfig, binding_text
from heterps_core.runtime.metrics import Collector, MetricsSample
from heterps_core.runtime.result import RunResult, process_stats, stage_hosts
from heterps_core.runtime.spec import JobSpec


def run_result(
    config: RunConfig, spec: JobSpec, store: dist.TCPStore, collector: Collector,
    final: MetricsSample, checkpoint_step: int | None, pids: tuple[int, ...],
    sealed_steps: tuple[int, ...] = (),
) -> RunResult:
    """What `Launcher.wait()` hands back; `final` is the collector's last (final) sample,
    `sealed_steps` every step this run sealed a checkpoint at."""
    binding = binding_text(config.binding, spec.stages)
    plan = config.plan.with_notes("binding: " + ",".join(f"{k}={v}" for k, v in binding.items()))
    busy, idle = collector.totals()
    losses = [collector.losses[m] for m in sorted(collector.losses)]
    return RunResult(
        plan=plan,
        binding=binding,
        start_step=spec.start_step,
        steps=spec.train.steps,
        losses=losses,
        # The one definition (runtime/throughput.py); 0 when under two mini-batches finished.
        throughput=collector.steady_throughput() or 0.0,
        elapsed_s=final.elapsed_s,
        cost=final.cost,
        busy_s=busy,
        idle_s=idle,
        checkpoint_step=checkpoint_step,
        last_sample=final,
        pids=pids,
        held_out=list(collector.held_out),
        process_stats=process_stats(store, spec),
        stage_hosts=stage_hosts(store, spec),
        sealed_steps=sealed_steps,
    )
