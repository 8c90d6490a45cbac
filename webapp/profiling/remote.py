"""Profiling on the resources' own machines: each project resource type whose agent queue a
live worker consumes (`broker.serving`) has the model timed there; every other type
keeps the roofline estimate from the web server's measurement, labelled with why.

The profile work (profile_kind.py) measures here first (the roofline needs it), then
`open_origins` writes one `ResourceProfile` per resource type and asks the served ones
(`broker.dispatch_profile`), and `wait_for_agents` waits for their answers, up to
`agent_timeout_s()`, reporting progress, stopping when the work is cancelled. The agent task
(`workers.agents.profile_agent`, ids only) calls `measure_here`, which writes its figures
straight into the shared database. Whoever changes a waiting row first wins (row lock): an
answer arriving after the timeout fallback is dropped, never mixed in.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import UTC, datetime
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from heterps_core.agents import queue_for
from heterps_core.instance import Instance
from heterps_core.profiler import ProfileOptions
from heterps_core.profiler.instance_builder import BuiltInstance, Figure
from heterps_core.profiler.measure import repeat_until_known
from heterps_core.profiler.result import ModelProfile
from heterps_core.progress import Progress, no_progress
from heterps_core.provenance import Tier
from webapp.background import broker
from webapp.background.context import WorkCancelled, WorkContext
from webapp.catalogue.models import ResourceType
from webapp.profiling.models import LayerResult, Origin, ProfileRun, ResourceProfile, Source
from webapp.profiling.services import load_note

DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 86_400.0
POLL_S = 0.5
REPORT_EVERY_S = 2.0
TIMEOUT_SETTING = "PROFILE_AGENT_TIMEOUT_S"
TIMEOUT_VARIABLE = "HETERPS_PROFILE_AGENT_TIMEOUT_S"
# On the agent's machine: what to time on, with how many threads (defaults: the type's kind,
# torch's thread count, i.e. the machine as a stage process would use it).
DEVICE_VARIABLE = "HETERPS_PROFILE_DEVICE"
THREADS_VARIABLE = "HETERPS_PROFILE_THREADS"


def agent_timeout_s() -> float:
    """How long a profile waits for its agents: settings.PROFILE_AGENT_TIMEOUT_S, else
    $HETERPS_PROFILE_AGENT_TIMEOUT_S, else 300 s."""
    raw: Any = getattr(settings, TIMEOUT_SETTING, None)
    name = TIMEOUT_SETTING
    if raw is None:
        raw, name = os.environ.get(TIMEOUT_VARIABLE), TIMEOUT_VARIABLE
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValidationError({name: f"must be a number of seconds, got {raw!r}"}) from None
    if not 0 < value <= MAX_TIMEOUT_S:
        raise ValidationError({name: f"must be in (0, {MAX_TIMEOUT_S:g}] seconds, got {raw}"})
    return value


def roofline_note(why: str) -> str:
    return f"estimated (roofline) - {why}"


# --- the web server's side ----------------------------------------------------------------


def open_origins(run: ProfileRun) -> list[ResourceProfile]:
    """One origin row per resource type of the run's project; the ones a live worker serves
    are asked to measure and returned (waiting), the others are labelled estimated."""
    types = list(ResourceType.objects.filter(project_id=run.project_id).order_by("id"))
    run.origins.all().delete()  # a retried attempt starts over; old agents find no row
    if not types:
        return []
    if settings.MODE.embedded_worker:
        live: set[str] = set()
    else:
        live = broker.serving([t.name for t in types if t.name.strip()])
    rows = []
    for resource_type in types:
        name = resource_type.name
        queue = queue_for(name) if name.strip() else ""
        served = name in live
        where = ("embedded mode: no agents, its broker is in this process"
                 if settings.MODE.embedded_worker else f"queue {queue}")
        note = "" if served else roofline_note(f"no worker serves {name} ({where})")
        rows.append(ResourceProfile(run=run, resource_type=resource_type, resource=name,
                                    queue=queue, origin=Origin.WAITING if served else
                                    Origin.ESTIMATED, note=note))
    ResourceProfile.objects.bulk_create(rows)
    waiting = list(run.origins.filter(origin=Origin.WAITING).order_by("id"))
    timeout = agent_timeout_s()
    for origin in waiting:
        try:
            task_id = broker.dispatch_profile(run.pk, origin.pk, origin.resource, timeout)
        except Exception as exc:  # broker gone between `serving` and now: label, go on
            _settle(origin.pk, roofline_note(f"could not ask its agent on "
                                                              f"{origin.queue}: {exc}"))
            continue
        ResourceProfile.objects.filter(pk=origin.pk).update(task_id=task_id)
    return list(run.origins.filter(origin=Origin.WAITING).order_by("id"))


def wait_for_agents(run_id: int, ctx: WorkContext, timeout_s: float) -> None:
    """Until every asked agent answered, or `timeout_s`: waiting types then fall back to the
    roofline with a note. Progress names who is still awaited; a cancel stops the wait (the
    unanswered agents' tasks are revoked) and raises WorkCancelled."""
    start = time.monotonic()
    asked = ResourceProfile.objects.filter(run_id=run_id).exclude(task_id="").count()
    reported = -REPORT_EVERY_S
    while True:
        waiting = list(ResourceProfile.objects.filter(run_id=run_id, origin=Origin.WAITING))
        if not waiting:
            return
        elapsed = time.monotonic() - start
        if elapsed >= timeout_s:
            for origin in waiting:
                _settle(origin.pk, roofline_note(
                    f"no answer from an agent on {origin.queue} within {timeout_s:g} s "
                    f"(setting {TIMEOUT_SETTING})"))
            broker.revoke_profiles([o.task_id for o in waiting if o.task_id])
            return
        try:
            if ctx.cancelled():
                raise WorkCancelled(ctx.stop_reason)
            if elapsed - reported >= REPORT_EVERY_S:
                names = ", ".join(f"{o.resource} ({o.queue})" for o in waiting)
                ctx.progress(Progress(asked - len(waiting), max(asked, 1), (
                    f"waiting for agents to measure on their machines: {names}; "
                    f"{elapsed:.0f} of {timeout_s:g} s before the roofline stands in")))
                reported = elapsed
        except WorkCancelled:
            for origin in waiting:
                _settle(origin.pk, roofline_note("the profile was cancelled "
                                                                  "while waiting for its agent"))
            broker.revoke_profiles([o.task_id for o in waiting if o.task_id])
            raise
        ctx.stop.wait(POLL_S)


def _settle(origin_id: int, note: str) -> bool:
    """Waiting -> estimated with `note`, unless an agent's answer came first."""
    return bool(ResourceProfile.objects.filter(pk=origin_id, origin=Origin.WAITING)
                .update(origin=Origin.ESTIMATED, note=note))


def summary(run_id: int) -> dict[str, dict[str, str]]:
    """{resource: {origin, where, note}} for the work's result."""
    return {o.resource: {"origin": o.origin, "host": o.host, "note": o.note}
            for o in ResourceProfile.objects.filter(run_id=run_id)}


# --- the agent's side ---------------------------------------------------------------------


def measure_here(run_id: int, origin_id: int, host: str = "") -> dict[str, Any]:
    """Time the run's model on this machine for the origin's resource type and store it.
    Never raises for what this machine cannot do: the failure is stored as the type's note."""
    host = host or socket.gethostname()
    origin = (ResourceProfile.objects.select_related("run__model", "resource_type")
              .filter(pk=origin_id, run_id=run_id).first())
    if origin is None:  # the run was deleted, or a retried attempt replaced its rows
        return {"run": run_id, "origin": origin_id, "status": "gone"}
    if origin.origin != Origin.WAITING:
        return {"run": run_id, "origin": origin_id, "status": "late"}
    run = origin.run
    try:
        profile = _profile_here(origin, run)
    except Exception as exc:  # anything this machine cannot do becomes the label, never a 500
        note = roofline_note(f"the agent on {host} failed: {_reason(exc)}")
        stored = _settle(origin.pk, note)
        return {"run": run_id, "origin": origin_id, "status": "failed" if stored else "late",
                "error": note}
    stored = record_measured(origin.pk, profile, host)
    return {"run": run_id, "origin": origin_id, "status": "measured" if stored else "late",
            "device": profile.device.label}


def _profile_here(origin: ResourceProfile, run: ProfileRun) -> ModelProfile:
    from webapp.modelzoo import loading

    kind = origin.resource_type.kind if origin.resource_type else "cpu"
    options = ProfileOptions(device=_device(kind), threads=_threads(), warmup=1,
                             repeats=run.repeats)
    with repeat_until_known():  # as on the server (profile_kind.py)
        profile = loading.profile(run.model, options, run.batch_size, no_progress)
    expected = [layer["name"] for layer in cast(dict[str, Any], run.profile or {})
                .get("layers", [])]
    got = [layer.name for layer in profile.layers]
    if expected and got != expected:
        raise ValidationError({"layers": f"this machine's build of {run.model.name} has "
                                         f"layers {got}, the server's {expected}"})
    return profile


def _device(kind: str) -> str:
    chosen = os.environ.get(DEVICE_VARIABLE, "").strip()
    if chosen:
        return chosen
    if kind == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise ValidationError({DEVICE_VARIABLE: (
                "this is a GPU resource type and this machine has no CUDA device; set "
                f"{DEVICE_VARIABLE} on the worker to measure on something else")})
        return "cuda"
    return "cpu"


def _threads() -> int:
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    if not raw:
        import torch

        return int(torch.get_num_threads())
    if not raw.isdigit() or int(raw) < 1:
        raise ValidationError({THREADS_VARIABLE: f"must be a positive integer, got {raw!r}"})
    return int(raw)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(msgs)}"
                         for field, msgs in exc.message_dict.items())
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def record_measured(origin_id: int, profile: ModelProfile, host: str) -> bool:
    """Store an agent's measurement as its type's figures; False when the wait already gave
    up on it (the roofline stays, nothing is mixed)."""
    where = f"{host}: {profile.device.label}"
    with transaction.atomic():
        origin = ResourceProfile.objects.select_for_update().filter(pk=origin_id).first()
        if origin is None or origin.origin != Origin.WAITING:
            return False
        at = datetime.fromisoformat(profile.measured_at)
        if timezone.is_naive(at):
            at = at.replace(tzinfo=UTC)
        origin.origin, origin.host = Origin.MEASURED, host[:200]
        origin.device, origin.measured_at = profile.device.label[:120], at
        origin.profile = profile.to_dict()
        origin.note = f"measured on {host} ({profile.device.label})" + load_note(profile)
        origin.save(update_fields=["origin", "host", "device", "measured_at", "profile", "note"])
        # In place (same ids): the layer table orders its columns by the rows' ids.
        rows = LayerResult.objects.filter(run_id=origin.run_id, resource=origin.resource)
        for layer in profile.layers:
            figures = {"seconds": layer.time.median_s, "source": Source.MEASURED,
                       "device": where[:120]}
            if not rows.filter(index=layer.index).update(**figures):
                LayerResult.objects.create(run_id=origin.run_id, index=layer.index,
                                           layer=layer.name, kind=layer.kind,
                                           resource=origin.resource,
                                           memory_gb=layer.memory_bytes / 1e9, **figures)
    return True


# --- planning -----------------------------------------------------------------------------


def with_agent_figures(run_id: int, built: BuiltInstance) -> BuiltInstance:
    """`built` with each resource type an agent measured for this run timed as measured there,
    in place of the roofline (the sizes stay the server's: they are counted, not timed)."""
    measured = {o.resource: o for o in ResourceProfile.objects.filter(
        run_id=run_id, origin=Origin.MEASURED, profile__isnull=False)
        if o.resource in built.catalogue.names}
    if not measured:
        return built
    seconds: dict[tuple[str, str], Figure] = {}
    for resource, origin in measured.items():
        profile = ModelProfile.from_dict(cast(dict[str, Any], origin.profile))
        for layer in profile.layers:
            seconds[(layer.name, resource)] = Figure(
                layer.name, resource, layer.time.median_s, "measured",
                f"{origin.host}: {profile.device.label}", profile.measured_at,
                layer.time.to_dict(), tier=Tier.AGENT, host=profile.device.host)
    figures = tuple(seconds.get((f.layer, f.resource), f) for f in built.figures)
    data = built.instance.to_dict()
    for layer in data["layers"]:
        for resource in measured:
            figure = seconds.get((layer["name"], resource))
            if figure is not None:
                layer["compute_s"][resource] = figure.seconds
                spreads = layer.setdefault("compute_spread", {})  # the agent's, not the server's
                spreads.pop(resource, None)
                if figure.detail.get("median_spread") is not None:
                    spreads[resource] = figure.detail["median_spread"]
    return BuiltInstance(Instance.from_dict(data), built.profile, built.catalogue, figures)
