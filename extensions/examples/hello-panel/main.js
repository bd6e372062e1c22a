/// <reference path="../../sdk/kule.d.ts" />
// A command and a panel. `kule ext run kule.hello-panel.count` prints the
// number of tasks; `kule ext run kule.hello-panel.greet Ada` greets Ada.

kule.commands.register('count', async () => {
  const tasks = await kule.tasks.list();
  await kule.notify(`${tasks.length} task(s)`);
  return { tasks: tasks.length };
});

kule.commands.register('greet', (args) => `Hello, ${(args && args[0]) || 'world'}!`);
