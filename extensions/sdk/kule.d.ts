// Type declarations of the `kule` object a Kule extension's script is
// given. Put this file beside your main.js (kule ext new does) and add
//   /// <reference path="./kule.d.ts" />
// at the top of main.js: an editor then completes and checks every call.
//
// Scripts run in goja (ECMAScript 2020+, modules not loaded: ship one
// main.js, bundled if you like) with nothing but this object, `console`
// and the timers. There is no require, fetch, XMLHttpRequest, file system
// or process. Each call has a time limit (2 s by default) and the runtime a
// memory ceiling; past either it is stopped.

declare namespace kule {
  /** The extension's id, "publisher.name". */
  const id: string;
  /** The extension's version. */
  const version: string;

  /** A task, as extensions see it (permission "tasks.read"). */
  interface Task {
    id: string;
    name?: string;
    folder: string;
    /** RFC 3339, UTC. */
    created: string;
    group?: string;
  }

  /** One change a task made (permission "review.read"). */
  interface Effect {
    path: string;
    kind: "add" | "modify" | "delete" | "move" | "mode" | "link" | "type";
    /** A move's old path. */
    from?: string;
    /** Entities (functions, sections, keys) the change touched, when a differ named them. */
    entities?: string[];
  }

  /** What a review-notes hook is given. */
  interface Review {
    task: string;
    name?: string;
    effects: Effect[];
  }

  /** A note under a file (or an entity in it) of a review. */
  interface Note {
    /** Must be one of the review's paths; other notes are dropped. */
    path: string;
    entity?: string;
    /** Plain text, at most 300 characters. */
    text: string;
  }

  namespace commands {
    /**
     * Registers the command `id` (it must be in the manifest's "commands";
     * permission "commands"). `kule ext run ID.COMMAND [ARGS]` calls fn
     * with the arguments as a list of strings; the control room's command
     * palette calls it with none. What fn returns (or its promise resolves
     * to) is shown as JSON.
     */
    function register(id: string, fn: (args: string[] | null) => unknown | Promise<unknown>): void;
  }

  namespace review {
    /**
     * Sets the review-notes hook (manifest "review_notes": true;
     * permissions "review.read" and "review.notes"). It is called for each
     * review `kule status` or the Review tab shows.
     */
    function onNotes(fn: (review: Review) => Note[] | Promise<Note[]>): void;
    /** A task's effects (permission "review.read"). */
    function effects(task: string): Promise<Review>;
  }

  namespace tasks {
    /** Every task (permission "tasks.read"). */
    function list(): Promise<Task[]>;
    /** One task by id or unique prefix (permission "tasks.read"). */
    function get(id: string): Promise<Task>;
  }

  namespace files {
    /**
     * A text file of a task's copy, at most 1 MiB (permission
     * "files.read"); read beneath the copy, never through a link.
     */
    function read(task: string, path: string): Promise<string>;
  }

  /** Shows a short notice to the person (permission "notify"). */
  function notify(text: string): Promise<true>;

  namespace settings {
    /** The value of one of the extension's settings (permission "settings"). */
    function get(id: string): string | number | boolean | undefined;
  }

  /**
   * Calls a bridge method by name. Kule refuses any method the extension
   * was not granted, and every method it does not offer; the promise is
   * then rejected with an Error saying so.
   */
  function call(method: string, ...args: unknown[]): Promise<unknown>;
}

declare const console: {
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};
