"""One plan at another precision: an instance's GPU figures re-priced from the operator
counts `heterps profile` kept beside it (its `*.provenance.json`).

A GPU figure estimated by rule operator-roofline-v2 depends on the precision only through
the matrix products' peak and the bytes amp moves, so the profile's operator counts give it
at any precision without profiling again. A measured GPU figure ran at the precision it ran
at and is left as it is (the returned notes say so); CPU figures do not change.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from heterps_core.errors import InstanceError
from heterps_core.hardware.catalogue import Catalogue, check_precision
from heterps_core.hardware.roofline import OPERATOR_RULE, OpCount, estimate_operators
from heterps_core.instance import Instance


def provenance_path(instance_path: str | Path) -> Path:
    """Where `heterps profile --out INSTANCE.json` wrote the profile behind it."""
    path = Path(instance_path)
    return path.with_name(path.stem + ".provenance.json")


def load_provenance(instance_path: str | Path) -> dict[str, Any]:
    path = provenance_path(instance_path)
    try:
        data = json.loads(path.read_text())
    except OSError:
        raise InstanceError("--precision", f"needs the profile behind the instance: {path} "
                            "(written by heterps profile --out) was not found") from None
    except json.JSONDecodeError as exc:
        raise InstanceError("--precision", f"{path} is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not {"compute_s", "profile", "catalogue"} <= set(data):
        raise InstanceError("--precision", f"{path} is not a profile's provenance file")
    return data


def at_precision(instance: Instance, provenance: dict[str, Any],
                 precision: str) -> tuple[Instance, list[str]]:
    """`instance` with every estimated GPU figure at `precision`, and what was left as is."""
    precision = check_precision(precision, "--precision")
    catalogue = Catalogue.from_dict(provenance["catalogue"])
    ops = {layer["name"]: OpCount.from_dict(layer["ops"])
           for layer in provenance["profile"]["layers"]}
    estimated = {(f["layer"], f["resource"]) for f in provenance["compute_s"]
                 if f.get("source") == "estimated"
                 and f.get("detail", {}).get("rule") == OPERATOR_RULE}
    gpus = {k.name: replace(k, precision=precision) for k in catalogue.kinds if k.kind == "gpu"}
    data = instance.to_dict()
    kept: set[str] = set()
    for layer in data["layers"]:
        for resource in layer["compute_s"]:
            if resource not in gpus:
                continue
            if (layer["name"], resource) in estimated and layer["name"] in ops:
                layer["compute_s"][resource] = estimate_operators(
                    ops[layer["name"]], gpus[resource]).seconds
            else:
                kept.add(resource)
    notes = [f"{name}: measured or given figures, kept at the precision they were taken at"
             for name in sorted(kept)]
    return Instance.from_dict(data), notes
