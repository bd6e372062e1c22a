// Kule's control room: a plain ES module over the daemon's JSON API and its
// event stream. No framework, no network but this daemon.

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
  const r = await fetch(path, opt);
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: text }; }
  if (!r.ok) throw new Error((data && data.error) || r.statusText);
  return data;
}

function toast(msg, bad = false) {
  const t = h('div', { class: 'toast' + (bad ? ' bad' : ''), role: bad ? 'alert' : 'status' }, msg);
  $('toasts').append(t);
  setTimeout(() => t.remove(), bad ? 9000 : 3500);
}

const state = {
  tasks: [], questions: [], current: null, view: 'review', detail: null,
  ruling: {}, // path -> 'approve' | 'hold'
  shortcuts: {}, output: {}, running: {},
};

// ---------- commands and keys ----------
const commands = [
  { id: 'palette.open', title: 'Find a command', key: 'Mod+K', run: openPalette },
  { id: 'task.new', title: 'New task', key: 'Mod+N', run: openNew },
  { id: 'task.next', title: 'Next task', key: 'Ctrl+Tab', run: () => stepTask(1) },
  { id: 'task.prev', title: 'Previous task', key: 'Ctrl+Shift+Tab', run: () => stepTask(-1) },
  { id: 'view.review', title: 'Show Review', key: 'Mod+1', run: () => setView('review'), task: true },
  { id: 'view.timeline', title: 'Show Timeline', key: 'Mod+2', run: () => setView('timeline'), task: true },
  { id: 'view.files', title: 'Show Files', key: 'Mod+3', run: () => setView('files'), task: true },
  { id: 'task.commit', title: 'Commit', key: 'Mod+Shift+Enter', run: () => commit(false), task: true },
  { id: 'task.approvecommit', title: 'Approve and commit', key: '', run: () => commit(true), task: true },
  { id: 'task.rollback', title: 'Roll back uncommitted changes', key: '', run: rollback, task: true },
  { id: 'task.undo', title: 'Undo the last commit', key: 'Mod+Shift+Z', run: undo, task: true },
  { id: 'question.approve', title: 'Approve the waiting question', key: 'Mod+Shift+Y', run: () => answerFirst(true) },
  { id: 'question.deny', title: 'Deny the waiting question', key: 'Mod+Shift+N', run: () => answerFirst(false) },
  { id: 'task.up', title: 'Move task up', key: 'Alt+ArrowUp', run: () => move(-1), task: true },
  { id: 'task.down', title: 'Move task down', key: 'Alt+ArrowDown', run: () => move(1), task: true },
  { id: 'task.rename', title: 'Name the task', key: 'F2', run: rename, task: true },
  { id: 'task.stop', title: 'Stop the running command', key: '', run: () => api('POST', `/api/tasks/${state.current}/stop`), task: true },
  { id: 'task.wait', title: 'Set how long questions of the task wait', key: '', run: setTaskWait, task: true },
  { id: 'task.delete', title: 'Delete the task', key: '', run: del, task: true },
  { id: 'cmdline.focus', title: 'Go to the command line', key: 'Mod+L', run: () => $('cmd').focus(), task: true },
  { id: 'settings.open', title: 'Settings', key: 'Mod+,', run: openSettings },
  { id: 'theme.system', title: 'Theme: System', key: '', run: () => setTheme('system') },
  { id: 'theme.light', title: 'Theme: Light', key: '', run: () => setTheme('light') },
  { id: 'theme.dark', title: 'Theme: Dark', key: '', run: () => setTheme('dark') },
  { id: 'theme.contrast', title: 'Theme: High contrast', key: '', run: () => setTheme('contrast') },
];
const byId = Object.fromEntries(commands.map((c) => [c.id, c]));
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

let listening = null; // a Settings row waiting for keys
document.addEventListener('keydown', (e) => {
  const k = eventKey(e);
  if (!k) return;
  if (listening) { e.preventDefault(); listening(k); return; }
  const inField = e.target.closest && e.target.closest('input, textarea');
  for (const c of commands) {
    if (keyOf(c) === k) {
      // Plain keys (F2) never fire inside a text field.
      if (inField && !/Mod|Ctrl|Alt/.test(k)) continue;
      e.preventDefault();
      runCommand(c.id);
      return;
    }
  }
}, true);

// ---------- theme ----------
function setTheme(t) {
  document.documentElement.dataset.theme = t;
  localStorage.setItem('kule.theme', t);
  for (const r of document.querySelectorAll('input[name=theme]')) r.checked = r.value === t;
}
setTheme(localStorage.getItem('kule.theme') || 'system');

// ---------- tasks ----------
const colours = ['', 'slate', 'red', 'orange', 'amber', 'green', 'teal', 'blue', 'indigo', 'violet', 'pink'];
const taskTitle = (t) => t.name || t.folder.split('/').filter(Boolean).pop() || t.folder;
const cur = () => state.tasks.find((t) => t.id === state.current);

async function loadTasks() {
  state.tasks = await api('GET', '/api/tasks');
  if (state.current && !cur()) state.current = null;
  renderTasks();
  renderHeader();
}

function renderTasks() {
  const ul = $('task-list');
  ul.replaceChildren(...state.tasks.map((t) => {
    const badges = [];
    if (t.running) badges.push(h('span', { class: 'badge run' }, 'running'));
    if (t.waiting) badges.push(h('span', { class: 'badge wait', title: 'questions waiting' }, `${t.waiting} waiting`));
    if (t.asks) badges.push(h('span', { class: 'badge ask', title: 'changes that need approval' }, `${t.asks} ask`));
    if (t.denied) badges.push(h('span', { class: 'badge deny', title: 'changes the policy refuses' }, `${t.denied} denied`));
    if (t.changes && !t.asks && !t.denied) badges.push(h('span', { class: 'badge' }, String(t.changes)));
    const li = h('li', {
      role: 'option', 'aria-selected': String(t.id === state.current), tabindex: '0', 'data-id': t.id,
      'aria-label': `Task ${taskTitle(t)}, ${t.summary || 'no changes'}`,
      onclick: () => select(t.id), onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(t.id); } },
    },
    h('span', { class: 'stripe' + (t.colour ? ' c-' + t.colour : '') }),
    h('div', {}, h('div', { class: 'tn' }, taskTitle(t)), h('div', { class: 'ts' }, `${t.id} · ${t.error ? 'error' : (t.summary || 'no changes')}`)),
    h('div', { class: 'badges' }, badges));
    return li;
  }));
  $('no-tasks').hidden = state.tasks.length > 0;
  $('welcome').hidden = !!state.current;
  $('taskview').hidden = !state.current;
}

function select(id) {
  if (state.current !== id) { state.ruling = {}; }
  state.current = id;
  localStorage.setItem('kule.task', id);
  renderTasks();
  renderHeader();
  renderOutput();
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
  st.textContent = t.running ? 'running…' : t.waiting ? `${t.waiting} question${t.waiting > 1 ? 's' : ''} waiting` : (t.summary || 'no changes');
  $('t-colours').replaceChildren(...colours.map((c) => h('button', {
    class: c ? 'c-' + c : '', 'aria-label': c ? `Colour ${c}` : 'No colour', title: c || 'none', 'aria-pressed': String((t.colour || '') === c),
    onclick: () => patch({ colour: c }).then(closeMenu),
  })));
  $('btn-run').hidden = !!t.running;
  $('btn-stop').hidden = !t.running;
}

async function patch(body) {
  await api('PATCH', `/api/tasks/${state.current}`, body);
  await loadTasks();
}

async function move(by) {
  state.tasks = await api('POST', `/api/tasks/${state.current}/move`, { by });
  renderTasks();
  closeMenu();
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
function setView(v) {
  state.view = v;
  for (const b of document.querySelectorAll('.tabs [role=tab]')) {
    const on = b.dataset.view === v;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
  }
  for (const id of ['review', 'timeline', 'files']) $('v-' + id).hidden = id !== v;
  refreshView();
}
for (const b of document.querySelectorAll('.tabs [role=tab]')) b.addEventListener('click', () => setView(b.dataset.view));

let refreshing = null;
function refreshView() {
  if (!state.current) return;
  if (refreshing) clearTimeout(refreshing);
  refreshing = setTimeout(() => {
    refreshing = null;
    const f = { review: loadReview, timeline: loadTimeline, files: loadFiles }[state.view];
    f().catch((e) => toast(e.message, true));
    if (state.view !== 'review') loadReview(true).catch(() => {});
  }, 60);
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
  $('no-changes').hidden = cs.length > 0 || d.running;
  const asks = cs.filter((c) => c.verdict === 'ask').length;
  $('btn-commit').disabled = !cs.length || !!d.running;
  $('btn-rollback').disabled = !cs.length || !!d.running;
  $('btn-approve-commit').hidden = !asks;
  $('btn-approve-commit').textContent = `Approve and commit (${asks})`;
  $('changes').replaceChildren(...cs.map(changeRow));
}

function changeRow(c) {
  const rule = state.ruling[c.path];
  const held = rule === 'hold' || c.verdict === 'deny' || (c.verdict === 'ask' && rule !== 'approve');
  const li = h('li', { class: held ? 'held' : '', 'data-path': c.path },
    h('span', { class: 'sym ' + c.kind, 'aria-label': c.kind, title: c.kind }, symbols[c.kind] || '~'),
    h('span', { class: 'path' }, c.kind === 'move' ? `${c.from} → ${c.path}` : c.path + (c.dir ? '/' : ''), c.files ? h('span', { class: 'muted' }, `  (${c.files} files)`) : null),
    h('span', { class: 'verdict ' + c.verdict, title: c.rule ? `rule ${c.rule}` : 'policy verdict' }, c.verdict),
    h('span', { class: 'ruling', role: 'group', 'aria-label': `Ruling for ${c.path}` },
      c.verdict === 'ask' ? h('button', { 'aria-pressed': String(rule === 'approve'), 'aria-label': `Approve ${c.path}`, onclick: () => rule_(c.path, 'approve') }, 'Approve') : null,
      c.verdict !== 'deny' ? h('button', { 'aria-pressed': String(rule === 'hold'), 'aria-label': `Hold back ${c.path}`, title: 'Keep it in the copy; do not commit it', onclick: () => rule_(c.path, 'hold') }, 'Hold back') : null),
    c.names && c.names.length ? h('span', { class: 'names', 'aria-label': 'What changed inside' }, c.names.map((n) => h('span', { class: 'name' }, n))) : null,
    c.reason ? h('span', { class: 'reason' }, c.reason) : null);
  if (c.image) {
    const pics = h('div', { class: 'pics' });
    for (const side of c.kind === 'add' ? ['after'] : c.kind === 'delete' ? ['before'] : ['before', 'after']) {
      const img = h('img', { alt: `${c.path}, ${side}`, loading: 'lazy', src: `/api/tasks/${state.current}/image?side=${side}&path=${encodeURIComponent(side === 'before' && c.from ? c.from : c.path)}` });
      const fig = h('figure', {}, img, h('figcaption', {}, side));
      img.addEventListener('error', () => fig.replaceChildren(h('figcaption', {}, `${side}: not shown (not a proven PNG/JPEG/GIF/WebP under 8 MiB and 40 MP)`)));
      pics.append(fig);
    }
    li.append(pics);
  }
  return li;
}

function rule_(path, r) {
  state.ruling[path] = state.ruling[path] === r ? undefined : r;
  if (state.detail) $('changes').replaceChildren(...state.detail.changes.filter((c) => !c.ignored).map(changeRow));
}

async function commit(approveAll) {
  const body = { approve_all: approveAll, approve: [], exclude: [] };
  for (const [p, r] of Object.entries(state.ruling)) {
    if (r === 'approve') body.approve.push(p);
    if (r === 'hold') body.exclude.push(p);
  }
  const res = await api('POST', `/api/tasks/${state.current}/commit`, body);
  state.ruling = {};
  if (!res.applied.length) toast('Nothing to commit' + (res.left.length ? ` · ${res.left.length} stay in the copy` : ''));
  else toast(`Committed ${res.summary} · checkpoint ${res.checkpoint}` + (res.left.length ? ` · ${res.left.length} stay in the copy` : ''));
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

async function undo() {
  const res = await api('POST', `/api/tasks/${state.current}/undo`);
  toast(`Undid checkpoint ${res.checkpoint} · ${res.paths} paths are as before`);
  await loadTasks();
  refreshView();
}

const fmtTime = (s) => { const d = new Date(s); return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + (d.toDateString() === new Date().toDateString() ? '' : ' ' + d.toLocaleDateString()); };

async function loadTimeline() {
  const id = state.current;
  const [hist, steps] = await Promise.all([api('GET', `/api/tasks/${id}/history`), api('GET', `/api/tasks/${id}/steps`)]);
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
      detail = (d.changes || []).join('\n') || `+${c.added || 0} ~${c.changed || 0} -${c.deleted || 0}`;
    } else if (e.kind === 'undo') { what = `Undo of checkpoint ${d.checkpoint}`; }
    else if (e.kind === 'approval') { what = 'Approved'; detail = (d.paths || []).join('\n'); }
    const canUndo = lastCommit && e.seq === lastCommit.seq;
    items.push({ time: e.time, kind: e.kind, what, detail, action: canUndo ? h('button', { class: 'ghost', 'aria-label': `Undo checkpoint ${d.checkpoint}`, onclick: () => undo().catch((x) => toast(x.message, true)) }, 'Undo') : null });
  }
  for (const s of steps) {
    items.push({ time: s.time, kind: 'exec', what: `Ran ${s.command}`, detail: `exit ${s.code}${s.error ? ' · ' + s.error : ''}${s.summary ? ' · ' + s.summary : ''}` });
  }
  for (const q of state.questions.filter((q) => q.task === id)) {
    items.push({ time: q.asked, kind: 'question', what: `${q.title}`, detail: `${q.kind} · ${q.state}${q.by ? ' by ' + q.by : ''}` });
  }
  for (const c of (connections[id] || [])) items.push({ time: c.time, kind: 'connection', what: `Connection ${c.host || ''}`, detail: `${c.verdict || ''} ${c.detail || ''}` });
  items.sort((a, b) => new Date(b.time) - new Date(a.time));
  const ol = $('timeline');
  ol.replaceChildren(...items.map((it) => h('li', {},
    h('span', { class: 'when' }, fmtTime(it.time)), h('span', { class: 'mark ' + it.kind, 'aria-hidden': 'true' }),
    h('div', {}, h('div', { class: 'what' }, it.what), it.detail ? h('div', { class: 'detail' }, it.detail) : null),
    it.action || h('span'))));
  if (!items.length) ol.append(h('li', { class: 'muted' }, 'Nothing yet: runs, commits, undos and questions show here.'));
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
    }
    return li;
  });
}

// ---------- command line ----------
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
$('cmdform').addEventListener('submit', async (e) => {
  e.preventDefault();
  const text = cmd.value.trim();
  if (!text || !state.current) return;
  const id = state.current;
  state.output[id] = `$ ${text}\n`;
  renderOutput();
  cmd.value = ''; grow();
  try {
    const step = await api('POST', `/api/tasks/${id}/exec`, { command: text });
    state.output[id] = (state.output[id] || '') + `\n[exit ${step.code}${step.summary ? ' · ' + step.summary : ''}]\n`;
  } catch (x) {
    state.output[id] = (state.output[id] || '') + `\n[${x.message}]\n`;
  }
  renderOutput();
  await loadTasks();
  refreshView();
});
function renderOutput() {
  const o = $('output');
  o.textContent = state.output[state.current] || '';
  o.scrollTop = o.scrollHeight;
}

// ---------- questions ----------
async function loadQuestions() {
  state.questions = await api('GET', '/api/questions');
  renderQuestions();
}
const waiting = () => state.questions.filter((q) => q.state === 'waiting');
function renderQuestions() {
  const ws = waiting();
  $('needs').hidden = ws.length === 0;
  $('needs-count').textContent = ws.length ? String(ws.length) : '';
  document.title = ws.length ? `(${ws.length}) Kule — needs you` : 'Kule';
  $('needs-list').replaceChildren(...ws.map((q) => {
    const t = state.tasks.find((t) => t.id === q.task);
    const left = h('span', { class: 'left', 'data-deadline': q.deadline }, remaining(q.deadline));
    return h('li', { 'data-question': q.id, 'aria-label': `Question: ${q.title}` },
      h('div', { class: 'qt' }, q.title),
      q.detail ? h('div', { class: 'qd' }, q.detail) : null,
      h('div', { class: 'qm' }, h('span', {}, `${t ? taskTitle(t) : q.task} · ${q.kind}`), left),
      h('div', { class: 'qa' },
        h('button', { class: 'primary', 'aria-label': `Approve: ${q.title}`, onclick: () => answer(q.id, true, false) }, 'Approve'),
        h('button', { 'aria-label': `Deny: ${q.title}`, onclick: () => answer(q.id, false, false) }, 'Deny'),
        q.subject ? h('button', { class: 'ghost', 'aria-label': `Approve and remember: ${q.title}`, onclick: () => answer(q.id, true, true) }, 'Approve and remember') : null));
  }));
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
function answerFirst(approve) {
  const ws = waiting();
  if (!ws.length) { toast('No question is waiting'); return; }
  const mine = ws.find((q) => q.task === state.current) || ws[0];
  return answer(mine.id, approve, false);
}

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
const connections = {};
let es;
function connect() {
  es = new EventSource('/api/events');
  es.onopen = () => { $('conn').className = 'conn on'; $('conn').title = 'Connected to the daemon'; loadAll(); };
  es.onerror = () => { $('conn').className = 'conn off'; $('conn').title = 'The daemon does not answer; retrying'; };
  const on = (type, fn) => es.addEventListener(type, (m) => { try { fn(JSON.parse(m.data)); } catch (e) { console.error(e); } });
  let tasksTimer = null;
  const tasksSoon = () => { clearTimeout(tasksTimer); tasksTimer = setTimeout(() => loadTasks().catch(() => {}), 120); };
  on('task', (ev) => { tasksSoon(); if (ev.task === state.current) refreshView(); });
  on('run', (ev) => {
    tasksSoon();
    if (ev.data.state === 'end') {
      notify('Run over', `${ev.data.command} · exit ${ev.data.code}`);
      if (ev.task === state.current) refreshView();
    }
  });
  on('output', (ev) => {
    state.output[ev.task] = ((state.output[ev.task] || '') + ev.data.text).slice(-200000);
    if (ev.task === state.current) renderOutput();
  });
  for (const t of ['commit', 'undo', 'rollback', 'step']) on(t, (ev) => { tasksSoon(); if (ev.task === state.current) refreshView(); });
  on('question', (ev) => {
    const q = ev.data;
    const i = state.questions.findIndex((x) => x.id === q.id);
    if (i >= 0) state.questions[i] = q; else state.questions.unshift(q);
    renderQuestions();
    tasksSoon();
    if (q.state === 'waiting') notify('Kule needs you', q.title);
  });
  on('connection', (ev) => {
    (connections[ev.task] ||= []).push({ time: ev.time, ...(ev.data || {}) });
    if (ev.task === state.current && state.view === 'timeline') refreshView();
  });
}

async function loadAll() {
  await Promise.all([loadTasks(), loadQuestions()]);
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
    setView('review');
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
  renderKeys();
  $('dlg-settings').showModal();
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
        const next = { ...state.shortcuts, [c.id]: k === 'Escape' ? '' : k };
        for (const o of commands) if (o.id !== c.id && keyOf(o) === k) next[o.id] = ''; // a key does one thing
        try {
          state.shortcuts = await api('PUT', '/api/shortcuts', next);
          $('settings-error').textContent = '';
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
for (const r of document.querySelectorAll('input[name=theme]')) r.addEventListener('change', () => setTheme(r.value));
function updateKbd() { $('kbd-palette').textContent = showKey(keyOf(byId['palette.open'])); }

$('btn-new').addEventListener('click', openNew);
$('btn-stop').addEventListener('click', () => api('POST', `/api/tasks/${state.current}/stop`).catch((x) => toast(x.message, true)));
$('btn-new2').addEventListener('click', openNew);
$('btn-settings').addEventListener('click', openSettings);
$('btn-palette').addEventListener('click', openPalette);
$('btn-commit').addEventListener('click', () => commit(false).catch((x) => toast(x.message, true)));
$('btn-approve-commit').addEventListener('click', () => commit(true).catch((x) => toast(x.message, true)));
$('btn-rollback').addEventListener('click', () => rollback().catch((x) => toast(x.message, true)));

(async function main() {
  try { state.shortcuts = await api('GET', '/api/shortcuts'); } catch (x) { toast(x.message, true); }
  updateKbd();
  setView('review');
  connect();
})();
