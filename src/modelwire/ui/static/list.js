// The sessions list: search, sort by any column, page through thousands of sessions.

import { clear, el, fmtCost, fmtInt, fmtTime, getJSON, outcomeBadge, sessionHref, showError } from "./dom.js";

const PAGE = 50;
const DESCENDING_FIRST = new Set(["started", "last", "events", "turns", "tokens", "cost"]);
const params = new URLSearchParams(location.search);
const state = {
  q: params.get("q") || "",
  sort: params.get("sort") || "last",
  order: params.get("order") || "desc",
  offset: Math.max(0, parseInt(params.get("offset") || "0", 10) || 0),
};

const body = document.querySelector("#sessions tbody");
const search = document.getElementById("q");
const errorBox = document.getElementById("error");
let generation = 0;

function syncUrl() {
  const query = new URLSearchParams();
  if (state.q) query.set("q", state.q);
  if (state.sort !== "last") query.set("sort", state.sort);
  if (state.order !== "desc") query.set("order", state.order);
  if (state.offset) query.set("offset", String(state.offset));
  const suffix = query.toString();
  history.replaceState(null, "", suffix ? `/?${suffix}` : "/");
}

// A pending row is a session too big to summarize before the page answered: its derived
// columns follow on a later request (the page asks again shortly).
function row(item) {
  const later = (value) => (item.pending ? el("span", { class: "muted", title: "summarizing…" }, "…") : value);
  return el("tr", { "data-session": item.session_id, class: item.pending ? "pending" : null },
    el("td", { class: "id" }, el("a", { href: sessionHref(item.session_id) }, item.session_id)),
    el("td", {}, later(item.route || "")),
    el("td", { class: "time" }, fmtTime(item.started)),
    el("td", { class: "time" }, fmtTime(item.last_time)),
    el("td", { class: "num" }, later(fmtInt(item.turns))),
    el("td", { class: "num" }, fmtInt(item.events)),
    el("td", { class: "num" }, later(fmtInt(item.tokens))),
    el("td", { class: "num" }, later(fmtCost(item.cost))),
    el("td", {}, later(outcomeBadge(item.outcome, item.outcome_code))),
  );
}

function renderHeaders() {
  for (const th of document.querySelectorAll("#sessions th[data-sort]")) {
    const active = th.dataset.sort === state.sort;
    th.classList.toggle("sorted", active);
    th.setAttribute("aria-sort", active ? (state.order === "asc" ? "ascending" : "descending") : "none");
    th.querySelector(".arrow").textContent = active ? (state.order === "asc" ? " ▲" : " ▼") : "";
  }
}

async function load() {
  const mine = ++generation;
  syncUrl();
  renderHeaders();
  document.body.setAttribute("aria-busy", "true");
  const query = new URLSearchParams({
    q: state.q, sort: state.sort, order: state.order, offset: String(state.offset), limit: String(PAGE),
  });
  try {
    const page = await getJSON(`/api/sessions?${query}`);
    if (mine !== generation) return;
    errorBox.hidden = true;
    document.getElementById("log").textContent = page.log;
    clear(body);
    for (const item of page.items) body.appendChild(row(item));
    if (!page.items.length) {
      body.appendChild(el("tr", {}, el("td", { colspan: 9, class: "empty" },
        page.total ? "No session matches the search." : "This log holds no sessions yet.")));
    }
    const first = page.matched ? page.offset + 1 : 0;
    const last = page.offset + page.items.length;
    const of = page.q ? `${fmtInt(page.matched)} matching of ${fmtInt(page.total)}` : fmtInt(page.total);
    document.getElementById("range").textContent = `${fmtInt(first)}–${fmtInt(last)} of ${of}`;
    document.getElementById("prev").disabled = page.offset === 0;
    document.getElementById("next").disabled = last >= page.matched;
    document.body.dataset.loaded = String(mine);
    if (page.items.some((item) => item.pending)) {
      setTimeout(() => { if (mine === generation) load(); }, 400);
    }
  } catch (error) {
    if (mine === generation) showError(errorBox, error);
  } finally {
    if (mine === generation) document.body.removeAttribute("aria-busy");
  }
}

for (const th of document.querySelectorAll("#sessions th[data-sort]")) {
  th.querySelector("button").addEventListener("click", () => {
    const column = th.dataset.sort;
    if (state.sort === column) state.order = state.order === "asc" ? "desc" : "asc";
    else { state.sort = column; state.order = DESCENDING_FIRST.has(column) ? "desc" : "asc"; }
    state.offset = 0;
    load();
  });
}

let typing = null;
search.value = state.q;
search.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(() => { state.q = search.value.trim(); state.offset = 0; load(); }, 250);
});
document.getElementById("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); load(); });
document.getElementById("next").addEventListener("click", () => { state.offset += PAGE; load(); });
load();
