// An ACP agent built on the ACP TypeScript SDK (@agentclientprotocol/sdk),
// used by Kule's end-to-end test: on a prompt it writes a file through the
// client's fs/write_text_file, runs a command through terminal/create, reads
// a file back and reports each as a tool call. It needs no model.
import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const sessions = new Map();
const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));

async function prompt(params, cx) {
  const s = sessions.get(params.sessionId);
  const text = params.prompt.map((b) => b.text ?? "").join("");
  const update = (u) => cx.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
  const file = path.join(s.cwd, "hello.txt");
  await update({ sessionUpdate: "tool_call", toolCallId: "w1", title: "Write hello.txt", kind: "edit", status: "in_progress", locations: [{ path: file }] });
  await cx.request(acp.methods.client.fs.writeTextFile, { sessionId: params.sessionId, path: file, content: "hello from the sdk: " + text + "\n" });
  await update({ sessionUpdate: "tool_call_update", toolCallId: "w1", status: "completed" });

  await update({ sessionUpdate: "tool_call", toolCallId: "x1", title: "Run a command", kind: "execute", status: "in_progress", rawInput: { command: "echo made > cmd.txt" } });
  const t = await cx.request(acp.methods.client.terminal.create, { sessionId: params.sessionId, command: "/bin/sh", args: ["-c", "echo made > cmd.txt; echo done"] });
  const exit = await cx.request(acp.methods.client.terminal.waitForExit, { sessionId: params.sessionId, terminalId: t.terminalId });
  const out = await cx.request(acp.methods.client.terminal.output, { sessionId: params.sessionId, terminalId: t.terminalId });
  await cx.request(acp.methods.client.terminal.release, { sessionId: params.sessionId, terminalId: t.terminalId });
  await update({ sessionUpdate: "tool_call_update", toolCallId: "x1", status: exit.exitCode === 0 ? "completed" : "failed", content: [{ type: "terminal", terminalId: t.terminalId }] });

  let outside = "read";
  try {
    await cx.request(acp.methods.client.fs.readTextFile, { sessionId: params.sessionId, path: "/etc/hostname" });
  } catch (e) {
    outside = "refused " + e.code;
  }
  const back = await cx.request(acp.methods.client.fs.readTextFile, { sessionId: params.sessionId, path: file });
  await update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `output=${out.output.trim()} outside=${outside} back=${back.content.trim()}` } });
  return { stopReason: "end_turn" };
}

acp
  .agent({ name: "kule-writer-agent" })
  .onRequest("initialize", () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false } }))
  .onRequest("session/new", (ctx) => {
    const id = "w-" + Math.random().toString(16).slice(2);
    sessions.set(id, { cwd: ctx.params.cwd });
    return { sessionId: id };
  })
  .onRequest("session/prompt", (ctx) => prompt(ctx.params, ctx.client))
  .onNotification("session/cancel", () => {})
  .connect(stream);
