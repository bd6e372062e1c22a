import { log } from "./log";

export class Task {
  constructor(id, done = false) {
    this.id = id;
    this.done = done;
  }

  commit(effects) {
    if (this.done) {
      throw new Error(`${this.id} already committed`);
    }
    this.done = true;
  }

  toString() {
    return `Task(${this.id})`;
  }
}

export function openTask(id) {
  return new Task(id);
}
