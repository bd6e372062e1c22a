// The Preview panel: a file of the task's copy drawn from its previewer's model (text lines,
// Markdown blocks, sheet cells, a document's paragraphs, a picture), never from the file's own
// markup. Picking lines, a heading, cells (drag over them), a paragraph or a region of a
// picture names a place; Ask (Mod+Shift+A) asks the agent about it now or adds it to the
// prompt as a chip. The daemon reads each place again before the agent is told of it.

import { registerPanel, registerCommand } from './registry.js';

// st survives redraws: the panel is drawn again whenever the task changes.
const st = { path: '', side: 'now', format: false, place: '', chips: [], el: null, ctx: null, askOpen: false, prompt: '', composed: '' };
const MAX_PLACES = 20;

// open shows path in the Preview panel (Files calls it when a file is picked; Review, for a
// changed file, with side 'both': before and now side by side).
export function open(path, setView, side = 'now') {
  st.path = path; st.side = side; st.format = false; st.place = ''; st.composed = '';
  setView('preview');
}

const colName = (n) => { let s = ''; while (n > 0) { n--; s = String.fromCharCode(65 + (n % 26)) + s; n = Math.floor(n / 26); } return s; };

async function draw() {
  const { el, ctx } = st;
  if (!el || !ctx) return;
  const { h, api, task } = ctx;
  if (!task || !st.path) { el.replaceChildren(h('p', { class: 'muted' }, 'Pick a file in Files (Mod+5) to preview it here.')); return; }
  const q = (side) => `/api/tasks/${task.id}/preview?path=${encodeURIComponent(st.path)}${st.format ? '&format=1' : ''}${side === 'before' ? '&side=before' : ''}`;
  let p;
  try { p = await api('GET', q(st.side === 'before' ? 'before' : 'now')); } catch (e) {
    el.replaceChildren(bar(h, null), h('p', { id: 'pv-error', class: 'bad', role: 'alert' }, e.message));
    return;
  }
  let body = h('div', { id: 'pv-body', class: 'pv-' + p.kind });
  render(h, task, p, body, st.side === 'before' ? 'before' : 'now');
  if (st.side === 'both') {
    // Before and now side by side, each from its previewer; places are picked in the file as
    // it is now, so the before column is shown but takes no picks.
    const was = h('div', { id: 'pv-before', class: 'pv-col', inert: '' }, h('h3', { class: 'pv-colhead' }, 'Before the task'));
    try {
      const b = await api('GET', q('before'));
      const bb = h('div', { class: 'pv-' + b.kind });
      render(h, task, b, bb, 'before', true);
      was.append(bb);
      markChanged(bb, body);
    } catch (e) {
      was.append(h('p', { class: 'muted' }, e.message));
    }
    body = h('div', { class: 'pv-compare' }, was, h('div', { class: 'pv-col' }, h('h3', { class: 'pv-colhead' }, 'Now'), body));
  }
  // The panel is drawn again on every event of the task: the Ask box the person may be typing
  // in is kept as it is, and its focus and caret put back, so no keystroke goes astray.
  const old = document.getElementById('pv-askbox');
  const ta = document.getElementById('pv-prompt');
  const typing = ta && document.activeElement === ta ? [ta.selectionStart, ta.selectionEnd] : null;
  const box = typing && old && el.contains(old) ? old : askBox(h);
  el.replaceChildren(bar(h, p), ...(p.notes || []).map((n) => h('p', { class: 'muted small pv-note' }, n)), body,
    ...[p.truncated ? h('p', { class: 'muted small' }, 'More than this is in the file; the preview stops here.') : null, box].filter(Boolean));
  if (typing) { ta.focus(); ta.setSelectionRange(typing[0], typing[1]); }
}

// markChanged marks what differs in the now column: a cell whose value is not the one at the
// same place before, a line whose text the before version does not have.
function markChanged(before, now) {
  const key = (td) => `${td.closest('table').dataset.sheet || ''}!${td.dataset.col}:${td.dataset.row}`;
  const cells = new Map([...before.querySelectorAll('td[data-col]')].map((td) => [key(td), td.textContent]));
  for (const td of now.querySelectorAll('td[data-col]')) if (cells.get(key(td)) !== td.textContent) td.classList.add('pv-changed');
  const lines = new Set([...before.querySelectorAll('.pv-line code')].map((c) => c.textContent));
  for (const c of now.querySelectorAll('.pv-line code')) if (!lines.has(c.textContent)) c.parentElement.classList.add('pv-changed');
  const paras = new Set([...before.querySelectorAll('.pv-para, .pv-heading')].map((x) => x.textContent));
  for (const x of now.querySelectorAll('.pv-para, .pv-heading')) if (!paras.has(x.textContent)) x.classList.add('pv-changed');
}

function bar(h, p) {
  const info = p ? `${p.kind}${p.language && p.language !== p.kind ? ', ' + p.language : ''} · ${p.size} bytes · ${p.previewer}` : '';
  return h('div', { class: 'pv-bar' },
    h('strong', { id: 'pv-path' }, st.path), h('span', { class: 'muted small' }, '  ' + info),
    h('button', { id: 'pv-side', title: 'The version before the task changed it, or now', onclick: () => { st.side = st.side === 'before' ? 'now' : 'before'; draw(); } }, st.side === 'before' ? 'Show now' : 'Show before'),
    h('button', { id: 'pv-compare', 'aria-pressed': String(st.side === 'both'), title: 'Before the task and now, side by side', onclick: () => { st.side = st.side === 'both' ? 'now' : 'both'; draw(); } }, 'Side by side'),
    p && (p.language === 'json' || p.language === 'xml') ? h('button', { id: 'pv-format', onclick: () => { st.format = !st.format; draw(); } }, st.format ? 'As written' : 'Format') : null,
    h('button', { id: 'pv-ask', title: 'Ask the agent about this place (Mod+Shift+A)', onclick: openAsk }, st.place ? `Ask about ${st.place}` : 'Ask about the whole file'));
}

function pick(place) {
  st.place = place;
  const b = document.getElementById('pv-ask');
  if (b) b.textContent = place ? `Ask about ${place}` : 'Ask about the whole file';
}

// ups are the current drawing's mouse-up handlers (a drag may end outside the panel); one
// listener on the window serves every redraw.
st.ups = [];
window.addEventListener('mouseup', (e) => { for (const f of st.ups) f(e); });

// render draws p into body; side names which version a picture is fetched from. A second
// rendering into the same drawing (the before column) keeps the first one's mouse-up handlers.
function render(h, task, p, body, side, more = false) {
  if (!more) st.ups = [];
  let lineFrom = 0, table = null, tkey = null, heads = [], drag = null;
  const sel = (cls) => { for (const x of body.querySelectorAll('.' + cls)) x.classList.remove(cls); };
  for (const b of p.blocks) {
    if (!b.row && table) { table = null; tkey = null; }
    if (b.line) {
      const n = b.line.n;
      const row = h('div', { class: 'pv-line', 'data-n': n }, h('span', { class: 'pv-n', 'aria-hidden': 'true' }, String(n)), h('code', {}, b.line.text));
      row.addEventListener('click', (e) => {
        if (!e.shiftKey || !lineFrom) lineFrom = n;
        const a = Math.min(lineFrom, n), z = Math.max(lineFrom, n);
        sel('on');
        for (const x of body.querySelectorAll('.pv-line')) { const k = Number(x.dataset.n); if (k >= a && k <= z) x.classList.add('on'); }
        pick(`${st.path}:${a === z ? a : a + '-' + z}`);
      });
      body.append(row);
    } else if (b.heading) {
      const lv = b.heading.level;
      heads = heads.filter((x) => x.level < lv).concat([{ level: lv, text: b.heading.text }]);
      const path = heads.map((x) => x.text).join(' › ');
      const el = h('h' + Math.min(lv + 1, 6), { class: 'pv-heading', title: 'Pick this section' }, b.heading.text);
      el.addEventListener('click', () => { sel('on'); el.classList.add('on'); pick(`${st.path}:#${path}`); });
      body.append(el);
    } else if (b.paragraph) {
      const para = b.paragraph;
      const el = h('p', { class: 'pv-para', style: para.level ? `margin-left:${para.level * 1.2}em` : null, 'data-number': para.number || null },
        p.kind === 'document' && para.number ? h('span', { class: 'pv-n muted small' }, `¶${para.number} `) : null,
        para.marker ? para.marker + ' ' : null,
        ...(para.runs || []).map((r) => h(r.code ? 'code' : r.bold ? 'strong' : r.italic ? 'em' : 'span', { title: r.link || null, class: r.link ? 'pv-link' : null }, r.text)));
      el.addEventListener('click', () => {
        sel('on'); el.classList.add('on');
        if (p.kind === 'document' && para.number) pick(`${st.path}:¶${para.number}`);
        else if (heads.length) pick(`${st.path}:#${heads.map((x) => x.text).join(' › ')}`);
      });
      body.append(el);
    } else if (b.code) {
      body.append(h('pre', { class: 'pv-code', 'data-language': b.code.language || null }, b.code.text));
    } else if (b.row) {
      const r = b.row, key = (r.sheet || '') + '/' + (r.table || 0);
      if (key !== tkey) {
        tkey = key;
        if (r.sheet) body.append(h('h3', { class: 'pv-sheet' }, r.sheet));
        table = h('table', { class: 'pv-table', 'data-sheet': r.sheet || null });
        table.append(h('tr', {}, h('th', {}, '')));
        body.append(table);
      }
      const head = table.firstChild;
      while (head.children.length <= r.cells.length) head.append(h('th', {}, colName(head.children.length)));
      const tr = h('tr', {}, h('th', {}, String(r.row)));
      r.cells.forEach((c, i) => {
        const f = r.formulas && r.formulas[i];
        const td = h('td', { 'data-col': i + 1, 'data-row': r.row, title: f ? '=' + f : null }, c);
        const sheet = r.sheet;
        td.addEventListener('mousedown', (e) => { e.preventDefault(); drag = { sheet, c: i + 1, r: r.row }; mark(sheet, drag, i + 1, r.row); });
        td.addEventListener('mouseover', () => { if (drag && drag.sheet === sheet) mark(sheet, drag, i + 1, r.row); });
        tr.append(td);
      });
      table.append(tr);
    } else if (b.image) {
      const im = b.image;
      const wrap = h('div', { class: 'pv-pic' });
      const img = h('img', { id: more ? null : 'pv-img', alt: `${st.path}${side === 'before' ? ' before the task' : ''}, ${im.width}×${im.height} pixels`, draggable: 'false',
        src: `/api/tasks/${task.id}/image?path=${encodeURIComponent(st.path)}&side=${side === 'before' ? 'before' : 'after'}` });
      const box = h('div', { class: 'pv-region', hidden: true });
      let from = null;
      const at = (e) => { const r = img.getBoundingClientRect(); return [Math.round(Math.max(0, Math.min(r.width, e.clientX - r.left)) * im.width / r.width), Math.round(Math.max(0, Math.min(r.height, e.clientY - r.top)) * im.height / r.height)]; };
      img.addEventListener('mousedown', (e) => { e.preventDefault(); from = at(e); });
      st.ups.push((e) => {
        if (!from) return;
        const to = at(e), x1 = Math.min(from[0], to[0]), y1 = Math.min(from[1], to[1]), x2 = Math.max(from[0], to[0]), y2 = Math.max(from[1], to[1]);
        from = null;
        if (x2 <= x1 || y2 <= y1) return;
        const s = img.getBoundingClientRect().width / im.width;
        Object.assign(box.style, { left: x1 * s + 'px', top: y1 * s + 'px', width: (x2 - x1) * s + 'px', height: (y2 - y1) * s + 'px' });
        box.hidden = false;
        pick(`${st.path}:${x1},${y1}-${x2},${y2}`);
      });
      wrap.append(img, box);
      body.append(h('p', { class: 'muted small' }, `${im.format.toUpperCase()} picture, ${im.width}×${im.height} pixels`), wrap);
    }
  }
  st.ups.push(() => { drag = null; });
  function mark(sheet, d, c, r) {
    const c1 = Math.min(d.c, c), c2 = Math.max(d.c, c), r1 = Math.min(d.r, r), r2 = Math.max(d.r, r);
    sel('on');
    for (const td of body.querySelectorAll('td[data-col]')) {
      const tc = Number(td.dataset.col), tr = Number(td.dataset.row);
      if (td.closest('table').dataset.sheet === (sheet || undefined) && tc >= c1 && tc <= c2 && tr >= r1 && tr <= r2) td.classList.add('on');
    }
    const range = `${colName(c1)}${r1}` + (c1 !== c2 || r1 !== r2 ? `:${colName(c2)}${r2}` : '');
    pick(`${st.path}:${sheet ? sheet + '!' : ''}${range}`);
  }
}

function askBox(h) {
  const chips = h('ul', { id: 'pv-chips', class: 'pv-chips', 'aria-label': 'Places the prompt names' });
  const ta = h('textarea', { id: 'pv-prompt', rows: 3, placeholder: 'Ask the agent about the places below…' });
  ta.value = st.prompt;
  ta.addEventListener('input', () => { st.prompt = ta.value; });
  const box = h('div', { id: 'pv-askbox', class: 'pv-askbox', hidden: !st.askOpen, role: 'dialog', 'aria-label': 'Ask the agent about a place' },
    ta, chips,
    h('div', {},
      h('button', { id: 'pv-asknow', onclick: askNow }, 'Ask now'),
      h('button', { id: 'pv-addchip', onclick: () => { addChip(); } }, 'Add the place to the prompt'),
      h('button', { onclick: () => { st.askOpen = false; box.hidden = true; } }, 'Close')),
    h('pre', { id: 'pv-composed', class: 'pv-composed', hidden: !st.composed }, st.composed));
  drawChips(h, chips);
  return box;
}

function drawChips(h, ul) {
  ul.replaceChildren(...st.chips.map((c, i) => h('li', { class: 'chip' }, c,
    h('button', { 'aria-label': `Remove ${c}`, onclick: () => { st.chips.splice(i, 1); drawChips(h, ul); } }, '×'))));
}

function current() { return st.place || st.path; }

function addChip() {
  const { h, toast } = st.ctx;
  const p = current();
  if (!p) return;
  if (st.chips.includes(p)) return;
  if (st.chips.length >= MAX_PLACES) { toast(`A prompt names at most ${MAX_PLACES} places.`, true); return; }
  st.chips.push(p);
  drawChips(h, document.getElementById('pv-chips'));
}

function openAsk() {
  const box = document.getElementById('pv-askbox');
  if (!box) return;
  if (!st.chips.length) addChip();
  st.askOpen = true;
  box.hidden = false;
  document.getElementById('pv-prompt').focus();
}

async function askNow() {
  const { api, task, toast } = st.ctx;
  if (!st.chips.length) addChip();
  const prompt = (document.getElementById('pv-prompt')?.value ?? st.prompt).trim() || 'Look at these places.';
  let r;
  try { r = await api('POST', `/api/tasks/${task.id}/about`, { prompt, places: st.chips }); } catch (e) { toast(e.message, true); return; }
  st.composed = r.prompt;
  const shown = document.getElementById('pv-composed');
  if (shown) { shown.textContent = r.prompt; shown.hidden = false; }
  const agent = document.getElementById('agent')?.value;
  if (!agent) { toast('Choose an agent on the command line (Mod+Alt+A) to ask it; the prompt is shown above.', true); return; }
  const places = st.chips; // their picture regions go as images to an agent that takes them
  st.chips = [];
  try { await api('POST', `/api/tasks/${task.id}/agent`, { agent, prompt: r.prompt, places }); } catch (e) { toast(e.message, true); }
}

// The panel's own styles are in preview.css: the page's policy takes stylesheets from the
// daemon only, never an inline <style>.
document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href: '/preview.css' }));

registerPanel({
  id: 'preview', title: 'Preview', key: 'Mod+4',
  mount(el, ctx) { st.el = el; st.ctx = ctx; },
  refresh(ctx) { st.ctx = ctx; return draw(); },
});

registerCommand({ id: 'preview.ask', title: 'Ask the agent about the picked place', key: 'Mod+Shift+A', task: true, field: true, run(ctx) { st.ctx = st.ctx || ctx; openAsk(); } });
