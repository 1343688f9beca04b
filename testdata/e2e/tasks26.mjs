// An MCP 2026-07-28 server on the v2 SDK (@modelcontextprotocol/server 2.4.0) over
// stdio, modern-only (legacy "reject"), that offers the tasks extension
// (io.modelcontextprotocol/tasks), for the tests of tasks with several servers. The
// server package has no tasks extension: its transport answers the task requests
// itself. argv[2] names the server in its texts. Task ids are sequential per process
// ("t1", "t2", …), so two such servers hand out the same ids.
//   tools/call work {text} with params.task -> CreateTaskResult (resultType "task",
//                                              top-level taskId), status working
//   tasks/get {taskId}                      -> the task: working on the first get; then
//                                              completed, inlining the CallToolResult
//                                              "<name>: <text>"; a task whose text is
//                                              "hold" stays working
//   tasks/update {taskId, inputResponses}   -> {}; the task's later answers carry
//                                              statusMessage "answered <keys>"
//   tasks/cancel {taskId}                   -> notifications/tasks {taskId, status
//                                              cancelled} first, then the task, cancelled
//   any other task id                       -> -32602
import * as z from "zod";
const { McpServer } = await import("@modelcontextprotocol/server");
const { serveStdio, StdioServerTransport } = await import("@modelcontextprotocol/server/stdio");

const name = process.argv[2] ?? "tasks26";
const tasks = new Map();
let next = 1;
const factory = () => {
  const server = new McpServer({ name, version: "1.0.0" },
    { capabilities: { tools: {}, extensions: { "io.modelcontextprotocol/tasks": {} } } });
  server.registerTool("work", { description: "works as a task", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text: `${name}: ${text}` }] }));
  return server;
};

const transport = new StdioServerTransport();
const start = transport.start.bind(transport);
transport.start = async () => {
  const deliver = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    const now = new Date().toISOString();
    const p = msg.params ?? {};
    const view = (id, t) => ({ taskId: id, status: t.status, createdAt: now, lastUpdatedAt: now, ttlMs: 60000, pollIntervalMs: 50,
      ...(t.answered ? { statusMessage: `answered ${t.answered}` } : {}) });
    const reply = (result) => transport.send({ jsonrpc: "2.0", id: msg.id, result: { resultType: "complete", ...result } });
    if (msg.method === "tools/call" && p.task) {
      const id = `t${next++}`;
      const t = { status: "working", text: String(p.arguments?.text ?? ""), gets: 0 };
      tasks.set(id, t);
      return transport.send({ jsonrpc: "2.0", id: msg.id, result: { resultType: "task", ...view(id, t) } });
    }
    if (!["tasks/get", "tasks/cancel", "tasks/update"].includes(msg.method)) return deliver(msg, extra);
    const t = tasks.get(p.taskId);
    if (!t) return transport.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32602, message: "unknown task" } });
    if (msg.method === "tasks/update") {
      t.answered = Object.keys(p.inputResponses ?? {}).sort().join(",");
      return reply({});
    }
    if (msg.method === "tasks/cancel") {
      t.status = "cancelled";
      return transport.send({ jsonrpc: "2.0", method: "notifications/tasks", params: view(p.taskId, t) }).then(() => reply(view(p.taskId, t)));
    }
    if (t.status === "working" && t.gets++ > 0 && t.text !== "hold") t.status = "completed";
    const done = t.status === "completed" ? { result: { content: [{ type: "text", text: `${name}: ${t.text}` }] } } : {};
    return reply({ ...view(p.taskId, t), ...done });
  };
  return start();
};
serveStdio(factory, { legacy: "reject", transport });
