"""The `profile` work kind: time a zoo model layer by layer with heterps_core's profiler,
here and on the agents of the project's resource types (webapp/profiling/remote.py)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from heterps_core.profiler import ProfileOptions
from heterps_core.profiler.measure import repeat_until_known
from webapp.background.context import WorkContext
from webapp.background.kinds import WorkKind, reference, register
from webapp.modelzoo import loading
from webapp.profiling import remote, services
from webapp.profiling.models import ProfileRun

# One thread: the server's worker shares the machine with the web process.
THREADS = 1


@register
class ProfileKind(WorkKind):
    name = services.KIND
    label = "Profile a model layer by layer"
    retryable = True
    references = {"run": ProfileRun}
    params_schema = {"type": "object", "required": ["run"],
                     "properties": {"run": reference("the profile run to measure")}}

    def clean_params(self, params: Any) -> dict[str, Any]:
        run_id = params.get("run") if isinstance(params, dict) else None
        if not isinstance(run_id, int) or not ProfileRun.objects.filter(pk=run_id).exists():
            raise ValidationError({"run": "must name an existing profile run"})
        return {"run": run_id}

    def run(self, ctx: WorkContext) -> dict[str, Any]:
        run = ProfileRun.objects.select_related("model").get(pk=ctx.params["run"])
        timeout_s = remote.agent_timeout_s()  # a bad setting fails before anything is timed
        options = ProfileOptions(threads=THREADS, warmup=1, repeats=run.repeats)
        # Zoo entries and allow-listed factories only (webapp/modelzoo/loading.py); each
        # figure repeated past run.repeats until its spread is known (profiler/measure.py).
        with repeat_until_known():
            profile = loading.profile(run.model, options, run.batch_size, ctx.progress)
        run = services.record_profile(run.pk, profile)
        # The roofline for every type is stored first: whatever the agents do, each type
        # has figures, and a measured answer replaces its type's estimate.
        if remote.open_origins(run):
            remote.wait_for_agents(run.pk, ctx, timeout_s)
        return {"run": run.pk, "layers": len(profile.layers), "total_s": profile.total_s,
                "device": profile.device.label, "resource_types": remote.summary(run.pk)}
