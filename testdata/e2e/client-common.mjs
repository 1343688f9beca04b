// What the test bed's client scripts share. v2Transport is the transport of a v2 SDK
// client (@modelcontextprotocol/client 2.4.0): Streamable HTTP to cfg.url, else
// stdio to the argv cfg.cmd, with the command's stderr as given ("ignore" or "pipe").
export async function v2Transport(cfg, stderr = "ignore") {
  if (cfg.url) {
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
    return new StreamableHTTPClientTransport(new URL(cfg.url));
  }
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  return new StdioClientTransport({ command: cfg.cmd[0], args: cfg.cmd.slice(1), env: { ...process.env }, stderr });
}

// stepper returns step(name, f): it awaits f and puts its result, or {error: the
// error's text}, under name in out, so one failing step never hides the next.
export function stepper(out) {
  return async (name, f) => {
    try {
      out[name] = await f();
    } catch (e) {
      out[name] = { error: String(e) };
    }
  };
}
