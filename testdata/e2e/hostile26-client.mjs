// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// for the hostile-channel tests: argv[2] is JSON {cmd: [argv of the gateway] or url}.
// It declares elicitation (form), sampling with tools (without sampling.context) and roots; its
// handlers answer elicitation/create (accept, password "hunter2"), sampling/createMessage
// ("ok") and roots/list (file:///work), recording each request as it arrived. It
// discovers, listens for ask://x ("updated": the notifications/resources/updated it got),
// lists tools, calls poke, calls ask, ask_block, ask_sample, note, wipe and the confusable reаd_file, gets the
// prompts ask and ask_block, gets task t1 (tasks/get) and reads ask://x, ask://block and ask://sample, and
// prints one JSON object: per step the result or {error, code}, and "asked": per step
// the input requests the handlers got; over stdio, "stderr": what the command wrote there.
import { v2Transport } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const cfg = JSON.parse(process.argv[2]);
const transport = await v2Transport(cfg, "pipe");
let stderr = "";
transport.stderr?.on("data", (d) => { stderr += d.toString(); });
const client = new Client({ name: "hostile26-client", version: "2.4.0" },
  { capabilities: { elicitation: { form: {} }, sampling: { tools: {} }, roots: {}, extensions: { "io.modelcontextprotocol/tasks": {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = { asked: {} };
let asked = [];
client.setRequestHandler("elicitation/create", async (req) => {
  asked.push({ method: "elicitation/create", params: req.params });
  return { action: "accept", content: { password: "hunter2" } };
});
client.setRequestHandler("sampling/createMessage", async (req) => {
  asked.push({ method: "sampling/createMessage", params: req.params });
  return { model: "m", role: "assistant", content: { type: "text", text: "ok" } };
});
client.setRequestHandler("roots/list", async () => {
  asked.push({ method: "roots/list" });
  return { roots: [{ uri: "file:///work", name: "work" }] };
});
const step = async (name, f) => {
  asked = [];
  try {
    out[name] = await f();
  } catch (e) {
    out[name] = { error: String(e), code: e.code ?? null };
  }
  out.asked[name] = asked;
};
try {
  await client.connect(transport);
  out.version = client.getNegotiatedProtocolVersion?.() ?? null;
  out.instructions = client.getInstructions?.() ?? null;
  out.updated = [];
  client.setNotificationHandler("notifications/resources/updated", (n) => { out.updated.push(n.params); });
  const sub = await client.listen({ resourceSubscriptions: ["ask://x"] });
  out.honored = sub.honoredFilter;
  await step("tools", () => client.listTools());
  await step("poke", () => client.callTool({ name: "poke", arguments: {} }));
  await new Promise((r) => setTimeout(r, 300));
  await sub.close();
  await step("call", () => client.callTool({ name: "ask", arguments: {} }));
  await step("call_block", () => client.callTool({ name: "ask_block", arguments: {} }));
  await step("call_sample", () => client.callTool({ name: "ask_sample", arguments: {} }));
  await step("note", () => client.callTool({ name: "note", arguments: {} }));
  await step("wipe", () => client.callTool({ name: "wipe", arguments: {} }));
  await step("confusable", () => client.callTool({ name: "reаd_file", arguments: {} }));
  await step("prompt", () => client.getPrompt({ name: "ask" }));
  await step("prompt_block", () => client.getPrompt({ name: "ask_block" }));
  await step("read", () => client.readResource({ uri: "ask://x" }));
  await step("read_block", () => client.readResource({ uri: "ask://block" }));
  await step("task", async () => {
    const z = await import("zod");
    return client.request({ method: "tasks/get", params: { taskId: "t1" } }, z.object({}).passthrough());
  });
  await step("read_sample", () => client.readResource({ uri: "ask://sample" }));
} catch (e) {
  out.connect = String(e);
}
await client.close();
out.stderr = stderr;
console.log(JSON.stringify(out));
