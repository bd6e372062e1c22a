// The control room's extension points. A module of the app (previews, extensions, transports)
// adds what it shows through these calls instead of editing app.js: a panel is a view of the
// current task, a settings section is a fieldset in Settings, a command is a palette entry with
// an optional shortcut. app.js reads them when it starts and again whenever one is added later.
//
// The context handed to mount and refresh is { task, api, h, toast, setView }: task is the
// current task's row (null when none is picked), api(method, path, body) calls the daemon with
// the page's token, h builds elements, toast shows a short message.

export const panels = [];
export const settingsSections = [];
export const commands = [];

const listeners = [];

// onChange lets app.js redraw tabs and the palette when a module registers something after
// the app has started (an extension loaded from the daemon, say).
export function onChange(fn) { listeners.push(fn); }
const changed = () => { for (const fn of listeners) fn(); };

// registerPanel({ id, title, key, mount(el, ctx), refresh(ctx) }): a tab beside Live, Review,
// Timeline and Files; mount runs once with the panel's element, refresh each time it is shown
// or the task changes.
export function registerPanel(p) {
  if (!/^[a-z][a-z0-9-]*$/.test(p.id) || panels.some((q) => q.id === p.id)) throw new Error(`panel id ${p.id} is taken or not lower-case words`);
  panels.push(p);
  changed();
}

// registerSettingsSection({ id, title, mount(el, ctx) }): mount runs each time Settings opens.
export function registerSettingsSection(s) {
  settingsSections.push(s);
  changed();
}

// registerCommand({ id, title, key, run(ctx), task }): task marks a command that needs a task.
export function registerCommand(c) {
  commands.push(c);
  changed();
}
