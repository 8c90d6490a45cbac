"""The layer profiler: measured fwd+bwd time, activation, sync and memory per chain layer."""

from heterps_core.profiler.chain import ProfileError, ProfileOptions, StageRunner, profile_chain
from heterps_core.profiler.models import profile_zoo_model
from heterps_core.profiler.result import LayerProfile, ModelProfile

__all__ = ["LayerProfile", "ModelProfile", "ProfileError", "ProfileOptions", "StageRunner",
           "profile_chain", "profile_zoo_model"]
