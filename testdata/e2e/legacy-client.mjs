// A v1 TypeScript SDK client (@modelcontextprotocol/sdk 1.32.2, MCP 2025-11-25) for
// the translation tests. argv[2] is JSON: {cmd: [argv of the gateway] or url, prefix:
// the tools' name prefix, uri: the resource to read, prompt: whether to get prompt
// p, confirm: whether to call confirm, answer: the elicitation answer}. It answers
// elicitation/create with answer after answerDelayMs (recording each message it got); with
// crash it calls crash and then echo again (echo2) and prints one JSON
// object: the server's capabilities and, per step, the result or the error text. With
// crashMarker (a file the server writes as it exits) the "crash" elicitation is
// answered only once the server is gone, and echo2 is retried while the restarted
// server is not up yet, so a busy machine changes no outcome.
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { stepper } from "./client-common.mjs";
const cfg = JSON.parse(process.argv[2]);
const transport = cfg.url
  ? new StreamableHTTPClientTransport(new URL(cfg.url))
  : new StdioClientTransport({ command: cfg.cmd[0], args: cfg.cmd.slice(1), env: { ...process.env }, stderr: "ignore" });
const client = new Client({ name: "legacy-client", version: "1.32.2" }, { capabilities: { elicitation: { form: {} } } });
const out = { elicited: [] };
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.elicited.push(req.params.message);
  if (cfg.crashMarker && req.params.message === "crash") await until(() => existsSync(cfg.crashMarker));
  if (cfg.answerDelayMs) await new Promise((r) => setTimeout(r, cfg.answerDelayMs));
  return cfg.answer ?? { action: "accept", content: { sure: true } };
});
const step = stepper(out);
// until resolves once cond() holds (checked every 50 ms, 60 s at most).
async function until(cond) {
  for (const end = Date.now() + 60000; !cond() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
}
try {
  await client.connect(transport);
  out.capabilities = client.getServerCapabilities();
  out.serverInfo = client.getServerVersion();
  await step("tools", async () => (await client.listTools()).tools.map((t) => t.name));
  await step("echo", () => client.callTool({ name: cfg.prefix + "echo", arguments: { text: "hi" } }));
  if (cfg.prompt) await step("prompt", () => client.getPrompt({ name: cfg.prefix + "p" }));
  if (cfg.uri) await step("read", () => client.readResource({ uri: cfg.uri }));
  if (cfg.confirm) await step("confirm", () => client.callTool({ name: cfg.prefix + "confirm", arguments: { what: "prod" } }));
  if (cfg.crash) {
    await step("crash", () => client.callTool({ name: cfg.prefix + "crash", arguments: {} }));
    // A request sent while the server restarts is refused at once: try again until
    // the restarted server answers (60 s at most).
    const deadline = Date.now() + 60000;
    await step("echo2", async () => {
      for (;;) {
        try {
          return await client.callTool({ name: cfg.prefix + "echo", arguments: { text: "again" } });
        } catch (e) {
          if (Date.now() > deadline) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    });
  }
  await step("ping", () => client.ping());
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
