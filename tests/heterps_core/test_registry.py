from __future__ import annotations

from typing import ClassVar

import pytest

from heterps_core.errors import HeterPSError
from heterps_core.registry import Registry, UnknownName


class Shape:
    name: ClassVar[str] = "shape"

    def __init__(self, size: int = 1) -> None:
        self.size = size


class Square(Shape):
    name = "square"


class Circle(Shape):
    name = "circle"


def test_get_returns_the_registered_object_itself() -> None:
    classes: Registry[type[Shape]] = Registry("shape")
    classes.register(Square)
    assert classes.get("square") is Square
    instances: Registry[Shape] = Registry("shape")
    square = instances.register(Square())
    assert instances.get("square") is square


def test_create_builds_from_a_registry_of_classes() -> None:
    classes: Registry[type[Shape]] = Registry("shape")
    classes.register(Square)
    made = classes.create("square", size=3)
    assert isinstance(made, Square) and made.size == 3


def test_register_works_as_a_class_decorator() -> None:
    classes: Registry[type[Shape]] = Registry("shape")

    @classes.register
    class Triangle(Shape):
        name = "triangle"

    assert classes.get("triangle") is Triangle


def test_unknown_names_carry_the_noun_and_the_known_names() -> None:
    shapes: Registry[type[Shape]] = Registry("shape")
    shapes.register(Square)
    shapes.register(Circle)
    with pytest.raises(UnknownName) as info:
        shapes.get("hexagon")
    assert str(info.value) == "unknown shape 'hexagon'; known: circle, square"
    assert (info.value.noun, info.value.name, info.value.known) == (
        "shape", "hexagon", ["circle", "square"])
    assert isinstance(info.value, HeterPSError)
    assert isinstance(info.value, KeyError)


def test_a_second_entry_under_one_name_is_refused_the_same_one_is_not() -> None:
    shapes: Registry[type[Shape]] = Registry("shape")
    shapes.register(Square)
    shapes.register(Square)

    class Other(Shape):
        name = "square"

    with pytest.raises(ValueError, match="shape 'square' registered twice"):
        shapes.register(Other)


def test_names_are_sorted_unless_ordered() -> None:
    sorted_: Registry[type[Shape]] = Registry("shape")
    ordered: Registry[type[Shape]] = Registry("shape", ordered=True)
    for registry in (sorted_, ordered):
        registry.register(Square)
        registry.register(Circle)
    assert sorted_.names() == ["circle", "square"]
    assert ordered.names() == ["square", "circle"]
    assert ordered.items() == [("square", Square), ("circle", Circle)]
    assert list(ordered) == [Square, Circle]
    assert ordered.choices(lambda cls: cls.__name__) == [("square", "Square"),
                                                         ("circle", "Circle")]
    assert "square" in ordered and "hexagon" not in ordered
    assert len(ordered) == 2


def test_builtins_load_once_before_the_first_lookup() -> None:
    calls: list[int] = []

    def load() -> None:
        calls.append(1)
        shapes.register(Square)

    shapes: Registry[type[Shape]] = Registry("shape", load=load)
    assert calls == []
    assert shapes.get("square") is Square
    assert shapes.names() == ["square"]
    assert calls == [1]


def test_a_failed_load_is_tried_again() -> None:
    attempts: list[int] = []

    def load() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("not yet")

    shapes: Registry[type[Shape]] = Registry("shape", load=load)
    with pytest.raises(ImportError):
        shapes.names()
    assert shapes.names() == []
    assert len(attempts) == 2


def test_pop_removes_an_entry() -> None:
    shapes: Registry[type[Shape]] = Registry("shape")
    shapes.register(Square)
    assert shapes.pop("square") is Square
    assert "square" not in shapes


def test_a_clash_with_a_builtin_not_yet_loaded_is_caught() -> None:
    shapes: Registry[type[Shape]] = Registry("shape", load=lambda: shapes.register(Square))

    class Other(Shape):
        name = "square"

    with pytest.raises(ValueError, match="registered twice"):
        shapes.register(Other)
