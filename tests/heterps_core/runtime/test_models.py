from __future__ import annotations

from pathlib import Path

import pytest

from heterps_core.runtime.errors import RunConfigError
from heterps_core.runtime.models import resolve_model


def test_zoo_names_and_import_paths_resolve_to_zoo_models(tmp_path: Path) -> None:
    assert resolve_model("ctr_dnn").name == "ctr_dnn"
    assert resolve_model("heterps_core.zoo.ctr_dnn:CtrDnn").name == "ctr_dnn"
    file = tmp_path / "mine.py"
    file.write_text(
        "from heterps_core.zoo.ctr_dnn import CtrDnn\n\nclass Mine(CtrDnn):\n    name = 'mine'\n"
    )
    assert resolve_model(f"{file}:Mine").name == "mine"


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("no_such_model", "unknown model 'no_such_model'"),
        ("heterps_core.nothing_here:X", "cannot import 'heterps_core.nothing_here'"),
        ("heterps_core.zoo.ctr_dnn:CTRModel", "does not name a ZooModel class"),
        ("/nowhere/m.py:M", "no such model file '/nowhere/m.py'"),
    ],
)
def test_bad_model_references_are_explained(reference: str, problem: str) -> None:
    with pytest.raises(RunConfigError) as info:
        resolve_model(reference)
    assert info.value.field == "model" and problem in str(info.value)
