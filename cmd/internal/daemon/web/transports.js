// Settings → Transports: the chat cockpits (Slack, Discord) of config.toml, whether this daemon
// drives each, and who may decide from them. Read only: tokens are typed in a terminal
// (kule transport add), never in a page.

import { registerSettingsSection } from './registry.js';

registerSettingsSection({
  id: 'transports',
  title: 'Transports',
  mount(el, ctx) {
    const { h, api } = ctx;
    const note = h('p', { class: 'hint' }, 'Launch, continue, approve and stop tasks from Slack or Discord. Set one up in a terminal: ',
      h('code', {}, 'kule transport add slack --channel ID --operator YOUR_USER_ID'), ' (docs/transports.md).');
    const list = h('div', { id: 'transports-list' }, 'Loading…');
    el.append(list, note);
    api('GET', '/api/transports').then((ts) => {
      if (!ts.length) { list.replaceChildren(h('p', { id: 'transports-none' }, 'No transports.')); return; }
      list.replaceChildren(h('table', {},
        h('thead', {}, h('tr', {}, ...['Service', 'Channel', 'Operators', 'Folder', 'Agent', 'State'].map((x) => h('th', {}, x)))),
        h('tbody', {}, ...ts.map((t) => h('tr', { 'data-transport': t.name },
          h('td', {}, t.name), h('td', {}, t.channel), h('td', {}, (t.operators || []).join(', ')),
          h('td', {}, t.folder || '—'), h('td', {}, t.agent || '—'),
          h('td', { class: 'transport-state' }, t.problem ? 'not started: ' + t.problem : (t.connected ? 'connected' : 'not connected (kule transport test ' + t.name + ')')))))));
    }).catch((x) => list.replaceChildren(h('p', { class: 'error' }, x.message)));
  },
});
