"""The LSTM policy: reads the layer chain and emits a distribution over resources per layer.

Encoder: each (layer, resource) feature vector is embedded by a small MLP; a layer's input to
a bidirectional LSTM is its own features plus the mean and max of its resources' embeddings,
so every decision can see the whole chain (what comes later decides whether a stage boundary
here pays off). Decoder: an LSTM cell steps through the layers, fed the encoder state and the
embedding of the resource it just chose (the previous action); each usable resource is scored
from the decoder state, that resource's embedding and whether it continues the current stage.
Scoring resources one at a time makes the policy indifferent to their order and number.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from heterps_core.rl.decoding import DYNAMIC_FEATURES, PartialPlans
from heterps_core.rl.fastcost import AssignmentCosts
from heterps_core.rl.features import LAYER_FEATURES, PAIR_FEATURES, InstanceFeatures

_MASKED = -1e9


@dataclass(frozen=True)
class PolicyConfig:
    hidden: int = 64
    embed: int = 48
    # Initial weight of the cost-increment prior in the logits (learned afterwards): 0 means
    # the policy starts uniform over the feasible choices and must learn costs from rewards.
    prior_gain: float = 0.0


@dataclass
class Rollout:
    """`k` sampled (or greedy) plans: actions [k, n_layers], per-step log-probs [k, n_layers]
    and mean entropy per plan (both differentiable), each step's cost increment in dollars per
    hour [k, n_layers] (see `decoding.py`) and how many steps hit a dead end."""

    actions: torch.Tensor
    step_log_prob: torch.Tensor
    entropy: torch.Tensor
    step_cost: np.ndarray
    dead_ends: int = 0

    @property
    def log_prob(self) -> torch.Tensor:
        return self.step_log_prob.sum(dim=1)


class EncodedInstance:
    """Tensors of one instance, kept between updates so they are built once."""

    def __init__(
        self, features: InstanceFeatures, costs: AssignmentCosts, dynamic_mask: bool = True
    ) -> None:
        self.features = features
        self.costs = costs
        self.dynamic_mask = dynamic_mask
        self.layer = torch.from_numpy(features.layer)
        self.pair = torch.from_numpy(features.pair)
        self.mask = torch.from_numpy(features.mask)

    @property
    def n_layers(self) -> int:
        return self.features.n_layers

    def partial_plans(self, k: int) -> PartialPlans:
        return PartialPlans(
            self.costs, self.features.reference_cost, self.features.mask, k, self.dynamic_mask
        )


class LayerPolicy(nn.Module):
    def __init__(self, config: PolicyConfig | None = None) -> None:
        super().__init__()
        self.config = config or PolicyConfig()
        h, e = self.config.hidden, self.config.embed
        self.pair_net = nn.Sequential(
            nn.Linear(PAIR_FEATURES, e), nn.ReLU(), nn.Linear(e, e), nn.ReLU()
        )
        self.layer_net = nn.Sequential(nn.Linear(LAYER_FEATURES, e), nn.ReLU())
        self.encoder = nn.LSTM(3 * e, h, batch_first=True, bidirectional=True)
        self.decoder = nn.LSTMCell(2 * h + e, h)
        # The first scoring layer is linear in its inputs, so the parts that do not depend on
        # the decoder state are computed once per instance (see `rollout`).
        self.score_state = nn.Linear(h, h)
        self.score_pair = nn.Linear(e + 2 * h, h)
        self.score_stay = nn.Parameter(torch.zeros(h))
        self.score_increment = nn.Linear(DYNAMIC_FEATURES, h, bias=False)
        self.score_out = nn.Linear(h, 1)
        self.start = nn.Parameter(torch.zeros(e))
        self.prior_gain = nn.Parameter(torch.tensor(float(self.config.prior_gain)))

    def encode(self, inst: EncodedInstance) -> tuple[torch.Tensor, torch.Tensor]:
        """(pair embeddings [n, R, e], encoder states [n, 2h])."""
        emb = self.pair_net(inst.pair)
        mask = inst.mask.unsqueeze(-1)
        count = mask.sum(dim=1).clamp(min=1)
        mean = (emb * mask).sum(dim=1) / count
        peak = emb.masked_fill(~mask, -1e4).max(dim=1).values.clamp(min=0.0)
        tokens = torch.cat([self.layer_net(inst.layer), mean, peak], dim=-1)
        enc, _ = self.encoder(tokens.unsqueeze(0))
        return emb, enc.squeeze(0)

    def rollout(
        self,
        inst: EncodedInstance,
        k: int,
        greedy: bool = False,
        generator: torch.Generator | None = None,
        forced: torch.Tensor | None = None,
        temperature: float = 1.0,
        greedy_first: bool = False,
    ) -> Rollout:
        """Decode `k` plans: sampled, argmax at every step when `greedy`, or the given `forced`
        actions [k, n_layers] (teacher forcing: their log-probabilities, for imitation).
        `temperature` > 1 flattens the sampling distribution (log-probs stay at 1);
        `greedy_first` decodes row 0 greedily and samples the others (one pass for both)."""
        emb, enc = self.encode(inst)
        n, n_res = inst.mask.shape
        pair_part = self.score_pair(torch.cat([emb, enc.unsqueeze(1).expand(-1, n_res, -1)], -1))
        h = torch.zeros(k, self.config.hidden)
        c = torch.zeros(k, self.config.hidden)
        prev_emb = self.start.expand(k, -1)
        prev_onehot = torch.zeros(k, n_res)
        actions, log_probs, entropies, costs = [], [], [], []
        rows = torch.arange(k)
        plans = inst.partial_plans(k)
        for t in range(n):
            h, c = self.decoder(torch.cat([enc[t].expand(k, -1), prev_emb], -1), (h, c))
            feats, feasible = plans.options(t)
            mask_np = plans.mask_for(feasible)
            if forced is not None:
                mask_np = mask_np.copy()
                mask_np[np.arange(k), forced[:, t].numpy()] = True
            dyn = torch.from_numpy(feats)
            z = torch.relu(
                pair_part[t].unsqueeze(0)
                + self.score_state(h).unsqueeze(1)
                + prev_onehot.unsqueeze(-1) * self.score_stay
                + self.score_increment(dyn)
            )
            logits = self.score_out(z).squeeze(-1) - self.prior_gain * dyn[..., 2]
            logits = logits.masked_fill(~torch.from_numpy(np.ascontiguousarray(mask_np)), _MASKED)
            logp = torch.log_softmax(logits, dim=-1)
            if forced is not None:
                action = forced[:, t]
            elif greedy:
                action = logp.argmax(dim=-1)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                action = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
                if greedy_first:
                    action[0] = logp[0].argmax()
            actions.append(action)
            costs.append(plans.advance(t, action.tolist()))
            log_probs.append(logp[rows, action])
            probs = logp.exp()
            entropies.append(-(probs * logp.clamp(min=-50.0)).sum(-1))
            prev_emb = emb[t, action]
            prev_onehot = torch.nn.functional.one_hot(action, n_res).float()
        return Rollout(
            actions=torch.stack(actions, dim=1),
            step_log_prob=torch.stack(log_probs, dim=1),
            entropy=torch.stack(entropies, dim=1).mean(dim=1),
            step_cost=np.stack(costs, axis=1),
            dead_ends=plans.dead_ends,
        )

    def sample_plans(
        self,
        inst: EncodedInstance,
        k: int,
        generator: torch.Generator | None = None,
        temperature: float = 1.0,
    ) -> np.ndarray:
        """Greedy decode plus `k - 1` samples in one pass, without gradients: [k, n_layers]
        indices, the greedy plan first."""
        with torch.no_grad():
            if k <= 1:
                return self.rollout(inst, 1, greedy=True).actions.numpy()
            return self.rollout(
                inst, k, generator=generator, temperature=temperature, greedy_first=True
            ).actions.numpy()


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread: the policy's tensors are tiny, so extra threads only add
    synchronisation, which is ruinous on a shared machine; the caller's setting is restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
