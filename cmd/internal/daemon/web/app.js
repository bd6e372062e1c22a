// Kule's control room: a plain ES module over the daemon's JSON API and its
// event stream. No framework, no network but this daemon.

import * as registry from './registry.js';
import { reviewNotes } from './extensions.js';
import * as preview from './preview.js';
import './transports.js';
import './terminal.js';
import './chat.js';
import './settings.js';
import * as themes from './themes.js';
import { mountMenuBar } from './menubar.js';
import * as layout from './layout.js';
import * as needs from './needs.js';

const $ = (id) => document.getElementById(id);
const isMac = /Mac|iPhone|iPad/.test(navigator.platform);

// h builds an element; strings become text (never HTML).
function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of kids.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: 'same-origin' };
  if (method !== 'GET') { opt.headers['Content-Type'] = 'application/json'; opt.body = JSON.stringify(body === undefined ? {} : body); }
  // Without the daemon nothing is sent: an action taken on a page that lost it would be taken
  // on what the page showed, not on what is.
  if (state.offline && method !== 'GET') throw new Error('Kule lost the daemon: nothing was sent and nothing changed. Wait until the page finds it, or run `kule app`.');
  let r;
  try { r = await fetch(path, opt); } catch (x) {
    if (!state.offline) lookAgain();
    throw new Error(`The daemon does not answer (${x.message}); nothing changed. Run \`kule app\` if it stopped.`);
  }
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: text }; }
  if (!r.ok) { const e = new Error((data && data.error) || r.statusText); e.status = r.status; e.data = data; throw e; }
  return data;
}

function toast(msg, bad = false) {
  const t = h('div', { class: 'toast' + (bad ? ' bad' : ''), role: bad ? 'alert' : 'status' }, msg);
  $('toasts').append(t);
  while ($('toasts').children.length > 3) $('toasts').firstChild.remove();
  setTimeout(() => t.remove(), bad ? 9000 : 3500);
}

const state = {
  // meets: task id -> the other tasks it meets (from Review's status and meet events)
  tasks: [], groups: [], meets: {}, agents: [], questions: [], interrupted: [], questionEvents: 0, current: null, view: 'live', detail: null,
  ruling: {}, // path -> 'approve' | 'remember' | 'hold'
  shortcuts: {}, live: {}, // task id -> items the Live tab shows
};

// ---------- commands and keys ----------
const commands = [
  // field: the command also fires while a text field has the focus. Only commands that move
  // the focus or open something are; none that changes a task or the folder.
  { id: 'palette.open', title: 'Find a command', key: 'Mod+K', run: openPalette, field: true },
  { id: 'task.new', title: 'New task', key: 'Mod+Alt+N', run: openNew, field: true },
  { id: 'task.next', title: 'Next task', key: 'Alt+PageDown', run: () => stepTask(1), field: true },
  { id: 'task.prev', title: 'Previous task', key: 'Alt+PageUp', run: () => stepTask(-1), field: true },
  { id: 'view.live', title: 'Show Live (the agent and its runs)', key: 'Mod+1', run: () => setView('live'), task: true, field: true },
  { id: 'view.review', title: 'Show Review', key: 'Mod+2', run: () => setView('review'), task: true, field: true },
  { id: 'view.timeline', title: 'Show Timeline', key: 'Mod+3', run: () => setView('timeline'), task: true, field: true },
  { id: 'view.files', title: 'Show Files', key: 'Mod+5', run: () => setView('files'), task: true, field: true },
  { id: 'task.commit', title: 'Commit', key: 'Mod+Shift+Enter', run: () => commit(false), task: true },
  { id: 'task.approvecommit', title: 'Approve and commit', key: '', run: () => commit(true), task: true },
  { id: 'task.rollback', title: 'Roll back uncommitted changes', key: '', run: rollback, task: true },
  { id: 'task.undo', title: 'Undo the last commit', key: 'Mod+Shift+Z', run: undo, task: true },
  { id: 'question.approve', title: 'Approve the waiting question', key: 'Mod+Shift+Y', run: () => answerFirst(true) },
  { id: 'question.deny', title: 'Deny the waiting question', key: 'Mod+Shift+X', run: () => answerFirst(false) },
  { id: 'task.up', title: 'Move task up', key: 'Alt+ArrowUp', run: () => move(-1), task: true },
  { id: 'task.down', title: 'Move task down', key: 'Alt+ArrowDown', run: () => move(1), task: true },
  { id: 'task.rename', title: 'Name the task', key: 'F2', run: rename, task: true },
  { id: 'task.stop', title: 'Stop the running command', key: '', run: () => api('POST', `/api/tasks/${state.current}/stop`), task: true },
  { id: 'task.wait', title: 'Set how long questions of the task wait', key: '', run: setTaskWait, task: true },
  { id: 'task.budget', title: 'Budget of the task', key: '', run: setBudget, task: true },
  { id: 'task.limits', title: 'Limits of the task', key: '', run: setLimits, task: true },
  { id: 'task.group', title: 'Move the task to a group', key: 'Mod+Shift+G', run: () => pickGroup(), task: true },
  { id: 'group.new', title: 'New group', key: '', run: () => openGroup(null) },
  { id: 'question.remember', title: 'Approve the waiting question and remember', key: '', run: () => answerFirst(true, true) },
  { id: 'agent.pick', title: 'Choose who runs the command line: shell or an agent', key: 'Mod+Alt+A', run: () => $('agent').focus(), task: true, field: true },
  { id: 'task.delete', title: 'Delete the task', key: '', run: del, task: true },
  { id: 'cmdline.focus', title: 'Go to the command line', key: 'Mod+L', run: () => $('cmd').focus(), task: true, field: true },
  { id: 'settings.open', title: 'Settings', key: 'Mod+,', run: openSettings, field: true },
  // The window's regions (layout.js): hiding one never changes a task, so these fire in fields.
  { id: 'layout.left', title: 'Show or hide the left side', key: 'Mod+B', run: () => layout.toggle('left'), field: true },
  { id: 'layout.bottom', title: 'Show or hide the bottom panel', key: 'Mod+J', run: () => layout.toggle('bottom'), field: true },
  { id: 'layout.right', title: 'Show or hide the right side', key: 'Mod+Alt+B', run: () => layout.toggle('right'), field: true },
  { id: 'layout.main', title: 'Show or hide the main area', key: '', run: () => layout.toggle('main'), field: true },
  ...layout.regions.map((r) => ({ id: 'layout.move.' + r, title: `Move the panel shown to the ${{ left: 'left side', main: 'main area', right: 'right side', bottom: 'bottom panel' }[r]}`, key: '', run: () => layout.move(layout.focusedPanel(), r) })),
  { id: 'layout.reset', title: 'Reset the layout', key: '', run: () => layout.reset() },
  { id: 'help.keys', title: 'Keyboard shortcuts', key: '', run: () => openSettings().then(() => showSection('shortcuts')), field: true },
  { id: 'help.docs', title: 'What the control room does (docs/app.md)', key: '', run: () => toast('docs/app.md in Kule\'s source says what each part of the control room does; kule help lists the commands') },
  ...themes.named.map(([id, title]) => ({ id: 'theme.' + id, title: `Theme: ${title}`, key: '', run: () => setTheme(id) })),
];
const byId = Object.fromEntries(commands.map((c) => [c.id, c]));
const builtinViews = ['live', 'review', 'timeline', 'files'];
const mounted = new Set(); // registered panels whose mount has run

// ctx is what a registered panel, settings section or command is handed.
const ctx = () => ({ task: cur() || null, api, h, toast, setView });

// addRegistered brings in what modules registered (registry.js): their commands join the
// palette and the shortcuts, their panels get a tab and a view after the built-in ones.
function addRegistered() {
  for (const c of registry.commands) {
    if (byId[c.id]) continue;
    const own = { ...c, run: () => c.run(ctx()) };
    commands.push(own);
    byId[c.id] = own;
  }
  for (const p of registry.panels) {
    if ($('v-' + p.id)) continue;
    const tab = h('button', { role: 'tab', id: 'tab-' + p.id, 'aria-controls': 'v-' + p.id, 'data-view': p.id }, p.title);
    const view = h('section', { id: 'v-' + p.id, class: 'view', role: 'tabpanel', 'aria-labelledby': 'tab-' + p.id, hidden: true });
    document.querySelector('#r-main > .rbody').append(view);
    layout.addPanel(p.id, p.title, tab, view); // it moves the tab and the view into the panel's region
    if (p.key && !byId['view.' + p.id]) {
      // A panel's key shows it, and pressed again hides its region (in the main area: goes back
      // to the panel shown before).
      const c = { id: 'view.' + p.id, title: `Show ${p.title}`, key: p.key, run: () => layout.togglePanel(p.id, state.prevView || 'live'), task: true, field: true };
      commands.push(c);
      byId[c.id] = c;
    }
  }
}
const keyOf = (c) => (c.id in state.shortcuts ? state.shortcuts[c.id] : c.key);
const showKey = (k) => (k || '').replace('Mod', isMac ? '⌘' : 'Ctrl').replace('ArrowUp', '↑').replace('ArrowDown', '↓').replace(/\+/g, isMac ? '' : '+');

function eventKey(e) {
  const parts = [];
  const mod = isMac ? e.metaKey : e.ctrlKey;
  if (mod) parts.push('Mod');
  if (isMac && e.ctrlKey) parts.push('Ctrl');
  if (!isMac && e.metaKey) parts.push('Meta');
  if (e.altKey) parts.push('Alt');
  if (e.shiftKey) parts.push('Shift');
  let k = e.key;
  if (/^Key[A-Z]$/.test(e.code)) k = e.code.slice(3);
  else if (/^Digit[0-9]$/.test(e.code)) k = e.code.slice(5);
  else if (k === ' ') k = 'Space';
  else if (k.length === 1) k = k.toUpperCase();
  if (['Control', 'Shift', 'Alt', 'Meta'].includes(k)) return null;
  // Ctrl+Tab is named as such on every platform.
  if (k === 'Tab' && e.ctrlKey && parts[0] === 'Mod') parts[0] = 'Ctrl';
  parts.push(k);
  return parts.join('+');
}

function runCommand(id) {
  const c = byId[id];
  if (!c) return;
  if (c.task && !state.current) { toast('Pick a task first'); return; }
  Promise.resolve(c.run()).catch((e) => toast(e.message, true));
}

// reserved are the combos a browser or the system keeps for itself: a real browser window
// never hands them to a page (Ctrl+W closes the tab, Ctrl+Shift+N opens a private window), or
// the desktop takes them first. The shortcut editor refuses them, and no default is one.
const reserved = {
  'Mod+W': 'closes the tab', 'Mod+Shift+W': 'closes the window', 'Mod+T': 'opens a tab', 'Mod+Shift+T': 'reopens a closed tab',
  'Mod+N': 'opens a window', 'Mod+Shift+N': 'opens a private window', 'Mod+Q': 'quits the browser', 'Mod+Shift+Q': 'quits the browser',
  'Ctrl+Tab': 'goes to the next tab', 'Ctrl+Shift+Tab': 'goes to the previous tab', 'Mod+PageDown': 'goes to the next tab', 'Mod+PageUp': 'goes to the previous tab',
  'Alt+F4': 'closes the window', 'Alt+Tab': 'switches windows', 'F11': 'goes full screen', 'Ctrl+Alt+Delete': 'belongs to the system',
  'Mod+Alt+T': 'opens a terminal on many desktops', 'Mod+Shift+U': 'types a character by its code on Linux desktops',
  'Mod+Alt+ArrowUp': 'switches workspaces on Linux desktops', 'Mod+Alt+ArrowDown': 'switches workspaces on Linux desktops',
  'Mod+H': 'hides the app on a Mac', 'Mod+M': 'minimises the window on a Mac', 'Mod+Space': 'opens Spotlight on a Mac', 'Ctrl+Space': 'switches the input language',
};
// reservedWhy says why a combo cannot be a shortcut, or '' when it can.
const reservedWhy = (k) => reserved[k] || (/^(Mod\+)?Meta\+/.test(k) || /(^|\+)Meta(\+|$)/.test(k) ? 'belongs to the system (the Super key)' : '');

// inField is whether the focus is where a person types: there, only the commands marked
// field fire (Ctrl+Shift+Z is Redo in a text field, never an undo of a commit).
const inField = (el) => !!(el && el.closest && el.closest('input, textarea, select, [contenteditable=""], [contenteditable=true], .xterm'));

let listening = null; // a Settings row waiting for keys
document.addEventListener('keydown', (e) => {
  const k = eventKey(e);
  if (!k) return;
  if (listening) { e.preventDefault(); listening(k); return; }
  const typing = inField(e.target);
  // In a terminal every key is the shell's (Ctrl+L clears, Ctrl+K cuts) but those that show a
  // view (Mod+1…, the terminal's own toggle): a shell has no use for them.
  const inTerm = !!(e.target.closest && e.target.closest('.xterm'));
  for (const c of commands) {
    if (keyOf(c) === k) {
      if (typing && !c.field) continue;
      if (inTerm && !c.id.startsWith('view.')) continue;
      e.preventDefault();
      if (state.offline && !c.field) { toast('Kule lost the daemon: nothing can be done until it is back', true); return; }
      runCommand(c.id);
      return;
    }
  }
}, true);

// ---------- theme (themes.js; kept in themes.json in Kule's home) ----------
const setTheme = (t) => themes.setTheme(t).catch((x) => toast(x.message, true));

// ---------- tasks ----------
const colours = ['', 'slate', 'red', 'orange', 'amber', 'green', 'teal', 'blue', 'indigo', 'violet', 'pink'];
// changesText reads a summary as a person would: "no changes" for none.
const changesText = (sum) => (!sum || /^0 /.test(sum) ? 'no changes' : sumWords(sum));
// sumWords reads the CLI's summary ("3 changes: +1 ~2 -0 »1") as words: "1 added, 2 changed, 1 moved".
function sumWords(sum) {
  const m = /([+~\-»])(\d+)/g, c = {};
  let x, any = false;
  while ((x = m.exec(sum))) { c[{ '+': 'added', '~': 'changed', '-': 'deleted', '»': 'moved' }[x[1]]] = Number(x[2]); any = true; }
  return any ? countWords(c) : sum;
}
// countWords is counts of added/changed/deleted/moved as a person says them.
function countWords(c) {
  const parts = [];
  for (const k of ['added', 'changed', 'deleted', 'moved']) if (c[k]) parts.push(`${c[k]} ${k}`);
  return parts.join(', ') || 'no changes';
}
// lineWords reads one effect line of the CLI ("~ a.txt", "» a → b") as words.
function lineWords(l) {
  const w = { '+': 'added', '~': 'changed', '-': 'deleted', '−': 'deleted', '»': 'moved', '↗': 'link' };
  const m = /^(\S)\s+(.*)$/.exec(l || '');
  return m && w[m[1]] ? `${m[2]} (${w[m[1]]})` : l;
}
// A task is called after its folder, then its own name: "Downloads – march invoices".
const folderName = (t) => t.folder.split('/').filter(Boolean).pop() || t.folder;
const taskTitle = (t) => (t.name && t.name !== folderName(t) ? `${folderName(t)} – ${t.name}` : folderName(t));
const cur = () => state.tasks.find((t) => t.id === state.current);

async function loadTasks() {
  const asked = Date.now();
  const [ts, gs] = await Promise.all([api('GET', '/api/tasks'), api('GET', '/api/groups')]);
  state.tasks = ts;
  state.groups = gs;
  // A card still "running" in a task where nothing runs has ended (its end event came while
  // this page was away): it says so.
  for (const t of ts) {
    const l = state.live[t.id];
    if (t.running || !l) continue;
    // Only cards begun before the list was asked for: a list older than a run's start says
    // nothing of it.
    for (const it of l.items) if (it.kind === 'run' && it.state === 'running' && it.at < asked) { Object.assign(touch(it), { state: 'ended' }); liveSoon(t.id); if (l.run === it) l.run = null; }
  }
  if (state.current && !cur()) state.current = null;
  renderTasks();
  renderHeader();
}

function taskRow(t) {
  const badges = [];
  if (t.running) badges.push(h('span', { class: 'badge run' }, 'running'));
  if (t.waiting) badges.push(h('span', { class: 'badge wait', title: 'questions waiting' }, `${t.waiting} waiting`));
  badges.push(needs.taskBadge(t)); // a spent lease (needs.js)
  if (!t.running && (state.interrupted || []).some((r) => r.task === t.id)) badges.push(h('span', { class: 'badge wait', 'data-interrupted-task': t.id, title: 'its agent was stopped in the middle of a turn: Resume it from Needs you' }, 'interrupted'));
  if (t.asks) badges.push(h('span', { class: 'badge ask', title: 'changes that need approval' }, `${t.asks} ask`));
  if (t.denied) badges.push(h('span', { class: 'badge deny', title: 'changes the policy refuses' }, `${t.denied} denied`));
  if (t.changes && !t.asks && !t.denied) badges.push(h('span', { class: 'badge' }, String(t.changes)));
  const meet = state.meets[t.id];
  if (meet && meet.length) badges.push(h('span', { class: 'badge meet', title: meet.map((m) => `changes ${m.paths.slice(0, 3).join(', ')}${m.paths.length > 3 ? ' …' : ''} that ${m.title} changes too`).join('; ') }, `meets ${meet.length === 1 ? meet[0].title : meet.length + ' tasks'}`));
  const li = h('li', {
    role: 'option', 'aria-selected': String(t.id === state.current), tabindex: '0', 'data-id': t.id,
    'aria-label': `Task ${taskTitle(t)}, ${changesText(t.summary)}`,
    onclick: () => { if (!drag.moved) select(t.id); }, onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(t.id); } },
  },
  h('span', { class: 'stripe' + (t.colour ? ' c-' + t.colour : '') }),
  h('div', {}, h('div', { class: 'tn' }, taskTitle(t)), h('div', { class: 'ts' }, `${t.id} · ${t.error ? 'error' : changesText(t.summary)}`)),
  h('div', { class: 'badges' }, badges));
  li.addEventListener('pointerdown', (e) => startDrag(e, t.id, li));
  return li;
}

const policyWord = { '': 'default policy', balanced: 'balanced', careful: 'careful', own: 'own policy' };

function renderTasks() {
  const ul = $('task-list');
  const rows = [];
  const known = new Set(state.groups.map((g) => g.id));
  const loose = state.tasks.filter((t) => !t.group || !known.has(t.group));
  // With groups, the tasks in none have a heading of their own, a place to drop a task to take
  // it out of its group.
  if (state.groups.length) {
    rows.push(h('li', { class: 'ghead nogroup', role: 'presentation', 'data-group': '' }, h('span', { class: 'gname' }, 'Not in a group'), h('span', { class: 'gpol', title: 'the policy of its tasks' }, policyWord[''])));
    if (!loose.length) rows.push(h('li', { class: 'gempty muted small', role: 'presentation', 'data-group': '' }, 'No tasks — drop one here to take it out of its group'));
  }
  for (const t of loose) rows.push(taskRow(t));
  for (const g of state.groups) {
    rows.push(h('li', { class: 'ghead', role: 'presentation', 'data-group': g.id },
      h('span', { class: 'gdot' + (g.colour ? ' c-' + g.colour : ''), 'aria-hidden': 'true' }),
      h('span', { class: 'gname' }, g.name),
      h('span', { class: 'gpol', title: 'the policy of its tasks' }, policyWord[g.policy || '']),
      h('button', { class: 'icon small-btn', 'aria-label': `Edit group ${g.name}`, title: 'Edit group', onclick: (e) => { e.stopPropagation(); openGroup(g); } }, '⋯')));
    const mine = state.tasks.filter((t) => t.group === g.id);
    for (const t of mine) { const r = taskRow(t); r.classList.add('ingroup'); rows.push(r); }
    if (!mine.length) rows.push(h('li', { class: 'gempty muted small', role: 'presentation', 'data-group': g.id }, 'No tasks — drop one here'));
  }
  ul.replaceChildren(...rows);
  $('no-tasks').hidden = state.tasks.length > 0;
  $('drag-hint').hidden = state.tasks.length < 2 && !state.groups.length;
  const first = state.tasks.length === 0 && state.firstRun !== false;
  $('firstrun').hidden = !first || !!state.current;
  $('welcome').hidden = first || !!state.current;
  $('taskview').hidden = !state.current;
  if (first && !$('firstrun').dataset.loaded) loadFirstRun();
}

// ---------- drag to reorder (pointer events, so keyboard and tests reach the same path) ----------
const drag = { id: null, li: null, x: 0, y: 0, moved: false, over: null };
function startDrag(e, id, li) {
  if (e.button !== 0) return;
  Object.assign(drag, { id, li, x: e.clientX, y: e.clientY, moved: false, over: null });
  document.addEventListener('pointermove', onDrag);
  document.addEventListener('pointerup', endDrag, { once: true });
}
function dropTarget(x, y) {
  const el = document.elementFromPoint(x, y);
  return el && el.closest('#task-list li');
}
function onDrag(e) {
  if (!drag.id) return;
  if (!drag.moved && Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < 6) return;
  drag.moved = true;
  drag.li.classList.add('dragging');
  for (const el of document.querySelectorAll('#task-list .drop')) el.classList.remove('drop');
  const over = dropTarget(e.clientX, e.clientY);
  drag.over = over && over !== drag.li ? over : null;
  if (drag.over) drag.over.classList.add('drop');
}
async function endDrag() {
  document.removeEventListener('pointermove', onDrag);
  const { id, over, moved } = drag;
  drag.li && drag.li.classList.remove('dragging');
  for (const el of document.querySelectorAll('#task-list .drop')) el.classList.remove('drop');
  drag.id = null;
  setTimeout(() => { drag.moved = false; }, 0);
  if (!moved || !over) return;
  try {
    const t = state.tasks.find((x) => x.id === id);
    const g = over.dataset.group !== undefined ? over.dataset.group : (state.tasks.find((x) => x.id === over.dataset.id) || {}).group || '';
    if ((t.group || '') !== g) await moveToGroup(id, g);
    if (over.dataset.id) {
      const from = state.tasks.findIndex((x) => x.id === id), to = state.tasks.findIndex((x) => x.id === over.dataset.id);
      if (from !== to) { state.tasks = await api('POST', `/api/tasks/${id}/move`, { by: to - from }); }
    }
    await loadTasks();
  } catch (x) { toast(x.message, true); }
}

function select(id) {
  if (state.offline) { toast('Kule lost the daemon: tasks open again once it is back', true); return; }
  if (state.current !== id) { state.ruling = {}; state.alsoIgnored = false; state.detail = null; review.open.clear(); review.shown.clear(); review.filter = ''; $('r-filter').value = ''; clearReview(); }
  state.current = id;
  localStorage.setItem('kule.task', id);
  renderTasks();
  renderHeader();
  refreshView();
}

function stepTask(by) {
  if (!state.tasks.length) return;
  let i = state.tasks.findIndex((t) => t.id === state.current);
  i = (i + by + state.tasks.length) % state.tasks.length;
  select(state.tasks[i].id);
}

function renderHeader() {
  const t = cur();
  if (!t) return;
  $('t-name').textContent = taskTitle(t);
  $('t-folder').textContent = `${t.id} · ${t.folder}`;
  $('t-dot').className = 'dot' + (t.colour ? ' c-' + t.colour : '');
  const st = $('t-state');
  st.className = 'chip' + (t.running ? ' run' : t.waiting ? ' wait' : '');
  st.textContent = t.running ? 'running…' : t.waiting ? `${t.waiting} question${t.waiting > 1 ? 's' : ''} waiting` : changesText(t.summary);
  $('t-colours').replaceChildren(...colours.map((c) => h('button', {
    class: c ? 'c-' + c : '', 'aria-label': c ? `Colour ${c}` : 'No colour', title: c || 'none', 'aria-pressed': String((t.colour || '') === c),
    onclick: () => patch({ colour: c }).then(closeMenu),
  })));
  $('btn-run').hidden = !!t.running;
  $('btn-stop').hidden = !t.running;
  renderUsage(t);
}

// ---------- what the task's runs used, against its budgets ----------
// money reads an amount as kule status prints it.
function money(m) {
  if (!m) return '';
  const sym = { USD: '$', EUR: '€', GBP: '£' }[m.currency];
  return sym ? sym + m.amount.toFixed(2) : `${m.amount.toFixed(2)} ${m.currency}`;
}
const count = (n) => (n >= 1e6 ? (n / 1e6).toFixed(1) + 'M' : n >= 1e3 ? (n / 1e3).toFixed(1) + 'k' : String(n));
// level is how far a share of a cap is: ok, warn from 80%, over at 100%.
const level = (share) => (share >= 1 ? 'over' : share >= 0.8 ? 'warn' : 'ok');

// bar is a compact meter: a label, a bar with a mark at 80%, and the text.
function bar(label, share, text, title) {
  const lv = level(share), pct = Math.round(share * 100);
  const fill = h('span', { class: 'mfill' });
  fill.style.width = `${Math.min(pct, 100)}%`; // through the CSSOM: the page's CSP allows no style attributes
  return h('span', { class: 'meter ' + lv, 'data-level': lv, role: 'meter', 'aria-label': label, 'aria-valuemin': '0', 'aria-valuemax': '100',
    'aria-valuenow': String(Math.min(pct, 100)), 'aria-valuetext': `${text} (${pct}%)`, title: title || `${label}: ${text} (${pct}%)` },
  h('span', { class: 'mlabel' }, label),
  h('span', { class: 'mbar', 'aria-hidden': 'true' }, fill, h('span', { class: 'm80' })),
  h('span', { class: 'mtext' }, text),
  lv === 'ok' ? null : h('span', { class: 'mmark' }, lv === 'over' ? 'spent' : pct + '%'));
}

function renderUsage(t) {
  const el = $('t-usage'), s = t.usage;
  if (!s) {
    el.hidden = !t.usage_error;
    el.replaceChildren(t.usage_error ? h('span', { class: 'bad small', title: t.usage_error }, 'usage not readable') : '');
    return;
  }
  const u = s.usage || {}, parts = [];
  if (u.tokens && u.tokens.total) parts.push(`${count(u.tokens.total)} tokens`);
  for (const c of u.cost || []) parts.push(money(c));
  if (u.runs) parts.push(`${u.runs} run${u.runs > 1 ? 's' : ''}`);
  if (!parts.length && !s.budget && !s.daily_budget) { el.hidden = true; el.replaceChildren(); return; } // nothing to tell yet
  const kids = [h('span', { class: 'used small muted', id: 't-used' }, parts.join(' · ') || 'nothing spent yet')];
  if (s.budget) kids.push(bar('Budget', s.budget.amount > 0 ? s.budget_spent.amount / s.budget.amount : 1, `${money(s.budget_spent)} of ${money(s.budget)}`, s.blocked));
  if (s.daily_budget) kids.push(bar('Today', s.daily_budget.amount > 0 ? s.daily_spent.amount / s.daily_budget.amount : 1, `${money(s.daily_spent)} of ${money(s.daily_budget)}`, s.blocked));
  if (s.blocked) kids.push(h('span', { class: 'blocked small', role: 'note', tabindex: '0', title: s.blocked, 'aria-label': 'No agent run starts: ' + s.blocked }, 'no run starts'));
  el.replaceChildren(...kids);
  el.hidden = false;
}

async function patch(body) {
  await api('PATCH', `/api/tasks/${state.current}`, body);
  await loadTasks();
}

// move goes by places among the tasks of the same group, as the list shows them.
async function move(by) {
  closeMenu();
  const t = cur();
  const mates = state.tasks.filter((x) => (x.group || '') === (t.group || ''));
  const i = mates.indexOf(t), j = Math.min(Math.max(i + by, 0), mates.length - 1);
  if (i === j) return;
  const delta = state.tasks.indexOf(mates[j]) - state.tasks.indexOf(t);
  state.tasks = await api('POST', `/api/tasks/${state.current}/move`, { by: delta });
  renderTasks();
}

async function rename() {
  closeMenu();
  const t = cur();
  const v = await ask('Name the task', 'Name', t.name || '');
  if (v !== null) await patch({ name: v });
}

async function setTaskWait() {
  closeMenu();
  const t = cur();
  const v = await ask('How long a question waits', 'Minutes (1–480); unanswered, it is refused', String(t.wait_minutes), (s) => {
    const n = Number(s);
    return Number.isInteger(n) && n >= 1 && n <= 480 ? '' : 'A whole number of minutes from 1 to 480 (8 hours); waits are never off.';
  });
  if (v !== null) { await patch({ wait_minutes: Number(v) }); toast(`Questions of this task wait ${v} minutes`); }
}

// setBudget sets the task's own spending cap (kule budget --task); empty removes it.
async function setBudget() {
  closeMenu();
  const t = cur();
  const b = t.usage && t.usage.budget;
  const v = await ask('Budget of the task', 'An amount and its currency, like 5.00 USD. Agent runs stop starting once it is spent. Empty: no budget of its own.', b ? `${b.amount.toFixed(2)} ${b.currency}` : '', (s) => (!s.trim() || /^\d+(\.\d{1,2})?\s*[A-Za-z]{3}$/.test(s.trim()) ? '' : 'Write an amount and a currency, like 5.00 USD, or leave it empty.'));
  if (v === null) return;
  const m = /^(\d+(?:\.\d{1,2})?)\s*([A-Za-z]{3})$/.exec(v.trim());
  await api('PUT', `/api/tasks/${t.id}/budget`, { cap: m ? { amount: Number(m[1]), currency: m[2].toUpperCase() } : null });
  toast(m ? `The task's budget is ${m[1]} ${m[2].toUpperCase()}` : 'The task has no budget of its own');
  await loadTasks();
}

// setLimits sets the task's own limits (kule limits); 0 takes the home's setting.
async function setLimits() {
  closeMenu();
  const t = cur();
  const l = await api('GET', `/api/tasks/${t.id}/limits`);
  const dlg = $('dlg-limits');
  for (const [k, v] of Object.entries(l)) { const el = dlg.querySelector(`[name=${k}]`); if (el) el.value = String(v); }
  $('limits-error').textContent = '';
  dlg.returnValue = '';
  dlg.showModal();
  const ok = await new Promise((resolve) => dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true }));
  if (!ok) return;
  const body = {};
  for (const el of dlg.querySelectorAll('input[name]')) body[el.name] = Number(el.value || 0);
  try { await api('PUT', `/api/tasks/${t.id}/limits`, body); toast('The task\'s limits are kept; the next run takes them'); }
  catch (x) { toast(x.message, true); }
  await loadTasks();
}

async function del() {
  closeMenu();
  const t = cur();
  const typed = await ask('Delete task', `The folder is untouched; the copy and its ${t.changes || 0} uncommitted changes go. Type the task id (${t.id}) to delete it.`, '', (s) => (s.trim() === t.id ? '' : 'That is not the task id.'));
  if (typed === null) return;
  await api('DELETE', `/api/tasks/${t.id}?yes=1`);
  state.current = null;
  toast(`Deleted task ${t.id}; ${t.folder} is untouched`);
  await loadTasks();
}

// ---------- views ----------
// setView shows a panel in its region (layout.js), showing the region if it was hidden.
function setView(v) {
  if (state.view !== v) state.prevView = state.view;
  state.view = v;
  layout.show(v); // its onShow redraws what is shown
}

let refreshing = null;
function refreshView() {
  if (!state.current) return;
  if (refreshing) clearTimeout(refreshing);
  refreshing = setTimeout(() => {
    refreshing = null;
    // Every panel on screen: one per region that shows.
    for (const v of layout.shownPanels()) {
      if (v === 'tasks') continue;
      const f = { live: loadLive, review: loadReview, timeline: loadTimeline, files: loadFiles }[v] || (() => refreshPanel(v));
      f().catch((e) => toast(e.message, true));
    }
    if (!layout.isShown('review')) loadReview(true).catch(() => {});
  }, 60);
}

async function refreshPanel(id) {
  const p = registry.panels.find((q) => q.id === id);
  const el = $('v-' + id);
  if (!p || !el) return;
  if (!mounted.has(id)) { mounted.add(id); if (p.mount) await p.mount(el, ctx()); }
  if (p.refresh) await p.refresh(ctx());
}

// clearReview empties Review before another task's is drawn: one task's changes never show
// under another's header, nor its Commit enabled.
function clearReview() {
  $('changes').replaceChildren();
  $('git-changes').replaceChildren();
  $('r-summary').textContent = 'Reading the changes…';
  $('review-count').textContent = '';
  for (const b of ['btn-commit', 'btn-rollback', 'btn-approve-commit']) $(b).disabled = true;
}

const symbols = { add: '+', modify: '~', delete: '−', move: '»', mode: '~', link: '↗', type: '~' };

async function loadReview(countOnly = false) {
  const id = state.current;
  const d = await api('GET', `/api/tasks/${id}`);
  if (id !== state.current) return;
  state.detail = d;
  const cs = (d.changes || []).filter((c) => !c.ignored);
  $('review-count').textContent = cs.length ? String(cs.length) : '';
  if (countOnly) return;
  const s = d.summary || {};
  const parts = [];
  if (s.added) parts.push(`${s.added} added`);
  if (s.changed) parts.push(`${s.changed} changed`);
  if (s.deleted) parts.push(`${s.deleted} deleted`);
  if (s.moved) parts.push(`${s.moved} moved`);
  $('r-summary').textContent = d.running ? 'A command is running…' : (parts.join(' · ') || 'No changes');
  const gs = d.git || [];
  $('no-changes').hidden = cs.length > 0 || gs.length > 0 || d.running || (d.changes || []).some((c) => c.ignored);
  const asks = cs.filter((c) => c.verdict === 'ask').length;
  const ignoredCount = (d.changes || []).filter((c) => c.ignored).length;
  $('btn-commit').disabled = !(cs.length || gs.some((g) => g.verdict === 'pass') || (state.alsoIgnored && ignoredCount)) || !!d.running || !!state.offline;
  $('btn-rollback').disabled = !cs.length || !!d.running || !!state.offline;
  $('btn-approve-commit').hidden = !asks;
  $('btn-approve-commit').disabled = !asks || !!d.running || !!state.offline;
  $('btn-approve-commit').textContent = `Approve and commit (${asks})`;
  renderChanges(cs);
  needs.noteWarnings($('changes'), d.note_warnings); // extensions' notes refused or cut
  renderMeets(id, d.meets || []);
  renderIgnored((d.changes || []).filter((c) => c.ignored));
  loadHome(id).catch((x) => { $('r-home').hidden = false; $('r-home').replaceChildren(h('p', { class: 'error small' }, x.message)); });
  $('git-changes').replaceChildren(...gs.map(gitRow));
}

// gitRow is one line of what the task did to a repository. What passes goes
// in with a commit; what waits is approved with `kule commit --approve`
// (an approval of files here is never one of git), and what is denied stays
// in the copy.
function gitRow(g) {
  const held = g.verdict === 'ask' || g.verdict === 'deny';
  const why = g.verdict === 'ask' ? 'waits: kule commit --approve takes it in' : g.reason;
  return h('li', { class: 'gitline' + (held ? ' held' : '') },
    h('span', { class: 'sym git', 'aria-label': 'git', title: 'git' }, '⎇'),
    h('span', { class: 'path' }, g.line),
    g.verdict ? h('span', { class: 'verdict ' + g.verdict, title: g.rule ? `rule ${g.rule}` : 'policy verdict' }, g.verdict) : null,
    why ? h('span', { class: 'reason' }, why) : null);
}

function changeRow(c) {
  const rule = state.ruling[c.path];
  // A row that waits for the person's decision looks like one to act on; only what stays in
  // the copy (held back, or refused) is dimmed.
  const held = rule === 'hold' || c.verdict === 'deny';
  const waits = !held && c.verdict === 'ask' && rule !== 'approve' && rule !== 'remember';
  const li = h('li', { class: held ? 'held' : waits ? 'waits' : '', 'data-path': c.path },
    h('span', { class: 'sym ' + c.kind, 'aria-label': c.kind, title: c.kind }, symbols[c.kind] || '~'),
    h('span', { class: 'path' }, c.kind === 'move' ? `${c.from} → ${c.path}` : c.path + (c.dir ? '/' : ''), c.files ? h('span', { class: 'muted' }, `  (${c.files} files)`) : null,
      c.target ? h('span', { class: 'tgt', title: 'where the link points; Kule never follows it' }, ` → ${c.target} (link)`) : null),
    h('span', { class: 'verdict ' + c.verdict, title: c.rule ? `rule ${c.rule}` : 'policy verdict' }, c.verdict),
    h('span', { class: 'ruling', role: 'group', 'aria-label': `Ruling for ${c.path}` },
      c.verdict === 'ask' ? h('button', { 'aria-pressed': String(rule === 'approve'), 'aria-label': `Approve ${c.path}`, onclick: () => rule_(c.path, 'approve') }, 'Approve') : null,
      c.verdict === 'ask' && c.can_remember ? h('button', { 'aria-pressed': String(rule === 'remember'), 'aria-label': `Approve ${c.path} and remember`, title: 'Approve it, and let the same change to this path pass from now on (a rule for this folder in rules.cedar; kule rules lists it)', onclick: () => rule_(c.path, 'remember') }, 'Approve and remember') : null,
      c.verdict !== 'deny' ? h('button', { 'aria-pressed': String(rule === 'hold'), 'aria-label': `Hold back ${c.path}`, title: 'Keep it in the copy; do not commit it', onclick: () => rule_(c.path, 'hold') }, 'Hold back') : null),
    c.names && c.names.length ? h('span', { class: 'names', 'aria-label': 'What changed inside' }, c.names.map((n) => h('span', { class: 'name' }, n))) : null,
    c.reason ? h('span', { class: 'reason' }, c.reason) : null,
    reviewNotes(c), // extensions' notes under the file (extensions.js)
    !c.dir && c.kind !== 'delete' && c.type !== 'link' ? h('button', { class: 'small', 'aria-label': `Preview ${c.path}`, title: c.kind === 'add' ? 'Open it in Preview' : 'Open it in Preview, before the task and now side by side', onclick: () => preview.open(c.path, setView, c.kind === 'add' ? 'now' : 'both') }, 'Preview') : null);
  // Under each changed file its lines; under an added folder its files.
  if (!c.dir && c.type === 'file' && !c.image && c.kind !== 'mode') {
    const box = h('div', { class: 'diff', hidden: true });
    const btn = h('button', { class: 'ghost small-btn showlines', 'aria-expanded': 'false', 'aria-label': `Show the lines that changed in ${c.path}`, onclick: () => showDiff(c, box, btn) }, 'Show lines');
    li.append(h('div', { class: 'rowmore' }, btn), box);
  } else if (c.dir && c.kind === 'add') {
    const box = h('div', { class: 'diff', hidden: true });
    const btn = h('button', { class: 'ghost small-btn showfolder', 'aria-expanded': 'false', 'aria-label': `Show the files in ${c.path}`, onclick: () => showFolder(c, box, btn) }, `Show its ${c.files || ''} files`.replace('  ', ' '));
    li.append(h('div', { class: 'rowmore' }, btn), box);
  }
  if (c.image) {
    const pics = h('div', { class: 'pics' });
    for (const side of c.kind === 'add' ? ['after'] : c.kind === 'delete' ? ['before'] : ['before', 'after']) {
      const img = h('img', { alt: `${c.path}, ${side}`, loading: 'lazy', src: `/api/tasks/${state.current}/image?side=${side}&path=${encodeURIComponent(side === 'before' && c.from ? c.from : c.path)}` });
      const fig = h('figure', {}, img, h('figcaption', {}, side));
      // A picture smaller than its box is shown larger, pixel by pixel.
      img.addEventListener('load', () => { if (img.naturalWidth < 96 && img.naturalHeight < 96) img.classList.add('tiny'); });
      img.addEventListener('error', () => fig.replaceChildren(h('figcaption', {}, `${side}: not shown (not a proven PNG/JPEG/GIF/WebP under 8 MiB and 40 MP)`)));
      pics.append(fig);
    }
    li.append(pics);
  }
  return li;
}

function rule_(path, r) {
  state.ruling[path] = state.ruling[path] === r ? undefined : r;
  if (state.detail) renderChanges(state.detail.changes.filter((c) => !c.ignored));
}

// loadHome lists what the task changed in its home (~/.bashrc, ~/.gitconfig), files that run
// at every start first, each with Show (the person's version against the task's) and Apply;
// Undo takes the last apply back. As kule home does; the kernel reads and writes.
async function loadHome(id) {
  const hs = await api('GET', `/api/tasks/${id}/home`);
  if (id !== state.current) return;
  const box = $('r-home');
  box.hidden = !hs.length;
  if (!hs.length) { box.replaceChildren(); return; }
  const undoBtn = h('button', { class: 'ghost small-btn', id: 'home-undo', 'aria-label': 'Undo the last apply to your home' }, 'Undo last apply');
  undoBtn.addEventListener('click', async () => {
    try { const r = await api('POST', `/api/tasks/${id}/home/undo`); toast(`~/${r.undone} is as it was before the apply`); loadHome(id); } catch (x) { toast(x.message, true); }
  });
  box.replaceChildren(h('div', { class: 'hhead' }, h('strong', {}, 'Home changes'), ' ', h('span', { class: 'muted small' }, 'what the task\'s commands changed in their home; your home is untouched until you Apply'), h('span', { class: 'grow' }), undoBtn),
    h('ul', { class: 'changes inner' }, hs.map((c) => {
      const diffBox = h('div', { class: 'diff', hidden: true });
      const show = h('button', { class: 'ghost small-btn showlines', 'aria-expanded': 'false', 'aria-label': `Show what changes in ~/${c.path}` }, 'Show lines');
      show.addEventListener('click', () => showDiff({ path: c.path, diffURL: `/api/tasks/${id}/home/diff?path=${encodeURIComponent(c.path)}` }, diffBox, show));
      const apply = h('button', { class: 'small-btn', 'aria-label': `Apply ~/${c.path} to your home`, disabled: c.verdict === 'deny' }, 'Apply');
      apply.addEventListener('click', async () => {
        try { await api('POST', `/api/tasks/${id}/home/apply`, { path: c.path }); toast(`~/${c.path} applied to your home; Undo last apply takes it back`); } catch (x) { toast(x.message, true); }
      });
      return h('li', { 'data-home': c.path, class: c.verdict === 'ask' ? 'waits' : c.verdict === 'deny' ? 'held' : '' },
        h('span', { class: 'sym ' + c.kind, 'aria-label': c.kind }, symbols[c.kind] || '~'),
        h('span', { class: 'path' }, '~/' + c.path, c.runs_at_start ? h('span', { class: 'chip small runs', title: 'a shell or a tool runs it at every start' }, 'runs at every start') : null),
        h('span', { class: 'verdict ' + c.verdict, title: c.rule || 'policy verdict' }, c.verdict),
        h('span', { class: 'ruling' }, apply),
        c.reason ? h('span', { class: 'reason' }, c.reason) : null,
        h('div', { class: 'rowmore' }, show), diffBox);
    })));
}

// renderIgnored lists the changes the folder's .gitignore keeps out of a commit, folded, with
// "Also commit these": ticked, the next commit takes them in too, judged like the rest.
function renderIgnored(ig) {
  const box = $('r-ignored');
  box.hidden = !ig.length;
  if (!ig.length) { state.alsoIgnored = false; box.replaceChildren(); return; }
  const tick = h('input', { type: 'checkbox', id: 'also-ignored' });
  tick.checked = !!state.alsoIgnored;
  tick.addEventListener('change', () => { state.alsoIgnored = tick.checked; $('btn-commit').disabled = !!state.offline; });
  const open = box.querySelector('details') ? box.querySelector('details').open : false;
  const det = h('details', {}, h('summary', {}, `${ig.length} change${ig.length > 1 ? 's' : ''} that .gitignore keeps out of a commit`),
    h('ul', { class: 'changes inner ignored-list' }, ig.slice(0, 500).map((c) => h('li', { 'data-path': c.path, class: 'ign' },
      h('span', { class: 'sym ' + c.kind, 'aria-label': c.kind }, symbols[c.kind] || '~'), h('span', { class: 'path' }, c.path + (c.dir ? '/' : '')),
      h('span', { class: 'verdict ' + c.verdict }, c.verdict), c.reason ? h('span', { class: 'reason' }, c.reason) : null))),
    ig.length > 500 ? h('p', { class: 'muted small' }, `and ${ig.length - 500} more`) : null);
  det.open = open;
  box.replaceChildren(det, h('label', { class: 'also' }, tick, ' Also commit these (what the policy asks about still waits for you; what it refuses stays)'));
}

// renderMeets lists, under Review, the other tasks on the folder that change the same paths,
// and marks the task in the list.
function renderMeets(id, ms) {
  const was = JSON.stringify(state.meets[id] || []);
  state.meets[id] = ms;
  for (const m of ms) {
    const other = state.meets[m.task] || [];
    if (!other.some((x) => x.task === id)) { const t = cur(); state.meets[m.task] = other.concat([{ task: id, title: t ? taskTitle(t) : id, paths: m.paths }]); }
  }
  const box = $('r-meets');
  box.hidden = !ms.length;
  box.replaceChildren(...ms.map((m) => h('div', { class: 'meetbox', 'data-task': m.task },
    h('strong', {}, `Meets ${m.title}`), ' ', h('span', { class: 'muted small' }, `(${m.task}): both change`),
    h('ul', { class: 'meetpaths' }, m.paths.slice(0, 50).map((p) => h('li', { class: 'mono small' }, p)), m.paths.length > 50 ? h('li', { class: 'muted small' }, `and ${m.paths.length - 50} more`) : null),
    h('span', { class: 'muted small' }, 'The one committed second finds the folder changed under these paths and stops; commit one, then look again at the other.'))));
  if (JSON.stringify(ms) !== was) renderTasks();
}

// ---------- Review: changes grouped by folder, filtered, drawn a part at a time ----------
// A review of thousands of changes stays quick: rows are drawn per folder, only for folders
// that are open, at most rowsAtOnce at a time (more on request); small reviews open every
// folder. The filter matches paths, verdicts and rule reasons.
const rowsAtOnce = 200;
const openAll = 300; // up to this many changes every folder starts open
const review = { open: new Map(), shown: new Map(), filter: '' }; // folder -> open?, rows shown
const folderOf = (c) => { const p = c.path, i = p.lastIndexOf('/'); return i < 0 ? '' : p.slice(0, i); };
function renderChanges(cs) {
  const q = review.filter.toLowerCase().trim();
  const match = (c) => !q || q.split(/\s+/).every((w) => c.path.toLowerCase().includes(w) || c.verdict === w || (c.reason || '').toLowerCase().includes(w) || (c.from || '').toLowerCase().includes(w));
  const shown = cs.filter(match);
  $('r-filter-wrap').hidden = cs.length < 12;
  $('r-filter-count').textContent = q ? `${shown.length} of ${cs.length} shown` : '';
  const byFolder = new Map();
  for (const c of shown) { const f = folderOf(c); if (!byFolder.has(f)) byFolder.set(f, []); byFolder.get(f).push(c); }
  const folders = [...byFolder.keys()].sort();
  // One folder alone is not grouped: its rows are the list.
  if (folders.length <= 1 && shown.length <= rowsAtOnce) { $('changes').replaceChildren(...shown.map(changeRow)); return; }
  const many = shown.length > openAll && !q;
  $('changes').replaceChildren(...folders.map((f) => {
    const list = byFolder.get(f);
    const open = review.open.has(f) ? review.open.get(f) : !many || list.some((c) => c.verdict === 'ask');
    const asks = list.filter((c) => c.verdict === 'ask').length;
    const head = h('button', { class: 'fhead', 'aria-expanded': String(open), 'aria-label': `${f || 'Top level'}: ${list.length} change${list.length > 1 ? 's' : ''}${asks ? `, ${asks} waiting for you` : ''}. ${open ? 'Collapse' : 'Expand'}`,
      onclick: () => { review.open.set(f, !open); renderChanges(cs); } },
    h('span', { 'aria-hidden': 'true' }, open ? '▾ ' : '▸ '), h('span', { class: 'mono' }, (f || 'top level') + (f ? '/' : '')), ' ',
    h('span', { class: 'muted small' }, countWords(countOf(list)) + (asks ? ` · ${asks} waiting for you` : '')));
    const li = h('li', { class: 'fgroup', 'data-folder': f }, head);
    if (open) {
      const n = review.shown.get(f) || rowsAtOnce;
      const ul = h('ul', { class: 'changes inner' }, list.slice(0, n).map(changeRow));
      if (list.length > n) ul.append(h('li', { class: 'more' }, h('button', { class: 'ghost', onclick: () => { review.shown.set(f, n + rowsAtOnce * 5); renderChanges(cs); } }, `Show ${Math.min(list.length - n, rowsAtOnce * 5)} more of ${list.length - n}`)));
      li.append(ul);
    }
    return li;
  }));
}
function countOf(list) {
  const c = { added: 0, changed: 0, deleted: 0, moved: 0 };
  for (const x of list) c[{ add: 'added', delete: 'deleted', move: 'moved' }[x.kind] || 'changed']++;
  return c;
}

// showDiff draws a changed file's line diff under its row, read when first opened.
async function showDiff(c, box, btn) {
  if (!box.hidden) { box.hidden = true; btn.setAttribute('aria-expanded', 'false'); btn.textContent = 'Show lines'; return; }
  box.hidden = false;
  btn.setAttribute('aria-expanded', 'true');
  btn.textContent = 'Hide lines';
  if (box.dataset.loaded) return;
  box.dataset.loaded = '1';
  box.replaceChildren(h('div', { class: 'muted small' }, 'Reading…'));
  try {
    const d = await api('GET', c.diffURL || `/api/tasks/${state.current}/diff?path=${encodeURIComponent(c.path)}${c.from ? '&from=' + encodeURIComponent(c.from) : ''}`);
    if (d.note) { box.replaceChildren(h('div', { class: 'muted small' }, d.note)); return; }
    if (!d.hunks.length) { box.replaceChildren(h('div', { class: 'muted small' }, 'The lines are the same (what changed is its mode or type).')); return; }
    box.replaceChildren(h('div', { class: 'muted small' }, `${d.added} line${d.added === 1 ? '' : 's'} added, ${d.removed} removed`),
      ...d.hunks.map((hk) => h('table', { class: 'hunk', role: 'table', 'aria-label': `Lines from ${hk[0].old || hk[0].new}` },
        h('tbody', {}, hk.map((l) => h('tr', { class: l.op === '+' ? 'ins' : l.op === '-' ? 'del' : 'ctx' },
          h('td', { class: 'ln' }, l.old ? String(l.old) : ''), h('td', { class: 'ln' }, l.new ? String(l.new) : ''),
          h('td', { class: 'op', 'aria-label': l.op === '+' ? 'added' : l.op === '-' ? 'removed' : 'same' }, l.op.trim()),
          h('td', { class: 'code' }, l.text)))))));
  } catch (x) { box.replaceChildren(h('div', { class: 'error small' }, x.message)); delete box.dataset.loaded; }
}

// showFolder lists an added folder's entries under its row, as Files shows them.
async function showFolder(c, box, btn) {
  if (!box.hidden) { box.hidden = true; btn.setAttribute('aria-expanded', 'false'); btn.textContent = `Show its ${c.files || ''} files`.replace('  ', ' '); return; }
  box.hidden = false;
  btn.setAttribute('aria-expanded', 'true');
  btn.textContent = 'Hide its files';
  try { box.replaceChildren(h('ul', { class: 'tree', role: 'tree', 'aria-label': `Files in ${c.path}` }, ...await fileRows(c.path))); } catch (x) { box.replaceChildren(h('div', { class: 'error small' }, x.message)); }
}

async function commit(approveAll) {
  const body = { approve_all: approveAll, approve: [], exclude: [], remember: [], include_ignored: !!state.alsoIgnored };
  for (const [p, r] of Object.entries(state.ruling)) {
    if (r === 'approve') body.approve.push(p);
    if (r === 'remember') body.remember.push(p);
    if (r === 'hold') body.exclude.push(p);
  }
  const res = await api('POST', `/api/tasks/${state.current}/commit`, body);
  state.ruling = {};
  state.alsoIgnored = false;
  if (!res.applied.length) toast('Nothing to commit' + (res.left.length ? ` · ${res.left.length} stay in the copy` : ''));
  else toast(`Committed ${res.summary} · checkpoint ${res.checkpoint}` + (res.left.length ? ` · ${res.left.length} stay in the copy` : '') + (res.remembered && res.remembered.length ? ` · remembered: ${res.remembered.join('; ')}` : ''));
  await Promise.all([loadTasks(), loadReview()]);
}

async function rollback() {
  const ok = await ask('Roll back', 'The copy matches the folder again; uncommitted changes are thrown away. Type "roll back" to go on.', '', (s) => (s.trim() === 'roll back' ? '' : 'Type: roll back'));
  if (ok === null) return;
  const res = await api('POST', `/api/tasks/${state.current}/rollback`);
  toast(`Rolled back ${res.changes} changes`);
  await loadTasks();
  refreshView();
}

// undo takes back the task's last commit, once the person has seen what goes back into the
// folder (the history's record of that commit), as Roll back asks first.
async function undo() {
  const id = state.current;
  const hist = await api('GET', `/api/tasks/${id}/history`);
  const undone = new Set(hist.entries.filter((e) => e.kind === 'undo').map((e) => e.data.checkpoint));
  const last = [...hist.entries].reverse().find((e) => e.kind === 'commit' && !undone.has(e.data.checkpoint));
  if (!last) { toast('No commit of this task is left to undo'); return; }
  const d = last.data || {};
  const ok = await confirmDialog(`Undo checkpoint ${d.checkpoint}?`,
    `The folder gets back what it held before the commit of ${fmtTime(last.time)}; these paths are put back as they were (the copy keeps its changes):`,
    d.changes && d.changes.length ? d.changes.map(lineWords) : [countWords(d.counts || {})], 'Undo the commit');
  if (!ok || id !== state.current) return;
  const res = await api('POST', `/api/tasks/${id}/undo`);
  toast(`Undid checkpoint ${res.checkpoint} · ${res.paths} paths are as before`);
  await loadTasks();
  refreshView();
}

const fmtTime = (s) => { const d = new Date(s); return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + (d.toDateString() === new Date().toDateString() ? '' : ' ' + d.toLocaleDateString()); };

async function loadTimeline() {
  const id = state.current;
  // The task's own status comes with the rest: the list's copy of it may
  // not have heard of the step that just ended.
  const [hist, steps, net, sb, detail] = await Promise.all([api('GET', `/api/tasks/${id}/history`), api('GET', `/api/tasks/${id}/steps`), api('GET', `/api/tasks/${id}/network`), api('GET', `/api/tasks/${id}/sandbox`), api('GET', `/api/tasks/${id}`)]);
  if (id !== state.current) return;
  const items = [];
  const undone = new Set(hist.entries.filter((e) => e.kind === 'undo').map((e) => e.data.checkpoint));
  const lastCommit = [...hist.entries].reverse().find((e) => e.kind === 'commit' && !undone.has(e.data.checkpoint));
  for (const e of hist.entries) {
    const d = e.data || {};
    let what = e.kind, detail = '';
    if (e.kind === 'commit') {
      const c = d.counts || {};
      what = `Commit · checkpoint ${d.checkpoint}` + (undone.has(d.checkpoint) ? ' (undone)' : '');
      detail = (d.changes || []).map(lineWords).join('\n') || countWords(c);
      if (d.approval && d.approval.paths) detail += `\nApproved by ${d.approval.by}: ${d.approval.paths.join(', ')}`;
    } else if (e.kind === 'undo') { what = `Undo of checkpoint ${d.checkpoint}`; }
    else if (e.kind === 'approval') { what = 'Approved'; detail = (d.paths || []).join('\n'); }
    const canUndo = lastCommit && e.seq === lastCommit.seq;
    items.push({ time: e.time, kind: e.kind, what, detail, action: canUndo ? h('button', { class: 'ghost', 'aria-label': `Undo checkpoint ${d.checkpoint}`, onclick: () => undo().catch((x) => toast(x.message, true)) }, 'Undo') : null });
  }
  // Steps after the last commit, while the copy holds changes, are what a
  // commit would take in: marked, so the Timeline says what is not in the
  // folder yet.
  const lastAt = lastCommit ? new Date(lastCommit.time) : new Date(0);
  const open = ((detail && detail.task) || cur() || {}).changes > 0;
  // Only a step that changed something is marked: a command's summary is of the whole copy
  // after it, so it changed something when that differs from the summary before it.
  const mark = (time, changed) => (open && changed && new Date(time) > lastAt ? h('span', { class: 'chip small uncommitted', title: 'after the last commit: its changes are in the copy, not yet in the folder' }, 'not committed') : null);
  let before = 'no changes';
  for (const s of [...steps].sort((a, b) => new Date(a.started || a.time) - new Date(b.started || b.time))) {
    if (s.n === undefined) {
      const after = changesText(s.summary);
      const changed = new Date(s.time) > lastAt && s.summary !== undefined && after !== before;
      if (new Date(s.time) > lastAt) before = after;
      items.push({ time: s.time, kind: 'exec', badge: mark(s.time, changed), what: `Ran ${s.command}`, source: s.source, detail: [`exit ${s.code}`, s.error, s.summary ? 'the copy then: ' + after : '', s.source && s.source !== 'app' ? `started from ${s.source === 'cli' ? 'a terminal' : s.source}` : ''].filter(Boolean).join(' · ') });
    } else items.push({ time: s.started || s.time, kind: 'exec', badge: mark(s.started || s.time, (s.effects || []).length > 0), what: `Agent: ${s.title || s.kind || 'tool call'}`, detail: [s.status, s.command, (s.effects || []).map(effLine).join(', ')].filter(Boolean).join(' · ') });
  }
  for (const n of net) {
    // A connection the policy let through may still have failed (its DNS lookup, say): it
    // says so, never "Connected".
    const failed = n.verdict !== 'refused' && !!n.error;
    const what = n.verdict === 'refused' ? 'Refused' : failed ? 'Could not connect to' : 'Connected to';
    items.push({ time: n.time, kind: n.verdict === 'refused' ? 'refusal' : failed ? 'refusal failed' : 'connection', what: `${what} ${n.host}:${n.port}`, detail: [n.rule, n.reason, failed ? connError(n.error) : n.error, n.requests ? n.requests + ' requests' : ''].filter(Boolean).join(' · ') });
  }
  for (const r of sb.records) items.push({ time: r.time, kind: 'sandbox' + (r.kind === 'weaker' ? ' weaker' : ''), what: sandboxWhat(r), detail: [r.run ? (r.from === 'profile' ? '' : 'command: ') + r.run : '', r.why, r.do].filter(Boolean).join('\n') });
  for (const q of state.questions.filter((q) => q.task === id)) {
    items.push({ time: q.asked, kind: 'question', what: `${q.title}`, detail: `${q.kind} · ${q.state}${q.by ? ' by ' + q.by : ''}` });
  }
  items.sort((a, b) => new Date(b.time) - new Date(a.time));
  const ol = $('timeline');
  ol.replaceChildren(...items.map((it) => h('li', {},
    h('span', { class: 'when' }, fmtTime(it.time)), h('span', { class: 'mark ' + it.kind, 'aria-hidden': 'true' }),
    h('div', {}, h('div', { class: 'what' }, it.what, it.badge ? ' ' : null, it.badge || null), it.detail ? h('div', { class: 'detail' }, it.detail) : null),
    it.action || h('span'))));
  if (!items.length) ol.append(h('li', { class: 'muted' }, 'Nothing yet: runs, commits, undos, connections, sandbox refusals and questions show here.'));
  if (!sb.records.some((r) => r.kind !== 'weaker')) ol.append(h('li', { class: 'muted small', id: 'timeline-accesses' }, 'No sandbox refusals. ' + sb.accesses));
  if (sb.damaged && sb.damaged.length) ol.append(h('li', { class: 'muted small' }, `${sb.damaged.length} line(s) of sandbox.jsonl could not be read: ${sb.damaged[0]}`));
}

// connError reads a failed connection's error as a person would.
function connError(e) {
  if (/no such host|lookup|server misbehaving|Temporary failure in name resolution/i.test(e)) return `its name could not be looked up (DNS): ${e}`;
  if (/refused/i.test(e)) return `the host refused it: ${e}`;
  if (/timeout|timed out/i.test(e)) return `no answer in time: ${e}`;
  return e;
}

// sandboxWhat is a sandbox record's title on the Timeline.
function sandboxWhat(r) {
  switch (r.kind) {
    case 'not-run': return `Did not run: ${r.what}`;
    case 'opening': return `Sandbox refused ${r.what}`;
    case 'device': return `Sandbox refused the device ${r.what}`;
    case 'weaker': return `Ran with weaker isolation: ${r.what}`;
  }
  return `Sandbox: ${r.what}`;
}

async function loadFiles() {
  const root = $('files');
  root.replaceChildren(...await fileRows(''));
}

async function fileRows(dir) {
  const es = await api('GET', `/api/tasks/${state.current}/files?dir=${encodeURIComponent(dir)}`);
  return es.map((e) => {
    const label = h('span', { class: e.type === 'gone' ? 'gone' : '' }, e.name + (e.type === 'dir' ? '/' : ''));
    const row = h('div', { class: 'row' },
      h('span', { class: 'chg ' + (e.change || ''), 'aria-hidden': 'true' }),
      e.type === 'dir' ? h('span', { 'aria-hidden': 'true' }, '▸') : h('span', { 'aria-hidden': 'true' }, ' '),
      label, e.type === 'link' ? h('span', { class: 'tgt' }, ` → ${e.target} (link, not followed)`) : null,
      e.changed ? h('span', { class: 'muted small' }, ` ${e.change === 'inside' ? 'changes inside' : e.change}`) : null);
    const li = h('li', { role: 'treeitem', 'aria-label': `${e.name}${e.changed ? ', ' + (e.change === 'inside' ? 'changes inside' : e.change) : ''}` }, row);
    if (e.type === 'dir') {
      li.setAttribute('aria-expanded', 'false');
      row.setAttribute('aria-expanded', 'false');
      row.tabIndex = 0;
      const toggle = async () => {
        const open = li.getAttribute('aria-expanded') === 'true';
        if (open) { li.querySelector('ul')?.remove(); li.setAttribute('aria-expanded', 'false'); row.firstChild.nextSibling.textContent = '▸'; return; }
        const ul = h('ul', { role: 'group' }, ...await fileRows(e.path));
        li.append(ul); li.setAttribute('aria-expanded', 'true'); row.firstChild.nextSibling.textContent = '▾';
      };
      row.addEventListener('click', () => toggle().catch((x) => toast(x.message, true)));
      row.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') toggle(); });
    } else if (e.type === 'file') {
      row.tabIndex = 0; row.classList.add('file'); // picking a file opens it in Preview
      row.addEventListener('click', () => preview.open(e.path, setView));
      row.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') preview.open(e.path, setView); });
    }
    return li;
  });
}

// ---------- Live: what a run is doing now ----------
// liveOf is a task's Live feed; since is when this page began to hear its
// events (what happened before comes from steps.jsonl, once).
function liveOf(id) { return (state.live[id] ||= { items: [], seeded: false, run: null, since: Date.now() }); }
let liveTimer = null;
function liveSoon(id) {
  if (id !== state.current) return;
  updateLiveDot();
  if (!layout.isShown('live') || liveTimer) return;
  liveTimer = setTimeout(() => { liveTimer = null; renderLive(); }, 40);
}
function pushLive(id, item) {
  const l = liveOf(id);
  item.at = Date.now();
  l.items.push(item);
  if (l.items.length > 400) l.items.splice(0, l.items.length - 400);
  liveSoon(id);
  return item;
}
function updateLiveDot() {
  const t = cur();
  $('live-dot').className = 'live-dot' + (t && t.running ? ' on' : '');
}

async function loadLive() {
  const id = state.current;
  const l = liveOf(id);
  if (!l.seeded) {
    l.seeded = true;
    try {
      const steps = await api('GET', `/api/tasks/${id}/steps`);
      const old = [];
      for (const s of steps.filter((x) => new Date(x.started || x.time) < l.since).slice(-15)) {
        if (s.n === undefined) old.push({ kind: 'run', label: s.command, state: 'ended', code: s.code, summary: s.summary, error: s.error, limit: s.limit, out: s.output || '', time: s.time, past: true });
        else old.push({ kind: 'tool', n: s.n, title: s.title, toolkind: s.kind, status: s.status, command: s.command, paths: s.paths, effects: (s.effects || []).map(effLine), past: true });
      }
      l.items = old.concat(l.items);
    } catch (x) { toast(x.message, true); }
  }
  if (id === state.current) renderLive();
}

const effLine = (e) => (typeof e === 'string' ? e : `${symbols[e.kind] || '~'} ${e.from ? e.from + ' → ' : ''}${e.path}`);
const toolIcon = { read: '◔', edit: '✎', delete: '−', move: '»', search: '⌕', execute: '›', think: '…', fetch: '↓' };

function liveItem(it) {
  switch (it.kind) {
    case 'run': {
      const ended = it.state === 'ended';
      const chip = !ended ? h('span', { class: 'chip run' }, 'running…')
        : h('span', { class: 'chip' + (it.code ? ' bad' : ' ok') }, it.agent ? (it.error ? 'failed' : (it.stop || 'ended').replace(/_/g, ' ')) : it.code === undefined ? 'ended' : `exit ${it.code}`);
      return h('li', { class: 'run' + (it.past ? ' past' : ''), 'data-state': it.state },
        h('div', { class: 'rhead' },
          h('span', { class: 'who' + (it.agent ? ' agent' : '') }, it.agent ? `You → ${it.agent}` : '›'),
          h('span', { class: 'label' + (it.agent ? '' : ' mono') }, it.label), it.cost ? h('span', { class: 'muted small', title: 'what the turn cost, as the agent reports it' }, it.cost) : null, chip),
        it.meters ? meters(it.meters, it.limit) : null,
        it.out && !it.agent ? h('pre', { class: 'out', tabindex: '0', 'aria-label': `Output of ${it.label}` }, it.out) : null,
        it.out && it.agent ? h('div', { class: 'rnote muted small' }, it.out.trim()) : null,
        ended && it.limit ? h('div', { class: 'limitstop', role: 'alert', 'data-limit': it.limit },
          h('strong', {}, `Stopped by ${limitName[it.limit] || 'a limit'}`), it.error ? h('span', {}, ' · ' + it.error) : null) : null,
        ended && !it.agent && (it.summary || (it.error && !it.limit)) ? h('div', { class: 'rfoot' + (it.error && !it.limit ? ' bad' : '') }, [it.limit ? '' : it.error, it.summary ? 'the copy now: ' + changesText(it.summary) : ''].filter(Boolean).join(' · ')) : null);
    }
    case 'text': return h('li', { class: 'say' }, h('span', { class: 'who agent', 'aria-hidden': 'true' }, '◐'), h('div', { class: 'words' }, it.text));
    case 'thought': return h('li', { class: 'say thought' }, h('span', { class: 'who', 'aria-hidden': 'true' }, '…'), h('div', { class: 'words' }, it.text));
    case 'note': return h('li', { class: 'note muted small' }, it.text);
    case 'budget': return h('li', { class: 'budget ' + (it.percent >= 100 ? 'over' : 'warn'), role: 'status' },
      h('span', { class: 'ticon', 'aria-hidden': 'true' }, it.percent >= 100 ? '■' : '▲'), h('div', {}, it.text));
    case 'tool': return h('li', { class: 'tool' + (it.past ? ' past' : ''), 'data-status': it.status || '' },
      h('span', { class: 'ticon', 'aria-hidden': 'true' }, toolIcon[it.toolkind] || '◆'),
      h('div', {}, h('div', { class: 'ttl' }, it.title || it.toolkind || 'tool call', h('span', { class: 'chip small ' + (it.status || '') }, (it.status || 'pending').replace(/_/g, ' '))),
        it.command ? h('div', { class: 'mono small' }, '$ ' + it.command) : null,
        it.effects && it.effects.length ? h('ul', { class: 'effects', 'aria-label': 'What it changed' }, it.effects.map((e) => h('li', { class: 'mono small' }, e))) : null));
    case 'conn': {
      const word = it.verdict === 'pass' ? 'connected' : it.verdict === 'ask' ? (it.allowed ? 'approved by you' : 'refused: not approved') : 'refused by the policy';
      return h('li', { class: 'netconn ' + (it.allowed ? 'ok' : 'bad') }, h('span', { class: 'ticon', 'aria-hidden': 'true' }, '↗'),
        h('div', {}, h('span', { class: 'mono' }, `${it.host}:${it.port}`), ' ', h('span', { class: 'muted small' }, `${word}${it.rule ? ' · ' + it.rule : ''}`)));
    }
    case 'end': return h('li', { class: 'end muted small' }, it.text);
    case 'plan': return h('li', { class: 'plan' }, h('div', { class: 'ttl small muted' }, 'Plan'),
      h('ul', { 'aria-label': 'The agent\'s plan' }, (it.entries || []).map((e) => h('li', { class: 'pe ' + e.status },
        h('span', { class: 'pm', 'aria-label': e.status.replace(/_/g, ' ') }, e.status === 'completed' ? '✓' : e.status === 'in_progress' ? '▸' : '○'), ' ', e.text))));
  }
  return h('li', {}, JSON.stringify(it));
}

// What a running run takes against its limits ("limits" events), as
// compact meters on its Live item; the limit that stopped it is marked.
const limitName = { memory: 'its memory limit', disk: 'its disk limit', time: 'its time limit', idle: 'its idle limit', 'task-time': "the task's time limit", budget: 'the budget', limit: 'a limit' };
const secs = (s) => (s >= 3600 ? `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}` : s >= 60 ? `${Math.floor(s / 60)}m${String(Math.floor(s) % 60).padStart(2, '0')}` : `${Math.floor(s)}s`);
const bytes = (n) => (n >= 1 << 30 ? (n / (1 << 30)).toFixed(1) + 'G' : n >= 1 << 20 ? (n / (1 << 20)).toFixed(0) + 'M' : n >= 1 << 10 ? (n / (1 << 10)).toFixed(0) + 'K' : n + 'B');
function meters(m, stoppedBy) {
  const l = m.limits || {}, u = m.usage || {}, out = [];
  const add = (key, label, used, cap, fmt) => {
    const b = bar(label, cap > 0 ? used / cap : 0, `${fmt(used)} of ${fmt(cap)}`);
    b.dataset.limit = key;
    if (stoppedBy === key) { b.classList.add('stopped'); b.dataset.level = 'over'; }
    out.push(b);
  };
  if (l.cpu) add('cpu', 'CPU', u.cpu || 0, l.cpu, (v) => v.toFixed(1) + ' cores');
  if (l.memory) add('memory', 'Memory', u.memory || 0, l.memory, bytes);
  if (l.disk) add('disk', 'Disk', Math.max(u.disk || 0, 0), l.disk, bytes);
  if (l.time_seconds) add('time', 'Time', u.wall_seconds || 0, l.time_seconds, secs);
  if (l.idle_seconds) add('idle', 'Idle', u.idle_seconds || 0, l.idle_seconds, secs);
  if (l.task_time_seconds) add('task-time', 'Task time', u.task_time_seconds || 0, l.task_time_seconds, secs);
  // Without a limit, what it takes is worth a look only while it runs.
  if (!out.length && (m.final || !u.processes)) return null;
  const plain = [];
  if (!l.cpu) plain.push(`${(u.cpu || 0).toFixed(1)} cores`);
  if (!l.time_seconds) plain.push(secs(u.wall_seconds || 0));
  if (u.processes) plain.push(`${u.processes} process${u.processes > 1 ? 'es' : ''}`);
  if (u.throttled_seconds >= 1) plain.push(`held back ${secs(u.throttled_seconds)}`);
  return h('div', { class: 'meters' + (m.final ? ' final' : ''), role: 'group', 'aria-label': 'What the run takes against its limits' },
    out, plain.length ? h('span', { class: 'small muted' }, plain.join(' · ')) : null);
}

// touch marks an item changed, so the next render draws it again; the
// others keep their nodes (and a focused button or a selection in them).
const touch = (it) => { it.v = (it.v || 0) + 1; return it; };
const qNodes = new Map(); // question id + state -> its card on Live
function renderLive() {
  const id = state.current;
  if (!id) return;
  const v = $('v-live');
  const stick = v.scrollHeight - v.scrollTop - v.clientHeight < 60;
  const fresh = [];
  const els = liveOf(id).items.map((it) => {
    if (!it._el || it._rv !== it.v) { it._el = liveItem(it); it._rv = it.v; fresh.push(it._el); }
    return it._el;
  });
  for (const q of waiting().filter((q) => q.task === id)) {
    const k = q.id + q.state;
    if (!qNodes.has(k)) qNodes.set(k, questionCard(q, false));
    els.push(qNodes.get(k));
  }
  const ol = $('live');
  els.forEach((el, i) => { if (ol.children[i] !== el) ol.insertBefore(el, ol.children[i] || null); });
  while (ol.children.length > els.length) ol.lastChild.remove();
  for (const el of fresh) { const o = el.querySelector('pre.out'); if (o) o.scrollTop = o.scrollHeight; }
  $('no-live').hidden = els.length > 0;
  if (stick) v.scrollTop = v.scrollHeight;
  updateLiveDot();
}

function onAgentEvent(ev) {
  const l = liveOf(ev.task), d = ev.data || {};
  const last = l.items[l.items.length - 1];
  if (d.type === 'text' || d.type === 'thought') {
    if (last && last.kind === d.type && !last.past) touch(last).text += d.text; else pushLive(ev.task, { kind: d.type, text: d.text });
    liveSoon(ev.task);
  } else if (d.step) {
    const s = d.step;
    let it = l.items.find((x) => x.kind === 'tool' && x.n === s.n && !x.past);
    if (!it) it = pushLive(ev.task, { kind: 'tool', n: s.n });
    Object.assign(touch(it), { title: s.title || it.title, toolkind: s.kind || it.toolkind, status: s.status || it.status, command: s.command || it.command, paths: s.paths || it.paths });
    if (d.type === 'step_end') { it.effects = s.effects || []; if (s.effects_error) it.effects.push('effects not known: ' + s.effects_error); }
    liveSoon(ev.task);
  } else if (d.type === 'notice') pushLive(ev.task, { kind: 'note', text: d.text });
  else if (d.type === 'plan') {
    // The agent's plan: one list, redrawn as it changes.
    const entries = ((d.raw && d.raw.entries) || []).map((e) => ({ text: e.content || '', status: e.status || 'pending' }));
    const it = l.items.find((x) => x.kind === 'plan' && !x.past && x.run === l.run) || pushLive(ev.task, { kind: 'plan', run: l.run });
    touch(it).entries = entries;
    liveSoon(ev.task);
  } else if (d.type === 'usage' && d.usage && l.run) {
    const c = d.usage.cost;
    if (c && typeof c.amount === 'number') touch(l.run).cost = `${c.amount.toFixed(2)} ${c.currency || ''}`.trim();
  }
}

function onRunEvent(ev) {
  const l = liveOf(ev.task), d = ev.data || {};
  if (d.state === 'start') {
    // A run seen from its start is drawn from its events: steps.jsonl must
    // not add it again when Live is first opened.
    if (!l.seeded && ev.time) l.since = Math.min(l.since, new Date(ev.time).getTime());
    l.run = pushLive(ev.task, { kind: 'run', agent: d.agent, label: d.agent ? d.prompt : d.command, state: 'running', out: '', time: ev.time });
  } else if (d.state === 'end') {
    if (!l.run && !l.seeded) return; // its start came before this page: steps.jsonl has it
    const it = l.run || pushLive(ev.task, { kind: 'run', agent: d.agent, label: d.command || d.agent, out: '' });
    Object.assign(touch(it), { state: 'ended', code: d.code, summary: d.summary, error: d.error, stop: d.stop_reason, limit: d.limit || it.limit });
    if (d.agent) pushLive(ev.task, { kind: 'end', text: `${d.agent} · turn ${d.limit ? 'stopped by ' + (limitName[d.limit] || 'a limit') : d.error ? 'failed' : 'ended'}${d.stop_reason ? ' (' + d.stop_reason.replace(/_/g, ' ') + ')' : ''}${d.error ? ' · ' + d.error : ''}${d.summary ? ' · the copy now: ' + changesText(d.summary) : ''}` });
    l.run = null;
    liveSoon(ev.task);
  }
}

// ---------- command line: a shell command or an agent prompt ----------
const cmd = $('cmd');
function grow() { cmd.style.height = 'auto'; cmd.style.height = Math.min(cmd.scrollHeight + 2, 200) + 'px'; }
cmd.addEventListener('input', grow);
let shiftHeld = false;
cmd.addEventListener('keydown', (e) => {
  shiftHeld = e.shiftKey;
  if (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); $('cmdform').requestSubmit(); }
});
// Only Shift+Enter makes a new line, however the key reaches the page.
cmd.addEventListener('beforeinput', (e) => {
  if ((e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph') && !shiftHeld) e.preventDefault();
});
function renderAgents() {
  const sel = $('agent');
  const keep = localStorage.getItem('kule.agent') || '';
  sel.replaceChildren(h('option', { value: '' }, 'Shell'), ...state.agents.map((a) => h('option', { value: a.name, disabled: !a.can_start }, a.can_start ? a.name : `${a.name} (cannot start yet)`)));
  sel.value = state.agents.some((a) => a.name === keep && a.can_start) ? keep : '';
  agentChosen();
}
function agentChosen() {
  const a = $('agent').value;
  localStorage.setItem('kule.agent', a);
  cmd.placeholder = a ? `Ask ${a} — Enter sends, Shift+Enter adds a line` : "Run a command in the copy — Enter runs, Shift+Enter adds a line";
  cmd.setAttribute('aria-label', a ? `Prompt for ${a}` : "Command to run in the task's copy");
  $('btn-run').textContent = a ? 'Send' : 'Run';
  $('btn-run').setAttribute('aria-label', a ? `Send the prompt to ${a}` : 'Run the command');
}
$('agent').addEventListener('change', agentChosen);
// What memory recalls for the prompt being typed to an agent (needs.js).
const cmdRecall = needs.attachRecall({ input: cmd, agent: () => $('agent').value, task: () => state.current, before: $('cmdform') });
$('agent').addEventListener('change', () => cmdRecall.ask());
async function loadAgents() {
  try { state.agents = await api('GET', '/api/agents'); } catch { state.agents = []; }
  renderAgents();
}
$('cmdform').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = cmd.value.trim();
  if (!text || !state.current) return;
  const id = state.current, agent = $('agent').value;
  cmd.value = ''; grow(); cmdRecall.clear();
  if (!layout.isShown('live')) setView('live');
  try {
    if (agent) await api('POST', `/api/tasks/${id}/agent`, { agent, prompt: text });
    else await api('POST', `/api/tasks/${id}/exec`, { command: text });
  } catch (x) {
    pushLive(id, { kind: 'note', text: x.message });
    toast(x.message, true);
  }
  await loadTasks();
  refreshView();
});

// ---------- questions ----------
// A list fetched while a question event came in may predate it (a
// question asked just after one was answered): fetch again until no event
// came in meanwhile, so a stale list never hides a waiting question.
async function loadQuestions() {
  for (;;) {
    const seen = state.questionEvents;
    const qs = await api('GET', '/api/questions');
    if (seen === state.questionEvents) { state.questions = qs; break; }
  }
  renderQuestions();
}
const waiting = () => state.questions.filter((q) => q.state === 'waiting');
function questionCard(q, withTask) {
  const t = state.tasks.find((t) => t.id === q.task);
  const left = h('span', { class: 'left', 'data-deadline': q.deadline }, remaining(q.deadline));
  const where = withTask ? `${t ? taskTitle(t) : q.task} · ` : '';
  return h('li', { class: 'qcard', 'data-question': q.id, 'aria-label': `Question: ${q.title}` },
    h('div', { class: 'qt' }, q.title),
    q.detail ? h('div', { class: 'qd' }, q.detail) : null,
    h('div', { class: 'qm' }, h('span', {}, `${where}${q.kind}`), left),
    h('div', { class: 'qa' },
      h('button', { class: 'primary', 'aria-label': `Approve: ${q.title}`, onclick: () => answer(q.id, true, false).catch((x) => toast(x.message, true)) }, 'Approve'),
      h('button', { 'aria-label': `Deny: ${q.title}`, onclick: () => answer(q.id, false, false).catch((x) => toast(x.message, true)) }, 'Deny'),
      q.subject ? h('button', { class: 'ghost', 'aria-label': `Approve and remember: ${q.title}`, title: q.kind === 'connection' ? `A rule for this folder lets ${q.subject} pass from now on (kule rules lists it)` : 'Approved like this until the daemon stops', onclick: () => answer(q.id, true, true).catch((x) => toast(x.message, true)) }, 'Approve and remember') : null));
}
// Agent turns Kule was stopped in the middle of (a restart, a reboot, a
// kill): they wait under Needs you with a Resume action; nothing resumes on
// its own, since a turn spends money and asks questions.
async function loadInterrupted() {
  state.interrupted = await api('GET', '/api/interrupted');
  needs.load().catch(() => {}); // proposals, demotions, spent leases: they redraw when read
  renderQuestions();
  renderTasks();
}
// A `kule run` killed while the app is open says nothing: look again now
// and then (the daemon marks such a run when it is asked).
setInterval(() => { if (!state.offline && !document.hidden) loadInterrupted().catch(() => {}); }, 30000);
function interruptedCard(r) {
  const t = state.tasks.find((t) => t.id === r.task);
  const steps = (r.steps || []).length, waitingQs = (r.waiting || []).length;
  const detail = [`asked: ${r.prompt}`, steps ? `${steps} steps kept` : '', waitingQs ? `${waitingQs} questions never answered` : ''].filter(Boolean).join(' · ');
  return h('li', { class: 'qcard interrupted', 'data-interrupted': r.run, 'aria-label': `Interrupted run of ${r.agent}` },
    h('div', { class: 'qt' }, `${r.agent}'s turn was interrupted before it ended`),
    h('div', { class: 'qd' }, detail),
    needs.pendingList(r),
    h('div', { class: 'qm' }, h('span', {}, `${t ? taskTitle(t) : r.task} · interrupted${r.untrusted ? ' · from chat' : ''}`), h('span', { class: 'left' }, new Date(r.started).toLocaleString())),
    h('div', { class: 'qa' },
      h('button', { class: 'primary', 'aria-label': `Resume ${r.agent} on ${t ? taskTitle(t) : r.task}`, title: 'The same agent continues its session where it can, told what Kule kept of where it was', onclick: () => resumeRun(r).catch((x) => toast(x.message, true)) }, 'Resume')));
}
async function resumeRun(r) {
  state.interrupted = state.interrupted.filter((x) => x.run !== r.run);
  renderQuestions();
  select(r.task);
  toast(`Resuming ${r.agent}…`);
  if (needs.pendingText(r)) pushLive(r.task, { kind: 'note', text: needs.pendingText(r) });
  try {
    const turn = await api('POST', `/api/tasks/${r.task}/resume`, { run: r.run });
    toast(turn.error ? `The resumed turn failed: ${turn.error}` : `The resumed turn ended: ${(turn.stop_reason || 'ended').replace(/_/g, ' ')}`, !!turn.error);
  } finally {
    await loadInterrupted();
  }
}
function renderQuestions() {
  const ws = waiting();
  const ir = state.interrupted || [];
  const n = ws.length + ir.length + needs.count();
  $('needs').hidden = n === 0;
  $('needs-count').textContent = n ? String(n) : '';
  document.title = n ? `(${n}) Kule — needs you` : 'Kule';
  $('needs-list').replaceChildren(...ir.map(interruptedCard), ...needs.cards(), ...ws.map((q) => questionCard(q, true)));
  if (layout.isShown('live') && state.current) liveSoon(state.current);
}
function remaining(deadline) {
  const s = Math.max(0, Math.round((new Date(deadline) - Date.now()) / 1000));
  const m = Math.floor(s / 60);
  return s <= 0 ? 'refused now' : m >= 60 ? `refused in ${Math.floor(m / 60)}h ${m % 60}m` : m ? `refused in ${m}m` : `refused in ${s}s`;
}
setInterval(() => { for (const el of document.querySelectorAll('[data-deadline]')) el.textContent = remaining(el.dataset.deadline); }, 1000);

async function answer(id, approve, remember) {
  const q = await api('POST', `/api/questions/${id}/answer`, { approve, remember });
  toast(`${q.state === 'approved' ? 'Approved' : 'Denied'}: ${q.title}${q.remember ? ' (remembered)' : ''}`);
  await loadQuestions();
}
function answerFirst(approve, remember = false) {
  const ws = waiting();
  if (!ws.length) { toast('No question is waiting'); return; }
  const mine = ws.find((q) => q.task === state.current) || ws[0];
  return answer(mine.id, approve, remember);
}

// ---------- groups ----------
const ownTemplate = `// The rules of this group's tasks, in Cedar; they replace the built-in
// policy. kule policy --schema lists what a rule can read.
@id("group-changes-pass")
permit (principal, action, resource);

@id("group-manifests") @verdict("ask") @reason("changes what gets installed or built")
forbid (principal, action, resource is Kule::Path)
when { resource.tags.contains("manifest") || resource.tags.contains("lockfile") };

@id("group-hosts") @verdict("ask") @reason("a connection to a host")
forbid (principal, action == Kule::Action::"net.connect", resource);
`;
let editing = null; // the group the dialog edits, null for a new one
function openGroup(g) {
  editing = g;
  $('group-h').textContent = g ? `Group ${g.name}` : 'New group';
  $('group-name').value = g ? g.name : '';
  $('group-error').textContent = '';
  $('group-delete').hidden = !g;
  let colour = g ? g.colour || '' : 'blue';
  const paint = () => $('group-colours').replaceChildren(...colours.map((c) => h('button', {
    type: 'button', class: c ? 'c-' + c : '', role: 'radio', 'aria-checked': String(colour === c),
    'aria-label': c ? `Colour ${c}` : 'No colour', title: c || 'none', onclick: () => { colour = c; paint(); },
  })));
  paint();
  const pol = g ? g.policy || '' : '';
  for (const r of document.querySelectorAll('input[name=group-policy]')) r.checked = r.value === pol;
  $('group-own').value = (g && g.own_policy) || ownTemplate;
  showOwn();
  $('form-group').colour = () => colour;
  $('dlg-group').showModal();
  $('group-name').focus();
}
function showOwn() {
  const own = document.querySelector('input[name=group-policy]:checked')?.value === 'own';
  $('group-own').hidden = !own;
  $('group-own-label').hidden = !own;
}
for (const r of document.querySelectorAll('input[name=group-policy]')) r.addEventListener('change', showOwn);
$('form-group').addEventListener('submit', async (e) => {
  if (e.submitter && e.submitter.value === 'cancel') return;
  e.preventDefault();
  const policy = document.querySelector('input[name=group-policy]:checked')?.value || '';
  const body = { name: $('group-name').value, colour: $('form-group').colour(), policy };
  if (policy === 'own') { body.own_policy = $('group-own').value; delete body.policy; }
  try {
    if (editing) await api('PATCH', `/api/groups/${editing.id}`, body);
    else await api('POST', '/api/groups', body);
    $('dlg-group').close();
    toast(`Group ${body.name} saved`);
    await loadTasks();
    refreshView();
  } catch (x) { $('group-error').textContent = x.message; }
});
$('group-delete').addEventListener('click', async () => {
  const g = editing;
  $('dlg-group').close();
  const ok = await confirmDialog(`Delete group ${g.name}`, `Its ${g.tasks} tasks stay, in no group (the default policy judges them again).`, []);
  if (!ok) return;
  await api('DELETE', `/api/groups/${g.id}`).catch((x) => toast(x.message, true));
  await loadTasks();
});

function confirmDialog(title, text, lines, okWord = 'Go on') {
  return new Promise((resolve) => {
    const dlg = $('dlg-confirm');
    $('confirm-ok').textContent = okWord;
    $('confirm-ok').setAttribute('aria-label', okWord);
    $('confirm-h').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-list').replaceChildren(...lines.map((l) => h('li', {}, l)));
    dlg.returnValue = '';
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
  });
}

// moveToGroup moves a task; when that changes what the policy says of a
// pending change, it asks first.
async function moveToGroup(id, g) {
  try {
    await api('POST', `/api/tasks/${id}/group`, { group: g });
  } catch (x) {
    if (x.status !== 409 || !x.data || !x.data.changes) throw x;
    const name = g ? (state.groups.find((y) => y.id === g) || {}).name : 'no group';
    const ok = await confirmDialog(`Move to ${name}?`, 'The policy there says otherwise of changes waiting in this task:',
      x.data.changes.map((c) => `${c.path}: ${c.from} → ${c.to}`));
    if (!ok) return false;
    await api('POST', `/api/tasks/${id}/group`, { group: g, confirm: true });
  }
  await loadTasks();
  refreshView();
  return true;
}
function pickGroup() {
  closeMenu();
  const t = cur();
  $('pick-group').replaceChildren(h('option', { value: '' }, 'No group'), ...state.groups.map((g) => h('option', { value: g.id }, g.name)));
  $('pick-group').value = t.group || '';
  $('pick-error').textContent = '';
  const dlg = $('dlg-pick');
  dlg.returnValue = '';
  dlg.addEventListener('close', () => {
    if (dlg.returnValue === 'ok') moveToGroup(t.id, $('pick-group').value).catch((x) => toast(x.message, true));
  }, { once: true });
  dlg.showModal();
}

// ---------- first run ----------
async function loadFirstRun() {
  $('firstrun').dataset.loaded = '1';
  const [as, pol] = await Promise.all([api('GET', '/api/agents').catch(() => []), api('GET', '/api/policy').catch(() => ({ choice: 'balanced' }))]);
  $('fr-agents').replaceChildren(...(as.length ? as : [{ name: 'No agent profiles', note: 'kule agents lists the agents Kule knows and how to add one' }]).map((a) => h('li', { class: 'agent ' + (a.can_start ? 'ok' : 'no') },
    h('span', { class: 'amark', 'aria-hidden': 'true' }, a.can_start ? '✓' : '·'),
    h('div', {},
      h('div', {}, h('strong', {}, a.name), ' ', a.note ? null : h('span', { class: 'muted small' }, a.can_start ? 'can start here' : 'cannot start yet')),
      a.problem ? h('div', { class: 'small bad' }, a.problem) : null,
      a.note ? h('div', { class: 'small muted' }, a.note) : null,
      a.missing && a.missing.length ? h('div', { class: 'small' }, 'Install: ' + a.missing.join('; ')) : null,
      a.install ? h('div', { class: 'small muted' }, `fetches ${a.install} once at its first run`) : null,
      a.can_start ? h('div', { class: 'small muted' }, a.auth && a.auth.length ? 'logs in with: ' + a.auth.join('; ') : 'no key or login found yet') : null))));
  for (const r of document.querySelectorAll('input[name=fr-policy]')) r.checked = r.value === (pol.own ? '' : pol.choice);
  if (pol.own) $('fr-error').textContent = 'Your own policy.cedar holds; the choice below applies once it is gone.';
}
for (const r of document.querySelectorAll('input[name=fr-policy]')) r.addEventListener('change', async () => {
  try { await api('PUT', '/api/policy', { choice: r.value }); toast(`The ${r.value} policy judges your tasks`); } catch (x) { toast(x.message, true); }
});
$('fr-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('fr-error').textContent = '';
  try {
    const res = await api('POST', '/api/tasks', { folder: $('fr-folder').value.trim() });
    toast(`Task ${res.task.id} · ${res.files} files copied`);
    await loadTasks();
    select(res.task.id);
    setView('live');
    cmd.focus();
  } catch (x) { $('fr-error').textContent = x.message; }
});

// ---------- notifications ----------
function notify(title, body) {
  if (!document.hidden || !('Notification' in window) || Notification.permission !== 'granted') return;
  try { new Notification(title, { body, tag: 'kule' }); } catch { /* not allowed here */ }
}
$('btn-notify').addEventListener('click', async () => {
  if (!('Notification' in window)) { toast('This browser has no notifications'); return; }
  const p = await Notification.requestPermission();
  toast(p === 'granted' ? 'Kule tells you when a question waits or a run ends' : 'Notifications are off');
});

// ---------- events ----------
// When the event stream breaks, the page says it lost the daemon, disables every action (a
// Review drawn before is no longer true) and looks for the daemon a bounded number of times,
// further apart each time. A daemon that answers but no longer knows this page (it was
// started again, with a new token) is not retried: only `kule app` opens a page it knows.
let es;
const retryAfter = [1, 2, 3, 5, 8, 13, 20, 30, 30, 30]; // seconds; about 2.5 minutes in all
const lost = { tries: 0, timer: null };
function goOffline(why) {
  if (es) { es.close(); es = null; }
  const first = !state.offline;
  state.offline = true;
  document.body.classList.add('offline');
  $('conn').className = 'conn off';
  $('conn').title = 'Lost the daemon';
  // Every control of the app stops; each remembers whether it was disabled before.
  for (const el of document.querySelectorAll('#app button, #app input, #app select, #app textarea')) {
    if (el.closest('#offline')) continue;
    if (!('offlineWas' in el.dataset)) el.dataset.offlineWas = el.disabled ? '1' : '';
    el.disabled = true;
  }
  for (const d of document.querySelectorAll('dialog[open]')) d.close();
  $('offline').hidden = false;
  $('offline-text').textContent = why;
  if (first) lost.tries = 0;
}
function goOnline() {
  state.offline = false;
  document.body.classList.remove('offline');
  $('offline').hidden = true;
  for (const el of document.querySelectorAll('[data-offline-was]')) { el.disabled = el.dataset.offlineWas === '1'; delete el.dataset.offlineWas; }
}
function lookAgain() {
  clearTimeout(lost.timer);
  if (lost.tries >= retryAfter.length) {
    goOffline('Kule lost the daemon and could not find it again. Nothing was changed since. Run `kule app` in a terminal to start it and open the control room again.');
    $('offline-retry').hidden = false;
    return;
  }
  const wait = retryAfter[lost.tries++];
  $('offline-retry').hidden = true;
  goOffline(`Kule lost the daemon: nothing can be done from this page until it is back. Looking for it again in ${wait} s (try ${lost.tries} of ${retryAfter.length}); if it stopped, run \`kule app\`.`);
  lost.timer = setTimeout(async () => {
    let r;
    try { r = await fetch('/api/health', { credentials: 'same-origin' }); } catch { lookAgain(); return; }
    if (r.status === 401 || r.status === 403) {
      goOffline('The daemon was started again and no longer knows this page. Nothing was changed. Run `kule app` to open the control room with its new key.');
      $('offline-retry').hidden = true;
      return;
    }
    if (!r.ok) { lookAgain(); return; }
    connect();
  }, wait * 1000);
}
function connect() {
  es = new EventSource('/api/events');
  es.onopen = () => { lost.tries = 0; goOnline(); $('conn').className = 'conn on'; $('conn').title = 'Connected to the daemon'; loadAll(); };
  es.onerror = () => lookAgain();
  const on = (type, fn) => es.addEventListener(type, (m) => { try { fn(JSON.parse(m.data)); } catch (e) { console.error(e); } });
  for (const t of needs.events) on(t, needs.onEvent); // Needs you's proposals and leases (needs.js)
  let tasksTimer = null;
  const tasksSoon = () => { clearTimeout(tasksTimer); tasksTimer = setTimeout(() => loadTasks().catch(() => {}), 120); };
  on('task', (ev) => { tasksSoon(); if (ev.task === state.current) refreshView(); });
  on('group', () => tasksSoon());
  on('run', (ev) => {
    tasksSoon();
    onRunEvent(ev);
    if (ev.data.state === 'end') {
      const t = state.tasks.find((x) => x.id === ev.task);
      notify('Run over', `${t ? taskTitle(t) : ev.task}: ${ev.data.agent || ev.data.command}${ev.data.agent ? '' : ' · exit ' + ev.data.code}${ev.data.limit ? ' · stopped by ' + (limitName[ev.data.limit] || 'a limit') : ''}${ev.data.summary ? ' · ' + changesText(ev.data.summary) : ''}`);
      if (ev.task === state.current) refreshView();
    }
  });
  let outTimer = null;
  on('output', (ev) => {
    // The task's row counts its changes while the run writes: read again at most once a second.
    if (!outTimer) outTimer = setTimeout(() => { outTimer = null; loadTasks().catch(() => {}); }, 1000);
    const l = liveOf(ev.task);
    if (!l.run && !l.seeded) return; // a run that began before this page: steps.jsonl has it once it ends
    // Output of a run whose start this page missed gets a card that is the run's: its end
    // event (or the task's list saying nothing runs) ends it.
    const it = l.run || (l.run = pushLive(ev.task, { kind: 'run', label: 'output', state: 'running', out: '' }));
    touch(it).out = (it.out + ev.data.text).slice(-200000);
    liveSoon(ev.task);
  });
  on('agent', onAgentEvent);
  on('limits', (ev) => {
    const l = liveOf(ev.task);
    if (!l.run) return; // a run that began before this page
    const d = ev.data || {};
    touch(l.run).meters = d;
    if (d.final && d.limit) l.run.limit = d.limit;
    liveSoon(ev.task);
  });
  on('budget', (ev) => {
    // A run reached 80% or 100% of a budget: its notice (already in Live as
    // the agent's note) is marked, and the person told.
    const l = liveOf(ev.task), n = ev.data || {};
    const it = [...l.items].reverse().find((x) => x.kind === 'note' && x.text === n.text);
    if (it) Object.assign(touch(it), { kind: 'budget', percent: n.percent });
    else pushLive(ev.task, { kind: 'budget', text: n.text, percent: n.percent });
    liveSoon(ev.task);
    tasksSoon();
    const t = state.tasks.find((x) => x.id === ev.task);
    toast(n.text, n.percent >= 100);
    notify(n.percent >= 100 ? 'Budget spent' : `Budget at ${n.percent}%`, `${t ? taskTitle(t) : ev.task}: ${n.text}`);
  });
  on('sandbox', (ev) => {
    const r = ev.data || {};
    pushLive(ev.task, { kind: 'note', text: `${sandboxWhat(r)} · ${r.why || ''}` });
    if (ev.task === state.current && layout.isShown('timeline')) refreshView();
  });
  on('connection', (ev) => { pushLive(ev.task, { kind: 'conn', ...(ev.data || {}) }); if (ev.task === state.current && layout.isShown('timeline')) refreshView(); });
  on('meet', (ev) => {
    const d = ev.data || {};
    const add = (a, b, title) => { const l = state.meets[a] || []; if (!l.some((x) => x.task === b)) state.meets[a] = l.concat([{ task: b, title, paths: d.paths }]); };
    add(ev.task, d.other, d.other_title || d.other);
    add(d.other, ev.task, d.title || ev.task);
    renderTasks();
    const msg = `${d.title || ev.task} and ${d.other_title || d.other} both change ${d.paths.slice(0, 3).join(', ')}${d.paths.length > 3 ? ` and ${d.paths.length - 3} more` : ''}`;
    toast('Tasks meet: ' + msg);
    notify('Two tasks meet', msg);
  });
  for (const t of ['commit', 'undo', 'rollback', 'step']) on(t, (ev) => { tasksSoon(); if (ev.task === state.current) refreshView(); });
  on('question', (ev) => {
    state.questionEvents++;
    const q = ev.data;
    const i = state.questions.findIndex((x) => x.id === q.id);
    if (i >= 0) state.questions[i] = q; else state.questions.unshift(q);
    renderQuestions();
    tasksSoon();
    if (q.state === 'waiting') notify('Kule needs you', q.title);
  });
}

needs.init({ h, api, toast, tasks: () => state.tasks, taskTitle, changed: () => { renderQuestions(); renderTasks(); } });

async function loadAll() {
  await Promise.all([loadTasks(), loadQuestions(), loadAgents(), loadInterrupted().catch(() => {})]);
  if (!state.current) {
    const last = localStorage.getItem('kule.task');
    if (last && state.tasks.some((t) => t.id === last)) select(last);
  } else refreshView();
}

// ---------- dialogs ----------
function openNew() {
  $('new-error').textContent = '';
  $('form-new').reset();
  $('dlg-new').showModal();
  $('new-folder').focus();
}
$('form-new').addEventListener('submit', async (e) => {
  if (e.submitter && e.submitter.value === 'cancel') return;
  e.preventDefault();
  const btn = $('new-ok');
  btn.disabled = true;
  btn.textContent = 'Copying…';
  try {
    const res = await api('POST', '/api/tasks', { folder: $('new-folder').value.trim(), name: $('new-name').value.trim() });
    $('dlg-new').close();
    toast(`Task ${res.task.id} · ${res.files} files copied`);
    await loadTasks();
    select(res.task.id);
    setView('live');
    $('cmd').focus();
  } catch (x) {
    $('new-error').textContent = x.message;
  } finally {
    btn.disabled = false;
    btn.textContent = 'Make task';
  }
});

function ask(title, label, value, check) {
  return new Promise((resolve) => {
    const dlg = $('dlg-prompt');
    $('prompt-h').textContent = title;
    $('prompt-label').textContent = label;
    const inp = $('prompt-input');
    inp.value = value;
    $('prompt-error').textContent = '';
    const form = $('form-prompt');
    const onSubmit = (e) => {
      if (e.submitter && e.submitter.value === 'cancel') return;
      const msg = check ? check(inp.value) : '';
      if (msg) { e.preventDefault(); $('prompt-error').textContent = msg; }
    };
    const onClose = () => {
      form.removeEventListener('submit', onSubmit);
      dlg.removeEventListener('close', onClose);
      resolve(dlg.returnValue === 'ok' ? inp.value : null);
    };
    form.addEventListener('submit', onSubmit);
    dlg.addEventListener('close', onClose);
    dlg.returnValue = '';
    dlg.showModal();
    inp.select();
  });
}

// task menu
function closeMenu() { $('t-menu').hidden = true; $('t-menu-btn').setAttribute('aria-expanded', 'false'); }
$('t-menu-btn').addEventListener('click', (e) => {
  e.stopPropagation();
  const m = $('t-menu');
  m.hidden = !m.hidden;
  $('t-menu-btn').setAttribute('aria-expanded', String(!m.hidden));
  if (!m.hidden) m.querySelector('button').focus();
});
document.addEventListener('click', (e) => { if (!e.target.closest('.menuwrap')) closeMenu(); });
$('t-menu').addEventListener('keydown', (e) => { if (e.key === 'Escape') { closeMenu(); $('t-menu-btn').focus(); } });
for (const b of document.querySelectorAll('#t-menu [data-cmd]')) b.addEventListener('click', () => runCommand(b.dataset.cmd));

// palette
let palSel = 0;
function openPalette() {
  $('pal-input').value = '';
  renderPalette();
  $('dlg-palette').showModal();
  $('pal-input').focus();
}
function palMatches() {
  const q = $('pal-input').value.toLowerCase().trim();
  return commands.filter((c) => c.id !== 'palette.open' && (!q || q.split(/\s+/).every((w) => c.title.toLowerCase().includes(w) || c.id.includes(w))));
}
function renderPalette() {
  const ms = palMatches();
  palSel = Math.min(palSel, Math.max(0, ms.length - 1));
  $('pal-list').replaceChildren(...ms.map((c, i) => h('li', {
    role: 'option', 'aria-selected': String(i === palSel), id: 'pal-' + i, 'data-cmd': c.id,
    onclick: () => { $('dlg-palette').close(); runCommand(c.id); },
  }, h('span', {}, c.title), keyOf(c) ? h('kbd', {}, showKey(keyOf(c))) : null)));
  $('pal-input').setAttribute('aria-activedescendant', ms.length ? 'pal-' + palSel : '');
}
$('pal-input').addEventListener('input', () => { palSel = 0; renderPalette(); });
$('pal-input').addEventListener('keydown', (e) => {
  const ms = palMatches();
  if (e.key === 'ArrowDown') { e.preventDefault(); palSel = Math.min(palSel + 1, ms.length - 1); renderPalette(); }
  if (e.key === 'ArrowUp') { e.preventDefault(); palSel = Math.max(palSel - 1, 0); renderPalette(); }
  if (e.key === 'Enter' && ms[palSel]) { e.preventDefault(); $('dlg-palette').close(); runCommand(ms[palSel].id); }
});

// settings
async function openSettings() {
  $('settings-error').textContent = '';
  try { const s = await api('GET', '/api/settings'); $('set-wait').value = s.wait_minutes; } catch (x) { $('settings-error').textContent = x.message; }
  $('appearance').replaceChildren();
  themes.mountAppearance($('appearance'), h, toast);
  renderKeys();
  const more = $('settings-more');
  // Registered sections are drawn afresh each time Settings opens.
  for (const f of document.querySelectorAll('#settings-body fieldset[data-registered]')) f.remove();
  for (const s of registry.settingsSections) {
    const body = h('div', {});
    more.append(h('fieldset', { id: 'settings-' + s.id, 'data-registered': '' }, h('legend', {}, s.title), body));
    try { Promise.resolve(s.mount(body, ctx())).catch((x) => body.append(h('p', { class: 'error' }, x.message))); } catch (x) { body.append(h('p', { class: 'error' }, x.message)); }
  }
  // One section each, in the order a person looks for them; the list beside them jumps to one.
  const fs = [...document.querySelectorAll('#settings-body fieldset[id^="settings-"]')];
  const rank = (f) => { const i = settingsOrder.indexOf(f.id.slice(9)); return i < 0 ? settingsOrder.length : i; };
  fs.sort((a, b) => rank(a) - rank(b));
  more.before(...fs);
  $('settings-nav').replaceChildren(...fs.map((f) => h('a', { href: '#' + f.id, 'data-section': f.id.slice(9), onclick: (e) => { e.preventDefault(); showSection(f.id.slice(9)); } }, f.querySelector('legend').textContent)));
  $('dlg-settings').showModal();
  showSection(state.settingsSection || 'agents', false);
}
// The list marks the section at the top of what shows as the person scrolls.
// A section picked from the list stays marked while it is in view, though the last ones cannot
// scroll to the top; the person's own scrolling (wheel, keys, a drag) marks as it goes.
let settingsJump = null;
for (const ev of ['wheel', 'pointerdown', 'keydown']) $('settings-body').addEventListener(ev, () => { settingsJump = null; }, { passive: true });
$('settings-body').addEventListener('scroll', () => {
  if (settingsJump) return;
  const top = $('settings-body').getBoundingClientRect().top;
  const fs = [...document.querySelectorAll('#settings-body fieldset[id^="settings-"]')];
  const at = fs.find((f) => f.getBoundingClientRect().bottom > top + 24);
  if (at) for (const a of $('settings-nav').children) a.setAttribute('aria-current', String(a.dataset.section === at.id.slice(9)));
}, { passive: true });
const settingsOrder = ['agents', 'policy', 'rules', 'secrets', 'budgets', 'limits', 'transports', 'extensions', 'appearance', 'shortcuts', 'questions', 'profile'];
// showSection brings a section of Settings into view and marks it in the list.
function showSection(id, focus = true) {
  const f = $('settings-' + id);
  if (!f) return;
  state.settingsSection = id;
  settingsJump = id;
  for (const a of $('settings-nav').children) a.setAttribute('aria-current', String(a.dataset.section === id));
  f.scrollIntoView({ block: 'start' });
  if (focus) { const first = f.querySelector('input, button, textarea, select'); if (first) first.focus({ preventScroll: true }); }
}
function renderKeys() {
  $('keys-body').replaceChildren(...commands.map((c) => {
    const b = h('button', { type: 'button', 'aria-label': `Shortcut for ${c.title}: ${keyOf(c) || 'none'}. Press to change`, 'data-cmd': c.id }, showKey(keyOf(c)) || '—');
    b.addEventListener('click', () => {
      b.classList.add('listening');
      b.textContent = 'press keys… (Esc: none)';
      listening = async (k) => {
        listening = null;
        b.classList.remove('listening');
        const why = k === 'Escape' ? '' : reservedWhy(k);
        if (why) {
          $('keys-note').textContent = `${showKey(k)} is not free: it ${why}, so a page never receives it. ${c.title} keeps ${showKey(keyOf(c)) || 'no key'}; pick another combo.`;
          $('keys-note').className = 'error';
          renderKeys();
          return;
        }
        const next = { ...state.shortcuts, [c.id]: k === 'Escape' ? '' : k };
        const taken = k === 'Escape' ? [] : commands.filter((o) => o.id !== c.id && keyOf(o) === k);
        for (const o of taken) next[o.id] = ''; // a key does one thing
        try {
          state.shortcuts = await api('PUT', '/api/shortcuts', next);
          $('settings-error').textContent = '';
          $('keys-note').className = 'muted small';
          $('keys-note').textContent = k === 'Escape' ? `${c.title} has no key now.`
            : `${showKey(k)} now runs ${c.title}.` + taken.map((o) => ` It was the key of ${o.title}, which has no key now.`).join('');
        } catch (x) { $('settings-error').textContent = x.message; }
        renderKeys();
        updateKbd();
      };
    });
    return h('tr', {}, h('td', {}, c.title), h('td', {}, b));
  }));
}
$('set-wait').addEventListener('change', async () => {
  try { await api('PUT', '/api/settings', { wait_minutes: Number($('set-wait').value) }); $('settings-error').textContent = ''; }
  catch (x) { $('settings-error').textContent = x.message; }
});
function updateKbd() { $('kbd-palette').textContent = showKey(keyOf(byId['palette.open'])); }

$('btn-new').addEventListener('click', openNew);
$('btn-stop').addEventListener('click', () => api('POST', `/api/tasks/${state.current}/stop`).catch((x) => toast(x.message, true)));
$('btn-new2').addEventListener('click', openNew);
$('btn-group').addEventListener('click', () => openGroup(null));
$('btn-settings').addEventListener('click', openSettings);
$('btn-palette').addEventListener('click', openPalette);
$('btn-commit').addEventListener('click', () => commit(false).catch((x) => toast(x.message, true)));
$('btn-approve-commit').addEventListener('click', () => commit(true).catch((x) => toast(x.message, true)));
$('btn-rollback').addEventListener('click', () => rollback().catch((x) => toast(x.message, true)));

$('offline-retry').addEventListener('click', () => { lost.tries = 0; lookAgain(); });

$('r-filter').addEventListener('input', () => { review.filter = $('r-filter').value; if (state.detail) renderChanges((state.detail.changes || []).filter((c) => !c.ignored)); });

(async function main() {
  layout.init({ api, toast, onShow: () => refreshView() });
  const tasksTab = h('button', { role: 'tab', id: 'tab-tasks', 'aria-controls': 'v-tasks', 'data-view': 'tasks' }, 'Tasks');
  layout.addPanel('tasks', 'Tasks', tasksTab, $('v-tasks'));
  const builtinTitles = { live: 'Live', review: 'Review', timeline: 'Timeline', files: 'Files' };
  for (const v of builtinViews) layout.addPanel(v, builtinTitles[v], $('tab-' + v), $('v-' + v));
  addRegistered();
  registry.onChange(() => { addRegistered(); updateKbd(); });
  try { state.shortcuts = await api('GET', '/api/shortcuts'); } catch (x) { toast(x.message, true); }
  await themes.initThemes(api);
  mountMenuBar($('menubar'), { h, commands, keyOf, showKey, runCommand, hasTask: () => !!state.current, offline: () => !!state.offline });
  updateKbd();
  await layout.load();
  state.view = 'live';
  connect();
})();
