"""Published single-GPU training throughputs for the zoo's architectures, and the published
configurations themselves, so the GPU estimate can be checked like with like (issue 18).

Every figure names its source (repository, file, commit, table). The configuration is built
as the publisher ran it (sizes, batch), not as our zoo sizes it, and counted with the same
operator counter the profiler uses; `bench/profiler.py --validate` turns the comparison into
the table of docs/benchmarks/profiler.md.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import torch
from torch import nn

from heterps_core.hardware.catalogue import Catalogue, ResourceKind
from heterps_core.hardware.roofline import OpCount
from heterps_core.profiler.counting import count_ops

DLE = "NVIDIA/DeepLearningExamples"
DLRM_README = "PyTorch/Recommendation/DLRM/README.md"
# The README as of June 2021 (tables "Training performance: ..."), read through the mirror
# nlqq/NVIDIA-DeepLearningExamples at 68c8ab4 (it carries the June 2020 tables beside it).
MIRROR = "mirror nlqq/NVIDIA-DeepLearningExamples@68c8ab4"
DLRM_2021 = f"{DLE} {DLRM_README} (June 2021 tables; {MIRROR})"
DLRM_2020_06 = f"{DLE} {DLRM_README} (June 2020 tables; {MIRROR})"
DLRM_2020_04 = f"{DLE} {DLRM_README} @23a6382 (April 2020 initial release)"


@dataclass(frozen=True)
class PublishedFigure:
    """One published training throughput on one GPU."""

    model: str  # zoo architecture
    config: str  # the published configuration, in words
    gpu: str  # as published
    kind: str  # our catalogue kind it is estimated on
    precision: str  # fp32, tf32 or amp
    batch_size: int
    samples_per_s: float
    source: str
    note: str = ""
    # Datasheet changes from our catalogue entry (e.g. A100 80 GB: 2039 GB/s, not 1555).
    bandwidth_gbs: float | None = None


DLRM_CONFIG = ("Criteo 1TB FL=15 ('small'): 13 dense + 26 tables, dim 128, bottom 512-256-128, "
               "dot interaction, top 1024-1024-512-256-1, SGD, fp32 tables")

PUBLISHED: tuple[PublishedFigure, ...] = (
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768,
                    667_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "amp", 32768,
                    2_200_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-2)", "gpu-v100", "fp32", 32768,
                    713_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-2)", "gpu-v100", "amp", 32768,
                    2_330_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 40GB (DGX A100)", "gpu-a100", "tf32", 32768,
                    2_530_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 40GB (DGX A100)", "gpu-a100", "amp", 32768,
                    3_970_000, DLRM_2021),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 80GB (DGX A100)", "gpu-a100", "tf32", 32768,
                    2_740_000, DLRM_2021, bandwidth_gbs=2039.0),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 80GB (DGX A100)", "gpu-a100", "amp", 32768,
                    4_180_000, DLRM_2021, bandwidth_gbs=2039.0),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768,
                    670_239, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "amp", 32768,
                    2_281_278, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-2)", "gpu-v100", "fp32", 32768,
                    706_933, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-2)", "gpu-v100", "amp", 32768,
                    2_417_585, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 40GB (DGX A100)", "gpu-a100", "tf32", 32768,
                    2_498_002, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "A100 40GB (DGX A100)", "gpu-a100", "amp", 32768,
                    4_081_969, DLRM_2020_06),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768,
                    494_000, DLRM_2020_04,
                    note="first release, before the May 2020 'performance optimizations'"),
    PublishedFigure("dlrm", DLRM_CONFIG, "V100 32GB (DGX-1)", "gpu-v100", "amp", 32768,
                    875_000, DLRM_2020_04,
                    note="first release, before the May 2020 'performance optimizations'"),
)


def published_kind(figure: PublishedFigure, catalogue: Catalogue) -> ResourceKind:
    """Our catalogue entry for the published GPU, at the published precision."""
    kind = replace(catalogue.get(figure.kind), precision=figure.precision)
    if figure.bandwidth_gbs is not None:
        kind = replace(kind, memory_bandwidth_gbs=figure.bandwidth_gbs)
    return kind


def _mlp(sizes: list[int], last_activation: bool) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2 or last_activation:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class PublishedDLRM(nn.Module):
    """DLRM as NVIDIA's DeepLearningExamples trains it (README default configuration), as
    one plain module: no chain cuts, so no carried columns (our zoo's chain copies them)."""

    def __init__(self, rows: int = 100_000, dim: int = 128, tables: int = 26,
                 bottom: tuple[int, ...] = (512, 256), top: tuple[int, ...] = (1024, 1024, 512,
                                                                                 256)) -> None:
        super().__init__()
        # Rows are capped for counting: a lookup moves the rows it reads, whatever the table.
        self.tables = nn.ModuleList(nn.Embedding(rows, dim, sparse=True) for _ in range(tables))
        self.bottom = _mlp([13, *bottom, dim], last_activation=True)
        n = tables + 1
        self.pairs = nn.Buffer(torch.tril_indices(n, n, -1))
        self.top = _mlp([dim + n * (n - 1) // 2, *top, 1], last_activation=False)

    def forward(self, dense: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        x = self.bottom(dense)
        vectors = torch.stack([x] + [t(ids[:, i]) for i, t in enumerate(self.tables)], 1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x, dots], 1)).squeeze(1)


def count_published_dlrm(batch_size: int, seed: int = 0) -> OpCount:
    """One fwd+bwd of the published DLRM at `batch_size`, counted (CPU; about 30 s at 32k)."""
    gen = torch.Generator().manual_seed(seed)
    model = PublishedDLRM().train()
    dense = torch.randn(batch_size, 13, generator=gen)
    ids = torch.randint(0, 100_000, (batch_size, 26), generator=gen)
    labels = torch.randint(0, 2, (batch_size,), generator=gen).float()
    loss = nn.BCEWithLogitsLoss()
    return count_ops(lambda: loss(model(dense, ids), labels).backward())
