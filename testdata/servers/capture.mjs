// Captures the listings of testdata/servers: starts each npm server over stdio (installed in NODE_MODULES, default ./node_modules,
// with npm install --ignore-scripts), asks initialize, tools/list, prompts/list, resources/list and resources/templates/list (every page) and writes OUT/<name>.json.
// Placeholder keys only: no server is given a real credential or reaches a service. Usage: node capture.mjs OUT
import { spawn } from "node:child_process";
import { writeFileSync, readFileSync } from "node:fs";
const M = (process.env.NODE_MODULES || process.cwd() + "/node_modules") + "/";
const OUT = process.argv[2] || ".";
const env = { ...process.env, TAVILY_API_KEY: "tvly-dummy", BRAVE_API_KEY: "dummy", FIRECRAWL_API_KEY: "fc-dummy",
  GITHUB_PERSONAL_ACCESS_TOKEN: "dummy", GITLAB_PERSONAL_ACCESS_TOKEN: "dummy", SLACK_BOT_TOKEN: "xoxb-dummy", SLACK_TEAM_ID: "T0", GOOGLE_MAPS_API_KEY: "dummy",
  EVERART_API_KEY: "dummy", AWS_ACCESS_KEY_ID: "dummy", AWS_SECRET_ACCESS_KEY: "dummy", AWS_REGION: "us-east-1",
  FIGMA_API_KEY: "dummy", NOTION_TOKEN: "dummy", EXA_API_KEY: "dummy", SUPABASE_ACCESS_TOKEN: "sbp_dummy", BROWSERSTACK_USERNAME: "dummy",
  BROWSERSTACK_ACCESS_KEY: "dummy", ATLASSIAN_USER_EMAIL: "a@example.com", ATLASSIAN_API_TOKEN: "dummy", AZURE_DEVOPS_ORG_URL: "https://dev.azure.com/contoso",
  AZURE_DEVOPS_AUTH_METHOD: "pat", AZURE_DEVOPS_PAT: "dummy", BROWSERBASE_API_KEY: "dummy", BROWSERBASE_PROJECT_ID: "dummy",
  PRIVATE_APP_ACCESS_TOKEN: "dummy", CIRCLECI_TOKEN: "dummy" };
const servers = [ // name, package (the version is what NODE_MODULES holds), arguments
  ["server-memory", "@modelcontextprotocol/server-memory", []], ["server-sequential-thinking", "@modelcontextprotocol/server-sequential-thinking", []],
  ["server-github", "@modelcontextprotocol/server-github", []], ["server-gitlab", "@modelcontextprotocol/server-gitlab", []],
  ["server-postgres", "@modelcontextprotocol/server-postgres", ["postgresql://127.0.0.1:1/x"]], ["server-slack", "@modelcontextprotocol/server-slack", []],
  ["server-google-maps", "@modelcontextprotocol/server-google-maps", []], ["server-puppeteer", "@modelcontextprotocol/server-puppeteer", []],
  ["server-everart", "@modelcontextprotocol/server-everart", []], ["server-aws-kb-retrieval", "@modelcontextprotocol/server-aws-kb-retrieval", []],
  ["context7", "@upstash/context7-mcp", []], ["tavily", "tavily-mcp", []], ["notion", "@notionhq/notion-mcp-server", []],
  ["mongodb", "mongodb-mcp-server", []], ["brave-search", "@brave/brave-search-mcp-server", []], ["firecrawl", "firecrawl-mcp", []],
  ["figma", "figma-developer-mcp", ["--stdio", "--figma-api-key=dummy"]], ["desktop-commander", "@wonderwhy-er/desktop-commander", []],
  ["chrome-devtools", "chrome-devtools-mcp", []], ["kubernetes", "mcp-server-kubernetes", []], ["playwright", "@playwright/mcp", []],
  ["filesystem", "@modelcontextprotocol/server-filesystem", ["/tmp"]], ["everything", "@modelcontextprotocol/server-everything", ["stdio"]],
  ["sentry", "@sentry/mcp-server", ["--access-token=dummy"]], ["exa", "exa-mcp-server", []],
  ["supabase", "@supabase/mcp-server-supabase", ["--features=account,database,debugging,development,functions,branching,storage"]],
  ["browserstack", "@browserstack/mcp-server", []], ["launchdarkly", "@launchdarkly/mcp-server", ["start", "--api-key", "dummy"]],
  ["atlassian-bitbucket", "@aashari/mcp-server-atlassian-bitbucket", []], ["azure-devops", "@tiberriver256/mcp-server-azure-devops", []],
  ["browserbase", "@browserbasehq/mcp-server-browserbase", []], ["executeautomation-playwright", "@executeautomation/playwright-mcp-server", []],
  ["browser-tools", "@agentdeskai/browser-tools-mcp", []], ["hubspot", "@hubspot/mcp-server", []], ["sqlite", "mcp-server-sqlite", [":memory:"]],
  ["circleci", "@circleci/mcp-server-circleci", []],
];
function binOf(pkg) { const p = JSON.parse(readFileSync(M + pkg + "/package.json", "utf8")); const b = typeof p.bin === "string" ? p.bin : Object.values(p.bin)[0]; return [M + pkg + "/" + b, p.version]; }
async function list(name, pkg, args) {
  const [bin, version] = binOf(pkg);
  const p = spawn("node", [bin, ...args], { env, stdio: ["pipe", "pipe", "ignore"], cwd: "/tmp" });
  let buf = ""; const waiters = new Map(); let id = 0;
  p.stdout.on("data", (d) => { buf += d; let i; while ((i = buf.indexOf("\n")) >= 0) { const line = buf.slice(0, i); buf = buf.slice(i + 1); try { const m = JSON.parse(line); if (m.id !== undefined && waiters.has(m.id)) { waiters.get(m.id)(m); waiters.delete(m.id); } } catch {} } });
  const req = (method, params) => new Promise((res, rej) => { const i = ++id; waiters.set(i, res); p.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: i, method, params }) + "\n"); setTimeout(() => rej(new Error("timeout " + method)), 20000); });
  try {
    const init = await req("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "lister", version: "1" } });
    p.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
    const out = { package: pkg, version, tools: [], prompts: [] };
    if (init.result?.instructions) out.instructions = init.result.instructions;
    for (const [m, k, cap] of [["tools/list", "tools", "tools"], ["prompts/list", "prompts", "prompts"], ["resources/list", "resources", "resources"], ["resources/templates/list", "resourceTemplates", "resources"]]) {
      if (!init.result?.capabilities?.[cap]) continue;
      if (!out[k]) out[k] = [];
      let cursor;
      do { const r = await req(m, cursor ? { cursor } : {}); if (r.error) break; out[k].push(...(r.result[k] || [])); cursor = r.result.nextCursor; } while (cursor);
    }
    writeFileSync(`${OUT}/${name}.json`, JSON.stringify(out, null, 1));
    console.log(name, version, out.tools.length, "tools", out.prompts.length, "prompts");
  } catch (e) { console.log(name, "FAILED", e.message); }
  p.kill("SIGKILL");
}
for (const [n, pkg, a] of servers) await list(n, pkg, a);
process.exit(0);
