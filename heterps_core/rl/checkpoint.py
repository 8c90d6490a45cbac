"""Saving and loading policy checkpoints (weights, sizes and a little metadata)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

from heterps_core.errors import HeterPSError
from heterps_core.rl.policy import LayerPolicy, PolicyConfig

FORMAT = "heterps-rl-policy/2"  # 2: dynamic mask, five increment features, prior gain


class PolicyFileError(HeterPSError):
    """A policy checkpoint is missing or not one this version can read."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


def save_policy(policy: LayerPolicy, path: Path | str, meta: dict[str, Any] | None = None) -> None:
    payload = {
        "format": FORMAT,
        "config": {"hidden": policy.config.hidden, "embed": policy.config.embed,
                   "prior_gain": policy.config.prior_gain},
        "meta": meta or {},
        # Half precision halves the file; the scores it produces differ by far less than the
        # gaps between plans, and loading converts back to float32.
        "state": {k: v.detach().to(torch.float16) for k, v in policy.state_dict().items()},
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    Path(path).write_bytes(buffer.getvalue())


def load_policy(path: Path | str) -> tuple[LayerPolicy, dict[str, Any]]:
    try:
        payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise PolicyFileError(path, "no such policy file") from None
    except Exception as exc:  # a truncated or foreign file: say so instead of a trace
        raise PolicyFileError(path, f"not a policy checkpoint ({type(exc).__name__})") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise PolicyFileError(path, f"not a {FORMAT} checkpoint")
    policy = LayerPolicy(PolicyConfig(**payload["config"]))
    try:
        policy.load_state_dict({k: v.float() for k, v in payload["state"].items()})
    except RuntimeError as exc:
        raise PolicyFileError(path, "weights do not match this version's policy") from exc
    policy.eval()
    return policy, dict(payload["meta"])
