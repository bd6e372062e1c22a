// Themes: the named ones (style.css), the person's own (a named theme with colours of their
// own for named parts), and Motion. All kept in themes.json in Kule's home through the daemon
// (/api/themes), never in the browser's storage. An own theme is drawn by setting the app's
// CSS custom properties through the CSSOM (the page's CSP allows no style attributes), and
// while it is edited every change shows at once, with a warning for colour pairs too faint to
// read (WCAG 2 contrast under 4.5:1 for text, 3:1 for large marks).

export const named = [
  ['system', 'System'], ['light', 'Light'], ['dark', 'Dark'], ['coral', 'Coral'], ['nord', 'Nord'],
  ['solarized-light', 'Solarized Light'], ['contrast', 'High contrast (dark)'], ['contrast-light', 'High contrast (light)'],
];
// The parts an own theme colours, with what a person calls them.
export const parts = [
  ['bg', 'Background'], ['panel', 'Panels'], ['panel2', 'Raised panels'], ['line', 'Lines'], ['text', 'Text'], ['muted', 'Quiet text'],
  ['accent', 'Accent'], ['accent-text', 'Text on the accent'], ['ok', 'Passes'], ['ask', 'Asks'], ['danger', 'Danger'], ['focus', 'Focus ring'],
];
// The pairs read together, and the contrast each needs.
const pairs = [['text', 'bg', 4.5], ['text', 'panel', 4.5], ['muted', 'panel', 4.5], ['muted', 'bg', 4.5], ['accent-text', 'accent', 4.5], ['ask', 'panel', 3], ['danger', 'panel', 3], ['focus', 'bg', 3]];

export const settings = { theme: 'system', motion: 'system', own: [] };
let api = null;

// luminance and contrast as WCAG 2 defines them.
function luminance(hex) {
  const c = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
export function contrast(a, b) {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

// colourOf reads a part's colour as the page shows it now, as #rrggbb.
function colourOf(part) {
  const v = getComputedStyle(document.documentElement).getPropertyValue('--' + part).trim();
  if (/^#[0-9a-f]{6}$/i.test(v)) return v.toLowerCase();
  if (/^#[0-9a-f]{3}$/i.test(v)) return '#' + [...v.slice(1)].map((c) => c + c).join('').toLowerCase();
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(v);
  return m ? '#' + m.slice(1, 4).map((n) => Number(n).toString(16).padStart(2, '0')).join('') : '#000000';
}

// faint lists the pairs of colours too faint to read, in words.
export function faint(colours) {
  const out = [];
  const name = Object.fromEntries(parts);
  for (const [f, b, need] of pairs) {
    if (!colours[f] || !colours[b]) continue;
    const r = contrast(colours[f], colours[b]);
    if (r < need) out.push(`${name[f]} on ${name[b].toLowerCase()}: ${r.toFixed(2)}:1, needs ${need}:1`);
  }
  return out;
}

// apply shows a theme: a named one by its attribute, an own one as its base with its colours.
export function apply(id, preview) {
  const root = document.documentElement;
  for (const [p] of parts) root.style.removeProperty('--' + p);
  const own = preview || settings.own.find((o) => o.id === id);
  root.dataset.theme = own ? own.base : id;
  if (own) for (const [p, c] of Object.entries(own.colours || {})) root.style.setProperty('--' + p, c);
  root.dataset.motion = settings.motion;
  for (const r of document.querySelectorAll('input[name=theme]')) r.checked = r.value === id;
}

async function save() {
  const s = await api('PUT', '/api/themes', settings);
  Object.assign(settings, s);
}

// setTheme picks a theme and keeps the choice in themes.json.
export async function setTheme(id) {
  settings.theme = id;
  apply(id);
  document.dispatchEvent(new CustomEvent('kule-theme', { detail: id })); // an extension's theme steps aside
  await save();
}

// ready settles once the kept theme is applied: an extension's theme is laid over it after.
let settle;
export const ready = new Promise((r) => { settle = r; });

export async function initThemes(callApi) {
  api = callApi;
  try { Object.assign(settings, await api('GET', '/api/themes')); } catch (x) { settings.error = x.message; }
  apply(settings.theme);
  settle();
}

// mountAppearance draws Settings → Appearance: the themes, Motion, and the own-theme editor.
export function mountAppearance(el, h, toast) {
  const choices = h('div', { class: 'radios themes', role: 'radiogroup', 'aria-label': 'Theme' },
    [...named, ...settings.own.map((o) => [o.id, o.name])].map(([id, title]) => {
      const r = h('input', { type: 'radio', name: 'theme', value: id });
      r.checked = settings.theme === id;
      r.addEventListener('change', () => setTheme(id).catch((x) => toast(x.message, true)));
      return h('label', {}, r, ' ', title);
    }));
  const motion = h('div', { class: 'radios', role: 'radiogroup', 'aria-label': 'Motion' },
    [['system', 'As the system says'], ['on', 'On'], ['off', 'Off']].map(([v, title]) => {
      const r = h('input', { type: 'radio', name: 'motion', value: v });
      r.checked = settings.motion === v;
      r.addEventListener('change', async () => { settings.motion = v; apply(settings.theme); await save().catch((x) => toast(x.message, true)); });
      return h('label', {}, r, ' ', title);
    }));
  const editor = h('div', { class: 'theme-editor', hidden: true });
  const make = h('button', { type: 'button', class: 'ghost', id: 'btn-own-theme', 'aria-label': 'Make your own theme from the one shown' }, 'Make your own…');
  const imp = h('input', { type: 'file', accept: '.json,application/json', id: 'theme-import', 'aria-label': 'Import a .kule-theme.json' });
  const impBtn = h('button', { type: 'button', class: 'ghost', 'aria-label': 'Import a theme file' }, 'Import…');
  impBtn.addEventListener('click', () => imp.click());
  imp.hidden = true;
  imp.addEventListener('change', async () => {
    const f = imp.files[0];
    imp.value = '';
    if (!f) return;
    try {
      let o;
      try { o = JSON.parse(await f.text()); } catch { throw new Error(`${f.name} is not JSON; nothing was imported`); }
      o = await api('POST', '/api/themes/check', o);
      openEditor(o, `Imported from ${f.name}: look, then Save to keep it.`);
    } catch (x) { toast(x.message, true); }
  });
  const own = settings.own.find((o) => o.id === settings.theme);
  const exp = h('button', { type: 'button', class: 'ghost', 'aria-label': 'Export the own theme shown as a .kule-theme.json', hidden: !own }, 'Export…');
  exp.addEventListener('click', () => {
    const o = settings.own.find((x) => x.id === settings.theme);
    if (!o) return;
    const a = h('a', { download: `${o.id.slice(4)}.kule-theme.json`, href: URL.createObjectURL(new Blob([JSON.stringify(o, null, 2) + '\n'], { type: 'application/json' })) });
    document.body.append(a);
    a.click();
    a.remove();
  });
  const editOwn = h('button', { type: 'button', class: 'ghost', 'aria-label': 'Edit the own theme shown', hidden: !own }, 'Edit…');
  editOwn.addEventListener('click', () => openEditor(structuredClone(settings.own.find((x) => x.id === settings.theme)), ''));
  make.addEventListener('click', () => {
    const base = settings.theme === 'system' ? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light') : (settings.own.find((o) => o.id === settings.theme) || {}).base || settings.theme;
    const colours = {};
    for (const [p] of parts) colours[p] = colourOf(p);
    openEditor({ id: '', name: '', base, colours }, '');
  });

  function openEditor(o, note) {
    const warn = h('ul', { class: 'contrast-warn', role: 'status', 'aria-live': 'polite', id: 'theme-warn' });
    const name = h('input', { id: 'theme-name', value: o.name || '', placeholder: 'Its name', autocomplete: 'off', 'aria-label': 'Name of the theme' });
    const base = h('select', { id: 'theme-base', 'aria-label': 'The theme it starts from' }, named.filter(([id]) => id !== 'system').map(([id, t]) => h('option', { value: id }, t)));
    base.value = o.base;
    const err = h('p', { class: 'error', role: 'alert' });
    const preview = () => {
      const w = faint(o.colours);
      warn.replaceChildren(...w.map((x) => h('li', {}, '⚠ Too faint to read: ' + x)));
      apply('', { ...o });
    };
    base.addEventListener('change', () => { o.base = base.value; preview(); });
    const rows = parts.map(([p, title]) => {
      const inp = h('input', { type: 'color', value: o.colours[p] || colourOf(p), 'data-part': p, 'aria-label': `Colour of ${title.toLowerCase()}` });
      inp.addEventListener('input', () => { o.colours[p] = inp.value; preview(); });
      return h('label', { class: 'swatchrow' }, inp, ' ', title);
    });
    const ok = h('button', { type: 'button', class: 'primary', id: 'theme-save', 'aria-label': 'Save the theme' }, 'Save');
    const cancel = h('button', { type: 'button', class: 'ghost', 'aria-label': 'Cancel the theme' }, 'Cancel');
    cancel.addEventListener('click', () => { editor.hidden = true; apply(settings.theme); });
    ok.addEventListener('click', async () => {
      o.name = name.value.trim();
      if (!o.name) { err.textContent = 'Give it a name.'; return; }
      if (!o.id) o.id = 'own-' + (o.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'theme');
      const was = settings.own.findIndex((x) => x.id === o.id);
      const keep = settings.own.slice();
      if (was >= 0) keep[was] = o; else keep.push(o);
      try {
        const s = await api('PUT', '/api/themes', { ...settings, own: keep, theme: o.id });
        Object.assign(settings, s);
        apply(settings.theme);
        editor.hidden = true;
        toast(`Theme ${o.name} kept in themes.json`);
        el.replaceChildren();
        mountAppearance(el, h, toast);
      } catch (x) { err.textContent = x.message; }
    });
    editor.replaceChildren(h('p', { class: 'muted small' }, note || 'Every change shows at once; Save keeps it in themes.json.'),
      h('div', { class: 'row2' }, name, base), h('div', { class: 'swatches-grid' }, rows), warn, err, h('div', { class: 'actions' }, cancel, ok));
    editor.hidden = false;
    preview();
    name.focus();
  }

  el.append(h('div', { class: 'menu-label' }, 'Theme'), choices,
    h('div', { class: 'menu-label' }, 'Motion'), motion,
    h('div', { class: 'theme-actions' }, make, editOwn, exp, impBtn, imp), editor);
  if (settings.error) el.append(h('p', { class: 'error' }, settings.error));
}
