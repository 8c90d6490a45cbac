"""Default spot offers for the hardware catalogue's entries: DEFAULTS, not measurements.

Cloud providers publish spot interruption frequency only as bands of "% of instances
interrupted per month" (<5%, 5-10%, 10-15%, 15-20%, >20%; e.g. the AWS Spot Instance
Advisor) and spot savings as a percentage off the on-demand price. We have no per-entry
figure we could keep current, so each kind gets one assumed band, taken at its upper edge
(the pessimistic end), and one assumed saving. They are shown labelled as such on the
catalogue table and the form, and a resource type only has a spot offer when someone enters
one (they are editable suggestions, never applied behind the user's back).
"""

from __future__ import annotations

from typing import Any

from heterps_core.hardware.catalogue import ResourceKind
from webapp.catalogue.validation import DEFAULT_RESTART_S

HOURS_PER_MONTH = 730.0
# kind -> (band label, share of units interrupted per month at the band's upper edge)
BANDS = {"cpu": ("<5%/month", 0.05), "gpu": ("5-10%/month", 0.10)}
SPOT_SHARE_OF_LIST = 0.35  # an assumed 65% saving, within the published 60-90% range
RESTART_S = DEFAULT_RESTART_S  # assumed until the type's runs measure it (ResourceType.restart)


def spot_default(kind: ResourceKind) -> dict[str, Any]:
    """The entry's default spot offer and the words that say where it comes from."""
    band, per_month = BANDS.get(kind.kind, BANDS["gpu"])
    return {
        "spot_price": round(kind.price_per_hour * SPOT_SHARE_OF_LIST, 4),
        "interruptions_per_hour": round(per_month / HOURS_PER_MONTH, 7),
        "restart_s": None,  # measured from the type's runs; RESTART_S assumed until then
        "spot_source": (f"default, not a quote: public interruption band {band} (upper "
                        f"edge), {100 * (1 - SPOT_SHARE_OF_LIST):.0f}% off list, restart "
                        f"measured from your runs ({RESTART_S:.0f} s assumed until then); "
                        "edit to your provider's figures"),
    }


HELP = {
    "spot_price": ("$ per spot unit-hour; empty: no spot offer (on-demand only). Catalogue "
                   "default: 35% of list (an assumed 65% saving), see the table below"),
    "interruptions_per_hour": ("per unit-hour, with a spot price. Catalogue default: the upper "
                               "edge of the public band <5%/month (CPU) or 5-10%/month "
                               "(GPU), i.e. 0.05/730 or 0.10/730 per hour; editable"),
    "restart_s": ("seconds from an interruption until a replacement has restored the "
                  "checkpoint; empty: the median start-up of the latest runs on this type "
                  f"(like with like), {RESTART_S:.0f} assumed until one has run"),
}
