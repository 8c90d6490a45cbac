"""What a first user trips on (issue 25.11), in a real browser as a plain member and as the
owner: the plan form's only cluster and model chosen (the button works at once), the
what-if's difference with its unit, the approve form at the plan's sync mode, every
resource-type error at once, a wrong example input named on its field, a model edited and
deleted in the pages; and a viewer who opens an approve link is told why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "first-user"
FACTORY = "heterps_core.zoo.examples.tabular:tabular_ctr"


@pytest.fixture
def planned(personas: Any) -> Any:
    """The demo catalogue, the tiny CTR model profiled, one cluster and an exact plan."""
    from heterps_core.profiler import ProfileOptions, profile_zoo_model
    from webapp.catalogue.demo import CatalogueDemo
    from webapp.catalogue.models import ResourceType
    from webapp.modelzoo.services import add_zoo_model
    from webapp.planning import services
    from webapp.profiling.models import ProfileRun
    from webapp.profiling.services import record_profile

    CatalogueDemo().load(personas.project)
    model = add_zoo_model(personas.member, personas.project, "ctr_dnn", "tiny")
    run = ProfileRun.objects.create(project=personas.project, model=model, batch_size=64)
    record_profile(run.pk, profile_zoo_model("ctr_dnn", ProfileOptions(
        threads=1, warmup=0, repeats=1), size="tiny", batch_size=64))
    cluster = services.create_cluster(personas.member, personas.project, "all",
                                      list(ResourceType.objects.filter(project=personas.project)))
    request = services.start_planning(personas.member, model, cluster, 50_000, ["exact"],
                                      samples=1e9)
    services.solve_request(request.pk)
    return model, cluster, request.results.get(scheduler="exact")


def _settle_its_work(model: Any) -> None:
    from webapp.background.models import Status, Work

    Work.objects.filter(planning_request__model=model).update(status=Status.CANCELLED)


@pytest.mark.parametrize("who", ["member", "owner"])
def test_a_first_users_pages(page: Any, browser: Any, sign_in: Any, asgi_url: str,
                             personas: Any, planned: Any, who: str) -> None:
    model, cluster, exact = planned
    project = personas.project.pk
    sign_in(page, getattr(personas, who), asgi_url)

    page.goto(f"{asgi_url}/planning/project/{project}/")
    assert page.input_value("#plan-form select[name=cluster]") == str(cluster.pk)
    assert page.input_value("#plan-form select[name=model]") == str(model.pk)
    page.fill("#plan-form input[name=throughput_target]", "50000")
    page.click("#plan-form button[type=submit]")
    page.wait_for_url("**/planning/*/")  # the button was not dead

    page.goto(f"{asgi_url}/planning/result/{exact.pk}/")
    page.fill("#what-if-form input[name=price_per_hour]", "0.01")
    page.click("#what-if-form button[type=submit]")
    answer = page.inner_text("#what-if-answer")
    assert " per hour (" in answer and "$-" not in answer and "None" not in answer

    page.goto(f"{asgi_url}/jobs/approve/{exact.pk}/")
    assert page.input_value("select[name=sync_mode]") == "async"

    page.goto(f"{asgi_url}/resources/project/{project}/new/")
    page.fill("#id_name", "bad name!")
    page.select_option("#id_kind", "gpu")
    page.fill("#id_price_per_hour", "x")
    page.fill("#id_count", "2")
    page.fill("#id_memory_gb", "16")
    page.fill("#id_network_gbps", "-3")
    page.click("#resource-form button[type=submit]")
    text = page.inner_text("body")
    assert "letters, digits" in text and "must be a number, got 'x'" in text
    assert "greater than 0" in text  # the network, in the same answer

    page.goto(f"{asgi_url}/models/project/{project}/")
    page.select_option("#add-factory [name=own-factory]", FACTORY)
    page.fill("#add-factory [name=own-name]", "mine")
    page.fill("#add-factory [name=own-example_input]", "dense=float32[64,7];ids=int64[64,8]<5000")
    page.click("#add-factory button[type=submit]")
    text = page.inner_text("body")
    assert "forward(dense, ids)" in text and "ShapeProp" not in text

    if who == "member":
        SHOTS.mkdir(parents=True, exist_ok=True)
        viewer = browser.new_context(viewport={"width": 390, "height": 844})
        try:
            tab = viewer.new_page()
            sign_in(tab, personas.viewer, asgi_url)
            response = tab.goto(f"{asgi_url}/jobs/approve/{exact.pk}/")
            assert response.status == 403
            assert "cannot approve a plan" in tab.inner_text("#approve-denied")
            tab.screenshot(path=str(SHOTS / "approve-denied-390.png"), full_page=True)
        finally:
            viewer.close()

    # Last: deleting the model deletes its plans (the approve link above with them).
    page.goto(f"{asgi_url}/models/{model.pk}/")
    page.click("#edit-model")
    page.fill("#id_name", f"ctr of the {who}")
    page.click("#model-edit-form button[type=submit]")
    page.wait_for_url(f"**/models/{model.pk}/")
    assert f"ctr of the {who}" in page.inner_text("h1")
    page.click("#edit-model")
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#model-delete button[type=submit]")
    # The plan asked for above is still queued (no worker here): the model stays.
    page.wait_for_url(f"**/models/{model.pk}/edit/")
    assert "still queued or running" in page.inner_text("body")
    _settle_its_work(model)
    page.click("#model-delete button[type=submit]")
    page.wait_for_url(f"**/models/project/{project}/")
    assert f"Deleted model ctr of the {who}" in page.inner_text("body")

