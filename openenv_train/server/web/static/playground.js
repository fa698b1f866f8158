// The env playground: a form per action field from the action's JSON Schema, one /ws session.
// Uses only the server's existing routes: GET /metadata, GET /schema, and /ws frames
// (reset, step, state, mcp). No external scripts.
"use strict";
const OpenEnvPlayground = (() => {
  let ws = null, schema = null, pending = [], steps = 0, done = false, renderer = null, rpcId = 0;
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs = {}, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const json = (v) => JSON.stringify(v, null, 2);

  function resolve(prop, defs) {
    // $ref into $defs, and Optional[X] (anyOf with null) to X
    if (prop.$ref) return resolve(defs[prop.$ref.split("/").pop()] || {}, defs);
    if (prop.anyOf) {
      const real = prop.anyOf.filter((p) => p.type !== "null");
      if (real.length === 1) return { ...resolve(real[0], defs), nullable: true, ...pick(prop) };
    }
    return prop;
  }
  const pick = (p) => Object.fromEntries(["title", "description", "default"].filter((k) => k in p).map((k) => [k, p[k]]));

  // One input per schema property: enums as choices, numbers, booleans, text; anything else JSON.
  function fieldInput(name, prop, required) {
    const id = "field-" + name;
    const wrap = el("div");
    const label = el("label", { for: id }, prop.title || name);
    if (prop.description) label.append(" ", el("span", { class: "hint" }, "— " + prop.description));
    wrap.append(label);
    let input, kind;
    const choices = prop.enum || ("const" in prop ? [prop.const] : null);
    if (choices) {
      input = el("select", { id, name });
      if (!required) input.append(el("option", { value: "" }, "(none)"));
      choices.forEach((c, i) => { const o = el("option", { value: String(i) }, String(c)); input.append(o); });
      kind = { type: "enum", choices };
    } else if (prop.type === "integer" || prop.type === "number") {
      input = el("input", { id, name, type: "number", step: prop.type === "integer" ? "1" : "any" });
      if ("minimum" in prop) input.min = prop.minimum;
      if ("maximum" in prop) input.max = prop.maximum;
      kind = { type: prop.type };
    } else if (prop.type === "boolean") {
      input = el("input", { id, name, type: "checkbox" });
      kind = { type: "boolean" };
    } else if (prop.type === "string") {
      input = prop.maxLength && prop.maxLength <= 200 ? el("input", { id, name, type: "text" }) : el("textarea", { id, name, rows: "2" });
      kind = { type: "string" };
    } else {
      input = el("textarea", { id, name, rows: "3", placeholder: "JSON" });
      kind = { type: "json" };
    }
    if (prop.default !== undefined && prop.default !== null) {
      if (kind.type === "boolean") input.checked = !!prop.default;
      else if (kind.type === "enum") input.value = String(kind.choices.indexOf(prop.default));
      else input.value = kind.type === "json" ? JSON.stringify(prop.default) : String(prop.default);
    }
    wrap.append(input);
    return { name, input, kind, required, wrap };
  }

  function buildForm(form, objSchema, skip = ["metadata"]) {
    const defs = objSchema.$defs || {};
    const required = new Set(objSchema.required || []);
    const fields = [];
    form.replaceChildren();
    for (const [name, raw] of Object.entries(objSchema.properties || {})) {
      if (skip.includes(name)) continue;
      const f = fieldInput(name, resolve(raw, defs), required.has(name));
      form.append(f.wrap);
      fields.push(f);
    }
    if (!fields.length) form.append(el("p", { class: "muted" }, "This action has no fields."));
    return fields;
  }

  function readForm(fields) {
    const out = {};
    for (const f of fields) {
      const v = f.input.value;
      if (f.kind.type === "boolean") { out[f.name] = f.input.checked; continue; }
      if (v === "" && !f.required) continue;
      if (f.kind.type === "enum") out[f.name] = f.kind.choices[Number(v)];
      else if (f.kind.type === "integer" || f.kind.type === "number") {
        if (v === "") throw new Error(`${f.name}: enter a number`);
        out[f.name] = Number(v);
      } else if (f.kind.type === "json") {
        try { out[f.name] = JSON.parse(v); } catch (e) { throw new Error(`${f.name}: not valid JSON (${e.message})`); }
      } else out[f.name] = v;
    }
    return out;
  }

  // Frames are answered in order on one session (the protocol has no request ids).
  function send(frame) {
    return new Promise((ok, fail) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) return fail(new Error("not connected"));
      pending.push({ ok, fail });
      ws.send(JSON.stringify(frame));
    });
  }

  // One session at a time: a Reset clicked while the page's own connect() is under way waits
  // for that connection instead of opening a second one (whose later open replaced the first,
  // so a step after the reset reached a session that had never been reset).
  let opening = null;
  function connect() {
    if (opening) return opening;
    opening = new Promise((ok, fail) => {
      const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
      ws = new WebSocket(url);
      ws.onopen = () => { $("connection").textContent = "session open"; ok(); };
      ws.onerror = () => fail(new Error("could not open the /ws session"));
      ws.onclose = () => {
        $("connection").textContent = "session closed (Reset opens a new one)";
        pending.splice(0).forEach((p) => p.fail(new Error("session closed")));
        ws = null;
      };
      ws.onmessage = (m) => {
        const p = pending.shift();
        if (!p) return;
        const frame = JSON.parse(m.data);
        if (frame.type === "error") p.fail(new Error(frame.data.message || json(frame.data)));
        else p.ok(frame.data);
      };
    }).finally(() => { opening = null; });
    return opening;
  }

  function show(result, sent) {
    const obs = result.observation || {};
    $("observation").textContent = json(obs);
    $("reward").textContent = result.reward === null || result.reward === undefined ? "–" : String(result.reward);
    $("done").textContent = String(!!result.done);
    $("steps").textContent = String(steps);
    done = !!result.done;
    $("step").disabled = done;
    const box = $("rendered");
    box.replaceChildren();
    if (renderer) {
      try {
        const out = renderer(obs, result);
        if (typeof out === "string") box.innerHTML = out; else if (out) box.append(out);
      } catch (e) { box.append(el("div", { class: "error" }, "renderer failed: " + e.message)); }
    }
    const row = el("tr");
    row.append(el("td", {}, String(steps)), el("td", {}, sent === null ? "reset" : JSON.stringify(sent)),
      el("td", {}, result.reward === null || result.reward === undefined ? "" : String(result.reward)),
      el("td", {}, String(!!result.done)), el("td", {}, summarize(obs)));
    if (sent === null) $("history").tBodies[0].replaceChildren();
    $("history").tBodies[0].append(row);
  }
  const summarize = (obs) => {
    const text = typeof obs.text === "string" && obs.text ? obs.text : JSON.stringify(obs);
    return text.length > 160 ? text.slice(0, 157) + "…" : text;
  };

  async function refreshState() {
    try { $("state").textContent = json(await send({ type: "state", data: {} })); }
    catch (e) { $("state").textContent = "state: " + e.message; }
  }

  async function reset() {
    $("action-error").textContent = "";
    try {
      if (!ws || opening) await connect();
      const seed = $("seed").value;
      const data = seed === "" ? {} : { seed: Number(seed) };
      const result = await send({ type: "reset", data });
      steps = 0;
      show(result, null);
      await refreshState();
      await listTools();
    } catch (e) { $("action-error").textContent = e.message; }
  }

  async function step(action) {
    $("action-error").textContent = "";
    try {
      const sent = action || readForm(actionFields);
      const result = await send({ type: "step", data: sent });
      steps += 1;
      show(result, sent);
      await refreshState();
    } catch (e) { $("action-error").textContent = e.message; }
  }

  let actionFields = [], toolsListed = false;
  async function listTools() {
    if (toolsListed) return;
    toolsListed = true;
    let reply;
    try { reply = await send({ type: "mcp", data: { jsonrpc: "2.0", id: ++rpcId, method: "tools/list" } }); }
    catch (e) { return; }
    const tools = (reply && reply.result && reply.result.tools) || [];
    if (!tools.length) return;
    $("tools-section").hidden = false;
    const box = $("tools");
    for (const tool of tools) {
      const form = el("form", { class: "tool", "data-tool": tool.name, autocomplete: "off" });
      const title = el("h3", {}, tool.name);
      const fields = buildForm(form, tool.inputSchema || {}, []);
      const out = el("pre", { class: "tool-result" }, "");
      const call = el("button", { type: "button", class: "secondary" }, "Call " + tool.name);
      call.onclick = async () => {
        try {
          const args = readForm(fields);
          const r = await send({ type: "mcp", data: { jsonrpc: "2.0", id: ++rpcId, method: "tools/call", params: { name: tool.name, arguments: args } } });
          out.textContent = json(r.error || r.result);
          $("history").tBodies[0].append(historyRow("tools/call " + tool.name + " " + JSON.stringify(args), r));
          await refreshState();
        } catch (e) { out.textContent = e.message; }
      };
      box.append(title, el("p", { class: "muted" }, tool.description || ""), form, call, out);
    }
  }
  const historyRow = (what, r) => {
    const row = el("tr");
    row.append(el("td", {}, "mcp"), el("td", {}, what), el("td"), el("td"), el("td", {}, JSON.stringify(r.error || r.result).slice(0, 160)));
    return row;
  };

  /** Sum of the samples of ``name`` in Prometheus text whose labels contain each of ``want``. */
  function metricSum(text, name, want = []) {
    let total = 0;
    for (const line of text.split("\n")) {
      if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) continue;
      if (want.every((w) => line.includes(w))) total += Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
    }
    return total;
  }

  let lastFigures = null;
  /** The server's live figures (sessions, steps, rate, mean step time, errors, refusals). */
  async function refreshFigures() {
    let text;
    try {
      const res = await fetch("/metrics");
      if (!res.ok) return;
      text = await res.text();
    } catch (e) { return; }
    const now = performance.now();
    const steps = metricSum(text, "openenv_server_frames_total", ['type="step"']);
    const count = metricSum(text, "openenv_server_frame_seconds_count", ['type="step"']);
    const sum = metricSum(text, "openenv_server_frame_seconds_sum", ['type="step"']);
    $("fig-sessions").textContent = metricSum(text, "openenv_server_sessions_open") + " / " + metricSum(text, "openenv_server_sessions_max");
    $("fig-steps").textContent = String(steps);
    $("fig-errors").textContent = String(metricSum(text, "openenv_server_errors_total"));
    $("fig-refused").textContent = String(metricSum(text, "openenv_server_sessions_refused_total"));
    if (lastFigures) {
      const dt = (now - lastFigures.at) / 1000, dn = count - lastFigures.count;
      $("fig-rate").textContent = dt > 0 ? ((steps - lastFigures.steps) / dt).toFixed(1) : "–";
      $("fig-step-ms").textContent = dn > 0 ? ((1000 * (sum - lastFigures.sum)) / dn).toFixed(2) : "–";
    } else if (count > 0) {
      $("fig-step-ms").textContent = ((1000 * sum) / count).toFixed(2);
    }
    lastFigures = { at: now, steps, count, sum };
  }

  async function start() {
    try {
      const meta = await (await fetch("/metadata")).json();
      if (meta.name) { $("env-name").textContent = meta.name; document.title = meta.name + " · playground"; }
      if (meta.description) $("env-description").textContent = meta.description;
    } catch (e) { /* metadata is optional */ }
    const res = await fetch("/schema");
    if (!res.ok) { $("action-error").textContent = "GET /schema failed: " + res.status; return; }
    schema = await res.json();
    actionFields = buildForm($("action-form"), schema.action || {});
    $("reset").onclick = reset;
    $("reset").disabled = false;  // off in the HTML until here: an earlier click would do nothing
    $("step").onclick = () => step();
    $("action-form").onsubmit = (e) => { e.preventDefault(); if (!done) step(); };
    await refreshFigures();  // before the session opens: done by the time the page is usable
    $("fig-refresh").onclick = refreshFigures;
    $("fig-refresh").disabled = false;
    let timer = null;  // live updates only when asked: a poll that outlives its server fails
    $("fig-live").onchange = () => {
      clearInterval(timer);
      timer = $("fig-live").checked ? setInterval(refreshFigures, 2000) : null;
    };
    try { if (!ws || opening) await connect(); } catch (e) { $("connection").textContent = e.message; }
  }

  return {
    start, reset, step, refreshFigures,
    /** An env's renderer: fn(observation, result) -> HTML string or element, shown above the JSON. */
    registerRenderer(fn) { renderer = fn; },
  };
})();
