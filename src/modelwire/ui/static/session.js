// One session: transcript beside a timeline, usage chart, attempt panel, and live updates over
// server-sent events (`/api/live`), merged into the page as the log grows. A giant session's
// first answer covers only its first events (`complete` false); the stream brings the rest.

import { clear, el, fmtCost, fmtDuration, fmtInt, fmtTime, getJSON, showError } from "./dom.js";
import { renderChart } from "./chart.js";
import { Detail } from "./detail.js";
import { Timeline } from "./timeline.js";
import { Transcript } from "./transcript.js";

const sessionId = new URLSearchParams(location.search).get("id") || "";
const errorBox = document.getElementById("error");
const state = { view: null, turns: new Map() };
const detail = new Detail(document.getElementById("detail"), sessionId);
const timeline = new Timeline(document.getElementById("timeline"), select);
const transcript = new Transcript(document.getElementById("transcript"), select);

function select(key) {
  timeline.selected = key.join(".");
  drawTimeline();
  const bar = document.querySelector(`.tl-attempt[data-key="${CSS.escape(timeline.selected)}"]`);
  if (bar) bar.scrollIntoView({ block: "nearest" });
  detail.show(key).catch((error) => showError(errorBox, error));
}

function turns() {
  return [...state.turns.values()].sort((a, b) => a.turn - b.turn);
}

function drawTimeline() {
  const v = state.view;
  timeline.render(turns(), v.start ?? 0, v.end ?? v.start ?? 0);
}

function drawSummary() {
  const v = state.view;
  const all = turns();
  const attempts = all.flatMap((t) => t.steps.flatMap((s) => s.attempts));
  const failed = attempts.filter((a) => a.status === "failed").length;
  const retries = all.flatMap((t) => t.steps.flatMap((s) => s.retries)).length;
  const tools = all.flatMap((t) => t.steps.flatMap((s) => s.tools)).length;
  const item = (name, value) => el("div", { class: "stat" }, el("span", { class: "stat-value" }, value), el("span", { class: "stat-name" }, name));
  clear(document.getElementById("summary")).append(
    item("started", fmtTime(v.start)),
    item("duration", v.start !== null ? fmtDuration(v.end - v.start) : ""),
    item("turns", fmtInt(all.length)),
    item("calls", fmtInt(attempts.length)),
    item("failed attempts", fmtInt(failed)),
    item("retries", fmtInt(retries)),
    item("tool runs", fmtInt(tools)),
    item("tokens", fmtInt(v.total.total)),
    item("cost", v.cost !== null ? fmtCost(v.cost) : "—"),
  );
}

function merge(update) {
  const v = state.view;
  for (const turn of update.turns) state.turns.set(turn.turn, turn);
  state.view = { ...v, ...update, turns: undefined, transcript: undefined };
  transcript.add(update.transcript);
  transcript.setDraft(update.draft);
}

function draw() {
  const v = state.view;
  document.getElementById("route").textContent = v.route || "";
  document.getElementById("live").hidden = !(v.complete && v.running && live.connected);
  document.getElementById("loading").hidden = v.complete;
  drawSummary();
  drawTimeline();
  renderChart(document.getElementById("chart"), v.calls, v.total, v.cost);
  document.body.dataset.nextSeq = String(v.next_seq);
  document.body.dataset.running = v.complete && v.running ? "1" : "0";
  document.body.dataset.complete = v.complete ? "1" : "0";
}

const live = { source: null, connected: false };

function connect() {
  const url = `/api/live?${new URLSearchParams({ id: sessionId, from_seq: state.view.next_seq })}`;
  const source = new EventSource(url);
  live.source = source;
  source.addEventListener("open", () => { live.connected = true; draw(); });
  source.addEventListener("update", (message) => {
    const update = JSON.parse(message.data);
    if (update.next_seq <= state.view.next_seq) return;
    merge(update);
    draw();
  });
  source.addEventListener("gone", () => { source.close(); showError(errorBox, "This session is no longer in the log."); });
  source.addEventListener("error", () => {
    live.connected = false;
    document.getElementById("live").hidden = true;
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, 3000); // a refused reconnect
  });
}

async function main() {
  document.getElementById("sid").textContent = sessionId;
  document.title = `${sessionId} — modelwire`;
  document.getElementById("raw").setAttribute("href", `/api/events?${new URLSearchParams({ id: sessionId })}`);
  if (!sessionId) { showError(errorBox, "No session id in the address (…/session?id=ID)."); return; }
  try {
    const view = await getJSON(`/api/session?${new URLSearchParams({ id: sessionId })}`);
    state.view = view;
    for (const turn of view.turns) state.turns.set(turn.turn, turn);
    transcript.add(view.transcript);
    transcript.setDraft(view.draft);
    draw();
    document.body.dataset.loaded = "1";
    connect();
  } catch (error) {
    showError(errorBox, error);
  }
}

main();
