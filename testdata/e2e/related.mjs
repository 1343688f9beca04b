// Checks over raw Streamable HTTP which response stream carries each server request:
// initializes a session at URL, sends two tools/call of "trigger" at once (sampling,
// tags A and B, each delayed so both are in flight), answers every sampling request on
// whatever stream it arrives, and prints which tags each call's stream carried:
// {"A": ["A"], "B": ["B"]} when every request went to the stream of the call that
// caused it.
// Usage: node related.mjs URL TOOL
const [url, tool] = process.argv.slice(2);
let sid = null;
const headers = () => ({
  "content-type": "application/json", accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18", ...(sid ? { "mcp-session-id": sid } : {}),
});
// post sends one message and hands each message of the answer to onMessage until it
// returns true or the stream ends.
async function post(body, onMessage = async () => false) {
  const res = await fetch(url, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  sid ??= res.headers.get("mcp-session-id");
  if (res.status === 202) return;
  if (!(res.headers.get("content-type") || "").includes("text/event-stream")) {
    await onMessage(await res.json());
    return;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    for (let i; (i = buf.indexOf("\n\n")) >= 0;) {
      const data = buf.slice(0, i).split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      buf = buf.slice(i + 2);
      if (data && await onMessage(JSON.parse(data))) {
        await reader.cancel();
        return;
      }
    }
  }
}
await post({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: { sampling: {} }, clientInfo: { name: "related", version: "1" } } });
await post({ jsonrpc: "2.0", method: "notifications/initialized" });
const seen = { A: [], B: [] };
const call = (tag, id) => post({ jsonrpc: "2.0", id, method: "tools/call", params: { name: tool, arguments: { channel: "sampling", level: "clean", tag, delayMs: 300 } } },
  async (m) => {
    if (m.method === "sampling/createMessage") {
      seen[tag].push((/^\[(\w+)\]/.exec(m.params.systemPrompt) || [])[1] ?? "?");
      await post({ jsonrpc: "2.0", id: m.id, result: { role: "assistant", content: { type: "text", text: "ok" }, model: "m" } });
      return false;
    }
    return m.id === id;
  });
await Promise.all([call("A", 1), call("B", 2)]);
process.stdout.write(JSON.stringify(seen) + "\n");
