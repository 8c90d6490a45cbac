"""A wrong example input for your own model (issue 25.11) is checked against forward()
before tracing: the example input field says what forward() takes and what failed, not
"cannot split into a layer chain" with torch.fx's dump of the graph."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from webapp.modelzoo import services

pytestmark = pytest.mark.django_db

EXAMPLE = "heterps_core.zoo.examples.tabular:tabular_ctr"
WRONG_WIDTH = "dense=float32[64,7];ids=int64[64,8]<5000"  # the model has 13 dense features


def test_a_wrong_shape_is_the_example_inputs_fault(personas: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        services.add_factory_model(personas.member, personas.project, EXAMPLE, "mine",
                                   WRONG_WIDTH)
    problems = caught.value.message_dict
    assert list(problems) == ["example_input"]
    message = problems["example_input"][0]
    assert message.startswith(f"forward(dense, ids) of {EXAMPLE} does not run on this "
                              "example input (dense=float32[64, 7]; ids=int64[64, 8])")
    assert "shapes cannot be multiplied" in message
    assert "torch.fx" not in message and "ShapeProp" not in message and "split" not in message


def test_a_missing_argument_is_named_on_the_example_input(personas: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        services.add_factory_model(personas.member, personas.project, EXAMPLE, "mine",
                                   "dense=float32[64,13]")
    assert "no value for forward() argument(s) ['ids']" in caught.value.message_dict[
        "example_input"][0]


def test_the_page_shows_it_on_the_field(login: Any, personas: Any) -> None:
    response = login(personas.member).post(
        f"/models/project/{personas.project.pk}/factory/",
        {"own-factory": EXAMPLE, "own-name": "mine", "own-example_input": WRONG_WIDTH})
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "forward(dense, ids)" in page and "ShapeProp" not in page


def test_a_right_example_still_imports(personas: Any) -> None:
    model = services.add_factory_model(personas.member, personas.project, EXAMPLE, "mine",
                                       "dense=float32[64,13];ids=int64[64,8]<5000")
    assert model.default_batch_size == 64 and len(model.layers) == 4
