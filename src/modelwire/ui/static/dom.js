// DOM helpers of the modelwire inspector.
//
// Everything the page shows comes from the session log, and the log holds model output, which is
// untrusted. So nothing here ever parses data as HTML: text goes into text nodes, attributes are
// limited to a fixed list (never `on…` handlers, never `style`), and links must be http(s).

const ATTRIBUTES = new Set([
  "class", "id", "title", "role", "type", "href", "target", "rel", "colspan", "open", "hidden",
  "disabled", "tabindex", "lang", "aria-label", "aria-pressed", "aria-expanded", "aria-busy",
]);

export function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
  return node;
}

function setAttribute(node, name, value) {
  if (value === null || value === undefined || value === false) return;
  if (name.startsWith("data-")) {
    if (!/^data-[a-z][a-z0-9-]*$/.test(name)) throw new Error(`bad attribute ${name}`);
  } else if (!ATTRIBUTES.has(name)) {
    throw new Error(`attribute ${name} is not allowed`);
  }
  if (name === "href") {
    const href = safeHref(String(value), true);
    if (href === null) return;
    value = href;
  }
  node.setAttribute(name, value === true ? "" : String(value));
}

// An element with attributes and children (strings become text nodes).
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) setAttribute(node, name, value);
  return append(node, children);
}

const SVG = "http://www.w3.org/2000/svg";
const SVG_ATTRIBUTES = new Set([
  "viewBox", "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "class",
  "preserveAspectRatio", "text-anchor", "points", "role", "aria-label",
]);

export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (!SVG_ATTRIBUTES.has(name)) throw new Error(`svg attribute ${name} is not allowed`);
    node.setAttribute(name, String(value));
  }
  return append(node, children);
}

// `url` if it is safe to link: http(s) or mailto, or (with `local`) a path of this site.
export function safeHref(url, local = false) {
  if (local && url.startsWith("/") && !url.startsWith("//")) return url;
  try {
    const parsed = new URL(url);
    if (["http:", "https:", "mailto:"].includes(parsed.protocol)) return parsed.href;
  } catch (_) {
    return null;
  }
  return null;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export async function getJSON(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body && body.error ? `${body.error.code}: ${body.error.message}` : response.statusText;
    throw new Error(message);
  }
  return body;
}

export function showError(node, error) {
  node.hidden = false;
  clear(node).appendChild(document.createTextNode(String(error && error.message ? error.message : error)));
}

// ---- formatting ---------------------------------------------------------------------------

const pad = (n, width = 2) => String(n).padStart(width, "0");

export function fmtTime(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtClock(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60000);
  if (minutes < 60) return `${minutes} min ${pad(Math.round((ms % 60000) / 1000))} s`;
  return `${Math.floor(minutes / 60)} h ${pad(minutes % 60)} min`;
}

export function fmtInt(n) {
  return n === null || n === undefined ? "" : Number(n).toLocaleString("en-US");
}

// A cost string from the server (a decimal in USD), or "" when the meter gave none.
export function fmtCost(cost) {
  if (cost === null || cost === undefined) return "";
  const value = Number(cost);
  if (!Number.isFinite(value)) return "";
  if (value === 0) return "$0";
  return value >= 0.01 ? `$${value.toFixed(2)}` : `$${value.toPrecision(2)}`;
}

export function outcomeBadge(outcome, code) {
  if (!outcome) return el("span", { class: "badge muted" }, "—");
  return el("span", { class: `badge outcome-${outcome.replace(/[^a-z-]/g, "")}` },
    code ? `${outcome} ${code}` : outcome);
}

export function sessionHref(id) {
  return `/session?id=${encodeURIComponent(id)}`;
}
