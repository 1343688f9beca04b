// Drives every server-to-agent channel of a server with the official TypeScript SDK
// client (with sampling and elicitation handlers) and prints what the client saw, as
// one JSON object, so a test can compare a gateway run with a direct one.
// Usage: node channels.mjs [--levels clean,warn,block] -- CMD ARGS...
//   (CMD is the server, or mcpgate gateway run ... -- server)
//        node channels.mjs [--levels ...] --url URL      (a Streamable HTTP endpoint)
// Output: {"listings": {...}, "channels": {"<channel>": {"<level>": observation}}, "stderr": "..."}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
const opts = dash >= 0 ? argv.slice(0, dash) : argv;
const [command, ...args] = dash >= 0 ? argv.slice(dash + 1) : [];
const opt = (k, d) => { const i = opts.indexOf(k); return i >= 0 ? opts[i + 1] : d; };
const levels = opt("--levels", "clean,warn,block").split(",");

let stderr = "";
const url = opt("--url");
const transport = url ? new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
transport.stderr?.on("data", (d) => { stderr += d.toString(); });
const client = new Client({ name: "channels", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: { form: {} } } });

let lastSampling = null, lastElicitation = null;
const logs = [];
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  lastSampling = req.params;
  return { role: "assistant", content: { type: "text", text: "ok" }, model: "test-model", stopReason: "endTurn" };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  lastElicitation = req.params;
  return { action: "decline" };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });

const out = { listings: {}, channels: {} };
const put = (ch, lv, v) => { (out.channels[ch] ??= {})[lv] = v; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const attempt = async (f) => { try { return await f(); } catch (e) { return { __error: String(e.message || e), code: e.code }; } };

try {
  await client.connect(transport);
  out.listings.tools = await attempt(() => client.listTools());
  out.listings.prompts = await attempt(() => client.listPrompts());
  out.listings.resources = await attempt(() => client.listResources());
  out.listings.templates = await attempt(() => client.listResourceTemplates());
  await attempt(() => client.setLoggingLevel("debug"));
  for (const lv of levels) {
    put("resources/read", lv, await attempt(() => client.readResource({ uri: `hostile://${lv}` })));
    put("prompts/get", lv, await attempt(() => client.getPrompt({ name: lv, arguments: { topic: "x" } })));
    put("completion/complete", lv, await attempt(() => client.complete({ ref: { type: "ref/prompt", name: lv }, argument: { name: "topic", value: "" } })));
    lastSampling = null;
    const s = await attempt(() => client.callTool({ name: "trigger", arguments: { channel: "sampling", level: lv } }));
    put("sampling/createMessage", lv, { received: lastSampling, result: s });
    lastElicitation = null;
    const e = await attempt(() => client.callTool({ name: "trigger", arguments: { channel: "elicitation", level: lv } }));
    put("elicitation/create", lv, { received: lastElicitation, result: e });
    logs.length = 0;
    await attempt(() => client.callTool({ name: "trigger", arguments: { channel: "log", level: lv } }));
    await sleep(100);
    put("notifications/message", lv, { received: logs.map((l) => l.data) });
    const progress = [];
    await attempt(() => client.callTool({ name: "trigger", arguments: { channel: "progress", level: lv } }, undefined,
      { onprogress: (p) => progress.push(p.message ?? null) }));
    await sleep(100);
    put("notifications/progress", lv, { received: progress });
  }
} catch (e) {
  out.error = String(e.message || e);
} finally {
  await client.close().catch(() => {});
}
out.stderr = stderr;
process.stdout.write(JSON.stringify(out) + "\n");
