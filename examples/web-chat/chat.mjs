// The web-chat example: the AI SDK's DefaultChatTransport against `modelwire serve`'s agent
// endpoint, with no framework. Bundle it (npm run build: esbuild → chat.js, no CDN).
// Messages are kept in localStorage; after a reload the page asks the server for the running
// turn (GET …/chat/{id}/stream) and shows it again from its start, then follows it live.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const agent = document.documentElement.dataset.agent || "chat";
const api = new URL(`v1/agents/${agent}/chat`, document.baseURI).href;
const transport = new DefaultChatTransport({ api });
const store = window.localStorage;
const session = store.getItem("mw-session") || `web-${crypto.randomUUID()}`;
store.setItem("mw-session", session);
let messages = JSON.parse(store.getItem("mw-messages") || "[]");

const log = document.getElementById("log");
const form = document.getElementById("form");
const input = document.getElementById("input");

function save() {
  store.setItem("mw-messages", JSON.stringify(messages));
}

function render() {
  log.replaceChildren(
    ...messages.map((message) => {
      const box = document.createElement("div");
      box.className = `msg ${message.role}`;
      box.dataset.id = message.id;
      for (const part of message.parts) {
        const line = document.createElement("div");
        if (part.type === "text") {
          line.className = "text";
          line.textContent = part.text;
        } else if (part.type === "reasoning") {
          line.className = "reasoning";
          line.textContent = part.text;
        } else if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
          line.className = "tool";
          line.textContent = `${part.toolName ?? part.type}: ${part.state}`;
        } else {
          continue;
        }
        box.append(line);
      }
      return box;
    }),
  );
}

function upsert(message) {
  const at = messages.findIndex((m) => m.id === message.id);
  if (at >= 0) messages[at] = message;
  else messages.push(message);
  save();
  render();
}

async function consume(stream) {
  document.body.dataset.status = "streaming";
  try {
    for await (const message of readUIMessageStream({ stream })) upsert(message);
    document.body.dataset.status = "ready";
  } catch (error) {
    document.body.dataset.status = "error";
    document.body.dataset.error = String(error);
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  upsert({ id: `u-${crypto.randomUUID()}`, role: "user", parts: [{ type: "text", text }] });
  const stream = await transport.sendMessages({
    chatId: session,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  await consume(stream);
});

render();
let running = null;
if (messages.length) {
  // a session the server never saw (404) has nothing to resume either
  running = await transport.reconnectToStream({ chatId: session }).catch(() => null);
}
if (running) await consume(running);
else document.body.dataset.status = "ready";
