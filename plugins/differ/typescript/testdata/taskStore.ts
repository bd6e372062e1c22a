import { EventEmitter } from "node:events";
import type { Effect } from "./effects";

export const MAX_FILES = 10_000;

/** A task's state. */
export enum State {
  Running = "running",
  Committed = "committed",
}

export interface TaskInfo {
  id: string;
  state: State;
}

export type Listener<T> = (event: T) => void;

/**
 * Finds a task by id or by index.
 */
export function find(id: string): TaskInfo | undefined;
export function find(index: number): TaskInfo | undefined;
export function find(key: string | number): TaskInfo | undefined {
  return undefined;
}

@Injectable({ providedIn: "root" })
export class TaskStore<T extends TaskInfo> extends EventEmitter {
  /** Tasks by id. */
  private readonly tasks = new Map<string, T>();
  static instances = 0;
  #secret = "x";

  constructor(private readonly root: string) {
    super();
    TaskStore.instances++;
  }

  get size(): number {
    return this.tasks.size;
  }

  set size(_: number) {
    throw new Error("read-only");
  }

  @Memoize()
  list(): T[] {
    return [...this.tasks.values()];
  }

  add(task: T): void;
  add(tasks: T[]): void;
  add(x: T | T[]): void {
    for (const t of Array.isArray(x) ? x : [x]) {
      this.tasks.set(t.id, t);
    }
  }

  static create<U extends TaskInfo>(root: string): TaskStore<U> {
    return new TaskStore<U>(root);
  }

  async commit(id: string, effects: Effect[]): Promise<void> {
    const task = this.tasks.get(id);
    if (!task) throw new Error(`no task ${id}`);
    this.emit("commit", { id, effects });
  }
}

export abstract class Base {
  abstract run(): Promise<void>;
}

export namespace Paths {
  export const home = "~/.kule";
  export function join(...parts: string[]): string {
    return parts.join("/");
  }
}

declare module "express" {
  interface Request {
    task?: TaskInfo;
  }
}

export const handler = async (req: Request) => {
  return find(req.id);
}, fallback = null;

export default TaskStore;
