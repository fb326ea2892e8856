// The timeline: turns → steps → attempts drawn to scale in time, with retry waits, tool runs and
// plugin events. Every bar is placed by its log times; a bar too short to see keeps a minimum
// width. A click on a turn's name zooms the scale to that turn (again: back to the session).

import { clear, el, fmtDuration } from "./dom.js";

function failureText(f) {
  if (!f) return "";
  return `${f.code}${f.status ? ` (HTTP ${f.status})` : ""}: ${f.message}`;
}

export function attemptLabel(a) {
  const code = a.failure ? ` ${a.failure.code}${a.failure.status ? ` ${a.failure.status}` : ""}` : "";
  return `#${a.attempt}${code}${a.fallback ? " fallback" : ""}`;
}

export function keyOf(a) {
  return `${a.turn}.${a.step}.${a.attempt}`;
}

export class Timeline {
  constructor(root, onSelect) {
    this.root = root;
    this.onSelect = onSelect;
    this.zoom = null;
    this.selected = null;
  }

  place(node, start, end, range) {
    const span = Math.max(1, range[1] - range[0]);
    const from = Math.max(range[0], Math.min(range[1], start));
    const to = Math.max(from, Math.min(range[1], end === null || end === undefined ? range[1] : end));
    node.style.left = `${((from - range[0]) / span) * 100}%`;
    node.style.width = `${((to - from) / span) * 100}%`;
    return node;
  }

  axis(range) {
    const axis = el("div", { class: "tl-axis" });
    for (const fraction of [0, 0.25, 0.5, 0.75, 1]) {
      const tick = el("span", { class: "tl-tick" }, fmtDuration((range[1] - range[0]) * fraction));
      tick.style.left = `${fraction * 100}%`;
      axis.appendChild(tick);
    }
    return el("div", { class: "tl-row tl-axis-row" }, el("span", { class: "tl-label" }, ""), axis);
  }

  attempt(a, range) {
    const title = [
      `attempt ${keyOf(a)} — ${a.status}${a.finish ? ` (${a.finish})` : ""}`,
      a.provider ? `${a.provider}/${a.model}` : "",
      a.failure ? failureText(a.failure) : "",
      a.end !== null ? fmtDuration(a.end - a.start) : "still streaming",
      `${a.chunks} chunks`,
    ].filter(Boolean).join("\n");
    const bar = el("button", {
      type: "button", class: `tl-bar tl-attempt status-${a.status}${this.selected === keyOf(a) ? " selected" : ""}`,
      title, "data-key": keyOf(a), "aria-pressed": this.selected === keyOf(a) ? "true" : "false",
    }, el("span", {}, attemptLabel(a)));
    bar.addEventListener("click", () => this.onSelect([a.turn, a.step, a.attempt]));
    return this.place(bar, a.start, a.end, range);
  }

  step(turn, step, range) {
    const track = el("div", { class: "tl-track" });
    for (const r of step.retries) {
      const wait = el("div", {
        class: "tl-bar tl-wait",
        title: `retry ${r.retry}${r.max_retries !== null ? `/${r.max_retries}` : ""} (${r.mode}) after ${failureText(r.failure)}\n` +
          `decided wait ${fmtDuration(r.delay_ms)}${r.end !== null ? `, waited ${fmtDuration(r.end - r.start)}` : ", waiting"}`,
      }, el("span", {}, `wait ${fmtDuration(r.delay_ms)}`));
      track.appendChild(this.place(wait, r.start, r.end, range));
    }
    for (const a of step.attempts) track.appendChild(this.attempt(a, range));
    const tools = el("div", { class: "tl-track tl-tools" });
    for (const t of step.tools) {
      const waiting = t.approval === "pending";
      const bar = el("div", {
        class: `tl-bar tl-tool${t.is_error ? " is-error" : ""}${waiting ? " is-pending" : ""}`,
        "data-approval": t.approval || "",
        title: `tool ${t.name} [${t.call_id}]${t.error_code ? ` — ${t.error_code}` : ""}` +
          `${t.approval ? ` (${t.approval === "pending" ? "waiting for approval" : t.approval})` : ""}\n` +
          (t.end !== null ? fmtDuration(t.end - t.start) : waiting ? "not run: waiting for a decision" : "running"),
      }, el("span", {}, waiting ? `${t.name} ⏸` : t.name));
      tools.appendChild(this.place(bar, t.start, t.end, range));
    }
    for (const m of step.markers) {
      const mark = el("div", { class: "tl-marker", title: `${m.type} (seq ${m.seq})\n${m.text}` });
      mark.style.left = `${((Math.max(range[0], m.time || range[0]) - range[0]) / Math.max(1, range[1] - range[0])) * 100}%`;
      track.appendChild(mark);
    }
    const duration = step.end !== null ? fmtDuration(step.end - step.start) : "";
    return el("div", { class: "tl-row tl-step", "data-step": `${turn.turn}.${step.step}` },
      el("span", { class: "tl-label", title: duration }, `step ${step.step}`),
      el("div", { class: "tl-lanes" }, track, step.tools.length ? tools : null));
  }

  render(turns, start, end) {
    clear(this.root);
    if (!turns.length) { this.root.appendChild(el("p", { class: "muted" }, "No turns yet.")); return; }
    const zoomed = this.zoom !== null ? turns.find((t) => t.turn === this.zoom) : null;
    const range = zoomed ? [zoomed.start, zoomed.end ?? end] : [start, end];
    this.root.appendChild(this.axis(range));
    for (const turn of turns) {
      if (zoomed && turn !== zoomed) continue;
      const name = el("button", { type: "button", class: "link tl-turn-name", title: zoomed ? "back to the whole session" : "zoom to this turn" }, `Turn ${turn.turn}`);
      name.addEventListener("click", () => { this.zoom = zoomed ? null : turn.turn; this.render(turns, start, end); });
      const outcome = turn.outcome || "running";
      const failure = turn.failure ? ` — ${failureText(turn.failure)}` : turn.detail ? ` — ${turn.detail}` : "";
      this.root.appendChild(el("div", { class: "tl-turn", "data-turn": turn.turn },
        el("div", { class: "tl-turn-head" }, name,
          el("span", { class: `badge outcome-${outcome.replace(/[^a-z-]/g, "")}` }, outcome),
          el("span", { class: "muted" }, `${turn.end !== null ? fmtDuration(turn.end - turn.start) : ""}${failure}`)),
        turn.steps.map((step) => this.step(turn, step, range))));
    }
  }
}
