// The test bed's own server for the 2026-07-28 server set of the conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12), written on
// @modelcontextprotocol/server 2.4.0 scenario by scenario from the suite's own
// requirements. `node conformance-server.mjs stdio` serves stdio (behind the gateway);
// `node conformance-server.mjs http PORT` serves Streamable HTTP at
// http://127.0.0.1:PORT/mcp (the reference run, without the gateway).
import { createServer } from "node:http";
import * as z from "zod";
const { McpServer, createMcpHandler } = await import("@modelcontextprotocol/server");

// 1x1 red PNG and a 44-byte silent WAV.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const factory = () => {
  const s = new McpServer({ name: "mcpgate-conformance-bed", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true }, completions: {}, logging: {} } });

  // tools-call-*
  s.registerTool("test_simple_text", { description: "simple text" }, async () => text("This is a simple text response for testing."));
  s.registerTool("test_image_content", { description: "image" }, async () => ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }));
  s.registerTool("test_audio_content", { description: "audio" }, async () => ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }));
  s.registerTool("test_embedded_resource", { description: "embedded resource" }, async () => ({
    content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }],
  }));
  s.registerTool("test_multiple_content_types", { description: "text, image and resource" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG, mimeType: "image/png" },
      { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) } },
    ],
  }));
  s.registerTool("test_error_handling", { description: "always fails" }, async () => ({
    isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
  }));
  s.registerTool("test_tool_with_progress", { description: "reports progress" }, async (_args, ctx) => {
    const token = ctx?.mcpReq?._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (token !== undefined) await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
      if (progress < 100) await sleep(50);
    }
    return text("Progress test completed");
  });

  // resources-*
  s.registerResource("static-text", "test://static-text", { description: "static text", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }] }));
  s.registerResource("static-binary", "test://static-binary", { description: "static binary", mimeType: "image/png" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }] }));
  const { ResourceTemplate } = globalThis.__rt;
  s.registerResource("template", new ResourceTemplate("test://template/{id}/data", { list: undefined }), { description: "template", mimeType: "application/json" },
    async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }));

  // prompts-*
  s.registerPrompt("test_simple_prompt", { description: "simple" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }));
  s.registerPrompt("test_prompt_with_arguments", { description: "with arguments", argsSchema: z.object({ arg1: z.string().describe("First test argument"), arg2: z.string().describe("Second test argument") }) },
    async ({ arg1, arg2 }) => ({ messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }));
  s.registerPrompt("test_prompt_with_embedded_resource", { description: "embedded resource", argsSchema: z.object({ resourceUri: z.string() }) },
    async ({ resourceUri }) => ({
      messages: [
        { role: "user", content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }));
  s.registerPrompt("test_prompt_with_image", { description: "image" }, async () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ],
  }));
  return s;
};

const mod = await import("@modelcontextprotocol/server");
globalThis.__rt = { ResourceTemplate: mod.ResourceTemplate };

if (process.argv[2] === "http") {
  const { toNodeHandler } = await import("@modelcontextprotocol/node");
  const handler = toNodeHandler(createMcpHandler(factory));
  const port = Number(process.argv[3] ?? 0);
  const srv = createServer((req, res) => (req.url?.startsWith("/mcp") ? handler(req, res) : (res.statusCode = 404, res.end())));
  srv.listen(port, "127.0.0.1", () => console.error(`listening http://127.0.0.1:${srv.address().port}/mcp`));
} else {
  const { serveStdio } = await import("@modelcontextprotocol/server/stdio");
  serveStdio(factory);
}
