"""`heterps train-policy`: train the pretrained RL policy (the recipe of the shipped file)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from heterps_core.budget import Stopwatch
from heterps_core.cli import register
from heterps_core.cli.base import Command
from heterps_core.errors import HeterPSError


class TrainPolicyError(HeterPSError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


@register
class TrainPolicyCommand(Command):
    name = "train-policy"
    help = (
        "Train the pretrained RL scheduler policy on generated instances; the defaults "
        "reproduce the file shipped in heterps_core/rl/pretrained.pt."
    )

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        from heterps_core.rl.settings import DEFAULT_POOL, DEFAULT_UPDATES, SHIPPED_STEPS

        parser.add_argument("--seed", type=int, default=0, help="training seed (default 0)")
        parser.add_argument(
            "--updates", type=int, default=DEFAULT_UPDATES,
            help=f"optimizer steps (default {DEFAULT_UPDATES})",
        )
        parser.add_argument(
            "--stop-after", type=int, default=SHIPPED_STEPS,
            help=f"stop after this many steps of the schedule (default {SHIPPED_STEPS}, "
            "where the shipped file stopped)",
        )
        parser.add_argument(
            "--checkpoint", default=None,
            help="also save the policy here every 100 steps (to inspect or keep a long run)",
        )
        parser.add_argument(
            "--pool", type=int, default=DEFAULT_POOL,
            help=f"generated training instances (default {DEFAULT_POOL})",
        )
        parser.add_argument(
            "--output", default="heterps-policy.pt",
            help="where to write the checkpoint (default ./heterps-policy.pt)",
        )
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def run(self, args: argparse.Namespace) -> int:
        if args.updates < 1:
            raise TrainPolicyError("--updates", f"must be at least 1, got {args.updates}")
        if args.stop_after is not None and args.stop_after < 1:
            raise TrainPolicyError("--stop-after", f"must be at least 1, got {args.stop_after}")
        if args.pool < 4:
            raise TrainPolicyError("--pool", f"must be at least 4, got {args.pool}")
        output = Path(args.output)
        if not output.parent.is_dir():
            raise TrainPolicyError("--output", f"directory {output.parent} does not exist")

        from heterps_core.progress import Progress
        from heterps_core.rl.policy import LayerPolicy
        from heterps_core.rl.pretrained import build_pretrained, save_pretrained

        watch = Stopwatch()

        def report(p: Progress) -> None:
            if p.current % 50 == 0 or p.current == p.total:
                numbers = "  ".join(
                    f"{k.replace('_', ' ')} {v:.3f}" for k, v in p.metrics.items() if k != "update"
                )
                print(
                    f"{p.message}: {p.current}/{p.total}  {numbers}  "
                    f"{watch.wall_s:.0f} s ({watch.cpu_s:.0f} CPU-s)",
                    file=sys.stderr,
                )

        checkpoint = None
        if args.checkpoint:
            partial = Path(args.checkpoint)
            if not partial.parent.is_dir():
                raise TrainPolicyError(
                    "--checkpoint", f"directory {partial.parent} does not exist"
                )

            def checkpoint(policy: LayerPolicy, step: int) -> None:
                save_pretrained(policy, {"seed": args.seed, "step": step, "partial": True},
                                partial)

        policy, meta = build_pretrained(
            seed=args.seed, updates=args.updates, pool_size=args.pool, progress=report,
            checkpoint=checkpoint, stop_after=args.stop_after,
        )
        path = save_pretrained(policy, meta, output)
        # Wall seconds, and the CPU seconds that say what the training cost on a busy machine
        # (the work itself is --updates: the same updates give the same policy under load).
        summary = {**meta, "output": str(path), "seconds": round(watch.wall_s, 1),
                   "cpu_s": round(watch.cpu_s, 1)}
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print(f"wrote {path} ({path.stat().st_size} bytes) in {summary['seconds']} s")
        return 0
