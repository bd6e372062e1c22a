import { Effect } from "./effects";

export class Task {
  constructor(readonly id: string, private done = false) {}

  commit(effects: Effect[]): void {
    if (this.done) {
      throw new Error("already committed");
    }
    this.done = true;
  }

  toString(): string {
    return `Task(${this.id})`;
  }
}

export function openTask(id: string): Task {
  return new Task(id);
}
