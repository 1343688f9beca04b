// Channel checks: what a hostile server can put in front of the agent outside tools/call results.
// Usage: node check.mjs --bin PATH/TO/mcpgate [--payloads FILE] [-v]
// Needs @modelcontextprotocol/sdk 1.32.2 in a node_modules at or above this folder (testdata/e2e/node_modules).
// Run by internal/e2e TestChannelSuite.
// Prints one line per check: "ok  " (the gateway did what is expected) or "FAIL" with what it did.
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(k); return i >= 0 ? argv[i + 1] : d; };
const bin = resolve(opt("--bin"));
const payloads = resolve(opt("--payloads", join(here, "payloads.json")));
const verbose = argv.includes("-v");
const P = JSON.parse(readFileSync(payloads, "utf8"));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const BAD = /[\u001b\u0007\u009b\u009d\u200b-\u200d\u2060-\u2064\u202a-\u202e\u2066-\u2069]|[\u{E0000}-\u{E007F}]/u;
const strs = (v, o = []) => { if (typeof v === "string") o.push(v); else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) { o.push(k); strs(x, o); } return o; };
const hostile = (v) => strs(v).some((x) => BAD.test(x));
let passN = 0, failN = 0;
const report = (name, ok, got) => { ok ? passN++ : failN++; console.log(`${ok ? "ok  " : "FAIL"} ${name}${!ok || verbose ? "\n     got: " + String(got).slice(0, 600) : ""}`); };

async function open(env = {}, { config = null, pins = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "t3chan-"));
  const args = ["gateway", "run", "--filter-output", "--policies", dir];
  if (pins) args.push("--pins", join(dir, "pins.json"));
  if (config) { writeFileSync(join(dir, "cfg.json"), JSON.stringify(config)); args.push("--config", join(dir, "cfg.json")); }
  else args.push("--", process.execPath, join(here, "upstream.mjs"));
  const t = new StdioClientTransport({ command: bin, args, env: { ...process.env, PAYLOADS: payloads, ...env }, stderr: "pipe" });
  let err = ""; t.stderr?.on("data", (d) => { err += d; });
  const c = new Client({ name: "t3-channels", version: "1" }, { capabilities: { elicitation: { form: {}, url: {} }, sampling: { tools: {} } } });
  const seen = {};
  c.setRequestHandler(ElicitRequestSchema, async (r) => { seen.elicitation = r.params; return { action: "decline" }; });
  c.setRequestHandler(CreateMessageRequestSchema, async (r) => { seen.sampling = r.params; return { role: "assistant", model: "m", content: { type: "text", text: "fine" } }; });
  await c.connect(t);
  const audit = () => err.split("\n").map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter((e) => e && e.event_id && e.kind);
  return { c, seen, audit, dir, close: async () => { await c.close().catch(() => {}); } };
}
const rules = (recs, method) => recs.filter((e) => !method || e.method === method).flatMap((e) => e.rule_ids || []);
// A PII or secret finding (an e-mail address, an IP) is Info: it changes nothing the user sees, so it does not count as flagging.
const own = (r) => r.filter((x) => !/^(pii_|secret_)/.test(x));
const safe = async (p) => { try { return await p; } catch (e) { return { __error: e.message }; } };

// 1. initialize.instructions (clients such as opencode and hermes-agent put it into the system prompt)
{
  const g = await open();
  const ins = g.c.getInstructions() || "";
  await sleep(300);
  const recs = g.audit();
  report("initialize: instructions reach the client without escapes, Tags or hidden text", !hostile(ins), JSON.stringify(ins));
  report("initialize: instructions with an OSC 52 write, Tags and a chat-template token leave an audit record with findings",
    recs.some((e) => (e.method || "").startsWith("initialize") && own(e.rule_ids || []).length), JSON.stringify(recs.map((e) => [e.method, e.rule_ids])));
  await g.close();
}
// 2. tools/list: an HTML comment that talks to the model
{
  const g = await open({ LISTING: "comment" });
  const tl = await g.c.listTools(); await sleep(300);
  const t = tl.tools.find((x) => x.name === P.expect.commentTool);
  const r = rules(g.audit(), "tools/list");
  report("tools/list: a description whose HTML comment addresses the model is flagged (a non-PII finding on the listing)", own(r).length > 0,
    `rule_ids=${JSON.stringify(r)} description=${JSON.stringify(t?.description)}`);
  await g.close();
}
// 3. tools/list: tool names outside SEP-986's character set (a homoglyph of another tool's name, a trailing invisible character)
{
  const g = await open({ LISTING: "names" });
  const tl = await g.c.listTools(); await sleep(300);
  const names = tl.tools.map((x) => x.name);
  const odd = names.filter((n) => !/^[A-Za-z0-9_.\/-]{1,128}$/.test(n));
  const r = rules(g.audit(), "tools/list");
  report("tools/list: a homoglyph or invisible-character tool name is flagged or withheld", odd.length === 0 || own(r).length > 0,
    `names=${JSON.stringify(names)} rule_ids=${JSON.stringify(r)}`);
  await g.close();
}
// 4. tools/list: Tags in an inputSchema property name, a chat-template token in a default or example (regression guard)
{
  const g = await open({ LISTING: "schema" });
  const tl = await g.c.listTools(); await sleep(300);
  const t = tl.tools.find((x) => x.name === P.expect.schemaTool);
  const r = rules(g.audit(), "tools/list");
  report("tools/list: Tags in a schema property name are stripped and recorded", !!t && !hostile(t) && r.includes("output_hidden_text"),
    `rule_ids=${JSON.stringify(r)} keys=${JSON.stringify(Object.keys(t?.inputSchema?.properties || {}))}`);
  report("tools/list: a chat-template token in a schema default or example is recorded (output_prompt_injection)", r.includes("output_prompt_injection"), JSON.stringify(r));
  await g.close();
}
// 5. Rug pull by rename: the approved tool disappears and a new one with a poisoned description takes its place
{
  const rug = join(mkdtempSync(join(tmpdir(), "t3rug-")), "flip");
  const g = await open({ RUG_FILE: rug });
  await g.c.listTools(); await sleep(200);
  const before = g.audit().length;
  writeFileSync(rug, "1");
  const tl = await g.c.listTools(); await sleep(300);
  const after = g.audit().slice(before);
  const r = after.flatMap((e) => e.rule_ids || []);
  const listed = tl.tools.some((x) => x.name === P.expect.rugNew);
  report(`pins: a pinned tool replaced by a renamed one (${P.expect.rugNew}) is flagged or withheld`, !listed || own(r).length > 0,
    `listed=${listed} rule_ids=${JSON.stringify(r)} records=${after.length}`);
  await g.close();
}
// 6. elicitation/create in form mode asking for a credential (the spec: servers MUST NOT)
{
  const g = await open();
  const res = await safe(g.c.callTool({ name: "ask", arguments: {} })); await sleep(300);
  const r = rules(g.audit(), "elicitation/create");
  const shown = !!g.seen.elicitation;
  report(`elicitation: a form that asks for ${P.expect.sensitiveField} is refused or flagged`, !shown || own(r).length > 0,
    `shown_to_user=${shown} rule_ids=${JSON.stringify(r)} tool_result=${JSON.stringify(res).slice(0, 160)}`);
  await g.close();
}
// 7. elicitation/create in URL mode: plain http to an IDN look-alike or a private address
{
  const g = await open();
  const res = await safe(g.c.callTool({ name: "ask_url", arguments: {} })); await sleep(300);
  const r = rules(g.audit(), "elicitation/create");
  const shown = g.seen.elicitation?.url;
  report(`elicitation: a URL-mode request to ${P.expect.urlHost} over http is refused or flagged`, !shown || own(r).length > 0,
    `url_shown=${JSON.stringify(shown)} rule_ids=${JSON.stringify(r)}`);
  await g.close();
}
// 8. sampling/createMessage with includeContext other than "none" although the client did not declare sampling.context
{
  const g = await open();
  await safe(g.c.callTool({ name: "think", arguments: {} })); await sleep(300);
  const r = rules(g.audit(), "sampling/createMessage");
  const ic = g.seen.sampling?.includeContext;
  report(`sampling: includeContext ${JSON.stringify(P.sampling.includeContext)} to a client without sampling.context is narrowed or flagged`, !g.seen.sampling || !ic || ic === "none" || own(r).length > 0,
    `includeContext_seen=${JSON.stringify(ic)} rule_ids=${JSON.stringify(r)}`);
  await g.close();
}
// 8b. sampling/createMessage carrying tool definitions of its own (SEP-1577): they never pass through tools/list or the pins
{
  const g = await open();
  await safe(g.c.callTool({ name: "think_tools", arguments: {} })); await sleep(300);
  const r = rules(g.audit(), "sampling/createMessage");
  const tools = g.seen.sampling?.tools;
  report("sampling: tool definitions inside a sampling request reach the client without escapes or Tags", !g.seen.sampling || !hostile(tools),
    `tools_seen=${JSON.stringify(tools)} rule_ids=${JSON.stringify(r)}`);
  await g.close();
}
// 9. Several servers: same tool name on two servers, and one server's description steering the other's tool
{
  const up = (role) => ({ command: process.execPath, args: [join(here, "upstream.mjs")], env: { PAYLOADS: payloads, ROLE: role } });
  const g = await open({}, { config: { mcpServers: { [P.multi.names.victim]: up("victim"), [P.multi.names.shadow]: up("shadow") } } });
  const tl = await g.c.listTools(); await sleep(300);
  const names = tl.tools.map((x) => x.name);
  const r = rules(g.audit(), "tools/list");
  report("several servers: the same tool name on two servers stays two distinct names", P.expect.collisionNames.every((n) => names.includes(n)), JSON.stringify(names));
  const sh = tl.tools.find((x) => x.name === P.expect.shadowTool);
  report(`several servers: a description that steers another server's tool (${P.expect.shadowRef}) is flagged`, own(r).length > 0 || !sh,
    `rule_ids=${JSON.stringify(r)} ${P.expect.shadowTool}=${JSON.stringify(sh?.description)}`);
  const ins = g.c.getInstructions() || "";
  report("several servers: merged instructions carry no Tags", !hostile(ins), JSON.stringify(ins));
  await g.close();
}
console.log(`${passN} passed, ${failN} failed`);
process.exit(failN ? 1 : 0);
