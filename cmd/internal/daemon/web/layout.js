// The window's layout: four regions — left, main, right, bottom — each holding panels as
// tabs. A tab is dragged to another region (or, while dragging, onto the edge where a hidden
// region would be), or moved from its menu by keyboard (Shift+F10 on the focused tab); a region is hidden, shown and resized; the main area and the bottom panel
// are never hidden together. The layout is kept in layout.json in Kule's home (GET/PUT/DELETE
// /api/layout), so every browser of the person's opens the same window.

export const regions = ['left', 'main', 'right', 'bottom'];
const names = { left: 'the left side', main: 'the main area', right: 'the right side', bottom: 'the bottom panel' };
const minSize = 120;

// Where a panel goes when layout.json does not name it.
const homes = { tasks: 'left', chat: 'right', terminal: 'bottom' };
const firstOrder = ['live', 'review', 'timeline', 'preview', 'files'];

export function defaults() {
  return {
    version: 1,
    regions: {
      left: { panels: ['tasks'], active: 'tasks', hidden: false, size: 290 },
      main: { panels: [...firstOrder], active: 'live', hidden: false, size: 0 },
      right: { panels: ['chat'], active: 'chat', hidden: true, size: 400 },
      bottom: { panels: ['terminal'], active: 'terminal', hidden: true, size: 300 },
    },
  };
}

let L = defaults();
const known = new Map(); // panel id -> { title, tab (button), view (element) }
let env = null; // { api, toast, onShow(ids) }
let saveTimer = null;
let loaded = false;

const el = (r) => document.getElementById('r-' + r);
const reg = (r) => (L.regions[r] ||= { panels: [], active: '', hidden: r !== 'main' && r !== 'left', size: 0 });
export const regionOf = (id) => regions.find((r) => reg(r).panels.includes(id)) || '';
const present = (r) => reg(r).panels.filter((id) => known.has(id));
const activeOf = (r) => { const ps = present(r); return ps.includes(reg(r).active) ? reg(r).active : ps[0] || ''; };

// isShown: the panel is the one shown in a region that is not hidden.
export function isShown(id) {
  const r = regionOf(id);
  return !!r && !reg(r).hidden && activeOf(r) === id;
}
// shownPanels are the panels on screen now, one per visible region.
export const shownPanels = () => regions.filter((r) => !reg(r).hidden).map(activeOf).filter(Boolean);

// addPanel makes a panel known: its tab and its view move into its region when drawn.
export function addPanel(id, title, tab, view) {
  known.set(id, { title, tab, view });
  if (!regionOf(id)) reg(homes[id] || 'main').panels.push(id);
  wireTab(id, tab);
  if (loaded) render();
}

export function init(e) {
  env = e;
  window.addEventListener('resize', () => { if (loaded) render(); });
  for (const s of document.querySelectorAll('.split[data-split]')) wireSplit(s);
}

// load reads layout.json; with none, or one that does not parse, the defaults apply.
export async function load() {
  try {
    const got = await env.api('GET', '/api/layout');
    if (got && got.regions && Object.keys(got.regions).length) merge(got);
  } catch (x) { env.toast(x.message, true); }
  loaded = true;
  render();
}

// merge takes a kept layout and adds the known panels it does not name to their homes.
function merge(got) {
  const base = defaults();
  const next = { version: 1, regions: {} };
  const named = new Set(regions.flatMap((r) => (got.regions[r] && got.regions[r].panels) || []));
  for (const r of regions) {
    const g = got.regions[r];
    // The file leaves out what is false or empty: a region it names is shown unless it says hidden.
    next.regions[r] = g ? { panels: [...(g.panels || [])], active: g.active || '', hidden: !!g.hidden, size: g.size || 0 } : { ...base.regions[r], panels: base.regions[r].panels.filter((p) => !named.has(p)) };
  }
  L = next;
  for (const id of known.keys()) if (!regionOf(id)) reg(homes[id] || 'main').panels.push(id);
  if (reg('main').hidden && reg('bottom').hidden) reg('main').hidden = false;
}

function save() {
  if (saveTimer) clearTimeout(saveTimer);
  saveTimer = setTimeout(() => {
    saveTimer = null;
    const out = { version: 1, regions: {} };
    for (const r of regions) {
      const g = reg(r);
      out.regions[r] = { panels: g.panels, active: g.panels.includes(activeOf(r)) ? activeOf(r) : '', hidden: !!g.hidden, size: g.size >= minSize ? Math.min(g.size, 4000) : 0 };
    }
    env.api('PUT', '/api/layout', out).catch((x) => env.toast(x.message, true));
  }, 200);
}

// render puts every known panel's tab and view into its region, in order, and shows one per
// region.
export function render() {
  for (const r of regions) {
    const box = el(r);
    if (!box) continue;
    const nav = box.querySelector(':scope > .rtabs');
    const body = box.querySelector(':scope > .rbody');
    const ps = present(r);
    const act = activeOf(r);
    nav.replaceChildren(...ps.map((id) => known.get(id).tab));
    for (const id of ps) {
      const { tab, view } = known.get(id);
      if (view.parentElement !== body) body.append(view);
      const on = id === act;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      view.hidden = !on;
    }
    box.querySelector(':scope > .rempty').hidden = ps.length > 0;
    box.hidden = !!reg(r).hidden;
    box.dataset.empty = String(!ps.length);
    const split = document.querySelector(`.split[data-split="${r}"]`);
    if (split) split.hidden = box.hidden;
    const size = reg(r).size >= minSize ? reg(r).size : defaults().regions[r].size;
    // A side never takes more than a third of the window, nor the bottom more than half of
    // it, whatever it was sized to in a larger one: the main area keeps room to work.
    if (r === 'bottom') box.style.height = Math.min(size, Math.floor(window.innerHeight / 2)) + 'px';
    else if (r !== 'main') box.style.width = Math.min(size, Math.max(minSize, Math.floor(window.innerWidth / 3))) + 'px';
  }
  document.body.dataset.mainHidden = String(!!reg('main').hidden);
}

function changed(showIds) {
  render();
  save();
  if (env) env.onShow(showIds || shownPanels());
}

// show brings a panel to the front of its region and shows the region.
export function show(id) {
  const r = regionOf(id);
  if (!r) return;
  reg(r).active = id;
  reg(r).hidden = false;
  changed([id]);
}

// togglePanel is a panel's own key: it shows the panel, and pressed again hides its region
// (or, in the main area, goes back to the panel shown before).
export function togglePanel(id, back) {
  const r = regionOf(id);
  if (isShown(id)) {
    if (r === 'main') { if (back && back !== id) show(back); return; }
    setHidden(r, true);
    return;
  }
  show(id);
}

// setHidden hides or shows a region. Hiding the main area or the bottom panel while the other is
// hidden shows the other: one of them always shows.
export function setHidden(r, hide) {
  const other = r === 'main' ? 'bottom' : r === 'bottom' ? 'main' : '';
  reg(r).hidden = hide;
  if (hide && other && reg(other).hidden) {
    reg(other).hidden = false;
    env.toast(`The main area and the bottom panel are never hidden together: ${names[other]} shows now.`);
  }
  if (hide && document.activeElement && el(r) && el(r).contains(document.activeElement)) document.activeElement.blur();
  changed();
}
export const toggle = (r) => setHidden(r, !reg(r).hidden);

// move puts a panel into another region (before the panel before, or last) and shows it there.
export function move(id, r, before) {
  if (!regions.includes(r) || !known.has(id)) return;
  const from = regionOf(id);
  if (from) reg(from).panels = reg(from).panels.filter((p) => p !== id);
  const ps = reg(r).panels;
  const i = before ? ps.indexOf(before) : -1;
  if (i >= 0) ps.splice(i, 0, id); else ps.push(id);
  reg(r).active = id;
  reg(r).hidden = false;
  changed([id]);
}

// reset is Reset the layout: layout.json goes and the defaults apply.
export async function reset() {
  await env.api('DELETE', '/api/layout');
  L = defaults();
  for (const id of known.keys()) if (!regionOf(id)) reg(homes[id] || 'main').panels.push(id);
  render();
  env.onShow(shownPanels());
}

// focusedPanel is the panel shown in the region that has the focus (the main area's when none).
export function focusedPanel() {
  const box = document.activeElement && document.activeElement.closest && document.activeElement.closest('.region[data-region]');
  return activeOf(box ? box.dataset.region : 'main');
}

// ---------- dragging a tab ----------
const drag = { id: null, x: 0, y: 0, on: false, tab: null };
function wireTab(id, tab) {
  if (tab.dataset.wired) return;
  tab.dataset.wired = '1';
  tab.dataset.panel = id;
  tab.draggable = false;
  tab.addEventListener('click', (e) => { if (drag.justDropped) { e.preventDefault(); e.stopImmediatePropagation(); drag.justDropped = false; return; } show(id); });
  tab.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    Object.assign(drag, { id, x: e.clientX, y: e.clientY, on: false, tab });
  });
  tab.addEventListener('keydown', (e) => {
    if (e.key === 'ContextMenu' || (e.key === 'F10' && e.shiftKey)) { e.preventDefault(); openMoveMenu(id, tab); }
  });
  tab.addEventListener('contextmenu', (e) => { e.preventDefault(); openMoveMenu(id, tab); });
}

// ---------- moving a tab by keyboard ----------
// A focused tab's menu (Shift+F10 or the menu key, or a right-click) lists the regions its
// panel can move to: the arrows pick one, Enter moves it there (kept in layout.json like a
// drag), Escape closes the menu. The focus stays on the tab, in its new region.
let moveMenu = null;
function closeMoveMenu(refocus) {
  if (!moveMenu) return;
  const { el: m, tab } = moveMenu;
  moveMenu = null;
  m.remove();
  if (refocus) tab.focus();
}
function openMoveMenu(id, tab) {
  closeMoveMenu(false);
  const from = regionOf(id);
  const m = document.createElement('div');
  m.className = 'menu tab-move';
  m.setAttribute('role', 'menu');
  m.setAttribute('aria-label', `Move ${known.get(id).title} to`);
  for (const r of regions) {
    if (r === from) continue;
    const b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('role', 'menuitem');
    b.dataset.moveTo = r;
    b.tabIndex = -1;
    b.textContent = `Move to ${names[r]}`;
    b.addEventListener('click', () => { closeMoveMenu(false); move(id, r); tab.focus(); holdFocus = tab; });
    m.append(b);
  }
  m.addEventListener('keydown', (e) => {
    const items = [...m.querySelectorAll('button')];
    const i = items.indexOf(document.activeElement);
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: items.length - 1 }[e.key];
    if (to !== undefined) { e.preventDefault(); items[(to + items.length) % items.length].focus(); return; }
    if (e.key === 'Escape' || e.key === 'Tab') { e.preventDefault(); e.stopPropagation(); closeMoveMenu(true); }
  });
  m.addEventListener('focusout', (e) => { if (moveMenu && moveMenu.el === m && !m.contains(e.relatedTarget)) closeMoveMenu(false); });
  document.body.append(m);
  // Below the tab, inside the window (above it for the bottom panel's tabs), through the CSSOM:
  // the CSP allows no style attributes.
  const t = tab.getBoundingClientRect(), size = m.getBoundingClientRect();
  Object.assign(m.style, { position: 'fixed', right: 'auto', left: Math.max(4, Math.min(t.left, window.innerWidth - size.width - 4)) + 'px',
    top: (t.bottom + size.height + 4 > window.innerHeight ? Math.max(4, t.top - size.height - 2) : t.bottom + 2) + 'px' });
  moveMenu = { el: m, tab };
  m.querySelector('button').focus();
}
document.addEventListener('pointerdown', (e) => { if (moveMenu && !moveMenu.el.contains(e.target)) closeMoveMenu(false); });
// The panels a move shows redraw, and some take the focus when they do (the chat's prompt):
// after a move by keyboard the focus stays on the moved tab until the person presses a key or
// the mouse, so the next Shift+F10 or arrow acts on it. Only a panel's own controls give it
// back; a dialog that opens meanwhile keeps the focus it takes.
let holdFocus = null;
document.addEventListener('focusin', (e) => {
  if (!holdFocus || e.target === holdFocus || moveMenu || !(e.target.closest && e.target.closest('.region[data-region]'))) return;
  const t = holdFocus;
  queueMicrotask(() => { if (holdFocus === t) t.focus(); });
}, true);
for (const ev of ['keydown', 'pointerdown']) document.addEventListener(ev, () => { holdFocus = null; }, true);
function targetAt(x, y) {
  const at = document.elementFromPoint(x, y);
  if (!at) return null;
  const zone = at.closest('.dropzone');
  if (zone) return { r: zone.dataset.region, before: null, box: zone };
  const box = at.closest('.region[data-region]');
  if (!box) return null;
  const t = at.closest('[role=tab][data-panel]');
  return { r: box.dataset.region, before: t && t.dataset.panel !== drag.id && box.contains(t) ? t.dataset.panel : null, box };
}
document.addEventListener('pointermove', (e) => {
  if (!drag.id) return;
  if (!drag.on && Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) < 6) return;
  if (!drag.on) {
    drag.on = true;
    document.body.classList.add('dragging-tab');
    drag.tab.classList.add('dragged');
    for (const z of document.querySelectorAll('#dropzones .dropzone')) z.hidden = !reg(z.dataset.region).hidden;
  }
  for (const b of document.querySelectorAll('.drop-target')) b.classList.remove('drop-target');
  const t = targetAt(e.clientX, e.clientY);
  if (t) t.box.classList.add('drop-target');
});
document.addEventListener('pointerup', (e) => {
  if (!drag.id) return;
  const { id, on, tab } = drag;
  drag.id = null;
  if (!on) return;
  document.body.classList.remove('dragging-tab');
  tab.classList.remove('dragged');
  for (const b of document.querySelectorAll('.drop-target')) b.classList.remove('drop-target');
  for (const z of document.querySelectorAll('#dropzones .dropzone')) z.hidden = true;
  drag.justDropped = true;
  setTimeout(() => { drag.justDropped = false; }, 0);
  const t = targetAt(e.clientX, e.clientY);
  if (t && (t.r !== regionOf(id) || t.before)) move(id, t.r, t.before);
});

// ---------- resizing a region ----------
function wireSplit(s) {
  const r = s.dataset.split;
  const apply = (size) => {
    const max = r === 'bottom' ? Math.floor(window.innerHeight / 2) : Math.floor(window.innerWidth / 3);
    reg(r).size = Math.round(Math.max(minSize, Math.min(size, Math.max(minSize, max))));
    s.setAttribute('aria-valuenow', String(reg(r).size));
    render();
  };
  s.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    s.setPointerCapture(e.pointerId);
    const box = el(r).getBoundingClientRect();
    const onMove = (m) => apply(r === 'left' ? m.clientX - box.left : r === 'right' ? box.right - m.clientX : box.bottom - m.clientY);
    const onUp = () => { s.removeEventListener('pointermove', onMove); s.removeEventListener('pointerup', onUp); save(); };
    s.addEventListener('pointermove', onMove);
    s.addEventListener('pointerup', onUp);
  });
  s.addEventListener('keydown', (e) => {
    const grow = { left: 'ArrowRight', right: 'ArrowLeft', bottom: 'ArrowUp' }[r];
    const shrink = { left: 'ArrowLeft', right: 'ArrowRight', bottom: 'ArrowDown' }[r];
    if (e.key !== grow && e.key !== shrink) return;
    e.preventDefault();
    const cur = el(r).getBoundingClientRect();
    apply((r === 'bottom' ? cur.height : cur.width) + (e.key === grow ? 20 : -20));
    save();
  });
}
