// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// for the tests of tasks with several servers: argv[2] is JSON {cmd: [argv of the
// gateway] or url, tools: [tool names]}. It reads the capabilities server/discover
// gave, lists the tools, calls each of tools as a task ({task: {ttl}}) with text
// "from <tool>", polls tasks/get of each task until it is no longer working (at most
// 50 gets), then calls the first tool once more with text "hold", answers that task
// (tasks/update with inputResponses {note}), gets it, cancels it (tasks/cancel) and
// waits up to 5 s for a notifications/tasks. It prints {capabilities, tools, created:
// [...], got: [...], held, updated, heldGot, cancelled, notes: [params of each
// notifications/tasks]}: each result, or {error}.
// The SDK refuses a result of resultType "task" (the extension's CreateTaskResult), so
// the task requests go on the SDK's transport, with the envelope (_meta) of the SDK's
// own tools/list, and their responses are taken off it before the SDK sees them.
import { v2Transport, stepper } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const cfg = JSON.parse(process.argv[2]);
const transport = await v2Transport(cfg);
const client = new Client({ name: "tasks26-client", version: "2.4.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const notes = [];
let envelope = {};
const waiting = new Map();
let next = 0;
// raw sends one request on the transport and resolves with its result, or rejects.
const raw = (method, params) => new Promise((resolve, reject) => {
  const id = `tasks26-${next++}`;
  const timer = setTimeout(() => { waiting.delete(id); reject(new Error(`${method}: no response in 20 s`)); }, 20000);
  waiting.set(id, (m) => { clearTimeout(timer); m.error ? reject(new Error(`${m.error.code} ${m.error.message}`)) : resolve(m.result); });
  transport.send({ jsonrpc: "2.0", id, method, params: { ...params, _meta: envelope } }).catch((e) => { waiting.delete(id); reject(e); });
});
const out = { created: [], got: [], notes };
const step = stepper(out);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
try {
  await client.connect(transport);
  const send = transport.send.bind(transport);
  transport.send = (m, o) => {
    if (m.method === "tools/list" && m.params?._meta) envelope = m.params._meta;
    return send(m, o);
  };
  const deliver = transport.onmessage;
  transport.onmessage = (m, extra) => {
    if (m.id !== undefined && waiting.has(m.id)) {
      const done = waiting.get(m.id);
      waiting.delete(m.id);
      return done(m);
    }
    if (m.method === "notifications/tasks") return notes.push(m.params);
    return deliver(m, extra);
  };
  out.capabilities = client.getServerCapabilities();
  await step("tools", async () => (await client.listTools()).tools.map((t) => t.name));
  const call = (tool, text) => raw("tools/call", { name: tool, arguments: { text }, task: { ttl: 60000 } });
  for (const tool of cfg.tools) {
    const i = out.created.length;
    await step("c", () => call(tool, `from ${tool}`));
    out.created[i] = out.c;
    delete out.c;
  }
  for (const created of out.created) {
    let got;
    for (let n = 0; n < 50; n++) {
      try {
        got = await raw("tasks/get", { taskId: created?.taskId });
      } catch (e) {
        got = { error: String(e) };
      }
      if (got.status !== "working") break;
      await sleep(50);
    }
    out.got.push(got);
  }
  await step("held", () => call(cfg.tools[0], "hold"));
  await step("updated", () => raw("tasks/update", { taskId: out.held?.taskId, inputResponses: { note: { action: "accept", content: { note: "ok" } } } }));
  await step("heldGot", () => raw("tasks/get", { taskId: out.held?.taskId }));
  await step("cancelled", () => raw("tasks/cancel", { taskId: out.held?.taskId }));
  for (let n = 0; n < 100 && notes.length === 0; n++) await sleep(50);
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
