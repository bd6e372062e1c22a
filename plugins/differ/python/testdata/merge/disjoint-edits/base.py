import os


class Task:
    """One task."""

    def __init__(self, task_id):
        self.id = task_id
        self.done = False

    def commit(self):
        if self.done:
            raise RuntimeError("already committed")
        self.done = True

    def __repr__(self):
        return f"Task({self.id!r})"


def open_task(task_id):
    return Task(task_id)
