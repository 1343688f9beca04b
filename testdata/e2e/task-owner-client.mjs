// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// for the task-owner test: argv[2] is JSON {url, token, create, taskIds}. With create it
// calls note as a task ({task: {ttl}}) first, and then gets and cancels the task it was
// given (tasks/get, tasks/cancel); then it gets and cancels each of taskIds. It prints
// {created, got, cancelled, tries: [{taskId, got, cancelled}]}: each result, or {error}.
const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
const z = await import("zod");
const cfg = JSON.parse(process.argv[2]);
const transport = new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: { Authorization: "Bearer " + cfg.token } } });
const client = new Client({ name: "task-owner-client", version: "2.4.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/tasks": {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = {};
// step puts f's result, or {error, code} (the JSON-RPC error code), under name.
const step = async (name, f) => {
  try {
    out[name] = await f();
  } catch (e) {
    out[name] = { error: String(e), code: e?.code ?? null };
  }
};
try {
  await client.connect(transport);
  const any = z.object({}).passthrough();
  if (cfg.create) {
    await step("created", () => client.request({ method: "tools/call", params: { name: "note", arguments: {}, task: { ttl: 60000 } } }, any));
    const taskId = out.created?.task?.taskId;
    await step("got", () => client.request({ method: "tasks/get", params: { taskId } }, any));
    await step("cancelled", () => client.request({ method: "tasks/cancel", params: { taskId } }, any));
  }
  out.tries = [];
  for (const taskId of cfg.taskIds || []) {
    const one = { taskId };
    for (const [name, method] of [["got", "tasks/get"], ["cancelled", "tasks/cancel"]]) {
      try {
        one[name] = await client.request({ method, params: { taskId } }, any);
      } catch (e) {
        one[name] = { error: String(e), code: e?.code ?? null };
      }
    }
    out.tries.push(one);
  }
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
