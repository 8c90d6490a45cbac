"""Published single-GPU training throughputs of the zoo's architectures: the figures
`bench/profiler.py --validate` checks the GPU estimate against (docs/benchmarks/profiler.md).

Data only. Each figure names its source (repository, file, commit or table) and the zoo
model and size that is the published configuration, so the validation estimates the
planner's own model (`heterps estimate MODEL --size SIZE`), not a separate rebuild (issue 21).
A figure is `counted` in the error band only when it is one GPU training the whole model
with its tables in that GPU's memory, which is what an estimate of one unit says; the others
are listed with the reason they are not like with like.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from heterps_core.hardware.catalogue import Catalogue, ResourceKind

DLE = "NVIDIA/DeepLearningExamples"
DLRM_README = "PyTorch/Recommendation/DLRM/README.md"
# The README as of June 2021 (tables "Training performance: ..."), read through the mirror
# nlqq/NVIDIA-DeepLearningExamples at 68c8ab4 (it carries the June 2020 tables beside it).
MIRROR = "mirror nlqq/NVIDIA-DeepLearningExamples@68c8ab4"
DLRM_2021 = f"{DLE} {DLRM_README} (June 2021 tables; {MIRROR})"
DLRM_2020_06 = f"{DLE} {DLRM_README} (June 2020 tables; {MIRROR})"
DLRM_2020_04 = f"{DLE} {DLRM_README} @23a6382 (April 2020 initial release)"
# TensorFlow 2 DLRM, "Training performance results" (1 GPU, "small" model = Criteo 1TB FL=15,
# batch 64k per GPU, XLA on), README at 3b05bf1.
DLRM_TF2 = (f"{DLE} TensorFlow2/Recommendation/DLRM/README.md @3b05bf1 (Training performance "
            "results, 1 GPU, model size small)")
TORCHREC = ("facebookresearch/dlrm torchrec_dlrm/README.MD @045094c (Preliminary Training "
            "Results, AWS p4d.24xlarge, CUDA 11.0)")

DLRM_CONFIG = ("Criteo 1TB: 13 dense + 26 tables, dim 128, bottom 512-256-128, dot "
               "interaction, top 1024-1024-512-256-1")


@dataclass(frozen=True)
class PublishedFigure:
    """One published training throughput on one GPU."""

    model: str  # zoo model
    size: str  # the zoo size that is the published configuration
    config: str  # the published configuration, in words
    gpu: str  # as published
    kind: str  # our catalogue kind it is estimated on
    precision: str  # fp32, tf32 or amp
    batch_size: int  # per GPU
    samples_per_s: float  # per GPU
    source: str
    counted: bool = True  # like with like: one GPU, the whole model in its memory
    note: str = ""  # why the figure differs from what we estimate, or is not counted
    # Datasheet changes from our catalogue entry (e.g. A100 80 GB: 2039 GB/s, not 1555).
    bandwidth_gbs: float | None = None


def _dlrm(gpu: str, kind: str, precision: str, batch: int, rate: float, source: str,
          **extra: object) -> PublishedFigure:
    return PublishedFigure("dlrm", "criteo-1tb", DLRM_CONFIG, gpu, kind, precision, batch, rate,
                           source, **extra)  # type: ignore[arg-type]


_A100_80 = {"bandwidth_gbs": 2039.0}
_FIRST_RELEASE = "first release, before the May 2020 'performance optimizations'"
_UVM = ("one A100 40GB training 91 GiB of tables: TorchRec keeps what does not fit in host "
        "memory (UVM), so lookups cross PCIe; one unit of our estimate holds its tables")
_MULTI = ("per GPU of 8 (global batch / 8): tables sharded across GPUs with an all-to-all "
          "each step, which one unit's estimate does not have")

PUBLISHED: tuple[PublishedFigure, ...] = (
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768, 667_000, DLRM_2021),
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "amp", 32768, 2_200_000, DLRM_2021),
    _dlrm("V100 32GB (DGX-2)", "gpu-v100", "fp32", 32768, 713_000, DLRM_2021),
    _dlrm("V100 32GB (DGX-2)", "gpu-v100", "amp", 32768, 2_330_000, DLRM_2021),
    _dlrm("A100 40GB (DGX A100)", "gpu-a100", "tf32", 32768, 2_530_000, DLRM_2021),
    _dlrm("A100 40GB (DGX A100)", "gpu-a100", "amp", 32768, 3_970_000, DLRM_2021),
    _dlrm("A100 80GB (DGX A100)", "gpu-a100", "tf32", 32768, 2_740_000, DLRM_2021, **_A100_80),
    _dlrm("A100 80GB (DGX A100)", "gpu-a100", "amp", 32768, 4_180_000, DLRM_2021, **_A100_80),
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768, 670_239, DLRM_2020_06),
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "amp", 32768, 2_281_278, DLRM_2020_06),
    _dlrm("V100 32GB (DGX-2)", "gpu-v100", "fp32", 32768, 706_933, DLRM_2020_06),
    _dlrm("V100 32GB (DGX-2)", "gpu-v100", "amp", 32768, 2_417_585, DLRM_2020_06),
    _dlrm("A100 40GB (DGX A100)", "gpu-a100", "tf32", 32768, 2_498_002, DLRM_2020_06),
    _dlrm("A100 40GB (DGX A100)", "gpu-a100", "amp", 32768, 4_081_969, DLRM_2020_06),
    _dlrm("V100 32GB (DGX-1), TensorFlow 2 + XLA", "gpu-v100", "fp32", 65536, 648_000,
          DLRM_TF2),
    _dlrm("V100 32GB (DGX-1), TensorFlow 2 + XLA", "gpu-v100", "amp", 65536, 2_060_000,
          DLRM_TF2),
    _dlrm("V100 32GB (DGX-2), TensorFlow 2 + XLA", "gpu-v100", "fp32", 65536, 675_000,
          DLRM_TF2),
    _dlrm("V100 32GB (DGX-2), TensorFlow 2 + XLA", "gpu-v100", "amp", 65536, 2_160_000,
          DLRM_TF2),
    _dlrm("A100 80GB (DGX A100), TensorFlow 2 + XLA", "gpu-a100", "tf32", 65536, 2_680_000,
          DLRM_TF2, **_A100_80),
    _dlrm("A100 80GB (DGX A100), TensorFlow 2 + XLA", "gpu-a100", "amp", 65536, 4_470_000,
          DLRM_TF2, **_A100_80),
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "fp32", 32768, 494_000, DLRM_2020_04,
          counted=False, note=_FIRST_RELEASE),
    _dlrm("V100 32GB (DGX-1)", "gpu-v100", "amp", 32768, 875_000, DLRM_2020_04,
          counted=False, note=_FIRST_RELEASE),
    # TorchRec at CUDA 11.0 (PyTorch 1.7-1.11 ran fp32 matrix products on TF32 by default).
    _dlrm("A100 40GB (1 of p4d.24xlarge), TorchRec", "gpu-a100", "tf32", 16384, 740_065,
          TORCHREC, counted=False, note=_UVM),
    _dlrm("A100 40GB (8 of p4d.24xlarge), TorchRec", "gpu-a100", "tf32", 8192,
          5_373_952 / 8, TORCHREC, counted=False, note=_MULTI),
    _dlrm("A100 40GB (8 of p4d.24xlarge), TorchRec", "gpu-a100", "tf32", 2048,
          1_671_168 / 8, TORCHREC, counted=False, note=_MULTI),
)


def published_kind(figure: PublishedFigure, catalogue: Catalogue) -> ResourceKind:
    """Our catalogue entry for the published GPU, at the published precision."""
    kind = replace(catalogue.get(figure.kind), precision=figure.precision)
    if figure.bandwidth_gbs is not None:
        kind = replace(kind, memory_bandwidth_gbs=figure.bandwidth_gbs)
    return kind


def counted(figures: tuple[PublishedFigure, ...] = PUBLISHED) -> tuple[PublishedFigure, ...]:
    """The like-with-like figures, whose errors make the estimate's band."""
    return tuple(f for f in figures if f.counted)
