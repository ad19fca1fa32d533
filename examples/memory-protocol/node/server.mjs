// A memory service in JavaScript, written from docs/memory-protocol.md alone (no memgauge
// code): it keeps every turn of an episode (text plus image captions), ranks them against the
// question by word overlap (BM25), and answers either with an OpenAI-compatible model reading
// the best turns (MODEL_BASE_URL set) or, without a model, with the best turn's own text.
//
//   node server.mjs [--port 8765] [--host 127.0.0.1] [--token-env NAME]
//   MODEL_BASE_URL=http://127.0.0.1:8080/v1 MODEL_NAME=smollm2 node server.mjs
//
// It prints "listening on http://HOST:PORT" once ready (--port 0 takes any free port).
// Protocol v1.1: memories are kept per (namespace, episode_id), so two runs at once do not
// touch each other; with --token-env NAME every request must bring "Authorization: Bearer"
// and the token that variable holds. Node 18 or later (global fetch); no packages.

import crypto from "node:crypto";
import http from "node:http";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
};
const HOST = option("--host", "127.0.0.1");
const PORT = Number(option("--port", "8765"));
const TOP_K = Number(option("--top-k", "5"));
const RANKING = 50; // the protocol asks for the ranking the chosen turns came from
const MODEL_BASE_URL = process.env.MODEL_BASE_URL || "";
const MODEL_NAME = process.env.MODEL_NAME || "default";
const MAX_BODY = 32 * 1024 * 1024; // the limit the protocol page states
const TOKEN_ENV = option("--token-env", "");
const TOKEN = TOKEN_ENV ? (process.env[TOKEN_ENV] || "") : "";
if (TOKEN_ENV && !TOKEN) {
  console.error(`--token-env ${TOKEN_ENV}: the environment variable is not set`);
  process.exit(2);
}

// JSON.stringify([namespace, episode_id]) -> {sessions: Set<session_id>,
//   turns: [{session_id, turn_id, text, images, date}]}; a v1 client sends no namespace ("")
const episodes = new Map();
const MAX_NAMESPACE = 128;

class HttpError extends Error {
  constructor(status, message, kind = "bad_request") {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

function episodeKey(body) {
  const namespace = body?.namespace ?? "";
  if (typeof namespace !== "string" || namespace.length > MAX_NAMESPACE) {
    throw new HttpError(400, `namespace: expected a string of at most ${MAX_NAMESPACE} characters`);
  }
  return JSON.stringify([namespace, need(body, "episode_id", "string")]);
}

const words = (text) => (String(text).toLowerCase().match(/[a-z0-9$.]+/g) || [])
  .map((w) => w.replace(/^[.]+|[.]+$/g, ""))
  .filter((w) => w.length > 1 && !STOP.has(w));
const STOP = new Set(("the a an and or of to in on at for is are was were be been it its this that " +
  "what which who whom when where how do does did my your our their his her me you we they " +
  "with from by as about i can could would should will have has had not no yes").split(" "));

function turnText(turn) {
  const captions = (turn.images || []).map((im) => im.caption).filter(Boolean);
  return [turn.text, ...captions.map((c) => `[image: ${c}]`)].join(" ");
}

// BM25 over the episode's turns (k1 1.2, b 0.75): a plain, well-known ranking.
function rank(turns, question) {
  const docs = turns.map((t) => words(turnText(t)));
  const n = docs.length;
  const avg = docs.reduce((s, d) => s + d.length, 0) / Math.max(n, 1);
  const df = new Map();
  for (const d of docs) for (const w of new Set(d)) df.set(w, (df.get(w) || 0) + 1);
  const q = [...new Set(words(question))];
  const scored = docs.map((d, i) => {
    const tf = new Map();
    for (const w of d) tf.set(w, (tf.get(w) || 0) + 1);
    let score = 0;
    for (const w of q) {
      const f = tf.get(w) || 0;
      if (!f) continue;
      const idf = Math.log(1 + (n - df.get(w) + 0.5) / (df.get(w) + 0.5));
      score += idf * (f * 2.2) / (f + 1.2 * (1 - 0.75 + 0.75 * d.length / (avg || 1)));
    }
    return { i, score };
  });
  // Best first; ties keep the later turn first (newer evidence wins a tie).
  scored.sort((a, b) => b.score - a.score || b.i - a.i);
  return scored.slice(0, RANKING);
}

async function readModel(question, best) {
  const context = best.map((t) => `[${t.date || "undated"} ${t.session_id}] ${t.role}: ` +
    turnText(t)).join("\n");
  const options = question.options ? `\nOptions:\n${question.options.join("\n")}` : "";
  const reply = await fetch(`${MODEL_BASE_URL.replace(/\/$/, "")}/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      model: MODEL_NAME,
      temperature: 0,
      messages: [
        { role: "system", content: "Answer from the remembered conversation. Be brief." },
        { role: "user", content: `Remembered:\n${context}\n\nQuestion: ${question.text}${options}` },
      ],
    }),
  });
  if (!reply.ok) throw new HttpError(502, `model replied ${reply.status}: ${await reply.text()}`);
  const body = await reply.json();
  const usage = body.usage || {};
  return {
    answer: String(body.choices?.[0]?.message?.content ?? ""),
    usage: { prompt_tokens: usage.prompt_tokens | 0, completion_tokens: usage.completion_tokens | 0 },
  };
}

function need(body, field, type) {
  const value = body?.[field];
  if (typeof value !== type || value === null) {
    throw new HttpError(400, `${field}: expected ${type}`);
  }
  return value;
}

const routes = {
  "GET /info": async () => ({ name: "node-bm25-memory", version: "1.1.0", modality: "caption",
                              protocol_version: "1.1" }),

  "POST /reset": async (body) => {
    episodes.set(episodeKey(body), { sessions: new Set(), turns: [] });
    return {};
  },

  "POST /ingest": async (body) => {
    const id = episodeKey(body);
    const session = need(body, "session", "object");
    const sessionId = need(session, "session_id", "string");
    if (!episodes.has(id)) episodes.set(id, { sessions: new Set(), turns: [] });
    const episode = episodes.get(id);
    if (episode.sessions.has(sessionId)) return {}; // a retried ingest is already done
    episode.sessions.add(sessionId);
    for (const turn of session.turns || []) {
      episode.turns.push({ ...turn, session_id: sessionId, date: session.date ?? null });
    }
    return {};
  },

  "POST /answer": async (body) => {
    const id = episodeKey(body);
    const question = need(body, "question", "object");
    const text = need(question, "text", "string");
    const episode = episodes.get(id);
    if (!episode) throw new HttpError(409, `episode ${body.episode_id} was never reset`);
    const ranking = rank(episode.turns, text);
    const chosen = ranking.filter((r) => r.score > 0).slice(0, TOP_K);
    const best = chosen.map((r) => episode.turns[r.i]);
    const retrieved = ranking.map((r, place) => {
      const turn = episode.turns[r.i];
      return { session_id: turn.session_id, turn_id: turn.turn_id ?? null, image_index: null,
               score: r.score, chosen: place < chosen.length };
    });
    const bytes = Buffer.byteLength(JSON.stringify(episode.turns));
    const meta = { memory: { items: episode.turns.length, bytes } };
    if (MODEL_BASE_URL) {
      const { answer, usage } = await readModel(question, best);
      return { answer, retrieved, usage, meta };
    }
    const answer = best.length ? best[0].text : "I don't know.";
    return { answer, retrieved, usage: null, meta };
  },
};

const sameToken = (header) => {
  const given = Buffer.from(String(header || ""));
  const wanted = Buffer.from(`Bearer ${TOKEN}`);
  return given.length === wanted.length && crypto.timingSafeEqual(given, wanted);
};

const server = http.createServer((request, response) => {
  const chunks = [];
  let size = 0;
  const reply = (status, payload) => {
    const data = JSON.stringify(payload);
    response.writeHead(status, { "Content-Type": "application/json",
                                 "Content-Length": Buffer.byteLength(data) });
    response.end(data);
  };
  let refused = false;
  const refuse = (status, message, kind) => {
    refused = true;
    response.setHeader("Connection", "close");
    response.on("finish", () => request.destroy()); // sent: read no more of it
    reply(status, { error: { message, kind } });
  };
  if (TOKEN && !sameToken(request.headers.authorization)) {
    response.setHeader("WWW-Authenticate", 'Bearer realm="memory"');
    return refuse(401, "this service wants Authorization: Bearer <token>", "unauthorized");
  }
  if (Number(request.headers["content-length"] || 0) > MAX_BODY) {
    return refuse(413, `the body is over ${MAX_BODY} bytes`, "too_large");
  }
  request.on("data", (chunk) => {
    if (refused) return;
    size += chunk.length;
    if (size > MAX_BODY) return refuse(413, `the body is over ${MAX_BODY} bytes`, "too_large");
    chunks.push(chunk);
  });
  request.on("end", async () => {
    if (refused) return;
    try {
      const path = new URL(request.url, "http://x").pathname.replace(/\/+$/, "");
      const handler = routes[`${request.method} ${path}`];
      if (!handler) throw new HttpError(404, `no route ${request.method} ${path}`);
      let body = {};
      if (request.method === "POST") {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          throw new HttpError(400, "body is not JSON");
        }
      }
      reply(200, await handler(body));
    } catch (error) {
      reply(error.status || 500, { error: { message: String(error.message || error),
                                            kind: error.kind || "server_error" } });
    }
  });
});

server.headersTimeout = 10_000; // a half-sent request head is let go
server.requestTimeout = 60_000;
server.maxConnections = 64;
server.listen(PORT, HOST, () => {
  const { port } = server.address();
  console.log(`listening on http://${HOST}:${port}`);
});
