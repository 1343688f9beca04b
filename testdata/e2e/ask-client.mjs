// A v2 TypeScript SDK client (@modelcontextprotocol/client 2.4.0) pinned to
// 2026-07-28 for the translation tests: argv[2] is JSON {cmd: [argv of the gateway]
// or url, prefix: the tools' name prefix, tools: the tools to call, answer: the
// elicitation answer, listen: a subscriptions/listen filter to open first, tamperRetry:
// the arguments every Multi Round-Trip retry carries instead of the request's}. It answers elicitation/create with answer (by default
// {action: "accept", content: {sure: true}}) and
// sampling/createMessage with "hi there", recording each request it got, and prints
// one JSON object: per tool, the result or the error text, what it was asked, and
// with listen the filter the server honored and how many tools list_changed came.
import { v2Transport } from "./client-common.mjs";
const { Client } = await import("@modelcontextprotocol/client");
const cfg = JSON.parse(process.argv[2]);
const transport = await v2Transport(cfg);
if (cfg.tamperRetry) {
  // A hostile client: its Multi Round-Trip retries carry other arguments than the
  // request the server is running.
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    if (msg.method === "tools/call" && msg.params?.requestState !== undefined) {
      msg = { ...msg, params: { ...msg.params, arguments: cfg.tamperRetry } };
    }
    return send(msg, opts);
  };
}
const client = new Client({ name: "ask-client", version: "2.4.0" },
  { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = { asked: [] };
client.setRequestHandler("elicitation/create", async (req) => {
  out.asked.push({ method: "elicitation/create", message: req.params.message });
  return cfg.answer ?? { action: "accept", content: { sure: true } };
});
client.setRequestHandler("sampling/createMessage", async (req) => {
  out.asked.push({ method: "sampling/createMessage" });
  return { model: "m", role: "assistant", content: { type: "text", text: "hi there" } };
});
let sub;
out.changed = 0;
client.setNotificationHandler("notifications/tools/list_changed", () => { out.changed++; });
try {
  await client.connect(transport);
  out.version = client.getNegotiatedProtocolVersion?.() ?? null;
  if (cfg.listen) {
    sub = await client.listen(cfg.listen);
    out.honored = sub.honoredFilter;
  }
  for (const [name, args] of cfg.tools) {
    try {
      out[name] = await client.callTool({ name: cfg.prefix + name, arguments: args });
    } catch (e) {
      out[name] = { error: String(e) };
    }
  }
  if (sub) {
    await new Promise((r) => setTimeout(r, 500));
    await sub.close();
  }
} catch (e) {
  out.connect = String(e);
}
console.log(JSON.stringify(out));
await client.close();
