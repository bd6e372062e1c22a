// A panel runs in a sandboxed frame with no network and no access to the
// control room's page. It reaches Kule only through messages:
//   parent.postMessage({kule: 1, id, call: 'tasks.list', args: []}, '*')
// and the answer comes back as a message {kule: 1, id, result | error}.
let next = 0;
const waiting = new Map();
window.addEventListener('message', (ev) => {
  const m = ev.data;
  if (!m || m.kule !== 1 || !waiting.has(m.id)) return;
  const { ok, fail } = waiting.get(m.id);
  waiting.delete(m.id);
  if (m.error) fail(new Error(m.error)); else ok(m.result);
});
function call(method, ...args) {
  return new Promise((ok, fail) => {
    const id = ++next;
    waiting.set(id, { ok, fail });
    parent.postMessage({ kule: 1, id, call: method, args }, '*');
  });
}
call('tasks.list').then(
  (tasks) => { document.getElementById('out').textContent = `${tasks.length} task(s).`; },
  (e) => { document.getElementById('out').textContent = String(e.message); });
