"""One stage replica: its layers of the model, the pipeline schedule of one mini-batch.

Schedule per mini-batch (GPipe-style, flushed every mini-batch so updates are exact): the
mini-batch is split into micro-batches; every micro-batch goes forward through this stage
and on to the next stage's replica m mod k; the last stage computes the loss and starts the
backward pass of each micro-batch at once; the other stages run their backward passes in
micro-batch order as gradients come back. Then sparse gradients go to the parameter server,
dense gradients are combined among the stage's replicas (sync mode) and the dense optimiser
steps.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from heterps_core.ps import optim
from heterps_core.ps.remote import BatchRows
from heterps_core.runtime import sync
from heterps_core.runtime.checkpoint import checkpoint_due, load_stage, save_stage
from heterps_core.runtime.datasource import held_out, job_ahead, replica_batches
from heterps_core.runtime.links import StageLinks
from heterps_core.runtime.liveness import Heartbeat
from heterps_core.runtime.metrics import Clock, Reporter
from heterps_core.runtime.models import resolve_model
from heterps_core.runtime.ps_client import PSClient
from heterps_core.runtime.ps_inprocess import InProcessShards
from heterps_core.runtime.sealing import PartReports
from heterps_core.runtime.spec import JobSpec, RankSpec
from heterps_core.runtime.tables import OP_CHECKPOINT, OP_DONE, sparse_tables
from heterps_core.runtime.wire import TAG_EVAL, TAG_FORWARD, TAG_LABELS
from heterps_core.zoo.base import Batch, ChainModel, Inputs, split_inputs
from heterps_core.zoo.evaluation import metrics_of
from heterps_core.zoo.tables import tables_on_meta


@dataclass
class _InFlight:
    """A mini-batch whose forward passes are done and whose backward passes are not."""

    m: int
    round: int
    prev: int
    nxt: int
    received: list[torch.Tensor]
    sent: list[torch.Tensor]
    loss: float | None
    pulled: list[BatchRows] | None  # the rows its lookups read (an embedding stage's)


class StageWorker:
    def __init__(
        self,
        spec: JobSpec,
        me: RankSpec,
        device: str,
        group: Any,
        reporter: Reporter,
        clock: Clock,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self.spec = spec
        self.heartbeat = heartbeat  # its `stop`: where a drain ends the run (stopping.py)
        self.me = me
        self.device = torch.device(device)
        self.group = group
        self.reporter = reporter
        self.parts = PartReports(reporter.store, me.rank, spec.attempt)  # for the sealing
        self.clock = clock
        train = spec.train
        self.zoo = resolve_model(train.model)
        self.config = self.zoo.config(train.size)
        # Every table stays on `meta`: this stage's own become remote tables below.
        with tables_on_meta():
            self.model: ChainModel = self.zoo.build(self.config, seed=train.seed)
        self.stage = spec.stages[me.stage]
        self.n_stages = len(spec.stages)
        self.replicas = self.stage.units
        refs = [
            r for r in sparse_tables(self.model) if self.stage.first <= r.layer <= self.stage.last
        ]
        # The shards, when this process serves them (assignment.in_process_shards): built
        # from the model's tables before they are replaced.
        hosted = spec.hosted_shards(me.rank)
        self.local = InProcessShards(spec, hosted, sparse_tables(self.model),
                                     reporter.store) if hosted else None
        # The stage holds none of its tables: they become remote tables that look up in the
        # rows pulled for the current mini-batch (ps/remote.py).
        self.client = PSClient(spec, refs, self.model, clock, self.device,
                               self.local) if refs else None
        self.layers = nn.ModuleList(list(self.model.layers)[self.stage.first : self.stage.last + 1])
        self.layers.to(self.device)
        self.dense = list(self.layers.parameters())
        dense_optimizer = optim.create(train.optimizer, lr=train.lr)
        self.optimizer = dense_optimizer.torch_dense(self.dense) if self.dense else None
        self.mode = sync.get(train.sync)
        self.links = StageLinks(spec, me, self.device, clock)
        # The held-out set: stage 1 feeds its inputs, the last stage scores against its labels.
        evaluates = me.stage in (0, self.n_stages - 1) and train.eval_every > 0
        self.held = held_out(train, self.zoo, self.config) if evaluates else None
        if spec.start_step > 0:
            self._restore()

    # --- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        spec, k = self.spec, self.replicas
        data = self._data() if self.me.stage == 0 else None
        last = self.me.stage == self.n_stages - 1
        # Mini-batches this replica may forward before the oldest one's backward (sync mode's call).
        depth = 0 if last else self.mode.run_ahead(has_dense=bool(self.dense))
        in_flight: deque[_InFlight] = deque()
        self.clock.reset()
        batch = next(data) if data is not None else None
        for round_ in range(spec.start_step // k, spec.train.steps // k):
            m = round_ * k + self.me.replica
            boundary = (round_ + 1) * k
            drained = self._stops_here(boundary)
            more = round_ + 1 < spec.train.steps // k and not drained
            in_flight.append(self.forward_part(m, round_, batch, more))
            # Produce the next batch now, while the later stages work on this one: it is off
            # the critical path here, on it after the backward pass.
            batch = next(data) if data is not None and more else None
            saving = drained or checkpoint_due(
                spec.checkpoint_dir, spec.checkpoint_every, spec.train.steps, boundary
            )
            if batch is not None and not saving and depth == 0:
                # Ahead of one push of this replica at most (a stage that runs ahead pulls
                # after the older one's push, as before); not across a checkpoint: the
                # shards' parts hold what the steps before it touched, no more.
                self._prefetch(round_ + 1, batch)
            while len(in_flight) > (0 if saving else depth):
                self.backward_part(in_flight.popleft())
            if saving:
                self._checkpoint(boundary)
            if drained:
                break  # drained: the final checkpoint is written, end like a finished run
        while in_flight:
            self.backward_part(in_flight.popleft())
        self.links.flush()
        if self.client is not None:
            self.client.marker(OP_DONE, spec.train.steps)
            self.client.close()
        if self.local is not None:
            self.local.report_stats()
        self.reporter.flush()

    def _prefetch(self, round_: int, batch: Batch) -> None:
        """Ask for the rows of the next mini-batch (`round_`): they move while this one's
        backward pass and updates run (ps_client.py: `prefetch`)."""
        if self.client is not None:
            whole = {key: value.to(self.device) for key, value in batch[0].items()}
            self.client.prefetch(round_, lambda: self._forward(whole))

    def _stops_here(self, boundary: int) -> bool:
        """Whether a drain ends the run at `boundary`, the step every stage agreed on."""
        if self.heartbeat is None:
            return False
        return self.heartbeat.stop.stops_here(boundary, self.reporter.store)

    def _data(self) -> Iterator[Batch]:
        """This replica's mini-batches (m mod k == replica, from the start step on): it makes
        (or parses) only those (runtime/datasource.py)."""
        k, start = self.replicas, self.spec.start_step
        first = start + (self.me.replica - start) % k
        return replica_batches(self.spec.train, self.zoo, self.config, start=first, step=k,
                               ahead=job_ahead(self.me.ahead))

    def forward_part(self, m: int, round_: int, batch: Batch | None, more: bool) -> _InFlight:
        """Every micro-batch forward (and, on the last stage, its backward too).

        `more`: this replica has a next mini-batch (m + k), whose receives can be posted now.
        """
        spec, s = self.spec, self.me.stage
        last = s == self.n_stages - 1
        n_micro = spec.train.micro_batches
        inputs: list[Inputs] = []
        pulled: list[BatchRows] | None = None
        labels: list[torch.Tensor] = []
        if batch is not None:
            raw_inputs, raw_labels = batch
            inputs = split_inputs(raw_inputs, n_micro, self.device)
            if self.client is not None:
                # One pull of every row the mini-batch reads, before any micro-batch runs.
                whole = {key: value.to(self.device) for key, value in raw_inputs.items()}
                pulled = self.client.begin(round_, lambda: self._forward(whole))
            if last:
                labels = list(raw_labels.to(self.device).tensor_split(n_micro))
            else:
                self.links.send(raw_labels, spec.replica_rank(self.n_stages - 1, m), TAG_LABELS)
        elif last:
            full = self.links.receive(0, m, TAG_LABELS)
            if more:
                self.links.expect(0, m + self.replicas, TAG_LABELS, full)
            labels = list(full.to(self.device).tensor_split(n_micro))
        total = sum(t.shape[0] for t in labels) if last else 0
        prev = spec.replica_rank(s - 1, m) if s > 0 else -1
        nxt = spec.replica_rank(s + 1, m) if not last else -1
        received: list[torch.Tensor] = []
        sent: list[torch.Tensor] = []
        arrived: list[torch.Tensor] = []  # every input from the previous stage
        loss_sum = 0.0
        for i in range(n_micro):
            if s == 0:
                x: Any = inputs[i]
            else:
                x = self.links.receive(s - 1, m, TAG_FORWARD)
                arrived.append(x)
                if more and i == n_micro - 1:
                    # Now, not after the work: the next mini-batch moves while this one runs.
                    # Not earlier: a stream's receives must be posted in order.
                    for like in arrived:
                        self.links.expect(s - 1, m + self.replicas, TAG_FORWARD, like)
                x = x.to(self.device).requires_grad_(x.is_floating_point())
            y = self._forward(x)
            if last:
                loss = self.model.loss(y, labels[i]) * (labels[i].shape[0] / total)
                loss.backward()
                loss_sum += float(loss.detach())
                self.links.send_back(x, prev)
            else:
                self.links.send(y, nxt, TAG_FORWARD)
                self.links.expect_gradient(y, nxt)
                received.append(x)
                sent.append(y)
        return _InFlight(
            m, round_, prev, nxt, received, sent, loss_sum if last else None, pulled
        )

    def backward_part(self, f: _InFlight) -> None:
        """The backward passes as gradients come back, then the parameter updates."""
        prev, nxt = f.prev, f.nxt
        for x, y in zip(f.received, f.sent, strict=True):
            y.backward(self.links.take_gradient(nxt).to(self.device))
            self.links.send_back(x, prev)
        self.links.settle()
        if self.client is not None:
            assert f.pulled is not None
            self.client.push(f.round, f.pulled)
        with self.clock.idle():
            self.mode.sync_dense(self.dense, self.group, self.replicas)
        if self.optimizer is not None:
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.reporter.step_done(f.m, f.loss)
        every = self.spec.train.eval_every
        if every and ((f.m + 1) % every == 0 or f.m == self.spec.train.steps - 1):
            self._evaluate(f.m, f.round)

    def _evaluate(self, m: int, round_: int) -> None:
        """The held-out set through this stage without gradients, right after mini-batch m's
        update, on m's path (every stage's replica of m does it for the same m)."""
        s, last = self.me.stage, self.me.stage == self.n_stages - 1
        if s == 0:
            assert self.held is not None
            x: Any = {key: value.to(self.device) for key, value in self.held[0].items()}
            if self.client is not None:
                # Read-only: rows as of round m's update (no push follows this pull).
                self.client.begin(round_ + 1, lambda: self._forward(x), training=False)
        else:
            x = self.links.receive_now(self.spec.replica_rank(s - 1, m), TAG_EVAL)
        with torch.no_grad():
            y = self._forward(x)
        if last:
            assert self.held is not None
            self.reporter.held_out(metrics_of(self.model, y, self.held[1].to(self.device), m + 1))
        else:
            self.links.send(y, self.spec.replica_rank(s + 1, m), TAG_EVAL)

    def _forward(self, x: Any) -> torch.Tensor:
        """The stage's layers, from the inputs or the previous stage's packed boundary to its
        own boundary (only what later stages read, zoo/base.py) or the output."""
        return self.model.run_layers(x, self.stage.first, self.stage.last)

    # --- checkpoints -----------------------------------------------------------------------

    def _checkpoint(self, step: int) -> None:
        assert self.spec.checkpoint_dir is not None
        written = save_stage(self.spec.checkpoint_dir, step, self.me.rank, self.layers,
                             self.optimizer)
        self.parts.report(step, written)
        if self.client is not None:
            self.client.marker(OP_CHECKPOINT, step)

    def _restore(self) -> None:
        assert self.spec.checkpoint_dir is not None
        load_stage(self.spec.checkpoint_dir, self.spec.start_step, self.me.rank, self.layers,
                   self.optimizer)

