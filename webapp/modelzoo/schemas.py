"""What `POST /api/models/` takes, as JSON Schema the API's schema states and the serializer
enforces: an example input's syntax, and an imported layer chain (`services.parse_chain`'s
format). What a factory's forward() makes of an example the schema cannot know (a 409)."""

from __future__ import annotations

import math
import re
from typing import Any

from webapp.modelzoo.services import LAYER_KINDS, MAX_IMPORTED_LAYERS, MAX_TIMING_BATCH, TIMED_SIZES

# heterps_core.zoo.imported's shapes, `name=dtype[d0,d1,...]<high` separated by ';' (no .pt
# files: a path names a file on the server, which no API client should choose).
DTYPES = ("float32", "float", "float16", "bfloat16", "float64", "int64", "long", "int32")
_ENTRY = (r"(?:[A-Za-z_][A-Za-z0-9_]{0,39}=)?(?:" + "|".join(DTYPES)
          + r")\[[0-9]{1,7}(?:,[0-9]{1,7}){0,5}\](?:<[1-9][0-9]{0,8})?")
EXAMPLE_PATTERN = rf"^{_ENTRY}(?:;{_ENTRY}){{0,15}}$"
# Random tensors of this many elements at most per example (the server builds them).
MAX_EXAMPLE_ELEMENTS = 10_000_000


def example_elements(text: str) -> int:
    """The elements of the largest tensor an example input of EXAMPLE_PATTERN describes."""
    dims = re.findall(r"\[([0-9,]+)\]", text)
    return max((math.prod(int(d) for d in group.split(",")) for group in dims), default=0)


_NAME = {"type": "string", "pattern": r"^[^\u0000]*[^\s\u0000][^\u0000]*$"}
_FIGURE = {"type": "number", "minimum": 0, "maximum": 1e6}
_LAYER = {"name": _NAME, "kind": {"type": "string", "enum": list(LAYER_KINDS)},
          "parameters": {"type": "integer", "minimum": 0},
          "shardable": {"type": "boolean"}}
UNTIMED_LAYER = {"type": "object", "required": ["name"], "properties": _LAYER,
                 "not": {"anyOf": [{"required": [k]} for k in ("compute_s", *TIMED_SIZES)]}}
TIMED_LAYER = {"type": "object", "required": ["name", "compute_s"], "properties": {
    **_LAYER,
    "compute_s": {"type": "object", "minProperties": 1, "additionalProperties": {
        "type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1e6},
        "description": "resource type -> fwd+bwd seconds per batch of batch_size"},
    **{key: _FIGURE for key in TIMED_SIZES}}}


def _chain(layer: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": MAX_IMPORTED_LAYERS, "items": layer}


# A list of layers, or {"batch_size": N, "layers": [...]} (all timed, or none); layer names
# unique, which JSON Schema cannot say (parse_chain names the layer, a 400).
LAYERS = {"anyOf": [
    _chain(UNTIMED_LAYER),
    {"type": "object", "required": ["batch_size", "layers"], "additionalProperties": False,
     "properties": {
         "batch_size": {"type": "integer", "minimum": 1, "maximum": MAX_TIMING_BATCH},
         "layers": {"anyOf": [_chain(UNTIMED_LAYER), _chain(TIMED_LAYER)]}}},
], "description": "... import this layer chain: a list of layers, or {batch_size, layers} "
                  "whose layers carry timings measured elsewhere"}
