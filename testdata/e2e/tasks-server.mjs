// A raw 2025-11-25 stdio MCP server with tasks (MCP 2025-11-25 "Tasks"), no SDK, for
// the task-owner tests. Its task ids are sequential ("1", "2", …) and it serves any
// task id to anyone, as a careless server would:
//   tools/call work {text} with params.task -> CreateTaskResult, task "<n>"; the task
//                                              completes at once with text as its output
//   tasks/get, tasks/cancel {taskId}        -> the task (any id it made); a cancel sends
//                                              notifications/tasks/status first
//   tasks/result {taskId}                   -> its CallToolResult, _meta related-task
//   tasks/list                              -> every task it made
import readline from "node:readline";

const tasks = new Map();
let next = 1;
const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const now = new Date().toISOString();
const task = (id, status) => ({ taskId: id, status, createdAt: now, lastUpdatedAt: now, ttl: 60000, pollInterval: 100 });
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.id === undefined) continue; // notifications
  const p = msg.params || {};
  const reply = (result) => out({ jsonrpc: "2.0", id: msg.id, result });
  const fail = (code, message) => out({ jsonrpc: "2.0", id: msg.id, error: { code, message } });
  switch (msg.method) {
    case "initialize":
      reply({ protocolVersion: "2025-11-25", serverInfo: { name: "tasks-server", version: "1.0.0" },
        capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } });
      break;
    case "tools/list":
      reply({ tools: [{ name: "work", description: "Do work as a task", inputSchema: { type: "object", properties: { text: { type: "string" } } },
        execution: { taskSupport: "optional" } }] });
      break;
    case "tools/call": {
      const text = String(p.arguments?.text ?? "done");
      if (!p.task) { reply({ content: [{ type: "text", text }] }); break; }
      const id = String(next++);
      tasks.set(id, { status: "completed", text });
      reply({ task: task(id, "working") });
      break;
    }
    case "tasks/get":
    case "tasks/cancel": {
      const t = tasks.get(p.taskId);
      if (!t) { fail(-32602, "unknown task"); break; }
      if (msg.method === "tasks/cancel") {
        t.status = "cancelled";
        out({ jsonrpc: "2.0", method: "notifications/tasks/status", params: task(p.taskId, t.status) });
      }
      reply(task(p.taskId, t.status));
      break;
    }
    case "tasks/result": {
      const t = tasks.get(p.taskId);
      if (!t) { fail(-32602, "unknown task"); break; }
      reply({ content: [{ type: "text", text: t.text }], _meta: { "io.modelcontextprotocol/related-task": { taskId: p.taskId } } });
      break;
    }
    case "tasks/list":
      reply({ tasks: [...tasks.entries()].map(([id, t]) => task(id, t.status)) });
      break;
    case "ping":
      reply({});
      break;
    default:
      fail(-32601, "Method not found");
  }
}
