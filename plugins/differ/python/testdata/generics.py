"""PEP 695 generics, decorators stacked, nested classes."""
from functools import cache


class Box[T]:
    """A box of one thing."""

    class Lid:
        def open(self) -> None: ...

    def __init__(self, item: T) -> None:
        self.item = item

    @cache
    @staticmethod
    def empty[U]() -> "Box[U]":
        return Box(None)


def first[T](xs: list[T]) -> T:
    return xs[0]


type Pair[K, V] = tuple[K, V]
