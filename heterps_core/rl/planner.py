"""Planning with the RL policy, in the two modes of docs/rl.md, with its safety net.

1. Per-instance (default): train the policy on this instance by REINFORCE for `updates`
   policy updates (warm-started from the shipped pretrained weights unless `from_scratch`),
   keep the best plan sampled, then run an iterated local search on the cost model from it.
2. Pretrained (zero-shot): the shipped policy decodes one greedy plan plus a few samples in a
   single batched forward pass; a local search polishes the best of them. With `updates`, the
   policy is first fine-tuned on the instance for that many updates.

Budgets are work, never wall time (issue 21), so the answer is the same on a quiet and on a
busy machine: training counts updates, the local search always runs to its local optimum and
its random kicks after that count cost evaluations. `budget_s` is only a cap, in CPU seconds
of this thread (heterps_core/budget.py; default `DEFAULT_CAP_S`, a safety net for v2
instances whose evaluations are slow): training may use `TRAIN_SHARE` of it, the kicks the
rest. A plan cut short by the cap says so in its notes.

Either way the answer is never worse than the best homogeneous plan: if that plan is better,
it is returned instead and the notes say so. `policy_only` turns off both the local search and
the fallback: the answer is the best plan the policy itself sampled (and a per-instance run
trains for the whole budget). Every plan's notes start with "produced by:" naming the parts
that made it (policy samples, local search, homogeneous fallback) and give the pure-policy
cost, so what the search contributed is visible in every result.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import torch

from heterps_core.budget import Deadline
from heterps_core.costmodel import infeasible_plan
from heterps_core.instance import Instance
from heterps_core.plan import Plan
from heterps_core.progress import Progress, ProgressCallback, no_progress
from heterps_core.rl.fastcost import Outcome, better
from heterps_core.rl.features import check_size
from heterps_core.rl.policy import LayerPolicy, one_thread
from heterps_core.rl.pretrained import load_pretrained
from heterps_core.rl.problem import Problem
from heterps_core.rl.search import SearchBudget, iterated_polish
from heterps_core.rl.settings import RLTrainConfig
from heterps_core.rl.training import InstanceTraining, train_on_instance

# Per-instance training, in policy updates: about what the old 30 s wall budget bought on a
# quiet machine (issue 21: ~100; 76-440 ms of CPU per update from 16x4 to 128x8, docs/rl.md).
DEFAULT_UPDATES = 100
# Cost evaluations the random kicks after the first local search may use: about 5 CPU-s at
# the ~100k evaluations/s measured on 48- and 128-layer instances (per-instance mode), and a
# fraction of a second after a zero-shot decode.
SEARCH_EVALUATIONS = 500_000
ZERO_SHOT_EVALUATIONS = 20_000
# The CPU-seconds cap when none is given: never reached on the v1 benchmark instances (the
# largest, 128x8, takes about a minute of CPU), it stops a v2 instance whose every evaluation
# runs the full cost model from running for hours.
DEFAULT_CAP_S = 600.0
ZERO_SHOT_SAMPLES = 32  # greedy decode + 31 samples, one batched forward pass each
ZERO_SHOT_TEMPERATURE = 1.0  # measured on 24 generated instances: 1.0 beat 1.5 and 2.5 (docs/rl.md)
TRAIN_SHARE = 0.6  # of a CPU cap; the local search's kicks get what training leaves


@dataclass
class RLResult:
    """Every stage of an RL planning run, for the plan's notes and the benchmark."""

    mode: str
    greedy: Outcome | None = None  # the policy's greedy decode
    policy_best: Outcome | None = None  # best plan the policy sampled (pure RL)
    polished: Outcome | None = None  # after the local search
    final: Plan | None = None
    updates: int = 0
    train_s: float = 0.0  # CPU seconds of training
    search_evaluations: int = 0  # cost evaluations of the local search (first polish + kicks)
    notes: list[str] = field(default_factory=list)


def plan_with_rl(
    instance: Instance,
    seed: int = 0,
    budget_s: float | None = None,
    pretrained: bool = False,
    from_scratch: bool = False,
    use_search: bool = True,
    progress: ProgressCallback = no_progress,
    policy_only: bool = False,
    updates: int | None = None,
) -> RLResult:
    """Plan `instance` with the RL scheduler (see the module docstring for the modes).
    `updates`: policy updates (default `DEFAULT_UPDATES` per instance; with `pretrained`,
    none: zero-shot); `budget_s`: the optional cap in CPU seconds (default `DEFAULT_CAP_S`)."""
    with one_thread():
        return _plan(instance, seed, budget_s, updates, pretrained, from_scratch,
                     use_search and not policy_only, policy_only, progress)


def _plan(
    instance: Instance,
    seed: int,
    budget_s: float | None,
    updates: int | None,
    pretrained: bool,
    from_scratch: bool,
    use_search: bool,
    policy_only: bool,
    progress: ProgressCallback,
) -> RLResult:
    check_size(instance)
    cap_s = DEFAULT_CAP_S if budget_s is None else budget_s
    cap = Deadline(cap_s)  # created first: training and search share it
    torch.manual_seed(seed)
    problem = Problem(instance)
    share = TRAIN_SHARE if use_search else 1.0
    if pretrained:
        result = _zero_shot(problem, seed, updates, cap_s * share, progress)
    else:
        result = _per_instance(
            problem, seed, updates or DEFAULT_UPDATES, cap_s * share, from_scratch, share,
            progress,
        )
    result.policy_best = problem.best_outcome
    policy_plan = problem.best
    best, best_out = problem.best, problem.best_outcome
    if best is None and problem.first is not None:
        # Nothing sampled was feasible: the search may still walk to a feasible plan.
        best, best_out = problem.first
    if use_search and best is not None and best_out is not None:
        evaluations = ZERO_SHOT_EVALUATIONS if pretrained else SEARCH_EVALUATIONS
        budget = SearchBudget(evaluations, cap)
        best, best_out, wins = iterated_polish(
            problem.costs, problem.mask, best, best_out, budget, seed=seed
        )
        result.search_evaluations = budget.first_polish + budget.used
        what = f"iterated local search ({wins} improving kicks)"
        if cap.passed():
            result.notes.append(
                f"the local search's kicks stopped at the {cap_s:g} CPU-s cap "
                f"({budget.used:,} of {evaluations:,} evaluations)"
            )
        result.polished = best_out
        problem.offer(best, best_out)
        if result.policy_best and best_out.cost and result.policy_best.cost:
            change = 1 - best_out.cost / result.policy_best.cost
            result.notes.append(f"{what} on the cost model lowered it by {change:.2%}")
    if policy_only:
        result.final = _policy_plan(problem, result.notes)
    else:
        result.final = _with_fallback(problem, best, best_out, result.notes)
    produced = _produced_by(result, policy_plan, best, policy_only)
    result.final = dataclasses.replace(result.final, notes=(produced, *result.final.notes))
    progress(Progress(1, 1, "RL plan ready"))
    return result


def _produced_by(
    result: RLResult, policy_plan: list[int] | None, best: list[int] | None, policy_only: bool
) -> str:
    notes = result.final.notes if result.final else []
    if any("fell back" in n for n in notes):
        return "produced by: homogeneous fallback (the policy's and the search's plans were worse)"
    if result.final is None or not result.final.feasible:
        return "produced by: nothing feasible (policy samples" + (
            ")" if policy_only or result.polished is None else " and local search)"
        )
    if policy_only or result.polished is None:
        return "produced by: policy samples only (best sampled plan, no local search, no fallback)"
    if best is not None and policy_plan is not None and best == policy_plan:
        return "produced by: policy samples (the local search found nothing better)"
    return "produced by: policy samples + local search"


def _policy_plan(problem: Problem, notes: list[str]) -> Plan:
    """The best plan the policy sampled, as it is: no search, no fallback."""
    if problem.best is None or problem.best_outcome is None or not problem.best_outcome.feasible:
        reason = problem.first_reason or "no plan was sampled"
        return infeasible_plan(
            "rl", f"the RL policy sampled no feasible plan (first failure: {reason})"
        ).with_notes(*notes)
    return problem.costs.plan(problem.best).with_notes(*notes)


def _zero_shot(
    problem: Problem, seed: int, updates: int | None, cap_s: float, progress: ProgressCallback
) -> RLResult:
    policy = load_pretrained()
    result = RLResult(mode="pretrained")
    generator = torch.Generator().manual_seed(seed)
    plans = policy.sample_plans(
        problem.encoded, ZERO_SHOT_SAMPLES, generator, temperature=ZERO_SHOT_TEMPERATURE
    )
    _, outcomes = problem.rewarder.batch(plans)
    for row, outcome in zip(plans, outcomes, strict=True):
        problem.offer(row, outcome)
    result.greedy = outcomes[0]
    result.notes.append(
        f"pretrained policy, zero-shot: greedy decode {_cost(outcomes[0])}, best of "
        f"{len(plans)} decoded plans {_cost(problem.best_outcome)}"
    )
    if updates:
        result.mode = "pretrained+finetune"
        trained = train_on_instance(
            problem.instance, _train_config(updates, cap_s, TRAIN_SHARE), seed=seed,
            policy=policy, problem=problem, progress=progress,
        )
        result.updates, result.train_s = trained.updates, trained.cpu_s
        result.notes.append(
            f"fine-tuned for {trained.updates} updates ({_seconds(trained)}): "
            f"best sampled plan {_cost(problem.best_outcome)}{_capped(trained, cap_s)}"
        )
    return result


def _per_instance(
    problem: Problem,
    seed: int,
    updates: int,
    cap_s: float,
    from_scratch: bool,
    share: float,
    progress: ProgressCallback,
) -> RLResult:
    result = RLResult(mode="per-instance")
    policy = None if from_scratch else _warm_start()
    trained = train_on_instance(
        problem.instance, _train_config(updates, cap_s, share), seed=seed,
        policy=policy, problem=problem, progress=progress,
    )
    result.updates, result.train_s = trained.updates, trained.cpu_s
    init = "from scratch" if policy is None else "warm-started from the pretrained policy"
    result.notes.append(
        f"policy gradient on this instance ({init}): {trained.updates} of {updates} updates "
        f"in {_seconds(trained)}, best sampled plan {_cost(problem.best_outcome)}"
        f"{_capped(trained, cap_s)}"
    )
    return result


def _train_config(updates: int, cap_s: float, share: float) -> RLTrainConfig:
    """`updates` policy updates, capped at `cap_s` CPU seconds. Without a search after it
    (share 1, policy only) the policy's samples are the answer, so it runs every update
    instead of stopping when it has not improved for a while."""
    if share >= 1.0:
        return RLTrainConfig(max_updates=updates, budget_s=cap_s, patience=None)
    return RLTrainConfig(max_updates=updates, budget_s=cap_s)


def _seconds(trained: InstanceTraining) -> str:
    return f"{trained.cpu_s:.1f} CPU-s, {trained.seconds:.1f} s wall"


def _capped(trained: InstanceTraining, cap_s: float) -> str:
    if not trained.capped:
        return ""
    return (f"; stopped by the {cap_s:g} CPU-s cap before its updates were done (a larger "
            "budget or fewer updates lets it finish)")


def _warm_start() -> LayerPolicy | None:
    try:
        return copy.deepcopy(load_pretrained())
    except Exception:  # no shipped policy (e.g. while building it): train from scratch
        return None


def _with_fallback(
    problem: Problem, best: list[int] | None, best_out: Outcome | None, notes: list[str]
) -> Plan:
    homogeneous = problem.rewarder.homogeneous
    if homogeneous is not None and (best_out is None or better(homogeneous[1], best_out)):
        r, _ = homogeneous
        name = problem.instance.resources[r].name
        notes.append(
            f"fell back to the best homogeneous plan (all on {name}): it is cheaper than "
            f"the best RL plan ({_cost(best_out)})"
        )
        return problem.costs.plan([r] * problem.costs.n_layers).with_notes(*notes)
    if best is None or best_out is None or not best_out.feasible:
        reason = problem.first_reason or "no plan was sampled"
        plan = infeasible_plan(
            "rl", f"the RL policy found no feasible plan (best attempt: {reason})"
        )
        return plan.with_notes(*notes)
    if homogeneous is not None:
        notes.append("checked: at least as good as the best homogeneous plan")
    return problem.costs.plan(best).with_notes(*notes)


def _cost(outcome: Outcome | None) -> str:
    if outcome is None:
        return "none"
    return f"${outcome.cost:,.4f}/h" if outcome.cost is not None else "infeasible"
