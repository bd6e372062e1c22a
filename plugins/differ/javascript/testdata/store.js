'use strict';

const fs = require("node:fs");
const path = require("node:path");

const MAX_FILES = 10000;
let counter = 0;

/**
 * Reads a task file.
 * @param {string} file
 */
function readTask(file) {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function* walk(dir) {
  for (const name of fs.readdirSync(dir)) {
    yield path.join(dir, name);
  }
}

class Store {
  static #instances = 0;
  tasks = new Map();

  constructor(root) {
    this.root = root;
    Store.#instances++;
  }

  get size() {
    return this.tasks.size;
  }

  /** Loads every task under the root. */
  async load() {
    for (const file of walk(this.root)) {
      const t = readTask(file);
      this.tasks.set(t.id, t);
    }
  }

  [Symbol.iterator]() {
    return this.tasks.values();
  }

  static open(root) {
    return new Store(root);
  }
}

class MemoryStore extends Store {
  async load() {}
}

const handlers = {
  commit(task) {
    counter++;
    return task;
  },
};

var legacy = function () {
  return null;
};

module.exports = { Store, MemoryStore, readTask, handlers };
