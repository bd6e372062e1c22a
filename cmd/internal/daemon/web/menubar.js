// The menu bar: File, Edit, View, Task, Help. Every item is one of the app's commands (the same
// the palette and the shortcuts run) and shows the key the person set for it, read each time a
// menu opens, so a rebinding shows at once. Commands registered by other modules join View
// (their panels) or Task.

const menus = [
  ['File', ['task.new', 'group.new', '-', 'settings.open']],
  ['Edit', ['palette.open', 'cmdline.focus', 'task.rename', 'agent.pick']],
  ['View', ['view.live', 'view.review', 'view.timeline', 'view.*', 'view.files', '-', 'layout.left', 'layout.right', 'layout.bottom', 'layout.main', 'layout.move.left', 'layout.move.main', 'layout.move.right', 'layout.move.bottom', 'layout.reset', '-', 'task.next', 'task.prev', '-', 'theme.*']],
  ['Task', ['task.commit', 'task.approvecommit', 'task.rollback', 'task.undo', 'task.stop', '-', 'question.approve', 'question.deny', 'question.remember', '-',
    'task.up', 'task.down', 'task.group', 'task.wait', '-', 'task.delete', '*']],
  ['Help', ['help.keys', 'help.docs']],
];

// mountMenuBar draws the bar into el. app gives the commands and how to run and show them.
export function mountMenuBar(el, app) {
  const { h } = app;
  let openIdx = -1;
  const buttons = menus.map(([title], i) => h('button', { role: 'menuitem', 'aria-haspopup': 'menu', 'aria-expanded': 'false', class: 'mb-top', 'data-menu': title, onclick: (e) => { e.stopPropagation(); toggle(i); } }, title));
  const pop = h('div', { class: 'mb-pop menu', role: 'menu', hidden: true });
  el.replaceChildren(...buttons, pop);
  el.setAttribute('role', 'menubar');
  el.setAttribute('aria-label', 'Menu bar');

  const listed = new Set(menus.flatMap(([, ids]) => ids));
  function items(ids) {
    const out = [];
    for (const id of ids) {
      if (id === '-') { out.push(null); continue; }
      if (id === 'view.*') { for (const c of app.commands) if (c.id.startsWith('view.') && !listed.has(c.id)) out.push(c); continue; }
      if (id === 'theme.*') { for (const c of app.commands) if (c.id.startsWith('theme.')) out.push(c); continue; }
      if (id === '*') { for (const c of app.commands) if (!listed.has(c.id) && !c.id.startsWith('view.') && !c.id.startsWith('theme.') && !menus.some(([, ids]) => ids.includes(c.id))) out.push(c); continue; }
      const c = app.commands.find((x) => x.id === id);
      if (c) out.push(c);
    }
    return out;
  }
  function close() {
    openIdx = -1;
    pop.hidden = true;
    for (const b of buttons) b.setAttribute('aria-expanded', 'false');
  }
  function toggle(i, focusFirst = false) {
    if (openIdx === i) { close(); return; }
    openIdx = i;
    for (const [j, b] of buttons.entries()) b.setAttribute('aria-expanded', String(j === i));
    const list = items(menus[i][1]);
    pop.replaceChildren(...list.map((c) => {
      if (!c) return h('hr');
      const key = app.showKey(app.keyOf(c));
      const off = (c.task && !app.hasTask()) || app.offline();
      return h('button', { role: 'menuitem', 'data-cmd': c.id, disabled: off, 'aria-keyshortcuts': app.keyOf(c) || false,
        onclick: () => { close(); app.runCommand(c.id); } }, h('span', {}, c.title), key ? h('kbd', {}, key) : null);
    }));
    const r = buttons[i].getBoundingClientRect(), host = el.getBoundingClientRect();
    pop.style.left = `${r.left - host.left}px`; // through the CSSOM: the CSP allows no style attributes
    pop.hidden = false;
    if (focusFirst) pop.querySelector('button:not([disabled])')?.focus();
  }
  document.addEventListener('click', (e) => { if (openIdx >= 0 && !el.contains(e.target)) close(); });
  el.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && openIdx >= 0) { e.preventDefault(); const i = openIdx; close(); buttons[i].focus(); return; }
    const inPop = pop.contains(document.activeElement);
    if ((e.key === 'ArrowRight' || e.key === 'ArrowLeft') && (openIdx >= 0 || buttons.includes(document.activeElement))) {
      e.preventDefault();
      const cur = openIdx >= 0 ? openIdx : buttons.indexOf(document.activeElement);
      const next = (cur + (e.key === 'ArrowRight' ? 1 : -1) + buttons.length) % buttons.length;
      buttons[next].focus();
      if (openIdx >= 0) { close(); toggle(next, true); }
      return;
    }
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (!inPop) { const i = buttons.indexOf(document.activeElement); if (i >= 0) { if (openIdx !== i) toggle(i, true); else pop.querySelector('button:not([disabled])')?.focus(); } return; }
      const bs = [...pop.querySelectorAll('button:not([disabled])')];
      const at = bs.indexOf(document.activeElement);
      bs[(at + (e.key === 'ArrowDown' ? 1 : -1) + bs.length) % bs.length]?.focus();
    }
  });
}
