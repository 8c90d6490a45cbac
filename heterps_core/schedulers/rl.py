"""`rl`: the HeterPS reinforcement-learning scheduler (an LSTM policy trained by REINFORCE).

Options: `updates` (policy updates: default 100 per instance; with `pretrained`, a
fine-tuning of that many updates, none by default), `pretrained` (bool) plans zero-shot with
the shipped policy, `from_scratch` skips the pretrained warm start, `search=False` turns off
the local-search polish, `policy_only` turns off the search and the homogeneous fallback (the
policy's own best sampled plan). `budget_s` is only a cap, in CPU seconds: the work (updates,
search evaluations) decides the answer, never the machine's load. How it works:
heterps_core/rl/planner.py.
"""

from __future__ import annotations

from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import ProgressCallback
from heterps_core.schedulers.base import Scheduler
from heterps_core.schedulers.registry import register


@register
class RLScheduler(Scheduler):
    name = "rl"
    summary = (
        "LSTM policy trained by policy gradient on the cost model (per instance, or the "
        "shipped pretrained policy), best plan polished by local search."
    )
    stochastic = True

    @classmethod
    def refusal(cls, instance: Instance) -> str | None:
        from heterps_core.rl.features import MAX_RESOURCES

        if len(instance.resources) > MAX_RESOURCES:
            return (
                f"the RL policy handles at most {MAX_RESOURCES} resources, "
                f"this instance has {len(instance.resources)}"
            )
        return None

    def solve(self, instance: Instance, progress: ProgressCallback) -> Plan:
        # torch is imported here, not at module level, so `heterps plan` stays fast for others.
        from heterps_core.rl.planner import plan_with_rl

        result = plan_with_rl(
            instance,
            seed=self.seed,
            budget_s=self.budget_s,
            updates=_updates(self.options.get("updates")),
            pretrained=bool(self.options.get("pretrained")),
            from_scratch=bool(self.options.get("from_scratch")),
            use_search=bool(self.options.get("search", True)),
            policy_only=bool(self.options.get("policy_only")),
            progress=progress,
        )
        assert result.final is not None
        return result.final


def _updates(value: object) -> int | None:
    """The `updates` option (None: the mode's default), checked against docs/limits.md."""
    if value is None:
        return None
    from heterps_core.limits import check

    return int(check("max_updates", value, "updates"))
