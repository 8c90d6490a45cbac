"""Turns a job's stored settings into the runtime's `RunConfig`, and checks them with the
runtime's own validation (so the approve form and the run agree on what is runnable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from heterps_core.errors import InstanceError
from heterps_core.plan import Plan
from heterps_core.runtime import RunConfig, TrainSettings, parse_binding, sync
from webapp.modelzoo import loading


def sync_mode_choices() -> list[tuple[str, str]]:
    """The runtime's registered sync modes, with their one-line summaries."""
    return [(name, f"{name}: {sync.get(name).summary}") for name in sync.names()]


def log_dir(job_id: int, run: int) -> Path:
    return Path(settings.VAR_DIR) / "jobs" / str(job_id) / f"run-{run}"


def run_config(fields: dict[str, Any], log_path: Path | None = None) -> RunConfig:
    """`fields` holds plan, model_name, model_size, steps, batch_size, micro_batches, lr,
    seed, sync_mode and binding (resource -> target text)."""
    # The runtime imports what it is named: only zoo names and allow-listed factories.
    model = loading.runnable(fields["model_name"])
    plan = Plan.from_dict(fields["plan"])
    resources = sorted({s.resource for s in plan.stages})
    binding_text = ",".join(f"{k}={v}" for k, v in (fields.get("binding") or {}).items())
    binding = parse_binding(binding_text, resources)
    return RunConfig(
        plan=plan,
        train=TrainSettings(
            model=model,
            size=fields["model_size"],
            steps=int(fields["steps"]),
            batch_size=int(fields["batch_size"]),
            seed=int(fields["seed"]),
            lr=float(fields["lr"]),
            micro_batches=int(fields["micro_batches"]),
            sync=fields["sync_mode"],
        ),
        binding=binding,
        log_dir=str(log_path) if log_path else None,
        # Agents on other machines must reach the coordinator's store.
        host="0.0.0.0" if any(t.is_remote for t in binding.values()) else "127.0.0.1",
    )


def check(fields: dict[str, Any]) -> None:
    """Raise ValidationError({field: problem}) unless the runtime would accept the job."""
    from heterps_core.runtime import compile_run  # torch: only when a job is approved or run

    try:
        compile_run(run_config(fields))
    except InstanceError as exc:
        raise ValidationError({_form_field(exc.field): exc.problem}) from exc


def _form_field(runtime_field: str) -> str:
    # The runtime names its own fields; the approve form calls two of them differently.
    head, dot, rest = runtime_field.partition(".")
    ours = {"bind": "binding", "sync": "sync_mode", "model": "model_name",
            "size": "model_size"}.get(head, head)
    return f"{ours}{dot}{rest}"
