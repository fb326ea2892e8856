// The real AI SDK (`ai` npm package) as the client of modelwire serve's agent endpoints.
// node ui.mjs send API SESSION MESSAGES_JSON   -> POST API (DefaultChatTransport.sendMessages)
// node ui.mjs resume API SESSION [MESSAGE_JSON [LAST_EVENT_ID]] -> GET API/SESSION/stream
//   (reconnectToStream; with Last-Event-ID when given)
// Prints one JSON line: {status, chunks, message} — the chunks the SDK parsed and the UI message
// its readUIMessageStream built from them (continuing MESSAGE_JSON on a resume when given).
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [mode, api, chatId, given, lastEventId] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api });
let stream;
let prior;
if (mode === "send") {
  const messages = JSON.parse(given);
  stream = await transport.sendMessages({
    chatId,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
} else {
  prior = given && given !== "null" ? JSON.parse(given) : undefined;
  const headers = lastEventId ? { "Last-Event-ID": lastEventId } : undefined;
  stream = await transport.reconnectToStream({ chatId, headers });
}
if (stream === null) {
  console.log(JSON.stringify({ status: 204, chunks: [], message: null }));
  process.exit(0);
}
const chunks = [];
const recorded = stream.pipeThrough(
  new TransformStream({
    transform(chunk, controller) {
      chunks.push(chunk);
      controller.enqueue(chunk);
    },
  }),
);
let message = null;
let failure = null;
try {
  for await (const snapshot of readUIMessageStream({
    stream: recorded,
    message: prior,
    terminateOnError: true,
  })) {
    message = snapshot;
  }
} catch (error) {
  failure = String(error);
}
console.log(JSON.stringify({ status: 200, chunks, message, failure }));
