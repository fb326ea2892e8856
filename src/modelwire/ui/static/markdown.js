// A small, safe Markdown renderer: Markdown text in, DOM nodes out — never an HTML string.
//
// Supported: paragraphs, headings, fenced and indented code, block quotes, lists, tables,
// horizontal rules; inline code, **strong**, *emphasis*, ~~strike~~, [links](https://…) and bare
// http(s) URLs. Raw HTML is not markup here: `<script>` or `<img onerror=…>` in a message shows
// as those characters. Links must be absolute http(s)/mailto and open in a new tab without
// referrer; images are shown as their alt text, never loaded.
//
// Hostile nesting is bounded: block quotes and lists nest at most MAX_DEPTH levels and inline
// spans (emphasis in emphasis, a link label) at most MAX_INLINE; what lies deeper is shown as
// plain text, never dropped. So a 100 KB answer of `> > > …` costs a few passes over its lines,
// not 50,000 nested calls and elements, and a renderer failure of any kind still shows the
// message as plain text rather than failing the page.

import { el, safeHref } from "./dom.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const MAX_DEPTH = 8;
const MAX_INLINE = 16;

export function renderMarkdown(text) {
  const root = el("div", { class: "md" });
  const source = String(text);
  try {
    renderBlocks(root, source.replace(/\r\n?/g, "\n").split("\n"), 0);
  } catch (error) {
    console.warn("markdown rendering failed; showing the text as written", error);
    root.replaceChildren(el("p", { class: "md-plain" }, source));
  }
  return root;
}

// What lies past the nesting cap: its lines as written, one plain-text paragraph.
function plain(lines) {
  return el("p", { class: "md-deep" }, lines.join("\n"));
}

function startsBlock(line, next) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) || (line.includes("|") && next !== undefined && TABLE_RULE.test(next));
}

function renderBlocks(parent, lines, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++;
      const code = el("code", m[2] ? { "data-lang": m[2].toLowerCase().replace(/[^a-z0-9+#.-]/g, "") } : {}, body.join("\n"));
      parent.appendChild(el("pre", {}, code));
    } else if ((m = HEADING.exec(line))) {
      parent.appendChild(el(`h${Math.min(6, m[1].length + 2)}`, {}, inline(m[2] || "")));
      i++;
    } else if (RULE.test(line)) {
      parent.appendChild(el("hr"));
      i++;
    } else if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(QUOTE, ""));
      const quote = el("blockquote");
      if (depth + 1 >= MAX_DEPTH) quote.appendChild(plain(body));
      else renderBlocks(quote, body, depth + 1);
      parent.appendChild(quote);
    } else if (ITEM.test(line)) {
      i = renderList(parent, lines, i, depth);
    } else if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      i = renderTable(parent, lines, i);
    } else if (/^( {4}|\t)/.test(line)) {
      const body = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) {
        body.push(lines[i++].replace(/^( {4}|\t)/, ""));
      }
      parent.appendChild(el("pre", {}, el("code", {}, body.join("\n").replace(/\n+$/, ""))));
    } else {
      const body = [];
      while (i < lines.length && lines[i].trim() && !(body.length && startsBlock(lines[i], lines[i + 1]))) {
        body.push(lines[i++]);
      }
      parent.appendChild(el("p", {}, inline(body.join("\n"))));
    }
  }
}

function renderList(parent, lines, i, depth) {
  const first = ITEM.exec(lines[i]);
  const ordered = /\d/.test(first[2]);
  const list = el(ordered ? "ol" : "ul");
  const start = parseInt(first[2], 10);
  if (ordered && start !== 1) list.setAttribute("start", String(start));
  const indent = first[1].length;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    i++;
    while (i < lines.length) {
      const next = lines[i];
      if (!next.trim()) {
        if (i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1])) { body.push(""); i++; continue; }
        break;
      }
      const sub = ITEM.exec(next);
      if (sub && sub[1].length <= indent) break;
      if (!sub && !/^\s/.test(next)) {
        if (startsBlock(next, lines[i + 1])) break;
        body.push(next); i++; continue; // a lazy continuation line
      }
      body.push(next.replace(/^\s{1,4}/, ""));
      i++;
    }
    const item = el("li");
    if (body.length === 1) item.appendChild(inline(body[0]));
    else if (depth + 1 >= MAX_DEPTH) item.appendChild(plain(body));
    else renderBlocks(item, body, depth + 1);
    list.appendChild(item);
  }
  parent.appendChild(list);
  return i;
}

function cells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function renderTable(parent, lines, i) {
  const head = el("tr", {}, cells(lines[i]).map((c) => el("th", {}, inline(c))));
  i += 2;
  const body = el("tbody");
  while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
    body.appendChild(el("tr", {}, cells(lines[i]).map((c) => el("td", {}, inline(c)))));
    i++;
  }
  parent.appendChild(el("div", { class: "md-table" }, el("table", {}, el("thead", {}, head), body)));
  return i;
}

// ---- inline -------------------------------------------------------------------------------

const ESCAPABLE = "\\`*_{}[]()#+-.!~|<>";
const WORD = /[\p{L}\p{N}]/u;
const BARE_URL = /^https?:\/\/[^\s<>"'`]+/;
// How far an inline span (emphasis, code, link label) may reach: bounds the work on text full
// of unmatched delimiters (each one searches at most this far, not to the end of the message).
const REACH = 2000;

// Each search looks at most REACH characters ahead (a slice), never to the end of the message.
function closing(src, delimiter, from) {
  const ahead = src.slice(from, from + REACH);
  const underscore = delimiter[0] === "_";
  for (let at = ahead.indexOf(delimiter); at !== -1; at = ahead.indexOf(delimiter, at + 1)) {
    const after = src[from + at + delimiter.length] || "";
    if (at > 0 && !/\s/.test(ahead[at - 1]) && !(underscore && WORD.test(after))) return from + at;
  }
  return -1;
}

function closingSingle(src, ch, from) {
  const ahead = src.slice(from, from + REACH);
  for (let at = ahead.indexOf(ch); at !== -1; at = ahead.indexOf(ch, at + 1)) {
    const end = from + at;
    if (src[end + 1] === ch || src[end - 1] === ch) { at++; continue; }
    if (at > 0 && !/\s/.test(src[end - 1]) && !(ch === "_" && WORD.test(src[end + 1] || ""))) return end;
  }
  return -1;
}

function matchBracket(src, open) {
  let depth = 0;
  for (let at = open; at < src.length && at - open <= REACH; at++) {
    if (src[at] === "\\") { at++; continue; }
    if (src[at] === "[") depth++;
    else if (src[at] === "]" && --depth === 0) return at;
  }
  return -1;
}

function link(href, children) {
  return el("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, children);
}

export function inline(src, depth = 0) {
  const out = document.createDocumentFragment();
  if (depth >= MAX_INLINE) { out.appendChild(document.createTextNode(src)); return out; }
  let text = "";
  const flush = () => { if (text) { out.appendChild(document.createTextNode(text)); text = ""; } };
  const emit = (node) => { flush(); out.appendChild(node); };
  let i = 0;
  while (i < src.length) {
    const ch = src[i];
    const two = src.slice(i, i + 2);
    if (ch === "\\" && ESCAPABLE.includes(src[i + 1] || "\0")) { text += src[i + 1]; i += 2; continue; }
    if (ch === "`") {
      let n = 1;
      while (src[i + n] === "`") n++;
      const fence = "`".repeat(n);
      const ahead = src.slice(i + n, i + n + REACH);
      let at = ahead.indexOf(fence);
      while (at !== -1 && ahead[at + n] === "`") at = ahead.indexOf(fence, at + n + 1);
      const end = at === -1 ? -1 : i + n + at;
      if (end !== -1) {
        emit(el("code", {}, src.slice(i + n, end).replace(/^ (.+) $/s, "$1")));
        i = end + n;
        continue;
      }
      text += fence; i += n; continue;
    }
    if (two === "**" || two === "__" || two === "~~") {
      const opens = !/\s/.test(src[i + 2] || " ") && !(two === "__" && WORD.test(src[i - 1] || ""));
      const end = opens ? closing(src, two, i + 2) : -1;
      if (end !== -1) {
        emit(el(two === "~~" ? "del" : "strong", {}, inline(src.slice(i + 2, end), depth + 1)));
        i = end + 2;
        continue;
      }
      text += two; i += 2; continue;
    }
    if (ch === "*" || ch === "_") {
      const opens = !/\s/.test(src[i + 1] || " ") && !(ch === "_" && WORD.test(src[i - 1] || ""));
      const end = opens ? closingSingle(src, ch, i + 1) : -1;
      if (end !== -1) {
        emit(el("em", {}, inline(src.slice(i + 1, end), depth + 1)));
        i = end + 1;
        continue;
      }
      text += ch; i++; continue;
    }
    if (ch === "[" || (ch === "!" && src[i + 1] === "[")) {
      const image = ch === "!";
      const open = image ? i + 1 : i;
      const close = matchBracket(src, open);
      const inParens = close !== -1 && src[close + 1] === "(" ? src.slice(close + 2, close + 2 + REACH).indexOf(")") : -1;
      const paren = inParens === -1 ? -1 : close + 2 + inParens;
      if (paren !== -1) {
        const label = src.slice(open + 1, close);
        const target = src.slice(close + 2, paren).trim().split(/\s+/)[0].replace(/^<(.*)>$/, "$1");
        const href = safeHref(target);
        if (image) emit(el("span", { class: "md-image", title: target }, `[image: ${label}]`));
        else if (href) emit(link(href, inline(label, depth + 1)));
        else { flush(); out.appendChild(inline(label, depth + 1)); text += ` (${target})`; }
        i = paren + 1;
        continue;
      }
    }
    if (ch === "<") {
      const m = /^<((?:https?|mailto):[^\s<>]+)>/.exec(src.slice(i));
      const href = m ? safeHref(m[1]) : null;
      if (href) { emit(link(href, m[1])); i += m[0].length; continue; }
    }
    if ((ch === "h" || ch === "H") && !WORD.test(src[i - 1] || "")) {
      const m = BARE_URL.exec(src.slice(i, i + 2048));
      if (m) {
        const url = m[0].replace(/[.,;:!?)\]'"]+$/, "");
        const href = safeHref(url);
        if (href) { emit(link(href, url)); i += url.length; continue; }
      }
    }
    text += ch;
    i++;
  }
  flush();
  return out;
}
