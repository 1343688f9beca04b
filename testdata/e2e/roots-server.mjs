// A v1 TypeScript SDK server (@modelcontextprotocol/sdk) over stdio for the declared
// roots tests. Tool roots asks the client for its roots (roots/list) and answers how
// many it got. Resource template file:///{+path} reads any file: URI as the text
// "notes" under that URI; prompt link {uri} answers one user message holding a
// resource_link to the URI.
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "roots", version: "1.0.0" });
server.registerTool("roots", { description: "asks for the client's roots" }, async () => {
  const { roots } = await server.server.listRoots();
  return { content: [{ type: "text", text: String(roots.length) }] };
});
server.registerResource("file", new ResourceTemplate("file:///{+path}", { list: undefined }), { mimeType: "text/plain" },
  async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "notes" }] }));
server.registerPrompt("link", { description: "links a file", argsSchema: { uri: z.string() } },
  async ({ uri }) => ({ messages: [{ role: "user", content: { type: "resource_link", uri, name: "file" } }] }));
await server.connect(new StdioServerTransport());
