// Lists the tools of a Streamable HTTP MCP endpoint with the official TypeScript SDK
// client, as the caller a bearer token names, and calls one tool.
// Usage: node http-tools.mjs URL TOKEN TOOL
// Output: {"tools": [names], "call": CallToolResult}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const client = new Client({ name: "http-tools", version: "1.0.0" });
const out = {};
try {
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.call = await client.callTool({ name: tool, arguments: {} });
} catch (e) {
  out.error = String(e.message || e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
