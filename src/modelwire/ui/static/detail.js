// The attempt panel: what one provider call was asked (request facts) and what it streamed
// back (its raw chunks, a page at a time).

import { clear, el, fmtClock, fmtCost, fmtDuration, fmtInt, getJSON } from "./dom.js";

const CHUNK_PAGE = 200;

function facts(rows) {
  return el("dl", { class: "facts" }, rows.filter((r) => r && r[1] !== null && r[1] !== undefined && r[1] !== "")
    .map(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

function configRows(config) {
  return Object.entries(config).map(([name, value]) =>
    [name.replace(/_/g, " "), typeof value === "object" ? JSON.stringify(value) : String(value)]);
}

function chunkContent(chunk) {
  switch (chunk.type) {
    case "text-delta": case "reasoning-delta": return chunk.text;
    case "tool-call-delta": return `${chunk.name ? `${chunk.name} ` : ""}${chunk.id ? `[${chunk.id}] ` : ""}${chunk.arguments_delta}`;
    case "block-start": return chunk.block_type;
    case "block-end": return JSON.stringify(chunk.block);
    case "usage": return Object.entries(chunk.usage).map(([k, v]) => `${k.replace(/_tokens$/, "")} ${v}`).join(", ");
    case "finish": {
      const r = chunk.reason;
      return r.failure ? `${r.kind} — ${r.failure.code}${r.failure.status ? ` (HTTP ${r.failure.status})` : ""}: ${r.failure.message}` : r.kind;
    }
    default: return JSON.stringify(chunk);
  }
}

export class Detail {
  constructor(root, sessionId) {
    this.root = root;
    this.sessionId = sessionId;
    this.key = null;
  }

  query(key, extra = {}) {
    const [turn, step, attempt] = key;
    return new URLSearchParams({ id: this.sessionId, turn, step, attempt, ...extra });
  }

  async show(key) {
    this.key = key.join(".");
    const mine = this.key;
    this.root.hidden = false;
    this.root.setAttribute("aria-busy", "true");
    const [detail, page] = await Promise.all([
      getJSON(`/api/attempt?${this.query(key)}`),
      getJSON(`/api/chunks?${this.query(key, { limit: CHUNK_PAGE })}`),
    ]);
    if (mine !== this.key) return;
    this.render(key, detail, page);
    this.root.removeAttribute("aria-busy");
    this.root.dataset.attempt = mine;
  }

  render(key, detail, page) {
    const a = detail.attempt;
    const f = a.failure;
    const u = a.usage;
    const close = el("button", { type: "button", class: "link close", "aria-label": "close" }, "×");
    close.addEventListener("click", () => { this.root.hidden = true; this.key = null; });
    const header = detail.header ? detail.header.header : null;
    const body = el("tbody");
    const more = el("button", { type: "button", class: "more" }, "load more chunks");
    const append = (rows) => {
      for (const r of rows.items) {
        body.appendChild(el("tr", { class: `chunk chunk-${r.chunk.type}` },
          el("td", { class: "num" }, String(r.seq)),
          el("td", { class: "num" }, `+${fmtDuration(r.time - a.start)}`),
          el("td", {}, r.chunk.type),
          el("td", { class: "chunk-text" }, chunkContent(r.chunk))));
      }
      more.hidden = rows.next_seq === null;
      more.onclick = async () => {
        more.disabled = true;
        append(await getJSON(`/api/chunks?${this.query(key, { from_seq: rows.next_seq, limit: CHUNK_PAGE })}`));
        more.disabled = false;
      };
    };
    append(page);
    clear(this.root).append(
      el("div", { class: "detail-head" },
        el("h3", {}, `Attempt ${a.turn}.${a.step}.${a.attempt} `, el("span", { class: `badge status-${a.status}` }, a.status)),
        close),
      facts([
        ["route", a.provider ? `${a.provider}/${a.model}` : ""],
        ["fallback", a.fallback ? "yes — another route than the step's first attempt" : ""],
        ["finish", a.finish],
        ["code", f ? f.code : ""],
        ["HTTP status", f && f.status ? String(f.status) : ""],
        ["message", f ? f.message : ""],
        ["Retry-After", f && f.retry_after_ms ? fmtDuration(f.retry_after_ms) : ""],
        ["request id", f ? f.request_id : ""],
        ["started", fmtClock(a.start)],
        ["duration", a.end !== null ? fmtDuration(a.end - a.start) : "still streaming"],
        ["usage", u ? `${fmtInt(u.input)} in · ${fmtInt(u.cache_read)} cache read · ${fmtInt(u.cache_write)} cache write · ${fmtInt(u.output)} out (${fmtInt(u.reasoning)} reasoning) = ${fmtInt(u.total)}` : "none reported"],
        ["cost", fmtCost(a.cost)],
      ]),
      el("h4", {}, "Request facts"),
      header ? facts([
        ["header", `${detail.header.reason} (seq ${detail.header.seq})`],
        ...configRows(header.config),
        ["context window", detail.context && detail.context.context.context_window ? fmtInt(detail.context.context.context_window) : ""],
        ["input messages", fmtInt(detail.input_messages)],
        ["tools", (header.tools || []).map((t) => t.name).join(", ")],
      ]) : el("p", { class: "muted" }, "No request header logged before this attempt."),
      header && header.system ? el("details", { class: "system-prompt" }, el("summary", {}, "system prompt"), el("pre", {}, header.system)) : null,
      el("h4", {}, `Raw chunks (${fmtInt(page.total)})`),
      el("div", { class: "chunks-wrap" }, el("table", { class: "chunks" },
        el("thead", {}, el("tr", {}, el("th", {}, "seq"), el("th", {}, "at"), el("th", {}, "type"), el("th", {}, "content"))),
        body)),
      more);
  }
}
