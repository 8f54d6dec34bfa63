// The chat page: an OpenAI-style client of `wgc serve`. Replies stream from /v1/chat/completions as
// server-sent events (`data: {chunk}` lines, `data: [DONE]` at the end) and are rendered as
// Markdown while they arrive; Stop aborts the request (the server cancels the generation when the
// connection closes). All requests use relative URLs, so the page also works behind a proxy prefix.
// The same page runs the model in the browser at /local/ (web/local/local.js): there the replies
// come from another backend, set as globalThis.wgcChatBackend before this module loads.
import { initTheme } from './theme.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);
const SETTINGS = ['system', 'temperature', 'top_p', 'max_tokens', 'seed'];
const STORE = 'wgc-chat-settings';
const KEY_STORE = 'wgc-chat-api-key'; // apart from the settings: Reset settings keeps it

const history = []; // { role, content } of the finished turns
let conversation = 0; // bumped by New chat: a reply still ending then stays out of the new history
let model = null;
let controller = null; // the running request's AbortController

// --- settings -------------------------------------------------------------------------------
function loadSettings() {
  let saved = {};
  try {
    saved = JSON.parse(localStorage.getItem(STORE) || '{}');
  } catch {
    saved = {};
  }
  for (const k of SETTINGS) $(k).value = typeof saved[k] === 'string' ? saved[k] : '';
}
function saveSettings() {
  localStorage.setItem(STORE, JSON.stringify(Object.fromEntries(SETTINGS.map((k) => [k, $(k).value]))));
}

// --- the API key (wgc serve --api-key) ---------------------------------------------------------
function apiKey() {
  return $('api_key')?.value.trim() ?? ''; // /local/ has no server, and no field
}
function saveKey() {
  if (apiKey()) localStorage.setItem(KEY_STORE, apiKey());
  else localStorage.removeItem(KEY_STORE);
}
// The headers of every API request: the key when one is set.
function authHeaders(extra = {}) {
  return apiKey() ? { ...extra, Authorization: `Bearer ${apiKey()}` } : extra;
}
const UNAUTHORIZED = 'Unauthorized: this server requires an API key (it was started with --api-key). ' +
  'Enter the key under Server, on the right.';
const WRONG_KEY = 'Unauthorized: the server refused this API key. Check the key under Server, on the right.';
// The message of a 401: the server wants a key, or another one.
const unauthorized = () => (apiKey() ? WRONG_KEY : UNAUTHORIZED);

// The request's sampling fields: those the user set (empty ones are left to the server).
function sampling() {
  const out = {};
  for (const [k, int] of [['temperature', false], ['top_p', false], ['max_tokens', true], ['seed', true]]) {
    const v = $(k).value.trim();
    if (v === '') continue;
    const n = Number(v);
    if (!Number.isFinite(n) || (int && !Number.isInteger(n))) throw new Error(`${k} must be a${int ? 'n integer' : ' number'}, got "${v}"`);
    out[k] = n;
  }
  return out;
}

// --- messages -------------------------------------------------------------------------------
function addMessage(role, text) {
  $('empty').hidden = true;
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  const who = document.createElement('div');
  who.className = 'role';
  who.textContent = role === 'user' ? 'You' : model || 'assistant';
  const content = document.createElement('div');
  content.className = 'content';
  div.append(who, content);
  if (role === 'user') content.textContent = text;
  $('messages').append(div);
  scrollDown();
  return div;
}

function setReply(div, text) {
  const content = div.querySelector('.content');
  content.replaceChildren(renderMarkdown(text));
  scrollDown();
}

function setMeta(div, text) {
  let meta = div.querySelector('.meta');
  if (!meta) {
    meta = document.createElement('div');
    meta.className = 'meta';
    div.append(meta);
  }
  meta.textContent = text;
}

function scrollDown() {
  const m = $('messages');
  m.scrollTop = m.scrollHeight;
}

function showError(text) {
  const e = $('error');
  e.hidden = !text;
  e.textContent = text || '';
}

// --- server-sent events ---------------------------------------------------------------------
// Calls onEvent(data) for each event's data (its `data:` lines joined by newlines).
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl;
      while ((nl = buf.search(/\r?\n|\r/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (data.length && onEvent(data.join('\n')) === false) return;
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line[5] === ' ' ? 6 : 5));
        } // comments (':') and other fields are ignored
      }
    }
    if (data.length) onEvent(data.join('\n'));
  } finally {
    reader.cancel().catch(() => {});
  }
}

// The error message of a failed response (OpenAI's {"error": {"message"}} when there is one).
async function errorText(res) {
  const body = await res.text();
  try {
    return JSON.parse(body).error.message || body;
  } catch {
    return body || `${res.status} ${res.statusText}`;
  }
}

function stats(s, status) {
  const parts = [];
  const tokens = s.usage?.completion_tokens ?? s.chunks;
  parts.push(`${tokens} token${tokens === 1 ? '' : 's'}`);
  if (s.first !== null && tokens > 1 && s.last > s.first)
    parts.push(`${((tokens - 1) / ((s.last - s.first) / 1000)).toFixed(1)} tokens/s`);
  if (s.first !== null) parts.push(`time to first token ${Math.round(s.first - s.start)} ms`);
  if (s.usage?.prompt_tokens !== undefined) parts.push(`prompt ${s.usage.prompt_tokens} tokens`);
  parts.push(status === 'stopped' ? 'stopped' : `finish: ${s.finish ?? '?'}`);
  return parts.join(' · ');
}

// --- a turn ---------------------------------------------------------------------------------
async function send(text) {
  showError('');
  let extra;
  try {
    extra = sampling();
  } catch (e) {
    showError(e.message);
    return;
  }
  const conv = conversation;
  const system = $('system').value.trim();
  const messages = [...(system ? [{ role: 'system', content: system }] : []), ...history, { role: 'user', content: text }];
  addMessage('user', text);
  const reply = addMessage('assistant');
  reply.dataset.status = 'streaming';
  setBusy(true);
  controller = new AbortController();
  const s = { start: performance.now(), first: null, last: null, chunks: 0, usage: null, finish: null };
  let out = '';
  let status = 'done';
  try {
    await backend.stream({ messages, extra, signal: controller.signal, stats: s }, (piece) => {
      const now = performance.now();
      s.first ??= now;
      s.last = now;
      s.chunks++;
      out += piece;
      setReply(reply, out);
      setMeta(reply, `${s.chunks} tokens…`);
    });
  } catch (e) {
    if (e.name === 'AbortError') {
      status = 'stopped';
    } else {
      status = 'error';
      showError(e.unauthorized ? e.message : `The request failed: ${e.message}`);
      if (e.unauthorized) $('model').textContent = 'unauthorized';
    }
  } finally {
    controller = null;
    setBusy(false);
  }
  setReply(reply, out);
  reply.dataset.status = status;
  setMeta(reply, status === 'error' ? 'failed' : stats(s, status));
  if (status !== 'error' && conv === conversation)
    history.push({ role: 'user', content: text }, { role: 'assistant', content: out });
}

function setBusy(busy) {
  document.body.dataset.state = busy ? 'streaming' : 'idle';
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('send').disabled = busy;
}

// --- the backend: `wgc serve` over HTTP ------------------------------------------------------
// model(): the model's name (or throws, saying why: an error's `label` goes where the model's name
// is shown, its message to the error line); stream(request, onPiece): one reply, each piece of
// text to onPiece, the usage and finish reason into request.stats; rejects with an AbortError when
// request.signal aborts, and with an error marked `unauthorized` on a 401.
const failure = (label, message, extra = {}) => Object.assign(new Error(message), { label, ...extra });
const serverBackend = {
  describeFailure: (e) => e.message,
  unreachable: 'server not reachable',
  async model() {
    let res;
    try {
      res = await fetch('v1/models', { headers: authHeaders() });
    } catch (e) {
      throw failure('server not reachable', `Could not reach the server (/v1/models): ${e.message}`);
    }
    if (res.status === 401) throw failure('unauthorized', unauthorized(), { unauthorized: true });
    try {
      if (!res.ok) throw new Error(await errorText(res));
      const list = await res.json();
      return list.data?.[0]?.id ?? null;
    } catch (e) {
      throw failure('server error', `The server did not list its model (/v1/models): ${e.message}`);
    }
  },
  async stream({ messages, extra, signal, stats }, onPiece) {
    const res = await fetch('v1/chat/completions', {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify({ model: model || undefined, messages, stream: true, stream_options: { include_usage: true }, ...extra }),
      signal,
    });
    if (res.status === 401) throw Object.assign(new Error(unauthorized()), { unauthorized: true });
    if (!res.ok) throw new Error(await errorText(res));
    await readEvents(res.body, (data) => {
      if (data === '[DONE]') return false;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || JSON.stringify(chunk.error));
      if (chunk.usage) stats.usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (!choice) return true;
      const piece = choice.delta?.content;
      if (typeof piece === 'string' && piece !== '') onPiece(piece);
      if (choice.finish_reason) stats.finish = choice.finish_reason;
      return true;
    });
  },
};
const backend = globalThis.wgcChatBackend ?? serverBackend;

// --- wiring ---------------------------------------------------------------------------------
async function loadModel() {
  try {
    model = await backend.model();
    $('model').textContent = model ? `model: ${model}` : 'no model listed';
    showError('');
    return true;
  } catch (e) {
    $('model').textContent = e.label ?? backend.unreachable;
    showError(backend.describeFailure(e));
    return false;
  }
}

async function main() {
  initTheme($('theme'));
  loadSettings();
  for (const k of SETTINGS) $(k).addEventListener('change', saveSettings);
  if ($('api_key')) {
    $('api_key').value = localStorage.getItem(KEY_STORE) || '';
    $('api_key').addEventListener('change', () => {
      saveKey();
      loadModel(); // the model list, now with the key
    });
  }
  $('reset').addEventListener('click', () => {
    for (const k of SETTINGS) $(k).value = '';
    saveSettings();
  });
  $('new-chat').addEventListener('click', () => {
    controller?.abort();
    conversation++;
    history.length = 0;
    $('messages').replaceChildren($('empty'));
    $('empty').hidden = false;
    showError('');
  });
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = $('prompt').value.trim();
    if (!text || controller) return;
    $('prompt').value = '';
    send(text);
  });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => controller?.abort());
  // A backend can load another model (the page at /local/): the conversation starts anew.
  backend.onModelChange?.((name) => {
    $('new-chat').click();
    model = name;
    $('model').textContent = `model: ${name}`;
  });
  if (!(await loadModel()) && backend.keepsFailure) {
    document.body.dataset.state = 'failed'; // nothing to chat with
    return;
  }
  $('send').disabled = false;
  document.body.dataset.state = 'idle';
  $('prompt').focus();
}

main();
