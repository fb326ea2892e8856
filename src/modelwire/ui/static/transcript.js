// The conversation as a transcript: markdown rendered, reasoning collapsed, each tool call shown
// with its result. Entries are appended as they arrive (live updates never re-render old ones).

import { el, fmtClock } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

function prettyJSON(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return text; }
}

function blockText(blocks) {
  return blocks.map((b) => b.text || "").join("\n");
}

function resultNode(item) {
  const label = item.is_error ? `error${item.error_code ? ` ${item.error_code}` : ""}` : "result";
  return el("div", { class: `tool-result${item.is_error ? " is-error" : ""}`, "data-call": item.call_id },
    el("div", { class: "tool-result-head" }, `← ${label}`),
    el("pre", {}, blockText(item.blocks)));
}

export class Transcript {
  constructor(root, onAttempt) {
    this.root = root;
    this.onAttempt = onAttempt;
    this.nodes = new Map();     // entry id -> node
    this.calls = new Map();     // tool call id -> its result slot
    this.draft = null;
  }

  head(item, who) {
    const where = item.attempt
      ? el("button", { type: "button", class: "link attempt-link", title: "show this attempt on the timeline" },
          `${item.turn}.${item.step} attempt ${item.attempt}`)
      : item.turn ? el("span", {}, `turn ${item.turn}`) : null;
    if (where && item.attempt) where.addEventListener("click", () => this.onAttempt([item.turn, item.step, item.attempt]));
    return el("div", { class: "msg-head" }, el("span", { class: "who" }, who), where,
      item.interrupted ? el("span", { class: "badge outcome-aborted" }, "interrupted") : null,
      el("span", { class: "when" }, fmtClock(item.time)));
  }

  blocks(item) {
    return item.blocks.map((block, index) => {
      if (block.type === "text") return renderMarkdown(block.text);
      if (block.type === "reasoning") {
        return el("details", { class: "reasoning", "data-key": `${item.id}:${index}` },
          el("summary", {}, `reasoning · ${block.text.length.toLocaleString("en-US")} characters`),
          el("div", { class: "reasoning-text" }, block.text));
      }
      if (block.type === "tool-call") {
        const slot = el("div", { class: "tool-slot" }, el("div", { class: "muted tool-pending" }, "no result yet"));
        if (item.kind !== "draft") this.calls.set(block.call_id, slot);
        const call = el("div", { class: "tool-call", "data-call": block.call_id },
          el("div", { class: "tool-call-head" }, "→ ", el("strong", {}, block.name || "?"),
            el("span", { class: "muted" }, ` ${block.call_id || ""}`)),
          el("pre", {}, prettyJSON(block.text)), slot);
        return call;
      }
      if (block.type === "tool-result") return resultNode({ ...item, blocks: [block], call_id: block.call_id, is_error: block.is_error });
      return el("div", { class: "muted" }, block.text);
    });
  }

  fill(slot, item) {
    slot.replaceChildren(resultNode(item));
  }

  entry(item) {
    switch (item.kind) {
      case "user":
        return el("article", { class: "msg user", "data-entry": item.id }, this.head(item, "user"), this.blocks(item));
      case "assistant":
        return el("article", { class: "msg assistant", "data-entry": item.id }, this.head(item, "assistant"), this.blocks(item));
      case "draft":
        return el("article", { class: "msg assistant draft", "data-entry": item.id },
          this.head(item, "assistant · streaming…"), this.blocks(item));
      case "note": {
        const note = el("div", { class: `note${item.is_error ? " is-error" : ""}`, "data-entry": item.id, role: "note" },
          el("span", {}, blockText(item.blocks)));
        if (item.attempt) {
          const show = el("button", { type: "button", class: "link" }, "show attempt");
          show.addEventListener("click", () => this.onAttempt([item.turn, item.step, item.attempt]));
          note.append(" · ", show);
        }
        return note;
      }
      case "system":
        return el("details", { class: "msg system", "data-entry": item.id },
          el("summary", {}, "system prompt"), el("pre", {}, blockText(item.blocks)));
      default: { // a tool result without its call in view
        return el("article", { class: "msg tool", "data-entry": item.id },
          this.head(item, `tool ${item.name || ""}`), resultNode(item));
      }
    }
  }

  add(items) {
    for (const item of items) {
      if (this.nodes.has(item.id)) continue;
      if (item.kind === "tool" && item.call_id) {
        const slot = this.calls.get(item.call_id);
        if (slot) { this.fill(slot, item); this.nodes.set(item.id, slot); continue; }
      }
      const node = this.entry(item);
      this.nodes.set(item.id, node);
      this.root.insertBefore(node, this.draft);
    }
  }

  setDraft(item) {
    if (this.draft) { this.draft.remove(); this.draft = null; }
    if (item) { this.draft = this.entry(item); this.root.appendChild(this.draft); }
  }
}
