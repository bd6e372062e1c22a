// The Terminal panel: shells in the task's copy, each a tab, each a pty in the daemon
// (terminal.go) drawn by xterm.js (web/vendor/xterm, a pinned version; VERSIONS says which).
// Output comes as Server-Sent Events of base64 bytes; what the person types is posted back.
// Find searches the scrollback; a link opens on Ctrl+click (⌘+click on a Mac), never on a
// plain click, since a click in a terminal is for selecting.

import { registerPanel } from './registry.js';

const isMac = /Mac|iPhone|iPad/.test(navigator.platform);
const V = '/vendor/xterm/';
let loading = null;

// load brings in xterm.js and its addons once (classic scripts: they set window.Terminal, …).
function load() {
  if (loading) return loading;
  const css = document.createElement('link');
  css.rel = 'stylesheet';
  css.href = V + 'xterm.css';
  document.head.append(css);
  const script = (name) => new Promise((resolve, reject) => {
    const s = document.createElement('script');
    s.src = V + name;
    s.onload = resolve;
    s.onerror = () => reject(new Error(`could not load ${name} of the terminal`));
    document.head.append(s);
  });
  loading = script('xterm.js').then(() => Promise.all(['addon-canvas.js', 'addon-search.js', 'addon-web-links.js', 'addon-fit.js'].map(script)));
  return loading;
}

const terms = new Map(); // terminal id -> { id, task, title, term, el, es, fit, search, ended }
let ui = null; // the panel's parts, once mounted
let active = null; // the terminal id shown
let taskOf = null; // the task the panel shows terminals of

function b64bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// theme is the app's own colours, so the terminal follows Light, Dark and High contrast.
function theme() {
  const cs = getComputedStyle(document.documentElement);
  const v = (n) => cs.getPropertyValue(n).trim();
  return { background: v('--panel'), foreground: v('--text'), cursor: v('--accent'), selectionBackground: v('--line') };
}

// linkToOpen is the guard on what a link in a terminal may open: http and https only. A
// command prints what it likes, and a javascript: link would run in a window of the page's
// origin, a file: one open a file of this machine. It returns the URL to open, or null.
function linkToOpen(uri) {
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch { return null; }
}

// openLink opens a terminal's link on Ctrl+click (⌘+click on a Mac) in a new window that
// cannot reach back to the page; a plain click is for selecting, and opens nothing.
function openLink(c, ev, uri) {
  if (!(isMac ? ev.metaKey : ev.ctrlKey)) { c.toast(`${isMac ? '⌘' : 'Ctrl'}+click opens the link`); return; }
  const url = linkToOpen(uri);
  if (url === null) { c.toast(`Not opened: a terminal's links open only when they are http or https, and this one is ${String(uri).slice(0, 120)}`, true); return; }
  const w = window.open(url, '_blank', 'noopener,noreferrer');
  if (w) w.opener = null;
}

function attach(c, info) {
  const el = document.createElement('div');
  el.className = 'term';
  el.dataset.term = info.id;
  el.hidden = true;
  ui.screens.append(el);
  const hover = (ev, text) => { el.title = `${isMac ? '⌘' : 'Ctrl'}+click to open ${text}`; };
  const leave = () => { el.title = ''; };
  // Two kinds of link: a URL printed as text (the web-links addon) and an OSC 8 hyperlink,
  // whose target the screen does not show (linkHandler). Both open through openLink. An OSC 8
  // link of any scheme reaches it, so a Ctrl+click on one Kule will not open says why instead
  // of doing nothing; linkToOpen is what keeps it from opening.
  const linkHandler = { activate: (ev, uri) => openLink(c, ev, uri), hover: (ev, uri) => hover(ev, uri), leave, allowNonHttpProtocols: true };
  const term = new window.Terminal({ fontFamily: getComputedStyle(document.documentElement).getPropertyValue('--mono'), fontSize: 13, cursorBlink: true, scrollback: 5000, screenReaderMode: true, theme: theme(), allowProposedApi: true, linkHandler });
  const fit = new window.FitAddon.FitAddon();
  const search = new window.SearchAddon.SearchAddon();
  term.loadAddon(fit);
  term.loadAddon(search);
  term.loadAddon(new window.WebLinksAddon.WebLinksAddon((ev, uri) => openLink(c, ev, uri), { hover, leave }));
  term.open(el);
  try { term.loadAddon(new window.CanvasAddon.CanvasAddon()); } catch (x) { c.toast('The terminal draws without its canvas: ' + x.message, true); }
  // Keys the panel keeps for itself inside a terminal: find, and the panel's own toggle.
  term.attachCustomKeyEventHandler((e) => {
    const mod = isMac ? e.metaKey : e.ctrlKey;
    if (e.type === 'keydown' && mod && e.shiftKey && e.code === 'KeyF') { e.preventDefault(); openFind(); return false; }
    if (e.type === 'keydown' && e.code === 'Backquote' && e.ctrlKey) return false; // the app's toggle
    return true;
  });
  const t = { ...info, term, el, fit, search, ended: info.exited, es: null, pending: '', sending: false };
  terms.set(info.id, t);
  // Typing comes in keystrokes: what came in one turn of the event loop goes together, and one
  // request at a time, so the keys reach the shell in the order they were typed (two requests in
  // flight may be served in either order); what is typed meanwhile goes in the next one.
  const send = () => {
    if (t.sending || !t.pending || t.ended) return;
    t.sending = true;
    setTimeout(() => {
      const data = t.pending;
      t.pending = '';
      c.api('POST', `/api/terminals/${t.id}/input`, { data })
        .catch((x) => { term.write(`\r\n\x1b[31m${x.message}\x1b[0m\r\n`); })
        .finally(() => { t.sending = false; send(); });
    }, 0);
  };
  term.onData((d) => {
    if (t.ended) return;
    t.pending += d;
    send();
  });
  term.onResize(({ cols, rows }) => { if (!t.ended) c.api('POST', `/api/terminals/${t.id}/resize`, { cols, rows }).catch(() => {}); });
  t.es = new EventSource(`/api/terminals/${t.id}/stream`);
  t.es.addEventListener('out', (m) => term.write(b64bytes(m.data)));
  t.es.addEventListener('exit', (m) => {
    t.ended = true;
    t.es.close();
    term.write(`\r\n\x1b[2m[the shell ended with ${m.data}; close the tab or open a new terminal]\x1b[0m\r\n`);
    tabs(c);
  });
  t.es.onerror = () => { if (t.ended) return; t.es.close(); t.ended = true; term.write('\r\n\x1b[2m[the daemon went away: this shell ended]\x1b[0m\r\n'); tabs(c); };
  return t;
}

function show(id) {
  active = id;
  for (const t of terms.values()) t.el.hidden = t.id !== id;
  const t = terms.get(id);
  if (t) { requestAnimationFrame(() => { try { t.fit.fit(); } catch { /* not laid out yet */ } t.term.focus(); }); }
  tabs();
}

// typing says whether el is a field the person types in, other than a
// terminal's own input.
function typing(el) {
  return !!el && el !== document.body && el.matches('input, textarea, select, [contenteditable=""], [contenteditable="true"]') && !el.closest('.xterm');
}

let lastCtx = null;
function tabs(c = lastCtx) {
  if (!ui) return;
  const mine = [...terms.values()].filter((t) => t.task === taskOf);
  ui.tabs.replaceChildren(...mine.map((t) => {
    const b = c.h('button', { role: 'tab', class: 'ttab', 'aria-selected': String(t.id === active), 'data-term': t.id, title: t.shell, onclick: () => show(t.id) }, t.title + (t.ended ? ' (ended)' : ''));
    const x = c.h('button', { class: 'icon small-btn tclose', 'aria-label': `Close ${t.title}`, title: `Close ${t.title}`, onclick: (e) => { e.stopPropagation(); close(c, t.id); } }, '×');
    return c.h('span', { class: 'ttabwrap' }, b, x);
  }));
  ui.empty.hidden = mine.length > 0;
  ui.find.hidden = mine.length === 0;
}

async function open(c) {
  if (!c.task) { c.toast('Pick a task first'); return; }
  await load();
  const info = await c.api('POST', `/api/tasks/${c.task.id}/terminals`, { cols: 100, rows: 24 });
  attach(c, info);
  show(info.id);
}

async function close(c, id) {
  const t = terms.get(id);
  if (!t) return;
  if (t.es) t.es.close();
  terms.delete(id);
  t.term.dispose();
  t.el.remove();
  if (!t.ended) await c.api('DELETE', `/api/terminals/${id}`).catch(() => {});
  const next = [...terms.values()].find((x) => x.task === taskOf);
  if (next) show(next.id); else { active = null; tabs(c); }
}

function openFind() {
  ui.find.hidden = false;
  ui.findInput.focus();
  ui.findInput.select();
}
function find(back) {
  const t = terms.get(active);
  if (!t) return;
  const q = ui.findInput.value;
  if (!q) { ui.findState.textContent = ''; return; }
  const found = back ? t.search.findPrevious(q, { incremental: false }) : t.search.findNext(q, { incremental: false });
  ui.findState.textContent = found ? 'found' : 'not found';
}

registerPanel({
  id: 'terminal',
  title: 'Terminal',
  key: isMac ? 'Ctrl+`' : 'Mod+`',
  mount(el, c) {
    lastCtx = c;
    const h = c.h;
    ui = {
      tabs: h('div', { class: 'ttabs', role: 'tablist', 'aria-label': 'Terminals' }),
      screens: h('div', { class: 'tscreens' }),
      empty: h('p', { class: 'muted empty' }, 'No terminal yet. A terminal is your own shell in the task\'s copy, outside the sandbox (like Open terminal): what you change there shows under Review and reaches the folder only when you commit.'),
      findInput: h('input', { type: 'search', class: 'tfind-input', 'aria-label': 'Find in the terminal', placeholder: 'Find in the terminal', autocomplete: 'off', spellcheck: 'false' }),
      findState: h('span', { class: 'muted small', role: 'status', id: 'tfind-state' }),
    };
    ui.find = h('div', { class: 'tfind' }, ui.findInput,
      h('button', { class: 'ghost small-btn', 'aria-label': 'Find the previous match', onclick: () => find(true) }, '↑'),
      h('button', { class: 'ghost small-btn', 'aria-label': 'Find the next match', onclick: () => find(false) }, '↓'), ui.findState);
    ui.find.hidden = true;
    ui.findInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') { e.preventDefault(); find(e.shiftKey); }
      if (e.key === 'Escape') { e.preventDefault(); const t = terms.get(active); if (t) t.term.focus(); }
    });
    el.classList.add('terminal-panel');
    el.append(h('div', { class: 'tbar' }, ui.tabs, h('button', { class: 'ghost small-btn', id: 'btn-new-terminal', 'aria-label': 'New terminal in the task\'s copy', onclick: () => open(c).catch((x) => c.toast(x.message, true)) }, '+ New terminal'), h('span', { class: 'grow' }), ui.find), ui.empty, ui.screens);
    new ResizeObserver(() => { const t = terms.get(active); if (t && !t.el.hidden) try { t.fit.fit(); } catch { /* hidden */ } }).observe(ui.screens);
  },
  async refresh(c) {
    lastCtx = c;
    if (!c.task) return;
    if (taskOf !== c.task.id) {
      taskOf = c.task.id;
      // Shells of this task that the daemon runs and this page has not drawn (a reload).
      const list = await c.api('GET', `/api/tasks/${taskOf}/terminals`);
      if (list.length) await load();
      for (const info of list) if (!terms.has(info.id)) attach(c, info);
      const mine = [...terms.values()].filter((t) => t.task === taskOf);
      if (mine.length && !mine.some((t) => t.id === active)) { show(mine[0].id); return; }
      if (!mine.length) active = null;
      for (const t of terms.values()) t.el.hidden = t.id !== active;
    }
    tabs(c);
    const t = terms.get(active);
    // A refresh comes with every task event too: it takes the focus only
    // from nowhere in particular, never from a field the person types in
    // (Find here, the agent's prompt, a setting).
    if (t) requestAnimationFrame(() => { try { t.fit.fit(); } catch { /* not laid out */ } if (!typing(document.activeElement)) t.term.focus(); });
  },
});
