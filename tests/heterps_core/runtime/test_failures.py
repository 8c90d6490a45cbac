"""A failed run's message, and the wait for agents: the pure parts of the launcher's
supervision (real failures: test_launcher.py, test_liveness.py, test_agent.py)."""

from __future__ import annotations

import json
import time

from heterps_core import rendezvous as keys
from heterps_core.runtime.assignment import Handout, assigned
from heterps_core.runtime.failures import culprit_message, error_text, lost_message
from heterps_core.runtime.spec import JobSpec, RankSpec, StageSpec, TrainSettings


def _spec(target: str = "cpu") -> JobSpec:
    stages = (StageSpec(0, 1, "cpu", 2), StageSpec(2, 3, "gpu", 1))
    ranks = (RankSpec(0, "stage", 0, 0, "cpu", "cpu"), RankSpec(1, "stage", 0, 1, "cpu", "cpu"),
             RankSpec(2, "stage", 1, 0, target, "gpu"))
    return JobSpec(TrainSettings("ctr_dnn", 4, 64), stages, ranks, ps_shards=0)


class _Store:
    """The few TCPStore calls the launcher's side makes, in a dict."""

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value.encode()

    def get(self, key: str) -> bytes:
        return self.values[key]

    def check(self, keys: list[str]) -> bool:
        return all(k in self.values for k in keys)

    def add(self, key: str, amount: int) -> int:
        value = int(self.values.get(key, b"0")) + amount
        self.values[key] = str(value).encode()
        return value


def test_a_process_killed_by_a_signal_is_blamed_before_the_first_failure_seen() -> None:
    exited = {0: 1, 1: -9, 2: 1}
    message = culprit_message(_spec(), exited, [0, 1], lambda rank: f"said {rank}",
                              "; last complete checkpoint: step 6")
    assert message.startswith("stage 1 replica 1 (rank 1) was killed by SIGKILL")
    assert message.endswith(": said 1 (2 other processes stopped after it); "
                            "last complete checkpoint: step 6")


def test_a_lost_machine_counts_the_processes_that_failed_after_it() -> None:
    assert lost_message("machine b was lost", {0: 0, 1: 1}, "") == (
        "machine b was lost (1 other process failed after it)")
    assert lost_message("machine b was lost", {0: 0}, "; x") == "machine b was lost; x"


def test_what_a_process_said_is_its_stored_error_else_its_logs_last_line(tmp_path) -> None:
    store = _Store()
    (tmp_path / "rank1.log").write_text("starting\nValueError: bad\n")
    store.set(keys.error(0), "RuntimeError: stored")
    assert error_text(store, tmp_path, 0) == "RuntimeError: stored"
    assert error_text(store, tmp_path, 1) == "ValueError: bad"
    assert error_text(store, tmp_path, 2) == ""


def test_remote_ranks_wait_for_an_agent_of_their_type_then_are_handed_out() -> None:
    store = _Store()
    handout = Handout(_spec("remote:cuda"), timeout_s=0.0)
    assert not handout.done and handout.remote == [_spec("remote:cuda").ranks[2]]
    assert not handout.poll(store)
    time.sleep(0.01)
    assert handout.overdue() == "no worker agent for gpu joined within 0 s"
    store.add(keys.AGENTS_JOINED, 1)
    store.set(keys.agent(0), json.dumps({"name": "machine-b", "provides": ["gpu"]}))
    assert handout.poll(store)
    assert handout.overdue() is None and not handout.poll(store)
    assert [(a.name, a.ranks) for a in assigned(store)] == [
        ("machine-b", (2,))]
