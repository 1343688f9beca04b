// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) for the revision
// tests. argv[2] is JSON: {cmd: [argv of the stdio server or gateway] or url, mode:
// "legacy" | "auto" | "pin" (pin: 2026-07-28), list: whether to list tools first,
// warn: whether to call the warn tool}.
// It prints one JSON object: the negotiated version and, per step, the result or the
// error text.
import { v2Transport, stepper } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const cfg = JSON.parse(process.argv[2]);
const transport = await v2Transport(cfg);
const mode = cfg.mode === "pin" ? { pin: "2026-07-28" } : cfg.mode;
const client = new Client({ name: "revisions", version: "2.4.0" }, { versionNegotiation: { mode } });
const out = {};
const step = stepper(out);
try {
  await client.connect(transport);
  out.version = client.getNegotiatedProtocolVersion?.() ?? null;
  if (cfg.list) await step("tools", async () => (await client.listTools()).tools.map((t) => t.name));
  await step("echo", () => client.callTool({ name: cfg.prefix + "echo", arguments: { text: "hi" } }));
  await step("evil", () => client.callTool({ name: cfg.prefix + "evil", arguments: {} }));
  if (cfg.warn) await step("warn", () => client.callTool({ name: cfg.prefix + "warn", arguments: {} }));
  await step("prompt", () => client.getPrompt({ name: cfg.prefix + "p" }));
  await step("read", () => client.readResource({ uri: cfg.uri ?? "res:///a" }));
  if (cfg.discover) await step("discover", () => client.discover());
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
