/// <reference path="../../sdk/kule.d.ts" />
// Review notes: "this adds a TODO" under a file whose new text has the
// marker (a setting, TODO by default), and "this changes a public API"
// under a Go entity whose name starts with a capital letter.

const marker = kule.settings.get('marker') || 'TODO';

kule.review.onNotes(async (review) => {
  const notes = [];
  for (const e of review.effects) {
    if (e.kind === 'add' || e.kind === 'modify') {
      if (e.path.endsWith('.go') || e.path.endsWith('.md') || e.path.endsWith('.txt') || e.path.endsWith('.js')) {
        try {
          const text = await kule.files.read(review.task, e.path);
          if (text.includes(marker)) notes.push({ path: e.path, text: `this adds a ${marker}` });
        } catch (err) {
          // Binary or too large: no note.
        }
      }
    }
    for (const name of e.entities || []) {
      const bare = name.replace(/^(func|method|type) /, '').replace(/^\([^)]*\)\s*/, '');
      if (e.path.endsWith('.go') && /^[A-Z]/.test(bare)) {
        notes.push({ path: e.path, entity: name, text: 'this changes a public API' });
      }
    }
  }
  return notes;
});
