import pytest
import torch

from heterps_core.generate import random_instance
from heterps_core.rl.checkpoint import PolicyFileError, load_policy, save_policy
from heterps_core.rl.fastcost import AssignmentCosts
from heterps_core.rl.features import featurize
from heterps_core.rl.policy import EncodedInstance, LayerPolicy, PolicyConfig


def encoded(instance) -> EncodedInstance:
    return EncodedInstance(featurize(instance), AssignmentCosts(instance))


def test_samples_only_usable_resources(tiny) -> None:
    data = tiny.to_dict()
    del data["layers"][1]["compute_s"]["gpu"]
    inst = encoded(type(tiny).from_dict(data))
    torch.manual_seed(0)
    rollout = LayerPolicy().rollout(inst, 64, generator=torch.Generator().manual_seed(1))
    assert rollout.actions.shape == (64, 3)
    assert (rollout.actions[:, 1] == 0).all()  # fc1 can only run on cpu
    assert (rollout.actions < 2).all()  # never a padding slot
    assert rollout.log_prob.shape == (64,) and (rollout.log_prob <= 0).all()
    assert rollout.log_prob.requires_grad


def test_handles_any_number_of_resources() -> None:
    torch.manual_seed(0)
    policy = LayerPolicy(PolicyConfig(hidden=16, embed=8))
    for n_resources in (2, 6):
        plans = policy.sample_plans(encoded(random_instance(5, 7, n_resources)), 4)
        assert plans.shape == (4, 7) and plans.max() < n_resources


def test_checkpoint_round_trip_keeps_the_decoded_plans(tmp_path) -> None:
    torch.manual_seed(0)
    policy = LayerPolicy(PolicyConfig(hidden=16, embed=8))
    inst = encoded(random_instance(4, 9, 3))
    path = tmp_path / "policy.pt"
    save_policy(policy, path, {"note": "test"})
    loaded, meta = load_policy(path)
    assert meta == {"note": "test"}
    assert loaded.config == policy.config
    before = policy.sample_plans(inst, 1)
    assert (loaded.sample_plans(inst, 1) == before).all()


def test_bad_checkpoint_files_are_clear_errors(tmp_path) -> None:
    with pytest.raises(PolicyFileError, match="no such policy file"):
        load_policy(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(PolicyFileError, match="not a policy checkpoint"):
        load_policy(junk)
