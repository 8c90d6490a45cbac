"""A click-through-rate model written as any torch user would: no HeterPS base classes.

`tabular_ctr()` is a *factory*: it returns a fresh `nn.Module`. Its `example_input` attribute
says what `forward()` takes (the syntax of `heterps profile --example-input`); HeterPS traces
the module with torch.fx on that input and cuts it into the layer chain it plans.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

DENSE = 13
SPARSE = 8
ROWS = 5_000
DIM = 16


class TabularCtr(nn.Module):
    def __init__(self, dense: int = DENSE, sparse: int = SPARSE, rows: int = ROWS,
                 dim: int = DIM, hidden: tuple[int, ...] = (128, 64)) -> None:
        super().__init__()
        self.embedding = nn.Embedding(rows, dim)
        widths = [dense + sparse * dim, *hidden]
        blocks: list[nn.Module] = []
        for width_in, width_out in itertools.pairwise(widths):
            blocks += [nn.Linear(width_in, width_out), nn.ReLU()]
        self.mlp = nn.Sequential(*blocks)
        self.head = nn.Linear(widths[-1], 1)

    def forward(self, dense: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        x = torch.cat([dense, self.embedding(ids).flatten(1)], dim=1)
        return self.head(self.mlp(x)).squeeze(1)


def tabular_ctr() -> nn.Module:
    return TabularCtr()


tabular_ctr.example_input = (  # type: ignore[attr-defined]
    f"dense=float32[256,{DENSE}];ids=int64[256,{SPARSE}]<{ROWS}")
