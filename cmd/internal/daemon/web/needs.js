// What waits for the person besides the questions and the interrupted runs, and what Kule
// recalls before a run. Needs you lists the graduation proposals (a question Kule proposes to
// ask no more, with the runs, tasks and days it saw: Accept makes the remembered rule as
// `kule rules accept` does, Not now sets it aside for this page), the demotions that withdrew a
// graduated rule, and the leased secrets a task has used up (Grant gives one more renewal as
// `kule secrets grant` does). The command line and the chat show, while a prompt for an agent
// is typed, the notes memory gives the agent and the budget it proposes, as `kule run` says
// them; advisory, the run never waits for them. Review says, under the notes, the extensions'
// notes that were refused or cut. All text: nothing here becomes markup.

document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href: '/needs.css' }));

let c = null; // { h, api, toast, tasks, taskTitle, select, changed }
const data = { proposals: [], demotions: [], spent_leases: [], problems: [] };
const notNow = new Set(); // proposal ids set aside for this page
const seenKey = 'kule.demotions.seen';
const seen = new Set(JSON.parse(localStorage.getItem(seenKey) || '[]'));
const demotionKey = (d) => `${d.run}:${d.category.folder}:${d.category.rule}:${d.category.subject || ''}`;

// init gives the module the page's helpers; changed() redraws Needs you and the task list.
export function init(ctx) {
  c = ctx;
}

let loading = null, stale = false;
const told = new Set(); // the demotions this page has listed
let listed = false; // whether the page has read the list once
export async function load() {
  if (!c) return;
  // A list read while something changed may predate the change: read again once it is in.
  if (loading) { stale = true; return loading; }
  loading = (async () => {
    try {
      do { stale = false; Object.assign(data, await c.api('GET', '/api/needs')); } while (stale);
    } finally { loading = null; }
    // A demotion made while the page is open is also told as a notice.
    for (const d of demotions()) {
      if (!told.has(demotionKey(d)) && listed) c.toast(`Kule asks again about ${category(d.category)}: ${d.why}, so its graduated rule was withdrawn`, true);
      told.add(demotionKey(d));
    }
    listed = true;
    c.changed();
  })();
  return loading;
}

// The daemon's events that can change the list: an accept or a grant (from this page or
// another), a run's end (a lease used up), a commit, undo or rollback (a review that demotes).
// The page's own event stream hands them on (app.js), so no connection more is held open.
export const events = ['needs', 'run', 'commit', 'undo', 'rollback'];
let soon = null;
export function onEvent(ev) {
  if (ev && ev.data && ev.data.state && ev.data.state !== 'end') return; // a run's start
  clearTimeout(soon);
  soon = setTimeout(() => load().catch(() => {}), 300);
}

const proposals = () => data.proposals.filter((p) => !notNow.has(p.id));
const demotions = () => data.demotions.filter((d) => !seen.has(demotionKey(d)));
export const count = () => proposals().length + demotions().length + data.spent_leases.length;

const day = (t) => new Date(t).toLocaleDateString();
const when = (t) => new Date(t).toLocaleString();
const taskName = (id) => { const t = c.tasks().find((x) => x.id === id); return t ? c.taskTitle(t) : id; };
const taskNamed = (id) => { const n = taskName(id); return n === id ? id : `${n} (${id})`; };
function category(cat) {
  const what = cat.subject ? `${cat.rule} for ${cat.subject}` : cat.rule;
  return `${what} in ${cat.folder}`;
}

// cards are the list items Needs you shows for what this module keeps.
export function cards() {
  if (!c) return [];
  return [...demotions().map(demotionCard), ...data.spent_leases.map(leaseCard), ...proposals().map(proposalCard)];
}

function proposalCard(p) {
  const { h } = c;
  const days = Math.max(1, Math.round((Date.now() - new Date(p.since)) / 86400000));
  return h('li', { class: 'qcard proposal', 'data-proposal': p.id, 'aria-label': `Proposal: ask no more about ${category(p.category)}` },
    h('div', { class: 'qt' }, `Ask no more about ${category(p.category)}?`),
    h('div', { class: 'qd' }, `You approved these changes and kept their commits ${p.successes} times in ${p.tasks} tasks since ${day(p.since)} (${days} day${days === 1 ? '' : 's'} ago), and each run succeeded. Accepting makes it a remembered rule; one failure in this category withdraws it.`),
    h('details', { class: 'evidence' },
      h('summary', {}, `The evidence: ${p.evidence.length} runs`),
      h('ul', {}, ...p.evidence.map((e) => h('li', { 'data-run': e.run },
        `run ${e.run} · task ${taskNamed(e.task)} · ended ${when(e.ended)} · committed ${when(e.kept_since)}, kept since`)))),
    h('div', { class: 'qm' }, h('span', {}, `${p.id} · graduation`), h('span', { class: 'left' }, 'kule rules proposals lists it too')),
    h('div', { class: 'qa' },
      h('button', { class: 'primary', 'aria-label': `Accept: ask no more about ${category(p.category)}`, title: `The same as kule rules accept ${p.id}`, onclick: () => accept(p).catch((x) => c.toast(x.message, true)) }, 'Accept'),
      h('button', { 'aria-label': `Not now: ${category(p.category)}`, title: 'Set aside on this page; Kule proposes it again later', onclick: () => { notNow.add(p.id); c.toast('Not now: Kule proposes it again when the page is opened next, and after more runs.'); c.changed(); } }, 'Not now')));
}

async function accept(p) {
  const r = await c.api('POST', `/api/proposals/${encodeURIComponent(p.id)}/accept`);
  c.toast(r.said);
  data.proposals = data.proposals.filter((x) => x.id !== p.id);
  c.changed();
  await load();
}

function demotionCard(d) {
  const { h } = c;
  return h('li', { class: 'qcard demotion', 'data-demotion': d.run, 'aria-label': `Demoted: ${category(d.category)}` },
    h('div', { class: 'qt' }, `Kule asks again about ${category(d.category)}`),
    h('div', { class: 'qd' }, `${d.why[0].toUpperCase()}${d.why.slice(1)} (run ${d.run}), so the rule accepted as ${d.withdrawn} was withdrawn: these changes wait for you again, and the count starts over.`),
    h('div', { class: 'qm' }, h('span', {}, 'graduation · demoted'), h('span', { class: 'left' }, when(d.at))),
    h('div', { class: 'qa' },
      h('button', { 'aria-label': `Noted: ${category(d.category)} asks again`, onclick: () => { seen.add(demotionKey(d)); localStorage.setItem(seenKey, JSON.stringify([...seen].slice(-200))); c.changed(); } }, 'Noted')));
}

function leaseCard(l) {
  const { h } = c;
  const hosts = (l.hosts || []).join(', ');
  const what = l.held
    ? `Its lease ran out at ${when(l.expired)}${l.renewed ? ` after ${l.renewed} renewal${l.renewed === 1 ? '' : 's'}` : ''} with no renewal left: requests to ${hosts} that need it are refused, and nothing is sent.`
    : `Its renewals are used up: the next run gets one lease${l.every ? ` (${l.every})` : ''}, then requests to ${hosts} that need it are refused.`;
  return h('li', { class: 'qcard lease', 'data-lease': `${l.task}/${l.secret}`, 'aria-label': `Spent lease of ${l.secret} on ${taskName(l.task)}` },
    h('div', { class: 'qt' }, `The lease of ${l.secret} is spent`),
    h('div', { class: 'qd' }, `${what} Grant gives one more renewal; kule secrets grant ${l.task} ${l.secret} --renew N gives more.`),
    h('div', { class: 'qm' }, h('span', {}, `${taskName(l.task)} · lease`), h('span', { class: 'left' }, l.held ? 'refused now' : 'at the next run')),
    h('div', { class: 'qa' },
      h('button', { class: 'primary', 'aria-label': `Grant one more renewal of ${l.secret} to ${taskName(l.task)}`, onclick: () => grant(l).catch((x) => c.toast(x.message, true)) }, 'Grant one renewal')));
}

async function grant(l) {
  const r = await c.api('POST', `/api/tasks/${l.task}/leases/${encodeURIComponent(l.secret)}/grant`, { renew: 1 });
  c.toast(r.said);
  await load();
}

// taskBadge is the task row's word for a spent lease (null when none).
export function taskBadge(t) {
  if (!c) return null;
  const spent = data.spent_leases.filter((l) => l.task === t.id);
  if (!spent.length) return null;
  return c.h('span', { class: 'badge wait', 'data-lease-task': t.id, title: `the lease of ${spent.map((l) => l.secret).join(', ')} is spent: Grant a renewal from Needs you, or kule secrets grant` }, 'lease spent');
}

// pending is what an interrupted run's card says of the questions it left unanswered, and
// what the resumed run's Live shows: their titles, as the agent gave them.
export function pendingText(r) {
  const ws = r.waiting || [];
  if (!ws.length) return '';
  return `${ws.length === 1 ? 'This question was' : `These ${ws.length} questions were`} still waiting when it stopped; the resumed agent is told: ${ws.map((w) => `“${w}”`).join(', ')}`;
}
export function pendingList(r) {
  const ws = r.waiting || [];
  if (!ws.length || !c) return null;
  const { h } = c;
  return h('div', { class: 'pending', 'aria-label': 'Questions still waiting when it stopped' },
    h('span', { class: 'muted small' }, 'Still waiting when it stopped (the resumed agent is told):'),
    h('ul', {}, ...ws.map((w) => h('li', {}, w))));
}

// noteWarnings says under Review's changes which extensions' notes were refused or cut.
export function noteWarnings(after, warnings) {
  let el = document.getElementById('r-note-warnings');
  if (!warnings || !warnings.length) { if (el) el.remove(); return; }
  if (!el) {
    el = document.createElement('div');
    el.id = 'r-note-warnings';
    el.className = 'notewarn';
    el.setAttribute('role', 'note');
    after.after(el);
  }
  const h = c.h;
  el.replaceChildren(
    h('p', {}, `Some notes from extensions are not shown (${warnings.length === 1 ? 'one warning' : warnings.length + ' warnings'}): Kule refused or cut them, and the changes above are as they are.`),
    h('ul', {}, ...warnings.map((w) => h('li', {}, w))));
}

// attachRecall shows, above a prompt box, what memory recalls for the prompt being typed to
// an agent. agent() names the chosen agent ('' for a shell command), task() the task's id. It
// returns { clear } for the form to call as the prompt is sent.
export function attachRecall({ input, agent, task, before }) {
  const box = document.createElement('div');
  box.className = 'recall';
  box.setAttribute('role', 'status');
  box.setAttribute('aria-label', 'What Kule recalls before this run');
  box.hidden = true;
  before.before(box);
  let timer = null, asked = 0;
  const clear = () => { clearTimeout(timer); asked++; box.hidden = true; box.replaceChildren(); };
  const ask = async () => {
    const prompt = input.value.trim(), id = task();
    if (!c || !id || !agent() || prompt.length < 3) { clear(); return; }
    const mine = ++asked;
    let r;
    try { r = await c.api('POST', `/api/tasks/${id}/recall`, { prompt }); } catch { return; }
    if (mine !== asked) return;
    draw(r, id, prompt);
  };
  const draw = (r, id, prompt) => {
    const { h } = c;
    const kids = [];
    if (r.error) kids.push(h('p', { class: 'muted small' }, r.error));
    if (r.notes.length) {
      kids.push(h('p', { class: 'recall-h' }, `Kule recalls ${r.notes.length === 1 ? 'one earlier failure' : r.notes.length + ' earlier failures'} on this folder; the agent is given ${r.notes.length === 1 ? 'it' : 'them'} after your prompt:`));
      kids.push(h('ul', { class: 'recall-notes' }, ...r.notes.map((n) => h('li', {}, n))));
    }
    if (r.budget) {
      const set = h('button', { class: 'ghost small', 'aria-label': 'Set the proposed budget as the task\'s', title: 'The task\'s budget becomes what its runs spent so far plus the proposal (kule run --accept-budget)',
        onclick: async () => {
          try { const x = await c.api('POST', `/api/tasks/${id}/recall/budget`, { prompt }); c.toast(x.said); ask(); } catch (x) { c.toast(x.message, true); }
        } }, 'Set this budget');
      kids.push(h('p', { class: 'recall-budget' }, `${r.budget[0].toUpperCase()}${r.budget.slice(1)}. ${r.cap ? `The task's budget now: ${r.cap}.` : 'The task has no budget of its own.'} `, set));
    }
    box.replaceChildren(...kids);
    box.hidden = kids.length === 0;
  };
  input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(ask, 350); });
  return { clear, ask };
}
