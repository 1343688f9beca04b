// Drives @modelcontextprotocol/server-everything's resources, prompts, completions,
// sampling and elicitation with the official TypeScript SDK client and prints what the
// client saw as one JSON object, so a test can compare a gateway run with a direct one.
// Usage: node everything.mjs -- CMD ARGS...
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
const [command, ...args] = argv.slice(argv.indexOf("--") + 1);
let stderr = "";
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
transport.stderr?.on("data", (d) => { stderr += d.toString(); });
const client = new Client({ name: "everything-check", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: { form: {} } } });
const seen = { sampling: [], elicitation: [] };
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  seen.sampling.push(req.params);
  return { role: "assistant", content: { type: "text", text: "sampled" }, model: "test-model", stopReason: "endTurn" };
});
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  seen.elicitation.push(req.params);
  return { action: "accept", content: { name: "Ada", check: true } };
});
const attempt = async (f) => { try { return await f(); } catch (e) { return { __error: String(e.message || e) }; } };
const out = {};
try {
  await client.connect(transport);
  const prompts = await client.listPrompts();
  const resources = await client.listResources();
  out.prompts = prompts;
  out.resources = resources;
  out.templates = await attempt(() => client.listResourceTemplates());
  out.read = [];
  for (const r of resources.resources.slice(0, 6)) out.read.push(await attempt(() => client.readResource({ uri: r.uri })));
  out.get = [];
  for (const p of prompts.prompts) {
    const a = {};
    for (const arg of p.arguments ?? []) a[arg.name] = arg.name === "resourceType" ? "Text" : arg.name === "resourceId" ? "1" : "x";
    out.get.push(await attempt(() => client.getPrompt({ name: p.name, arguments: a })));
    for (const arg of p.arguments ?? []) {
      out.get.push(await attempt(() => client.complete({ ref: { type: "ref/prompt", name: p.name }, argument: { name: arg.name, value: "" } })));
    }
  }
  out.sampling = await attempt(() => client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "Say hi", maxTokens: 20 } }));
  out.elicitation = await attempt(() => client.callTool({ name: "trigger-elicitation-request", arguments: {} }));
  out.seen = seen;
} catch (e) {
  out.error = String(e.message || e);
} finally {
  await client.close().catch(() => {});
}
out.stderr = stderr;
process.stdout.write(JSON.stringify(out) + "\n");
