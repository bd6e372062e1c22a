// Stage-3 decorators, as Lit and MobX write them.
import { customElement, property } from "lit/decorators.js";

@customElement("task-list")
export class TaskList extends LitElement {
  @property({ type: Array })
  tasks = [];

  @observable
  accessor filter = "";

  /** Renders the list. */
  @bound
  render() {
    return this.tasks.map((t) => t.name);
  }

  static Row = class {
    draw() {}
  };
}
