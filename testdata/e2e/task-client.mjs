// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// for the task-result tests: argv[2] is JSON {cmd: [argv of the gateway] or url}. It
// calls note as a task ({task: {ttl}}), then gets the task by the id it was given
// (tasks/get), and prints {created, got}: each result, or {error}.
import { v2Transport, stepper } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const z = await import("zod");
const cfg = JSON.parse(process.argv[2]);
const transport = await v2Transport(cfg);
const client = new Client({ name: "task-client", version: "2.4.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = {};
const step = stepper(out);
try {
  await client.connect(transport);
  const any = z.object({}).passthrough();
  await step("created", () => client.request({ method: "tools/call", params: { name: "note", arguments: {}, task: { ttl: 60000 } } }, any));
  await step("got", () => client.request({ method: "tasks/get", params: { taskId: out.created?.task?.taskId } }, any));
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
