// Extensions in the control room: Settings → Extensions lists each installed extension with
// what it asks for (in words), its approval and its settings (editable, each typed by its
// manifest and checked again by the kernel); approved extensions' commands join the palette;
// Review shows extensions' notes under each file (reviewNotes, called by app.js's row). Everything goes through registry.js. Approving stays a person's act at the
// terminal (kule ext show, kule ext approve), where the package's sha256 is shown.

import { registerSettingsSection, registerCommand, registerPanel } from './registry.js';
import { ready as themesReady } from './themes.js';

async function fetchExtensions() {
  const r = await fetch('/api/extensions', { credentials: 'same-origin' });
  if (!r.ok) throw new Error(`extensions: ${r.status}`);
  return r.json();
}

function state(x) {
  if (!x.approved) return `waits for approval: ${x.reason}`;
  if (x.disabled) return 'approved, disabled';
  return 'approved';
}

registerSettingsSection({
  id: 'extensions',
  title: 'Extensions',
  async mount(el, c) {
    const { h } = c;
    el.append(h('p', { class: 'muted' }, 'Installed with kule ext install; each runs only once you approve its exact package (kule ext show ID, kule ext approve ID).'));
    let list;
    try { list = await fetchExtensions(); } catch (x) { el.append(h('p', { class: 'error' }, x.message)); return; }
    if (!list.length) { el.append(h('p', { id: 'ext-none' }, 'No extensions installed.')); return; }
    for (const x of list) {
      const perms = h('ul', { class: 'ext-perms' }, ...x.permissions.map((p) => h('li', {}, h('code', {}, p.name), ' ', p.says)));
      if (!x.permissions.length) perms.append(h('li', {}, 'asks for nothing'));
      const settings = x.settings.length ? settingsForm(h, c, x) : null;
      el.append(h('div', { class: 'ext', id: 'ext-' + x.id.replace(/\./g, '-') },
        h('h3', {}, `${x.name} `, h('code', {}, `${x.id} ${x.version}`)),
        x.description ? h('p', {}, x.description) : null,
        h('p', { class: 'ext-state' }, state(x)),
        h('p', { class: 'muted' }, `sha256 ${x.sha256}`),
        perms,
        settings,
        x.commands.length ? h('p', {}, 'Commands: ', x.commands.map((m) => m.title).join(', ')) : null,
        ...x.themes.filter((t) => t.usable).map((t) => h('button', { type: 'button', class: 'ext-theme', 'data-theme': `${x.id}/${t.id}`,
          onclick: () => useTheme(x.id, t.id).then(() => c.toast(`Theme: ${t.title}`), (e) => c.toast(e.message, true)) }, `Use theme ${t.title}`))));
    }
  },
});

// settingsForm edits an extension's settings: an input of the setting's type (a checkbox for
// bool, a number field, a text field), saved through the daemon (PUT
// /api/extensions/{id}/settings), where the kernel refuses a value not of the manifest's type.
// The extension reads the saved values from its next call on.
function settingsForm(h, c, x) {
  const ul = h('ul', { class: 'ext-settings' });
  for (const s of x.settings) {
    const cur = s.value !== undefined ? s.value : s.default;
    const inputId = `ext-set-${x.id.replace(/\./g, '-')}-${s.id}`;
    const input = h('input', { id: inputId, name: s.id, 'data-type': s.type });
    if (s.type === 'bool') { input.type = 'checkbox'; input.checked = cur === true; }
    else if (s.type === 'number') { input.type = 'number'; input.step = 'any'; input.value = cur === undefined ? '' : String(cur); }
    else { input.type = 'text'; input.value = cur === undefined ? '' : String(cur); input.maxLength = 2000; }
    ul.append(h('li', {}, h('label', { for: inputId }, `${s.title} (${s.id}, ${s.type})`), ' ', input,
      s.default !== undefined ? h('span', { class: 'muted' }, ` default ${JSON.stringify(s.default)}`) : null));
  }
  const save = h('button', { type: 'button', class: 'ext-save' }, 'Save settings');
  save.onclick = async () => {
    const body = {};
    for (const input of ul.querySelectorAll('input')) {
      const t = input.dataset.type;
      body[input.name] = t === 'bool' ? input.checked : t === 'number' ? (input.value === '' ? null : Number(input.value)) : input.value;
    }
    try {
      const r = await fetch(`/api/extensions/${encodeURIComponent(x.id)}/settings`, {
        method: 'PUT', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
      });
      const data = await r.json();
      if (!r.ok) throw new Error(data.error || String(r.status));
      c.toast(`${x.name}: settings saved`);
    } catch (e) { c.toast(e.message, true); }
  };
  return h('div', { class: 'ext-settings-form' }, ul, save);
}

// reviewNotes is the list of extensions' notes under one changed file of Review (null when it
// has none): each note's text, the entity it is about, and the extension that wrote it. Text
// only: a note never becomes markup.
export function reviewNotes(change) {
  if (!change || !Array.isArray(change.notes) || !change.notes.length) return null;
  // Not a list: the row's own li styles (a grid) would reach nested items.
  const ul = document.createElement('div');
  ul.className = 'ext-notes';
  ul.setAttribute('role', 'list');
  ul.setAttribute('aria-label', 'Notes from extensions');
  Object.assign(ul.style, { gridColumn: '2 / -1', margin: '2px 0', fontSize: '12px' });
  for (const n of change.notes) {
    const li = document.createElement('div');
    li.setAttribute('role', 'listitem');
    li.className = 'ext-note';
    if (n.entity) {
      const e = document.createElement('code');
      e.textContent = n.entity;
      li.append('• ', e, ': ');
    }
    if (!n.entity) li.append('• ');
    li.append(String(n.text));
    const by = document.createElement('span');
    by.className = 'muted';
    by.textContent = `  [${n.extension}]`;
    li.append(by);
    ul.append(li);
  }
  return ul;
}

// Themes: an approved extension's colours for the app's named parts. The daemon checks them
// (#rrggbb, known parts); they are checked here again before they touch the style.
const themeKey = 'kule.ext-theme';
const parts = new Set(['bg', 'panel', 'panel2', 'line', 'text', 'muted', 'accent', 'accent-text', 'warn', 'warn-bg', 'danger', 'danger-bg', 'ok', 'ok-bg', 'ask', 'ask-bg', 'focus', 'add', 'mod', 'del', 'mov']);

function clearTheme() {
  for (const p of parts) document.documentElement.style.removeProperty('--' + p);
}

async function useTheme(id, theme) {
  const r = await fetch(`/api/extensions/${encodeURIComponent(id)}/themes/${encodeURIComponent(theme)}`, { credentials: 'same-origin' });
  const t = await r.json();
  if (!r.ok) throw new Error(t.error || String(r.status));
  clearTheme();
  for (const [part, colour] of Object.entries(t.colors || {})) {
    if (parts.has(part) && /^#[0-9a-fA-F]{6}$/.test(colour)) document.documentElement.style.setProperty('--' + part, colour);
  }
  document.documentElement.style.colorScheme = t.dark ? 'dark' : 'light';
  localStorage.setItem(themeKey, JSON.stringify({ id, theme }));
}

registerCommand({ id: 'ext.theme.off', title: 'Theme: stop using the extension theme', run: () => { clearTheme(); localStorage.removeItem(themeKey); } });
// The app's own theme (themes.js, kept in themes.json) is applied first; the extension's theme
// in use is laid over it, and steps aside when the person picks another theme.
document.addEventListener('kule-theme', () => localStorage.removeItem(themeKey));
themesReady.then(() => {
  const saved = JSON.parse(localStorage.getItem(themeKey) || 'null');
  if (saved) return useTheme(saved.id, saved.theme);
}).catch(() => { clearTheme(); localStorage.removeItem(themeKey); });

// The bridge: each panel frame the app made belongs to one extension. A message is answered
// only when it comes from one of those frames (ev.source), and always for the frame's own
// extension, whatever the message says; the daemon checks the call against that extension's
// approved permissions. Answers go back to that frame alone.
const frames = new Map(); // the iframe elements the app made → their extension's id

function extensionOf(source) {
  for (const [f, id] of frames) if (source && f.contentWindow === source) return id;
  return null;
}

window.addEventListener('message', async (ev) => {
  const ext = extensionOf(ev.source);
  const m = ev.data;
  if (!ext || !m || m.kule !== 1 || typeof m.call !== 'string' || !Number.isInteger(m.id)) return;
  const reply = (v) => ev.source.postMessage({ kule: 1, id: m.id, ...v }, '*');
  try {
    const r = await fetch(`/api/extensions/${encodeURIComponent(ext)}/call`, {
      method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ method: m.call, args: Array.isArray(m.args) ? m.args : [] }),
    });
    const data = await r.json();
    if (!r.ok) reply({ error: data.error || String(r.status) }); else reply({ result: data.result });
  } catch (e) { reply({ error: String(e.message) }); }
});

function panelFrame(x, p) {
  const f = document.createElement('iframe');
  // No allow-same-origin: the page has an opaque origin, so no cookie, no storage, no
  // parent.document; no allow-top-navigation, allow-popups or allow-forms.
  f.setAttribute('sandbox', 'allow-scripts');
  f.setAttribute('referrerpolicy', 'no-referrer');
  f.className = 'ext-panel';
  Object.assign(f.style, { width: '100%', height: '70vh', border: '0' });
  f.title = p.title;
  f.src = p.url;
  return f;
}

// Commands and panels of approved, enabled extensions: commands in the palette as
// "ext.<id>.<command>", panels as tabs "x-<id>-<panel>".
fetchExtensions().then((list) => {
  for (const x of list) {
    if (!x.approved || x.disabled) continue;
    for (const p of x.panels) {
      if (!p.url) continue;
      registerPanel({
        id: `x-${x.id.replace(/\./g, '-')}-${p.id}`,
        title: p.title,
        mount(el) {
          const f = panelFrame(x, p);
          el.append(f);
          frames.set(f, x.id);
        },
        refresh() {},
      });
    }
    for (const m of x.commands) {
      registerCommand({
        id: `ext.${x.id}.${m.id}`,
        title: m.title,
        async run(c) {
          try {
            const r = await c.api('POST', `/api/extensions/${encodeURIComponent(x.id)}/commands/${encodeURIComponent(m.id)}`, { args: [] });
            c.toast(typeof r.result === 'string' ? r.result : JSON.stringify(r.result));
          } catch (e) { c.toast(e.message, true); }
        },
      });
    }
  }
}).catch(() => {});
