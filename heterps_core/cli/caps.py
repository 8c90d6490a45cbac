"""`--max-hourly-cost` and `--max-total-cost`: cost caps on a planning request (not instance
fields; heterps_core/costmodels/caps.py says what a plan within them is)."""

from __future__ import annotations

import argparse

from heterps_core.costmodels.caps import CostCaps
from heterps_core.limits import argument


def add_cap_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-hourly-cost", type=argument("max_hourly_cost"), default=None, metavar="USD",
        help="only plans costing at most this many $ per hour (exact: the cheapest plan "
             "meeting the target within it, or 'no plan: the target needs at least $X/h')",
    )
    parser.add_argument(
        "--max-total-cost", type=argument("max_total_cost"), default=None, metavar="USD",
        help="only plans whose whole job (the instance's samples) costs at most this many $ "
             "(a faster, dearer plan may be the cheapest one within it)",
    )


def cost_caps(args: argparse.Namespace) -> CostCaps:
    return CostCaps(getattr(args, "max_hourly_cost", None),
                    getattr(args, "max_total_cost", None))
