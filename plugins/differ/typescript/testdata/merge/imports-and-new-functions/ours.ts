import { Effect } from "./effects";
import { log } from "./log";

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

export function closeTask(t: Task): void {}

export function openTask(id: string): Task {
  return new Task(id);
}
