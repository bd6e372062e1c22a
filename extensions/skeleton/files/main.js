/// <reference path="./kule.d.ts" />
// {{NAME}}: a command, a panel (panel.html) and a review note.

kule.commands.register('hello', async () => {
  const tasks = await kule.tasks.list();
  return `Hello from ${kule.id}: ${tasks.length} task(s).`;
});

// Notes under the files of a review: here, every added file that says TODO
// in its name gets one.
kule.review.onNotes((review) =>
  review.effects
    .filter((e) => e.kind === 'add' && /todo/i.test(e.path))
    .map((e) => ({ path: e.path, text: 'this adds a TODO file' })));
