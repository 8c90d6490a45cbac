"""Issue 12 item 2: text typed into a model's fields never reaches the code loader. Only zoo
names and the operator's allow-listed factories (settings.MODEL_FACTORIES) are built,
profiled or run; a `some/file.py:Class` zoo name is refused before anything is imported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.modelzoo import loading
from webapp.modelzoo.models import RegisteredModel, Source

pytestmark = pytest.mark.django_db

EXAMPLE = "heterps_core.zoo.examples.tabular:tabular_ctr"


@pytest.fixture
def trap(tmp_path: Path) -> tuple[str, Path]:
    """A model file that leaves a mark when imported: the mark must never appear."""
    mark = tmp_path / "imported.txt"
    source = tmp_path / "evil.py"
    source.write_text(
        "from pathlib import Path\n"
        f"Path({str(mark)!r}).write_text('ran')\n"
        "from heterps_core.zoo.ctr_dnn import CtrDnn as Evil\n")
    return f"{source}:Evil", mark


def test_admin_form_refuses_a_file_as_zoo_name(personas: Any, trap: tuple[str, Path]) -> None:
    reference, mark = trap
    model = RegisteredModel(project=personas.project, name="m", source=Source.ZOO,
                            zoo_name=reference[:60])
    with pytest.raises(ValidationError) as caught:
        model.full_clean()
    assert "not a zoo model" in " ".join(caught.value.message_dict["zoo_name"])
    assert not mark.exists()


def test_admin_post_as_staff_is_refused(personas: Any, trap: tuple[str, Path],
                                        client: Any) -> None:
    from django.contrib.auth import get_user_model

    reference, mark = trap
    admin = get_user_model().objects.create_superuser("root", "r@example.com", "pw-12345678")
    client.force_login(admin)
    response = client.post("/admin/modelzoo/registeredmodel/add/", {
        "project": personas.project.pk, "name": "m", "source": "zoo", "zoo_name": reference[:60],
        "size": "tiny", "default_batch_size": 10, "layers": "[]", "description": ""})
    assert response.status_code == 200  # the form again, with the error
    assert "not a zoo model" in response.content.decode()
    assert not RegisteredModel.objects.filter(name="m").exists()
    assert not mark.exists()


def test_a_stored_file_reference_is_never_run_or_profiled(
    personas: Any, trap: tuple[str, Path],
) -> None:
    """Rows written before this check (or straight into the database) are refused too, at
    the one door every run and profile goes through."""
    from webapp.jobs.models import Job
    from webapp.jobs.runners.pipeline import run_config

    reference, mark = trap
    # The model is refused before the plan is even read.
    job = Job(plan={"stages": []}, model_name=reference, model_size="tiny", steps=1, batch_size=8,
              seed=0, lr=0.1, options={"micro_batches": 1, "sync": "bsp", "binding": {}})
    with pytest.raises(ValidationError) as caught:
        run_config(job)
    assert "model_name" in caught.value.message_dict
    model = RegisteredModel.objects.create(project=personas.project, name="m",
                                           source=Source.ZOO, zoo_name="x.py:Evil")
    with pytest.raises(ValidationError):
        loading.model_for(model)
    factory = RegisteredModel.objects.create(project=personas.project, name="f",
                                             source=Source.FACTORY, factory="os:system")
    with pytest.raises(ValidationError, match="allow-list"):
        loading.model_for(factory)
    assert not mark.exists()


def test_only_allow_listed_factories_import(personas: Any, settings: Any) -> None:
    from webapp.modelzoo.services import add_factory_model

    with pytest.raises(ValidationError, match="allow-list"):
        add_factory_model(personas.member, personas.project, "os:getcwd")
    settings.MODEL_FACTORIES = ()
    with pytest.raises(ValidationError, match="allow-list"):
        add_factory_model(personas.member, personas.project, EXAMPLE)
    assert loading.runnable("ctr_dnn") == "ctr_dnn"
    with pytest.raises(ValidationError):
        loading.runnable(EXAMPLE)  # off the list now: it no longer runs either
