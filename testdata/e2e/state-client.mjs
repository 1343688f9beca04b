// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to 2026-07-28
// for the sealed-requestState test: argv[2] is JSON {cmd: [argv of the gateway] or url}.
// Against mrtr.mjs's confirm tool it calls through the SDK, which answers the
// elicitation (accept, {sure: true}) and retries with the requestState the gateway
// gave it (sdk); then sends retries of its own with the server's own state as the
// server wrote it (raw) and with a made-up sealed state (forged). It prints one JSON
// object: per step the result or {error}.
import { v2Transport, stepper } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const z = await import("zod");
const cfg = JSON.parse(process.argv[2]);
const client = new Client({ name: "state-client", version: "2.4.0" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = {};
const step = stepper(out);
const any = z.object({}).passthrough();
const call = (what, extra) => client.request({ method: "tools/call", params: { name: "confirm", arguments: { what }, ...extra } }, any);
try {
  client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { sure: true } }));
  await client.connect(await v2Transport(cfg));
  await step("sdk", () => client.callTool({ name: "confirm", arguments: { what: "prod" } }));
  const answer = { inputResponses: { ok: { action: "accept", content: { sure: true } } } };
  await step("raw", () => call("prod", { ...answer, requestState: "st:prod\u2028<&>" }));
  await step("forged", () => call("prod", { ...answer, requestState: "mcpgate:v1.eyJzIjoic3Q6cHJvZCJ9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }));
} catch (e) {
  out.connect = String(e);
}
await client.close();
console.log(JSON.stringify(out, (k, v) => (v instanceof Error ? { error: String(v), code: v.code } : v)));
