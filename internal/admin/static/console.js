// mcpgate audit console: reads GET /api/audit and renders it. All record fields are
// inserted with textContent, never as HTML.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const CHIPS = {
    pass: ["PASS", "chip-pass"], warn: ["WARN", "chip-warn"], redact: ["REDACTED", "chip-redact"],
    mask: ["MASKED", "chip-mask"], block: ["BLOCKED", "chip-block"],
  };
  const tools = new Set(), callers = new Set();
  let timer = null, inflight = false;

  // The token comes from the URL fragment (never sent to a server) or the form, and
  // lives in this tab's sessionStorage only.
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("mcpgate-token", decodeURIComponent(m[1]));
    const rest = location.hash.slice(1).split("&").filter((p) => !p.startsWith("token=")).join("&");
    history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }

  // C0, C1 and bidi controls in a shown text (a hostile tool name) are shown as
  // \uXXXX, so that no cell can reorder or hide its row (as mcpgate audit does).
  const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  const visible = (s) => String(s).replace(CONTROLS, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = visible(text);
    return e;
  }

  function chip(action) {
    const [label, cls] = CHIPS[action || "pass"] || [String(action).toUpperCase(), "chip-other"];
    const c = el("span", "chip " + cls, label);
    c.dataset.action = action || "pass";
    return c;
  }

  function tags(list) {
    const td = el("td");
    if (!list || list.length === 0) { td.textContent = "–"; return td; }
    for (const x of list) td.appendChild(el("span", "tag", x));
    return td;
  }

  // The Caller column: "user_id (caller_id)", each part cut at 32 characters, as
  // mcpgate audit's CALLER column; the cell's title holds the whole of both.
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  function callerLabel(c) {
    if (!c || (!c.user_id && !c.caller_id)) return "";
    const u = cut(String(c.user_id || ""), 32), id = cut(String(c.caller_id || ""), 32);
    return id ? (u ? `${u} (${id})` : `(${id})`) : u;
  }

  function setTile(id, n) { $(id).querySelector(".n").textContent = String(n); }

  function render(data) {
    const c = data.counts;
    setTile("tile-total", c.total);
    setTile("tile-blocked", c.block);
    setTile("tile-redacted", c.redact + c.mask);
    setTile("tile-warnings", c.warn);
    $("tile-masked").textContent = c.mask ? `${c.redact} redacted · ${c.mask} masked` : "";
    const body = $("records").tBodies[0];
    const rows = [];
    for (const r of data.records) {
      const a = r.action_taken || "pass";
      const tr = el("tr", "r-" + a);
      tr.dataset.event = r.event_id;
      tr.appendChild(el("td", "mono", (r.ts || "").replace("T", " ").replace("Z", "")));
      const s = el("td"); s.appendChild(chip(a)); tr.appendChild(s);
      // tools/call rows show the tool; other channels their method (and tool, if any)
      const m = r.method && r.method !== "tools/call" ? r.method + (r.tool ? " " + r.tool : "") : "";
      tr.appendChild(el("td", "mono tool", m || r.tool || "–"));
      const cl = callerLabel(r.caller);
      const ct = tr.appendChild(el("td", "mono caller", cl || "–"));
      if (cl) ct.title = visible([r.caller.user_id, r.caller.caller_id, r.caller.caller_class].filter(Boolean).join(" · "));
      for (const who of [r.caller && r.caller.user_id, r.caller && r.caller.caller_id]) {
        if (who && !callers.has(who) && callers.size < 200) { callers.add(who); $("callers").appendChild(el("option", "", who)).value = who; }
      }
      const oc = el("td", "", r.outcome + (r.reason ? " · " + r.reason : "") + (r.phase ? " · " + r.phase : ""));
      if (r.shadow) {
        const sh = el("span", "tag" + (r.shadow.differs ? " shadow-differs" : ""),
          "shadow " + ((CHIPS[r.shadow.action_taken] || [r.shadow.action_taken])[0]) + (r.shadow.differs ? " ≠" : ""));
        sh.dataset.shadow = r.shadow.action_taken;
        oc.appendChild(document.createTextNode(" "));
        oc.appendChild(sh);
      }
      tr.appendChild(oc);
      // input rules (the arguments) and output rules (the result) apart: "in:" / "out:"
      tr.appendChild(tags([...(r.input_rule_ids || []).map((x) => "in:" + x), ...(r.rule_ids || []).map((x) => "out:" + x)])).classList.add("rules");
      tr.appendChild(tags(r.guardrails_triggered));
      tr.appendChild(el("td", "num", (r.elapsed_ms ?? 0).toFixed(1)));
      tr.appendChild(el("td", "mono ev", r.event_id));
      rows.push(tr);
      if (r.tool && !tools.has(r.tool)) { tools.add(r.tool); $("tools").appendChild(el("option", "", r.tool)).value = r.tool; }
    }
    body.replaceChildren(...rows);
    $("empty").hidden = rows.length > 0;
  }

  // Policy health from GET /api/status: the loaded set, the last reload, errors per file.
  function renderHealth(st) {
    const p = st && st.policies;
    if (!p) { $("health").hidden = true; return; }
    $("health").hidden = false;
    const files = p.files || [];
    $("h-set").textContent = `generation ${p.generation} · ${files.length} file${files.length === 1 ? "" : "s"}` +
      (files.length ? ": " + files.join(", ") : "") + ` · ${(p.hash || "").slice(0, 12)}`;
    const rl = $("h-reload");
    rl.classList.toggle("bad", p.last_reload === "failed");
    rl.textContent = p.last_reload === "failed"
      ? "failed, keeping the last good set: " + p.last_error
      : "ok · loaded " + (p.loaded_at || "").replace("T", " ").replace(/\.\d+.*$/, "");
    const errs = Object.entries(p.errors || {}).sort();
    const eh = $("h-errors");
    eh.classList.toggle("bad", errs.length > 0);
    eh.textContent = errs.length ? errs.map(([f, n]) => `${f}: ${n}`).join(", ") : "none";
    const sh = st.shadow;
    $("h-shadow").hidden = $("h-shadow-l").hidden = !sh;
    if (sh) {
      const se = Object.entries(sh.errors || {}).sort();
      $("h-shadow").textContent = `${(sh.files || []).join(", ") || "no files"} · ${(sh.hash || "").slice(0, 12)}` +
        (sh.last_reload === "failed" ? " · last reload failed: " + sh.last_error : "") +
        (se.length ? " · errors: " + se.map(([f, n]) => `${f}: ${n}`).join(", ") : "");
    }
  }

  // The chart from GET /api/traffic: stacked bars per bucket by final action, built
  // as SVG elements (no markup strings), and the top tools and rules.
  const SVG = "http://www.w3.org/2000/svg";
  const ORDER = ["pass", "warn", "redact", "mask", "block"];
  const hhmm = (d) => d.toISOString().slice(5, 16).replace("T", " ");
  function renderTraffic(tr) {
    const svg = $("chart");
    const n = (tr.actions.pass || []).length;
    const W = 720, H = 150;
    let max = 1;
    const totals = {};
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (const a of ORDER) { const v = tr.actions[a][i]; sum += v; totals[a] = (totals[a] || 0) + v; }
      max = Math.max(max, sum);
    }
    const bars = [];
    const start = new Date(tr.start), step = tr.bucket_seconds * 1000, bw = W / Math.max(n, 1);
    for (let i = 0; i < n; i++) {
      let y = H;
      for (const a of ORDER) {
        const v = tr.actions[a][i];
        if (!v) continue;
        const h = (v / max) * (H - 4);
        y -= h;
        const r = document.createElementNS(SVG, "rect");
        r.setAttribute("x", (i * bw + bw * 0.08).toFixed(2));
        r.setAttribute("width", Math.max(bw * 0.84, 0.5).toFixed(2));
        r.setAttribute("y", y.toFixed(2));
        r.setAttribute("height", h.toFixed(2));
        r.setAttribute("class", "bar bar-" + a);
        r.dataset.action = a;
        r.dataset.n = String(v);
        const title = document.createElementNS(SVG, "title");
        title.textContent = `${hhmm(new Date(start.getTime() + i * step))} UTC: ${v} ${(CHIPS[a] || [a])[0]}`;
        r.appendChild(title);
        bars.push(r);
      }
    }
    svg.replaceChildren(...bars);
    const mins = tr.bucket_seconds / 60;
    $("chart-caption").textContent = `Decisions per ${mins === 1 ? "minute" : mins + " minutes"} · peak ${max}` +
      (tr.truncated ? ` · newest ${tr.records} records only` : "");
    $("chart-from").textContent = hhmm(start) + " UTC";
    $("chart-to").textContent = hhmm(new Date(start.getTime() + n * step)) + " UTC";
    $("chart-legend").replaceChildren(...ORDER.map((a) => {
      const s = el("span", "", "");
      s.dataset.action = a;
      s.dataset.n = String(totals[a] || 0);
      s.appendChild(el("span", "sw bar-" + a));
      s.appendChild(document.createTextNode(`${CHIPS[a][0]} ${totals[a] || 0}`));
      return s;
    }));
    for (const [id, list] of [["top-tools", tr.tools], ["top-rules", tr.rules]]) {
      const top = list.length ? list[0].n : 1;
      const items = list.map((x) => {
        const li = el("li");
        li.dataset.name = x.name;
        li.dataset.n = String(x.n);
        li.appendChild(el("span", "name", x.name)).title = visible(x.name);
        li.appendChild(el("span", "n", String(x.n)));
        const track = li.appendChild(el("span", "track"));
        track.appendChild(el("span", "fill")).style.width = (100 * x.n / top).toFixed(1) + "%";
        return li;
      });
      $(id).replaceChildren(...(items.length ? items : [el("li", "none", "none")]));
    }
  }

  function state(text, err) { const s = $("state"); s.textContent = text; s.classList.toggle("err", !!err); }

  async function load() {
    if (inflight) return;
    inflight = true;
    const q = new URLSearchParams();
    for (const k of ["status", "tool", "caller", "method", "since", "limit"]) {
      const v = $("f-" + k).value.trim();
      if (v) q.set(k, v);
    }
    if ($("f-shadow").checked) q.set("shadow", "differs");
    const headers = {};
    const tok = sessionStorage.getItem("mcpgate-token");
    if (tok) headers.Authorization = "Bearer " + tok;
    try {
      const res = await fetch("/api/audit?" + q, { headers, cache: "no-store" });
      if (res.status === 401) { $("token-form").hidden = false; state("token required", true); return; }
      const data = await res.json();
      if (!res.ok) { state(data.error || res.statusText, true); return; }
      $("token-form").hidden = true;
      render(data);
      try {
        const tr = await fetch("/api/traffic?" + q, { headers, cache: "no-store" });
        if (tr.ok) renderTraffic(await tr.json());
      } catch (e) { /* the table still shows */ }
      try {
        const sr = await fetch("/api/status", { headers, cache: "no-store" });
        renderHealth(sr.ok ? await sr.json() : null);
      } catch (e) { renderHealth(null); }
      document.body.dataset.loaded = String(Date.now());
      state(`${data.records.length} shown · updated ${new Date().toLocaleTimeString()}`);
    } catch (e) {
      state("gateway unreachable: " + e.message, true);
    } finally { inflight = false; }
  }

  // One record, from #event=ID (a row's click, or a link built from a notice's
  // "see audit log entry ID"): GET /api/audit?event_id=ID, every field one line,
  // nested fields dotted, each value shown with textContent and cut at 1024 characters.
  function flatten(prefix, v, out) {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const k of Object.keys(v).sort()) flatten(prefix ? prefix + "." + k : k, v[k], out);
    } else if (Array.isArray(v) && v.some((x) => x && typeof x === "object")) {
      v.forEach((x, i) => flatten(`${prefix}[${i}]`, x, out));
    } else {
      const s = Array.isArray(v) ? v.join(", ") : String(v);
      if (s !== "") out.push([prefix, cut(s, 1024)]);
    }
    return out;
  }

  async function showRecord() {
    const e = /(?:^#|&)event=([^&]+)/.exec(location.hash);
    document.body.classList.toggle("one-record", !!e);
    $("record").hidden = !e;
    if (!e) return;
    const id = decodeURIComponent(e[1]);
    $("rec-id").textContent = visible(id);
    $("rec-fields").replaceChildren();
    const st = $("rec-state");
    st.classList.remove("err");
    st.textContent = "loading…";
    const headers = {};
    const tok = sessionStorage.getItem("mcpgate-token");
    if (tok) headers.Authorization = "Bearer " + tok;
    try {
      const res = await fetch("/api/audit?" + new URLSearchParams({ event_id: id, limit: "1" }), { headers, cache: "no-store" });
      if (res.status === 401) { $("token-form").hidden = false; st.textContent = "token required"; st.classList.add("err"); return; }
      const data = await res.json();
      if (!res.ok) { st.textContent = data.error || res.statusText; st.classList.add("err"); return; }
      const r = data.records[0];
      if (!r) { st.textContent = "No record with this id in the store."; st.classList.add("err"); return; }
      st.textContent = "";
      const items = [];
      const top = el("dd");
      top.appendChild(chip(r.action_taken || "pass"));
      items.push(el("dt", "", "status"), top);
      for (const [k, v] of flatten("", r, [])) {
        const dd = el("dd", "", v);
        dd.dataset.field = k;
        items.push(el("dt", "", k), dd);
      }
      $("rec-fields").replaceChildren(...items);
      document.body.dataset.record = r.event_id;
    } catch (err) {
      st.textContent = "gateway unreachable: " + err.message;
      st.classList.add("err");
    }
  }

  function schedule() {
    clearInterval(timer);
    if ($("f-auto").checked) timer = setInterval(load, 3000);
  }

  for (const id of ["f-status", "f-method", "f-since", "f-limit", "f-shadow"]) $(id).addEventListener("change", load);
  $("f-tool").addEventListener("input", () => { clearTimeout(load.t); load.t = setTimeout(load, 250); });
  $("f-caller").addEventListener("input", () => { clearTimeout(load.t); load.t = setTimeout(load, 250); });
  $("records").tBodies[0].addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    if (tr && tr.dataset.event) location.hash = "event=" + encodeURIComponent(tr.dataset.event);
  });
  $("rec-close").addEventListener("click", (e) => { e.preventDefault(); history.pushState(null, "", location.pathname + location.search); showRecord(); });
  window.addEventListener("hashchange", showRecord);
  $("f-auto").addEventListener("change", schedule);
  $("refresh").addEventListener("click", load);
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); load(); });
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem("mcpgate-token", $("token").value);
    $("token").value = "";
    load();
    showRecord();
  });
  load();
  showRecord();
  schedule();
})();
