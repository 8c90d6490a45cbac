"""What `heterps run` refuses before torch is imported: the input that needs no model.

A missing or invalid plan file, an unknown zoo model name (or a missing model file), an
unknown sync mode, a binding the plan cannot use, a shard count or an override the plan was
not priced for, resuming without a checkpoint directory: one `FIELD: PROBLEM` line in well
under a second, where importing torch first took a minute on a loaded machine. Everything
here is torch-free (tests/heterps_core/cli/test_run_refusals.py checks it). The full
validation (`compile_run`: the model built on the meta device) still runs afterwards.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from heterps_core.cli.run_config import plan_resources, priced_plan
from heterps_core.errors import InstanceError
from heterps_core.plan import Plan
from heterps_core.registry import UnknownName
from heterps_core.runtime import sync
from heterps_core.runtime.binding import parse_binding
from heterps_core.runtime.errors import RunConfigError
from heterps_core.zoo import BUILTIN_NAMES


def refuse_bad_input(args: argparse.Namespace) -> None:
    """Raise the `InstanceError` (`FIELD: PROBLEM`) of the first bad argument, if any."""
    plan = Plan.load(args.plan)
    check_model(args.model)
    if args.sync is not None:
        sync.get(args.sync)
    if args.ps_shards is not None and args.ps_shards < 1:
        raise InstanceError("--ps-shards", f"must be at least 1, got {args.ps_shards}")
    if not args.reevaluate:  # re-pricing prints and takes time: run_config does it once
        plan = priced_plan(plan, args)
    parse_binding(args.bind, plan_resources(plan))
    if args.resume and not args.checkpoint_dir:
        raise RunConfigError("resume", "needs a checkpoint directory")


def check_model(reference: str) -> None:
    """A zoo name must be a built-in model's; a `FILE.py:Class` file must exist. Other
    references (`package.module:Class`) are imported by the full validation."""
    where, colon, _ = reference.rpartition(":")
    if not colon:
        if reference not in BUILTIN_NAMES:
            known = UnknownName("model", reference, sorted(BUILTIN_NAMES))
            raise RunConfigError("model", str(known))
    elif where.endswith(".py") and not Path(where).is_file():
        raise RunConfigError("model", f"no such model file {where!r}")
