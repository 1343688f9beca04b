// The test bed's own server for the 2026-07-28 server set of the conformance suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12), written on
// @modelcontextprotocol/server 2.4.0 scenario by scenario from the suite's own
// requirements. `node conformance-server.mjs stdio` serves stdio (behind the gateway);
// `node conformance-server.mjs http PORT` serves Streamable HTTP at
// http://127.0.0.1:PORT/mcp (the reference run, without the gateway).
import { createServer } from "node:http";
import * as z from "zod";
const {
  McpServer, createMcpHandler, inputRequired, inputResponse, acceptedContent, completable,
  createRequestStateCodec, fromJsonSchema, hostHeaderValidationResponse, localhostAllowedHostnames,
} = await import("@modelcontextprotocol/server");

// 1x1 red PNG and a 44-byte silent WAV.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// requestState is HMAC-sealed (input-required-result-tampered-state); one key per process,
// as every round reaches the same process here.
const codec = createRequestStateCodec({ key: "mcpgate-conformance-bed-request-state-key-0123456789" });
// The client capabilities of a 2026-07-28 request's _meta envelope.
const caps = (ctx) => ctx.mcpReq.envelope?.["io.modelcontextprotocol/clientCapabilities"] ?? {};
// The multi round-trip scenarios (input-required-result-*): round 1 answers input_required,
// the retry carrying the named inputResponses answers the tool's result.
const mrtr = (s) => {
  const elicit = (message, prop, type = "string") =>
    inputRequired.elicit({ message, requestedSchema: { type: "object", properties: { [prop]: { type } }, required: [prop] } });
  s.registerTool("test_input_required_result_elicitation", { description: "asks for a name" }, async (ctx) => {
    const got = acceptedContent(ctx.mcpReq.inputResponses, "user_name");
    if (!got?.name) return inputRequired({ inputRequests: { user_name: elicit("What is your name?", "name") } });
    return text(`Hello, ${got.name}!`);
  });
  s.registerTool("test_input_required_result_sampling", { description: "asks for a completion" }, async (ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, "capital_question");
    if (r.kind !== "sampling") return inputRequired({ inputRequests: { capital_question: inputRequired.createMessage({
      messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }], maxTokens: 100 }) } });
    const c = r.result.content;
    return text(`Sampling answered: ${Array.isArray(c) ? c.map((b) => b.text ?? "").join(" ") : c?.text ?? ""}`);
  });
  s.registerTool("test_input_required_result_list_roots", { description: "asks for the roots" }, async (ctx) => {
    const r = inputResponse(ctx.mcpReq.inputResponses, "client_roots");
    if (r.kind !== "roots") return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
    return text(`Roots: ${r.roots.map((x) => x.uri).join(", ")}`);
  });
  s.registerTool("test_input_required_result_request_state", { description: "asks with state" }, async (ctx) => {
    const st = ctx.mcpReq.requestState();
    const ok = acceptedContent(ctx.mcpReq.inputResponses, "confirm");
    if (st?.step !== "confirm" || ok === undefined) return inputRequired({
      inputRequests: { confirm: elicit("Please confirm", "ok", "boolean") }, requestState: await codec.mint({ step: "confirm" }) });
    return text(`state-ok: confirmed=${ok.ok}`);
  });
  s.registerTool("test_input_required_result_multiple_inputs", { description: "asks three things" }, async (ctx) => {
    const ir = ctx.mcpReq.inputResponses;
    const n = acceptedContent(ir, "user_name"), g = inputResponse(ir, "greeting"), r = inputResponse(ir, "client_roots");
    if (ctx.mcpReq.requestState()?.step !== "all" || !n || g.kind !== "sampling" || r.kind !== "roots") return inputRequired({
      inputRequests: {
        user_name: elicit("What is your name?", "name"),
        greeting: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }], maxTokens: 50 }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await codec.mint({ step: "all" }),
    });
    return text(`All inputs received: name=${n.name}, roots=${r.roots.length}`);
  });
  s.registerTool("test_input_required_result_multi_round", { description: "asks twice" }, async (ctx) => {
    const st = ctx.mcpReq.requestState(), ir = ctx.mcpReq.inputResponses;
    const step1 = acceptedContent(ir, "step1"), step2 = acceptedContent(ir, "step2");
    if (st?.round === 2 && step2?.color) return text(`Done: ${st.name} likes ${step2.color}`);
    if (st?.round === 1 && step1?.name) return inputRequired({
      inputRequests: { step2: elicit("Step 2: What is your favorite color?", "color") }, requestState: await codec.mint({ round: 2, name: step1.name }) });
    return inputRequired({ inputRequests: { step1: elicit("Step 1: What is your name?", "name") }, requestState: await codec.mint({ round: 1 }) });
  });
  s.registerTool("test_input_required_result_tampered_state", { description: "state is sealed" }, async (ctx) => {
    if (ctx.mcpReq.requestState()?.step === "sealed" && acceptedContent(ctx.mcpReq.inputResponses, "confirm")) return text("state verified");
    return inputRequired({ inputRequests: { confirm: elicit("Please confirm", "ok", "boolean") }, requestState: await codec.mint({ step: "sealed" }) });
  });
  s.registerTool("test_input_required_result_capabilities", { description: "asks only what the client declared" }, async (ctx) => {
    const declared = caps(ctx);
    const reqs = {};
    if (declared.elicitation) reqs.user_name = elicit("What is your name?", "name");
    if (declared.sampling) reqs.greeting = inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }], maxTokens: 50 });
    if (declared.roots) reqs.client_roots = inputRequired.listRoots();
    if (Object.keys(ctx.mcpReq.inputResponses ?? {}).length || !Object.keys(reqs).length) return text("capabilities respected");
    return inputRequired({ inputRequests: reqs });
  });
  s.registerPrompt("test_input_required_result_prompt", { description: "asks for context" }, async (ctx) => {
    const got = acceptedContent(ctx.mcpReq.inputResponses, "user_context");
    if (!got?.context) return inputRequired({ inputRequests: { user_context: elicit("What context should the prompt use?", "context") } });
    return { messages: [{ role: "user", content: { type: "text", text: `Prompt with context: ${got.context}` } }] };
  });
  // json-schema-2020-12: the schema's 2020-12 keywords reach tools/list unchanged.
  s.registerTool("json_schema_2020_12_tool", { description: "JSON Schema 2020-12 keywords", inputSchema: fromJsonSchema({
    $schema: "https://json-schema.org/draft/2020-12/schema", type: "object",
    $defs: { address: { $anchor: "addressDef", type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
    properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" }, contactMethod: { type: "string", enum: ["phone", "email"] }, phone: { type: "string" }, email: { type: "string" } },
    allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
    if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] }, then: { required: ["phone"] }, else: { required: ["email"] },
    additionalProperties: false,
  }) }, async () => text("ok"));
  // http-custom-header-server-validation: arguments mirrored into Mcp-Param-* headers (x-mcp-header).
  s.registerTool("test_custom_headers", { description: "mirrors region into a header", inputSchema: fromJsonSchema({
    type: "object", properties: { region: { type: "string", "x-mcp-header": "Region" }, query: { type: "string" } }, required: ["region"],
  }) }, async ({ region }) => text(`region ${region}`));
  // server-stateless: diagnostic tools.
  // Asks for sampling: the SDK's seam answers -32021 (requiredCapabilities {sampling: {}}) to a
  // client that did not declare it (a throw inside a tool would become an isError result).
  s.registerTool("test_missing_capability", { description: "needs sampling" }, async (ctx) => {
    if (inputResponse(ctx.mcpReq.inputResponses, "probe").kind === "sampling") return text("sampling declared");
    return inputRequired({ inputRequests: { probe: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "probe" } }], maxTokens: 10 }) } });
  });
  s.registerTool("test_streaming_elicitation", { description: "elicits on the response stream" }, async (ctx) => {
    const got = acceptedContent(ctx.mcpReq.inputResponses, "answer");
    if (!got) return inputRequired({ inputRequests: { answer: elicit("Continue?", "answer") } });
    return text("streamed");
  });
  s.registerTool("test_logging_tool", { description: "logs at info" }, async (ctx) => {
    await ctx.mcpReq.log("info", "test_logging_tool ran").catch(() => {});
    return text("logged");
  });
};

// The 2025-11-25 scenarios that ask the client (tools-call-sampling, -elicitation,
// elicitation-sep1034-defaults, -sep1330-enums): a push-style request on a 2025-era
// request; a 2026-07-28 one (with the _meta envelope) answers input_required instead.
const legacy = (s) => {
  const ask = async (ctx, key, req) => {
    if (ctx.mcpReq.envelope) {
      const r = ctx.mcpReq.inputResponses?.[key];
      if (r) return r;
      return { inputRequired: inputRequired({ inputRequests: { [key]: req.method === "elicitation/create"
        ? inputRequired.elicit(req.params) : inputRequired.createMessage(req.params) } }) };
    }
    return req.method === "elicitation/create" ? ctx.mcpReq.elicitInput(req.params) : ctx.mcpReq.requestSampling(req.params);
  };
  const elicited = (r) => r.inputRequired ?? text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  s.registerTool("test_sampling", { description: "asks the client's model", inputSchema: z.object({ prompt: z.string() }) }, async ({ prompt }, ctx) => {
    const r = await ask(ctx, "sample", { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 } });
    return r.inputRequired ?? text(`LLM response: ${Array.isArray(r.content) ? r.content.map((b) => b.text ?? "").join(" ") : r.content?.text ?? ""}`);
  });
  s.registerTool("test_elicitation", { description: "asks the user", inputSchema: z.object({ message: z.string() }) }, async ({ message }, ctx) => {
    const r = await ask(ctx, "user", { method: "elicitation/create", params: { message, requestedSchema: { type: "object",
      properties: { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } }, required: ["username", "email"] } } });
    return r.inputRequired ?? text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  });
  s.registerTool("test_elicitation_sep1034_defaults", { description: "elicits with defaults" }, async (ctx) => elicited(await ask(ctx, "defaults", {
    method: "elicitation/create", params: { message: "Defaults", requestedSchema: { type: "object", properties: {
      name: { type: "string", default: "John Doe" }, age: { type: "integer", default: 30 }, score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" }, verified: { type: "boolean", default: true } } } } })));
  s.registerTool("test_elicitation_sep1330_enums", { description: "elicits enums" }, async (ctx) => elicited(await ask(ctx, "enums", {
    method: "elicitation/create", params: { message: "Enums", requestedSchema: { type: "object", properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
      legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
    } } } })));
  // tools-call-with-logging: three info logs, 50 ms apart (the SDK sends none to a
  // 2026-07-28 request without a logLevel).
  s.registerTool("test_tool_with_logging", { description: "logs three times" }, async (ctx) => {
    for (const [i, m] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
      if (i) await sleep(50);
      await ctx.mcpReq.log("info", m).catch(() => {});
    }
    return text("Logging test completed");
  });
  // resources-subscribe, resources-unsubscribe
  s.server.setRequestHandler("resources/subscribe", async () => ({}));
  s.server.setRequestHandler("resources/unsubscribe", async () => ({}));
};

const factory = () => {
  const s = new McpServer({ name: "mcpgate-conformance-bed", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {}, logging: {} },
      requestState: { verify: codec.verify } });
  mrtr(s);
  legacy(s);

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
  s.registerTool("test_tool_with_progress", { description: "reports progress" }, async (ctx) => {
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
  s.registerPrompt("test_prompt_with_arguments", { description: "with arguments", argsSchema: z.object({
    arg1: completable(z.string().describe("First test argument"), (v) => ["paris", "park", "party"].filter((c) => c.startsWith(v ?? ""))), arg2: z.string().describe("Second test argument") }) },
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
  // dns-rebinding-protection: a Host or Origin that is not this loopback listener is refused.
  const local = (h) => { try { return localhostAllowedHostnames().includes(new URL(`http://${h}`).hostname); } catch { return false; } };
  const foreign = (req) => !local(req.headers.host ?? "") || (req.headers.origin !== undefined && !local(req.headers.origin.replace(/^[a-z]+:\/\//, "")));
  const srv = createServer((req, res) => {
    if (!req.url?.startsWith("/mcp")) return (res.statusCode = 404, res.end());
    if (foreign(req)) return (res.statusCode = 403, res.end("forbidden host or origin"));
    return handler(req, res);
  });
  srv.listen(port, "127.0.0.1", () => console.error(`listening http://127.0.0.1:${srv.address().port}/mcp`));
} else {
  const { serveStdio } = await import("@modelcontextprotocol/server/stdio");
  serveStdio(factory);
}
