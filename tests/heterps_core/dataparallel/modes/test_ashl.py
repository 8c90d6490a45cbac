from __future__ import annotations

from heterps_core.dataparallel import modes
from heterps_core.dataparallel.modes import SyncView

VIEW = SyncView(0.0, 0, (4, 5, 1), (0.01, 0.01, 0.04))


def test_ahl_rounds_are_speed_proportional_dense_and_unbounded() -> None:
    ashl = modes.create("ashl", {"ahl_steps": 12, "plateau_window": 0})
    assert ashl.phase() == "AHL"
    plans = [ashl.plan_round(w, VIEW) for w in range(3)]
    assert [p.local_steps for p in plans] == [12, 12, 3]
    assert not any(p.compress or p.collective for p in plans)
    assert ashl.may_start(1, VIEW)  # 4 rounds ahead, but AHL has no bound
    assert ashl.compressor is None


def test_switch_on_threshold_starts_bounded_topk_rounds_counted_from_the_switch() -> None:
    ashl = modes.create("ashl", {"switch_loss": 0.5, "plateau_window": 0, "shl_steps": 4})
    for _ in range(19):
        assert ashl.observe_loss(0.4, VIEW) is None  # needs 20 losses for a rolling mean
    assert ashl.observe_loss(0.4, VIEW) == "threshold"
    assert ashl.phase() == "SHL" and ashl.compressor is not None
    assert [ashl.plan_round(w, VIEW).local_steps for w in range(3)] == [4, 4, 1]
    assert all(ashl.plan_round(w, VIEW).compress for w in range(3))
    # Rounds count from the switch: nobody is ahead yet, whatever the AHL clocks were.
    assert [ashl.staleness(w, VIEW) for w in range(3)] == [0, 0, 0]
    later = SyncView(1.0, 0, (8, 9, 2), VIEW.step_time_s)  # +4, +4, +1 rounds in SHL
    assert [ashl.staleness(w, later) for w in range(3)] == [3, 3, 0]
    assert ashl.may_start(0, later)
    ahead = SyncView(1.0, 0, (9, 9, 2), VIEW.step_time_s)
    assert not ashl.may_start(0, ahead)  # 4 > 3 rounds ahead of the slowest
    assert ashl.observe_loss(0.1, later) is None  # switches once


def test_switch_on_plateau_but_not_while_the_loss_falls() -> None:
    ashl = modes.create("ashl", {"plateau_window": 10, "plateau_delta": 0.05})
    loss = 1.0
    for _ in range(50):  # falls 2% a step: clearly improving
        loss *= 0.98
        assert ashl.observe_loss(loss, VIEW) is None
    reasons = [ashl.observe_loss(loss, VIEW) for _ in range(20)]  # flat
    assert "plateau" in reasons
    assert ashl.phase() == "SHL"


def test_threshold_zero_and_window_zero_never_switch() -> None:
    ashl = modes.create("ashl", {"switch_loss": 0.0, "plateau_window": 0})
    assert all(ashl.observe_loss(0.001, VIEW) is None for _ in range(500))
    assert ashl.phase() == "AHL"


def test_default_parameters_switch_to_shl_on_a_zoo_model() -> None:
    from heterps_core import zoo
    from heterps_core.dataparallel import TrainConfig, train

    model = zoo.get("ctr_dnn")
    result = train(model, model.config("tiny"), modes.create("ashl", {}),
                   TrainConfig(workers=3, slowdowns=(1, 1, 4), batch_size=64, max_steps=200))
    assert result.switch is not None and result.switch.reason == "plateau"
    assert result.switch.global_step <= 150


def test_every_parameter_has_words_for_a_form() -> None:
    for schema in modes.schemas():
        for name, label in schema["labels"].items():
            assert label != name and " " in label, (schema["name"], name, label)
