// driver.mjs — the official TypeScript SDK client, driven line by line by a Go test.
//
//   node driver.mjs '{"url":"http://127.0.0.1:PORT/mcp"}'              (Streamable HTTP)
//   node driver.mjs '{"command":"mcpgate","args":["gateway","run",…]}'  (stdio)
//
// After connecting it prints {"connected":true,"capabilities":…}. Then each stdin line
// is one JSON command, answered by one stdout line with the same "id":
//   {"id":1,"method":"tools/list","params":{}}  → {"id":1,"result":…} or {"id":1,"error":{"code","message"}}
//   {"id":2,"op":"notes"}                       → {"id":2,"notes":["notifications/tools/list_changed",…]} (and clears them)
//   {"id":3,"op":"notices"}                     → {"id":3,"notices":[{method, params},…]}: every notification as it
//                                                 arrived, whether or not the SDK handles it (and clears them)
// With "roots":[{uri,name}] in the spec the client declares the roots capability and
// answers roots/list with them.
// The spawned gateway's stderr goes to this process's stderr.
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const spec = JSON.parse(process.argv[2]);
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const client = new Client({ name: "mcpgate-e2e-driver", version: "1.0.0" }, { capabilities: spec.roots ? { roots: { listChanged: true } } : {} });
if (spec.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: spec.roots }));
const notes = [];
client.fallbackNotificationHandler = async (n) => { notes.push(n.method); };
const transport = spec.url
  ? new StreamableHTTPClientTransport(new URL(spec.url))
  : new StdioClientTransport({ command: spec.command, args: spec.args, env: { ...process.env, ...(spec.env || {}) }, stderr: "inherit" });
try {
  await client.connect(transport);
} catch (e) {
  out({ connected: false, error: String(e && e.message || e) });
  process.exit(1);
}
const notices = [];
const deliver = transport.onmessage;
transport.onmessage = (m, extra) => {
  if (m.method !== undefined && m.id === undefined) notices.push({ method: m.method, params: m.params });
  return deliver(m, extra);
};
out({ connected: true, capabilities: client.getServerCapabilities() });

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.op === "notes") {
    out({ id: cmd.id, notes: notes.splice(0) });
    continue;
  }
  if (cmd.op === "notices") {
    out({ id: cmd.id, notices: notices.splice(0) });
    continue;
  }
  try {
    const result = await client.request({ method: cmd.method, params: cmd.params || {} }, ResultSchema, { timeout: cmd.timeoutMs || 20000 });
    out({ id: cmd.id, result });
  } catch (e) {
    out({ id: cmd.id, error: { code: e.code ?? null, message: String(e.message || e) } });
  }
}
await client.close();
