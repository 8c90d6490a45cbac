"""A model's parameters as one flat vector: what workers pull, push and average."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector


def get_flat(model: nn.Module) -> torch.Tensor:
    return parameters_to_vector(model.parameters()).detach().clone()


def set_flat(model: nn.Module, flat: torch.Tensor) -> None:
    """Copy `flat` into the parameters (torch's vector_to_parameters would alias it instead)."""
    offset = 0
    with torch.no_grad():
        for param in model.parameters():
            n = param.numel()
            param.copy_(flat[offset : offset + n].view_as(param))
            offset += n
