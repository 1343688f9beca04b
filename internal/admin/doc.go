// Package admin serves mcpgate's admin listener (gateway run --admin ADDR):
//
//	GET /            the audit console (embedded HTML, CSS and JS; no build step, no CDN)
//	GET /api/audit   records as JSON: ?status=pass|warn|redact|mask|block&tool=NAME&since=1h&limit=100
//	GET /api/status  policy set generation, hash, files, last reload error; audit counters
//	GET /metrics     Prometheus exposition from the server's own registry
//	GET /healthz     "ok"
//
// Everything served is derived from audit records, which hold names, codes, counts
// and timings only, and from the policy set's status: the listener never serves an
// argument or result value because no record holds one.
//
// Access (see Guard): every request's Host, and Origin when present, must name
// localhost, 127.0.0.1, [::1] or a configured host, against DNS rebinding. Off
// loopback a bearer token is required (New refuses to start without one); the API
// and /metrics then demand "Authorization: Bearer <token>", compared in constant
// time. The console page itself holds no data, so it loads without the token and
// sends it from the page: pass it in the URL fragment (#token=…, which never reaches
// a server or a log) or paste it when asked.
package admin
