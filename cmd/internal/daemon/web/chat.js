// The agent chat panel: a conversation with an agent in the task's copy, apart from the
// command line. Enter sends the prompt, Shift+Enter adds a line, Mod+Enter sends too. It draws
// what this page hears of the task's agent turns (the daemon's event stream): the person's
// prompts, the agent's words, its tool calls and how each turn ended. Turns from before the
// page opened are in Live and the Timeline (their words are not kept by the daemon).

import { registerPanel } from './registry.js';
import { attachRecall } from './needs.js';

const isMac = /Mac|iPhone|iPad/.test(navigator.platform);
const chats = new Map(); // task id -> [{ who: 'you'|'agent'|'tool'|'end', text, agent }]
let ui = null, es = null, taskOf = null, lastCtx = null, recall = null;

function log(id) { if (!chats.has(id)) chats.set(id, []); return chats.get(id); }

function draw() {
  if (!ui || !lastCtx) return;
  const h = lastCtx.h;
  const items = taskOf ? log(taskOf) : [];
  ui.list.replaceChildren(...items.map((m) => h('li', { class: 'chat-' + m.who },
    h('span', { class: 'chat-who' }, m.who === 'you' ? `You → ${m.agent}` : m.who === 'agent' ? m.agent : m.who === 'tool' ? 'tool' : ''),
    h('div', { class: 'chat-text' }, m.text))));
  ui.empty.hidden = items.length > 0;
  ui.list.scrollTop = ui.list.scrollHeight;
}

function listen() {
  if (es) return;
  es = new EventSource('/api/events');
  es.addEventListener('run', (m) => {
    const ev = JSON.parse(m.data), d = ev.data || {};
    if (!d.agent) return;
    if (d.state === 'start') log(ev.task).push({ who: 'you', agent: d.agent, text: d.prompt || '' });
    if (d.state === 'end') log(ev.task).push({ who: 'end', text: `${d.agent}: the turn ${d.error ? 'failed · ' + d.error : 'ended'}${d.summary ? ' · the copy now: ' + d.summary : ''}` });
    if (ev.task === taskOf) draw();
  });
  es.addEventListener('agent', (m) => {
    const ev = JSON.parse(m.data), d = ev.data || {}, l = log(ev.task);
    const last = l[l.length - 1];
    if (d.type === 'text') {
      if (last && last.who === 'agent') last.text += d.text;
      else l.push({ who: 'agent', agent: (l.findLast((x) => x.who === 'you') || {}).agent || 'agent', text: d.text });
    } else if (d.type === 'step_start' && d.step) l.push({ who: 'tool', text: d.step.title || d.step.kind || 'a tool call' });
    else return;
    if (ev.task === taskOf) draw();
  });
  es.onerror = () => { es.close(); es = null; };
}

async function agents(c) {
  const as = await c.api('GET', '/api/agents').catch(() => []);
  const keep = ui.pick.value;
  ui.pick.replaceChildren(...as.map((a) => c.h('option', { value: a.name, disabled: !a.can_start }, a.can_start ? a.name : `${a.name} (cannot start yet)`)));
  if (as.some((a) => a.name === keep && a.can_start)) ui.pick.value = keep;
  else { const first = as.find((a) => a.can_start); if (first) ui.pick.value = first.name; }
  ui.none.hidden = as.some((a) => a.can_start);
  ui.send.disabled = ui.none.hidden === false;
}

async function send(c) {
  const text = ui.input.value.trim();
  if (!text || !c.task || !ui.pick.value) return;
  ui.input.value = '';
  recall.clear();
  try { await c.api('POST', `/api/tasks/${c.task.id}/agent`, { agent: ui.pick.value, prompt: text }); }
  catch (x) { ui.input.value = text; c.toast(x.message, true); }
}

registerPanel({
  id: 'chat',
  title: 'Agent chat',
  key: 'Mod+Shift+J',
  mount(el, c) {
    lastCtx = c;
    const h = c.h;
    ui = {
      list: h('ol', { class: 'chat-list', 'aria-label': 'The conversation with the agent', 'aria-live': 'polite' }),
      empty: h('p', { class: 'muted empty' }, 'Ask an agent to work in the task\'s copy. Its words and tool calls show here as they come; what it changes shows under Review. Turns from before this page opened are in Live and the Timeline.'),
      pick: h('select', { id: 'chat-agent', 'aria-label': 'The agent to ask' }),
      input: h('textarea', { id: 'chat-input', rows: '3', 'aria-label': 'Prompt for the agent', placeholder: `Ask the agent — Enter or ${isMac ? '⌘' : 'Ctrl'}+Enter sends, Shift+Enter adds a line`, spellcheck: 'true' }),
      send: h('button', { class: 'primary', id: 'chat-send', 'aria-label': 'Send the prompt to the agent' }, 'Send'),
      none: h('p', { class: 'muted small', hidden: true }, 'No agent can start here yet: kule agents says what each needs.'),
    };
    let shiftHeld = false;
    ui.input.addEventListener('keydown', (e) => {
      shiftHeld = e.shiftKey;
      if (e.key === 'Enter' && !e.shiftKey && !e.altKey) { e.preventDefault(); send(c); }
    });
    // Only Shift+Enter makes a new line, however the key reaches the page.
    ui.input.addEventListener('beforeinput', (e) => {
      if ((e.inputType === 'insertLineBreak' || e.inputType === 'insertParagraph') && !shiftHeld) e.preventDefault();
    });
    ui.send.addEventListener('click', () => send(c));
    el.classList.add('chat-panel');
    const form = h('div', { class: 'chat-form' }, ui.pick, ui.input, ui.send);
    el.append(ui.empty, ui.list, ui.none, form);
    // What memory recalls for the prompt being typed (needs.js).
    recall = attachRecall({ input: ui.input, agent: () => ui.pick.value, task: () => taskOf, before: form });
    listen();
  },
  async refresh(c) {
    lastCtx = c;
    taskOf = c.task ? c.task.id : null;
    listen();
    await agents(c);
    draw();
    ui.input.focus();
  },
});
