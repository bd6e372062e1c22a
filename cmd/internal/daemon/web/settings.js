// Settings' sections for what holds across the home: Agents, Policy, Remembered rules,
// Secrets, Budgets, Limits and Profile. Each reads and writes through the daemon, which checks
// what a person typed before the kernel keeps it (homesettings.go, profile.go). Appearance,
// Shortcuts and Questions are in index.html; Transports and Extensions come from their own
// modules.

import { registerSettingsSection } from './registry.js';

const errorBox = (h) => h('p', { class: 'error', role: 'alert' });

registerSettingsSection({
  id: 'agents',
  title: 'Agents',
  async mount(el, { h, api }) {
    el.append(h('p', { class: 'muted small' }, 'Which agents can start here, and what the others need. A profile of yours (agents.toml) runs once you approve it exactly as it is; any change waits for approval again. Try runs an agent that can start once in an empty folder of its own (nothing of your home, no keys, no hosts; as kule agents try NAME does) and lists the hosts it reached: the ones you tick go into its profile, which then waits for your approval.'));
    const list = h('ul', { class: 'setlist', id: 'set-agents' }, h('li', { class: 'muted' }, 'Loading…'));
    el.append(list);
    let agents;
    try { agents = await api('GET', '/api/agents'); } catch (x) { list.replaceChildren(h('li', { class: 'error' }, x.message)); return; }
    if (!agents.length) { list.replaceChildren(h('li', { class: 'muted' }, 'No agent profiles here.')); return; }
    list.replaceChildren(...agents.map((a) => {
      const more = h('div', { class: 'agent-more', hidden: true });
      const why = a.can_start ? 'can start here' : a.problem || (a.missing && a.missing.length ? 'needs ' + a.missing.join(', ') : 'cannot start here');
      const show = h('button', { type: 'button', class: 'ghost small-btn', 'aria-label': `Show the profile of ${a.name}` }, 'Show…');
      show.addEventListener('click', async () => {
        more.hidden = !more.hidden;
        if (more.hidden || more.childElementCount) return;
        try {
          const v = await api('GET', `/api/agents/${encodeURIComponent(a.name)}`);
          const p = v.profile;
          const line = (k, val) => (val && (!Array.isArray(val) || val.length) ? h('div', {}, h('span', { class: 'muted' }, k + ': '), h('code', {}, Array.isArray(val) ? val.join(' ') : String(val))) : null);
          more.append(line('runs', p.command), line('reaches', p.hosts), line('may write under ~', p.state), line('its login', p.login),
            line('keys put in by the proxy', p.keys ? Object.entries(p.keys).map(([k, hs]) => `${k} → ${hs.join(', ')}`) : null));
          if (v.needs_approval && !v.approved) {
            const err = errorBox(h);
            const ok = h('button', { type: 'button', class: 'warn', 'data-approve': a.name, 'aria-label': `Approve ${a.name} exactly as shown` }, 'Approve exactly this');
            ok.addEventListener('click', async () => {
              try { await api('POST', `/api/agents/${encodeURIComponent(a.name)}/approve`); ok.replaceWith(h('span', { class: 'ok-text' }, 'Approved: it runs until its profile changes.')); }
              catch (x) { err.textContent = x.message; }
            });
            more.append(h('div', { class: 'actions left' }, ok), err);
          } else more.append(h('p', { class: 'muted small' }, v.builtin && !v.needs_approval ? 'Built into Kule: it needs no approval.' : 'Approved at this content.'));
        } catch (x) { more.append(h('p', { class: 'error' }, x.message)); }
      });
      const status = h('span', { class: a.can_start ? 'ok-text' : 'muted' }, why);
      const trial = h('div', { class: 'agent-trial', hidden: true });
      const tryBtn = a.can_start ? h('button', { type: 'button', class: 'ghost small-btn', 'data-try': a.name, 'aria-label': `Try ${a.name} once in an empty folder and list the hosts it reaches` }, 'Try…') : null;
      if (tryBtn) tryBtn.addEventListener('click', () => runTrial(h, api, a.name, tryBtn, trial, async () => {
        // The profile changed: it waits for approval now, and Show reads it afresh.
        more.replaceChildren(); more.hidden = true;
        try { const n = (await api('GET', '/api/agents')).find((x) => x.name === a.name); if (n) { status.className = n.can_start ? 'ok-text' : 'muted'; status.textContent = n.can_start ? 'can start here' : n.problem || 'waits for your approval'; } } catch { /* the row keeps what it said */ }
      }));
      return h('li', { 'data-agent': a.name }, h('div', { class: 'setrow' }, h('strong', {}, a.name), status, h('span', { class: 'grow' }), tryBtn, show), trial, more);
    }));
  },
});

// runTrial runs one trial of an agent in the daemon (POST /api/agents/NAME/try) and draws what
// it reached into box: each host with a checkbox when it can go into the profile, and Keep the
// ticked hosts, which adds exactly those (POST /api/agents/NAME/hosts); then changed() runs.
async function runTrial(h, api, name, btn, box, changed) {
  btn.disabled = true;
  box.hidden = false;
  box.replaceChildren(h('p', { class: 'muted small', role: 'status' }, `Trying ${name} once in an empty folder of its own… this takes up to a few minutes.`));
  let v;
  try { v = await api('POST', `/api/agents/${encodeURIComponent(name)}/try`); }
  catch (x) { box.replaceChildren(h('p', { class: 'error', role: 'alert' }, x.message)); btn.disabled = false; return; }
  btn.disabled = false;
  const how = v.error ? h('p', { class: 'error', role: 'alert' }, `The trial's turn failed: ${v.error}. The hosts it reached before are listed below.`)
    : h('p', { class: 'muted small', role: 'status' }, `The trial ended (${(v.stop_reason || 'no reason given').replaceAll('_', ' ')}) after ${v.seconds.toFixed(1)} s; it may take at most ${v.limit}.`);
  const err = errorBox(h);
  const rows = v.hosts.map((x) => {
    const hp = `${x.host}:${x.port}`;
    const note = x.kept ? 'already in its profile' : x.passed ? 'let through' : x.can_keep ? 'refused: tick it to add it to the profile' : `refused (${x.rule || 'no rule'}); a profile's hosts open HTTPS (port 443) only`;
    const box = x.can_keep && v.personal ? h('input', { type: 'checkbox', value: x.host, id: `try-${name}-${x.host}`, 'data-host': x.host }) : null;
    return h('li', { 'data-host': hp }, h('label', { class: 'check', for: box ? box.id : null }, box, ' ', h('code', {}, hp), ' ', h('span', { class: 'muted small' }, `${note} · ${x.connections} ${x.connections === 1 ? 'connection' : 'connections'}`)));
  });
  const list = h('ul', { class: 'setlist trial-hosts', 'aria-label': `Hosts ${name} reached` }, ...(rows.length ? rows : [h('li', { class: 'muted' }, 'It reached for no host.')]));
  box.replaceChildren(h('p', {}, h('strong', {}, `Hosts ${name} reached in its trial`)), how, list);
  if (!v.hosts.some((x) => x.can_keep)) return;
  if (!v.personal) { box.append(h('p', { class: 'muted small' }, `${name} is built in: its hosts are not changed here. To change them, copy it into your agents.toml under another name.`)); return; }
  const keep = h('button', { type: 'button', class: 'warn', 'data-keep-hosts': name }, 'Keep the ticked hosts');
  list.addEventListener('change', () => { err.textContent = ''; });
  const done = h('p', { class: 'muted small', role: 'status', 'data-trial-done': name });
  keep.addEventListener('click', async () => {
    const hosts = [...list.querySelectorAll('input[type=checkbox]:checked')].map((i) => i.value);
    if (!hosts.length) { err.textContent = 'Tick the hosts it may reach first; nothing was changed.'; return; }
    try {
      const r = await api('POST', `/api/agents/${encodeURIComponent(name)}/hosts`, { trial: v.id, hosts });
      err.textContent = '';
      keep.disabled = true;
      for (const i of list.querySelectorAll('input[type=checkbox]')) {
        i.disabled = true;
        if (r.added.includes(i.value)) i.closest('li').querySelector('.muted').textContent = 'added to its profile';
      }
      done.textContent = r.added.length ? `Added ${r.added.join(', ')} to the hosts of ${name}. Its profile changed, so it waits for your approval: Show… and Approve exactly this.` : `${name} names those hosts already; nothing changed.`;
      await changed();
    } catch (x) { err.textContent = x.message; }
  });
  box.append(h('div', { class: 'actions left' }, keep), done, err);
}

registerSettingsSection({
  id: 'policy',
  title: 'Policy',
  async mount(el, { h, api }) {
    const err = errorBox(h);
    const radios = h('div', { class: 'radios col', role: 'radiogroup', 'aria-label': 'Built-in policy' });
    const own = h('textarea', { id: 'set-own-policy', class: 'mono policy', rows: '8', spellcheck: 'false', 'aria-label': 'Your own policy, in Cedar' });
    const ownState = h('p', { class: 'muted small', role: 'status' });
    const keep = h('button', { type: 'button', class: 'primary', id: 'set-own-keep', 'aria-label': 'Check your own policy and keep it' }, 'Check and keep');
    const drop = h('button', { type: 'button', class: 'ghost danger', id: 'set-own-drop', 'aria-label': 'Remove your own policy' }, 'Remove my own policy');
    el.append(h('p', { class: 'muted small' }, 'How careful Kule is with every task that has no policy of its own (a group can have one).'), radios,
      h('label', { for: 'set-own-policy' }, 'Your own policy (policy.cedar in Kule\'s home). While it exists it replaces the built-in one; it is checked against Kule\'s schema before it is kept, and never goes into a profile.'),
      own, ownState, h('div', { class: 'actions left' }, keep, drop), err);
    const draw = async () => {
      const p = await api('GET', '/api/policy');
      radios.replaceChildren(...p.choices.map((c) => {
        const r = h('input', { type: 'radio', name: 'set-policy', value: c, checked: p.choice === c });
        r.addEventListener('change', () => api('PUT', '/api/policy', { choice: c }).then(() => { err.textContent = ''; }).catch((x) => { err.textContent = x.message; }));
        return h('label', {}, r, ' ', c === 'careful' ? 'Careful: every change waits for you' : c === 'balanced' ? 'Balanced: ordinary edits pass; what can hurt waits for you' : c);
      }));
      const o = await api('GET', '/api/policy/own');
      own.value = o.text;
      ownState.textContent = o.exists ? 'Your own policy holds now, in place of the built-in one.' : 'No own policy: the built-in one holds.';
      drop.disabled = !o.exists;
    };
    keep.addEventListener('click', async () => {
      try { await api('PUT', '/api/policy/own', { text: own.value }); err.textContent = ''; await draw(); ownState.textContent = 'Checked and kept: your own policy holds now.'; }
      catch (x) { err.textContent = x.message; }
    });
    drop.addEventListener('click', async () => { try { await api('DELETE', '/api/policy/own'); err.textContent = ''; await draw(); } catch (x) { err.textContent = x.message; } });
    try { await draw(); } catch (x) { err.textContent = x.message; }
  },
});

registerSettingsSection({
  id: 'rules',
  title: 'Remembered rules',
  async mount(el, { h, api }) {
    const list = h('ul', { class: 'setlist', id: 'set-rules' });
    const said = h('p', { class: 'muted small', role: 'status', id: 'set-rules-done' });
    el.append(h('p', { class: 'muted small' }, 'What you approved and asked Kule to remember (Approve and remember). Forget takes one back, as kule rules forget N does in a terminal: what it let through asks you again. They never go into a profile.'), list, said);
    const draw = async () => {
      const rs = await api('GET', '/api/rules');
      list.replaceChildren(...(rs.length ? rs.map((r) => {
        const err = errorBox(h);
        const ask = h('div', { class: 'rule-ask', hidden: true });
        const forget = h('button', { type: 'button', class: 'ghost small-btn danger', 'data-forget': String(r.n), 'aria-label': `Forget rule ${r.n}: ${r.subject || 'every path'}` }, 'Forget…');
        forget.addEventListener('click', () => {
          const yes = h('button', { type: 'button', class: 'warn', 'data-forget-yes': String(r.n) }, 'Forget it');
          const no = h('button', { type: 'button', class: 'ghost', 'data-forget-no': String(r.n) }, 'Keep it');
          ask.replaceChildren(h('p', {}, `Forget this rule? ${r.asks}`), h('div', { class: 'actions left' }, no, yes));
          ask.hidden = false; forget.disabled = true; no.focus();
          no.addEventListener('click', () => { ask.hidden = true; ask.replaceChildren(); forget.disabled = false; forget.focus(); });
          yes.addEventListener('click', async () => {
            try {
              const g = await api('DELETE', `/api/rules/${r.n}`, { subject: r.subject, for: r.for, folder: r.folder });
              said.textContent = `Forgot: ${g.forgot.subject || 'every path'} (${g.forgot.for} in ${g.forgot.folder}). ${g.asks}`;
              await draw();
            } catch (x) { err.textContent = x.status === 409 ? x.message : `Nothing was forgotten: ${x.message}`; }
          });
        });
        return h('li', { 'data-rule': String(r.n), 'data-subject': r.subject }, h('div', { class: 'setrow' }, h('span', { class: 'muted' }, `${r.n}.`), h('code', {}, r.subject || 'every path'),
          h('span', {}, `lets ${r.for} through`), h('span', { class: 'muted small' }, `in ${r.folder}`), h('span', { class: 'grow' }), forget), ask, err);
      }) : [h('li', { class: 'muted' }, 'Nothing remembered yet.')]));
    };
    try { await draw(); } catch (x) { list.replaceChildren(h('li', { class: 'error' }, x.message)); }
  },
});

registerSettingsSection({
  id: 'secrets',
  title: 'Secrets',
  async mount(el, { h, api }) {
    const list = h('ul', { class: 'setlist', id: 'set-secrets' });
    el.append(h('p', { class: 'muted small' }, 'Keys Kule keeps and the proxy puts into requests to their hosts only; no run ever sees a value. Values are typed in a terminal, never in a page: kule secrets add NAME --host HOST, kule secrets remove NAME.'), list);
    try {
      const ss = await api('GET', '/api/secrets');
      list.replaceChildren(...(ss.length ? ss.map((s) => h('li', { 'data-secret': s.name }, h('div', { class: 'setrow' }, h('code', {}, s.name), h('span', { class: 'muted' }, '→ ' + (s.hosts || []).join(', '))))) : [h('li', { class: 'muted' }, 'No secrets kept.')]));
    } catch (x) { list.replaceChildren(h('li', { class: 'error' }, x.message)); }
  },
});

registerSettingsSection({
  id: 'budgets',
  title: 'Budgets',
  async mount(el, { h, api }) {
    const err = errorBox(h);
    const amount = h('input', { id: 'set-daily-amount', type: 'number', min: '0', step: '0.01', 'aria-label': 'Daily budget amount' });
    const cur = h('input', { id: 'set-daily-currency', maxlength: '3', value: 'USD', 'aria-label': 'Currency (three capitals)', class: 'narrow' });
    const state = h('p', { class: 'muted small', role: 'status' });
    const keep = h('button', { type: 'button', class: 'primary', id: 'set-daily-keep' }, 'Keep');
    const off = h('button', { type: 'button', class: 'ghost', id: 'set-daily-off' }, 'No daily budget');
    el.append(h('p', { class: 'muted small' }, 'What all tasks together may spend on agents in any 24 hours (kule daily-budget); agent runs stop starting once it is spent. A task\'s own budget is in its ⋮ menu (Budget…).'),
      h('label', { for: 'set-daily-amount' }, 'Daily budget'), h('div', { class: 'setrow' }, amount, cur, keep, off), state, err);
    const show = (b) => {
      if (b.daily) { amount.value = b.daily.amount; cur.value = b.daily.currency; state.textContent = `At most ${b.daily.amount.toFixed(2)} ${b.daily.currency} a day.`; }
      else state.textContent = 'No daily budget.';
    };
    keep.addEventListener('click', () => api('PUT', '/api/budget', { daily: { amount: Number(amount.value), currency: cur.value.trim().toUpperCase() } }).then((b) => { err.textContent = ''; show(b); }).catch((x) => { err.textContent = x.message; }));
    off.addEventListener('click', () => api('PUT', '/api/budget', { daily: null }).then((b) => { err.textContent = ''; amount.value = ''; show(b); }).catch((x) => { err.textContent = x.message; }));
    try { show(await api('GET', '/api/budget')); } catch (x) { err.textContent = x.message; }
  },
});

const limitFields = [
  ['cpu', 'CPU (cores)', '0.5'], ['memory_mib', 'Memory (MiB)', '64'], ['disk_mib', 'Disk growth (MiB)', '64'],
  ['time_minutes', 'One run\'s time (minutes)', '1'], ['idle_minutes', 'Idle before a run stops (minutes)', '1'], ['task_time_minutes', 'All runs of a task together (minutes)', '1'],
];
registerSettingsSection({
  id: 'limits',
  title: 'Limits',
  async mount(el, { h, api }) {
    const err = errorBox(h);
    const state = h('p', { class: 'muted small', role: 'status' });
    const inputs = Object.fromEntries(limitFields.map(([k, , step]) => [k, h('input', { id: 'set-lim-' + k, type: 'number', min: '0', step })]));
    const keep = h('button', { type: 'button', class: 'primary', id: 'set-limits-keep' }, 'Keep');
    el.append(h('p', { class: 'muted small' }, 'What each run of every task may take (kule limits); 0 is Kule\'s own default. A task\'s own limits are in its ⋮ menu (Limits…).'),
      h('div', { class: 'limits-grid' }, ...limitFields.flatMap(([k, label]) => [h('label', { for: 'set-lim-' + k }, label), inputs[k]])), h('div', { class: 'actions left' }, keep), state, err);
    keep.addEventListener('click', async () => {
      try {
        const body = Object.fromEntries(limitFields.map(([k]) => [k, Number(inputs[k].value || 0)]));
        const l = await api('PUT', '/api/limits', body);
        for (const [k] of limitFields) inputs[k].value = l[k];
        err.textContent = ''; state.textContent = 'Kept: the next run of every task takes them.';
      } catch (x) { err.textContent = x.message; }
    });
    try { const l = await api('GET', '/api/limits'); for (const [k] of limitFields) inputs[k].value = l[k]; } catch (x) { err.textContent = x.message; }
  },
});

const partTitles = {
  theme: 'Theme', own_themes: 'Your own themes', motion: 'Motion', shortcuts: 'Shortcuts', policy: 'Policy choice (balanced or careful)',
  daily_budget: 'Daily budget', limits: 'Limits', agents: 'Your agent profiles',
};
registerSettingsSection({
  id: 'profile',
  title: 'Profile',
  mount(el, { h, api }) {
    const err = errorBox(h);
    const boxes = (prefix, parts, on) => parts.map((p) => h('label', { class: 'check' }, h('input', { type: 'checkbox', value: p, id: `${prefix}-${p}`, checked: on }), ' ', partTitles[p] || p));
    const exp = h('div', { class: 'checks', id: 'profile-export-parts' }, ...boxes('pe', Object.keys(partTitles), true));
    const expBtn = h('button', { type: 'button', class: 'primary', id: 'profile-export' }, 'Export…');
    const file = h('input', { type: 'file', id: 'profile-file', accept: '.json,application/json', 'aria-label': 'A .kule-profile.json to import' });
    const shown = h('div', { id: 'profile-shown', class: 'profile-shown', hidden: true });
    const done = h('p', { id: 'profile-done', class: 'muted small', role: 'status' });
    el.append(h('p', { class: 'muted small' }, 'A .kule-profile.json carries the parts you tick to another machine. Secrets, remembered approvals and your own policy never go into one; an agent profile goes without its env values, and waits for approval on the machine that imports it.'),
      exp, h('div', { class: 'actions left' }, expBtn), h('label', { for: 'profile-file' }, 'Import a .kule-profile.json: it shows what the file holds, and nothing changes until you import the parts you tick.'), file, shown, done, err);
    expBtn.addEventListener('click', async () => {
      const parts = [...exp.querySelectorAll('input:checked')].map((i) => i.value);
      if (!parts.length) { err.textContent = 'Tick at least one part.'; return; }
      try {
        const p = await api('GET', '/api/profile?parts=' + parts.join(','));
        const url = URL.createObjectURL(new Blob([JSON.stringify(p, null, 2) + '\n'], { type: 'application/json' }));
        const a = h('a', { href: url, download: '.kule-profile.json', hidden: true });
        document.body.append(a); a.click(); a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        err.textContent = ''; done.textContent = `Exported: ${parts.map((x) => partTitles[x]).join(', ')}.`;
      } catch (x) { err.textContent = x.message; }
    });
    file.addEventListener('change', async () => {
      shown.hidden = true; shown.replaceChildren(); done.textContent = ''; err.textContent = '';
      const f = file.files && file.files[0];
      if (!f) return;
      let text, raw;
      try { text = await f.text(); raw = JSON.parse(text); } catch { err.textContent = 'That file is not JSON; nothing was imported.'; return; }
      try {
        const { holds } = await api('POST', '/api/profile/check', raw);
        if (!holds.length) { err.textContent = 'The profile holds nothing to import.'; return; }
        const parts = [...new Set(holds.map((x) => x.part))];
        const checks = h('div', { class: 'checks' }, ...parts.map((p) => h('div', {}, h('label', { class: 'check' }, h('input', { type: 'checkbox', value: p, id: 'pi-' + p, checked: true }), ' ', h('strong', {}, partTitles[p] || p)),
          h('ul', { class: 'muted small' }, ...holds.filter((x) => x.part === p).map((x) => h('li', {}, x.what, x.note ? ` — ${x.note}` : ''))))));
        const go = h('button', { type: 'button', class: 'warn', id: 'profile-import' }, 'Import the ticked parts');
        const cancel = h('button', { type: 'button', class: 'ghost', id: 'profile-cancel' }, 'Cancel');
        shown.append(h('p', {}, `${f.name} holds:`), checks, h('div', { class: 'actions left' }, cancel, go));
        shown.hidden = false;
        cancel.addEventListener('click', () => { shown.hidden = true; shown.replaceChildren(); file.value = ''; });
        go.addEventListener('click', async () => {
          const ticked = [...checks.querySelectorAll('input:checked')].map((i) => i.value);
          try {
            const r = await api('POST', '/api/profile/import', { file: raw, parts: ticked });
            shown.hidden = true;
            done.textContent = (r.done.length ? 'Imported: ' + r.done.join(', ') + '.' : 'Nothing imported.') + (r.not_done.length ? ' Not imported: ' + r.not_done.join('; ') + '.' : '') + ' Reload the page to see the theme and shortcuts.';
          } catch (x) { err.textContent = x.message; }
        });
      } catch (x) { err.textContent = x.message; }
    });
  },
});
