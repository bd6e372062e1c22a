// Runs in a sandboxed frame: it reaches Kule only by messages to its parent.
let next = 0;
const waiting = new Map();
window.addEventListener('message', (ev) => {
  const m = ev.data;
  if (!m || m.kule !== 1 || !waiting.has(m.id)) return;
  const { ok, fail } = waiting.get(m.id);
  waiting.delete(m.id);
  if (m.error) fail(new Error(m.error)); else ok(m.result);
});
const call = (method, ...args) => new Promise((ok, fail) => {
  const id = ++next;
  waiting.set(id, { ok, fail });
  parent.postMessage({ kule: 1, id, call: method, args }, '*');
});
const list = document.getElementById('list');
call('tasks.list').then((tasks) => {
  list.textContent = '';
  for (const t of tasks) {
    const li = document.createElement('li');
    li.textContent = `${t.id} ${t.name || ''} — ${t.folder}`;
    list.append(li);
  }
  if (!tasks.length) list.textContent = 'No tasks.';
}, (e) => { list.textContent = e.message; });
