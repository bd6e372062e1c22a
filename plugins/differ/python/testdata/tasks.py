"""Task store: one agent's work on a copy of a folder."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Iterator, overload

MAX_FILES = 10_000
DEFAULT_STATE: str = "running"


class TaskError(Exception):
    """A task could not do what was asked."""


# The states a task moves through.
@dataclasses.dataclass(frozen=True)
class Task:
    """One task."""

    id: str
    state: str = DEFAULT_STATE

    class Meta:
        ordering = ["id"]

        def describe(self) -> str:
            return "tasks by id"

    @property
    def running(self) -> bool:
        return self.state == "running"

    @running.setter
    def running(self, value: bool) -> None:
        raise AttributeError("frozen")

    @overload
    def get(self, key: int) -> str: ...

    @overload
    def get(self, key: str) -> str: ...

    def get(self, key):
        return str(key)

    async def commit(self, at: float) -> "Task":
        # Apply the effects, then record the time.
        await asyncio.sleep(0)
        return dataclasses.replace(self, state="committed")

    @staticmethod
    def parse(line: str) -> Task:
        task_id, _, state = line.partition(" ")
        return Task(task_id, state or DEFAULT_STATE)


class Store(Generic[T]):
    def __iter__(self) -> Iterator[Task]:
        yield from ()


def open_task(store: Store, task_id: str) -> Task:
    def helper():
        return task_id

    return Task(helper())


if __name__ == "__main__":
    print(open_task(Store(), "a"))
