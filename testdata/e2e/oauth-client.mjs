// Connects to an OAuth-protected Streamable HTTP MCP endpoint with no token, as the
// MCP authorization spec has a client do it, using the SDK's own OAuth support: the
// 401's resource_metadata, the protected resource metadata, the authorization
// server's metadata, a token, then the call.
//   sdk  v2 (@modelcontextprotocol/client) or v1 (@modelcontextprotocol/sdk)
//   flow code (authorization code with PKCE, signing in headless at the test
//        server's login form) or client_credentials
// Usage: node oauth-client.mjs '{"url":…,"sdk":"v2","flow":"code","clientId":…,"clientSecret":…,
//        "redirectUri":…,"username":…,"password":…,"tool":"echo","args":{…}}'
// Output: {"call": CallToolResult, "tokenSeen": bool} or {"error": text}
const o = JSON.parse(process.argv[2]);

const sdk = o.sdk === "v1"
  ? {
      ...(await import("@modelcontextprotocol/sdk/client/index.js")),
      ...(await import("@modelcontextprotocol/sdk/client/streamableHttp.js")),
      ...(await import("@modelcontextprotocol/sdk/client/auth.js")),
      ...(await import("@modelcontextprotocol/sdk/client/auth-extensions.js")),
    }
  : await import("@modelcontextprotocol/client");

// A provider for the authorization code flow that keeps everything in memory and
// records the authorization URL instead of opening a browser.
class HeadlessProvider {
  constructor() { this.authUrl = undefined; this._tokens = undefined; this._verifier = undefined; }
  get redirectUrl() { return o.redirectUri; }
  get clientMetadata() {
    return { client_name: "mcpgate e2e", redirect_uris: [o.redirectUri], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: o.clientSecret ? "client_secret_basic" : "none" };
  }
  clientInformation() { return o.clientSecret ? { client_id: o.clientId, client_secret: o.clientSecret } : { client_id: o.clientId }; }
  tokens() { return this._tokens; }
  saveTokens(t) { this._tokens = t; }
  redirectToAuthorization(url) { this.authUrl = url; }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  saveDiscoveryState(s) { this._discovery = s; }
  discoveryState() { return this._discovery; }
}

// Signs in at the authorization server's login form (zitadel's example server:
// /login/username) and returns the code its redirect carries.
async function signIn(authUrl) {
  const hop = async (url, init) => {
    const r = await fetch(url, { redirect: "manual", ...init });
    const loc = r.headers.get("location");
    if (!loc) throw new Error(`no redirect from ${url.origin}${url.pathname}: HTTP ${r.status} ${(await r.text()).slice(0, 300)}`);
    return new URL(loc, url);
  };
  let loc = await hop(authUrl);
  const id = loc.searchParams.get("authRequestID");
  if (!id) throw new Error(`the authorization request did not lead to the login form: ${loc.pathname}`);
  loc = await hop(new URL("/login/username", authUrl), { method: "POST", body: new URLSearchParams({ id, username: o.username, password: o.password }) });
  while (!loc.href.startsWith(o.redirectUri)) loc = await hop(loc);
  const code = loc.searchParams.get("code");
  if (!code) throw new Error(`the redirect carries no code: ${loc.search.replace(/code=[^&]*/, "code=…")}`);
  return code;
}

const out = {};
let client;
try {
  const url = new URL(o.url);
  const provider = o.flow === "client_credentials"
    ? new sdk.ClientCredentialsProvider({ clientId: o.clientId, clientSecret: o.clientSecret, scope: o.scope, expectedIssuer: o.issuer })
    : new HeadlessProvider();
  const connect = async () => {
    client = new sdk.Client({ name: "oauth-e2e", version: "1.0.0" });
    await client.connect(new sdk.StreamableHTTPClientTransport(url, { authProvider: provider }));
  };
  try {
    await connect();
  } catch (e) {
    if (!(e instanceof sdk.UnauthorizedError) || !provider.authUrl) throw e;
    const transport = new sdk.StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(await signIn(provider.authUrl));
    await connect();
  }
  out.flow = o.flow;
  out.call = await client.callTool({ name: o.tool, arguments: o.args || {} });
  if (o.tool2) out.call2 = await client.callTool({ name: o.tool2, arguments: {} });
  out.gotToken = !!provider.tokens()?.access_token;
  out.token = provider.tokens()?.access_token; // for the test to look for it upstream and in logs
} catch (e) {
  out.error = String(e?.message || e);
} finally {
  await client?.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
