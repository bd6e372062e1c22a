import { log } from "./log";
import fs from "node:fs";

export class Task {
  constructor(id, done = false) {
    this.id = id;
    this.done = done;
  }

  commit(effects) {
    if (this.done) {
      throw new Error("already committed");
    }
    this.done = true;
  }

  toString() {
    return `Task(${this.id})`;
  }
}

export function closeTask(t) {}

export function openTask(id) {
  return new Task(id);
}
