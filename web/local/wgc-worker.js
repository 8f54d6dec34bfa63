// The engine's Web Worker: loads the wasm build (wgc-core.js + wgc-core.wasm, scripts/build_wasm.sh)
// and runs one model on the browser's WebGPU, off the page's thread. Messages in (from wgc.js):
//   {type: 'load', id, model: URL string or File/Blob, name?, maxCtx?, deferErrorScopes?}
//   {type: 'generate', id, prompt, options}   {type: 'chat', id, messages, options}
//   {type: 'abort'}   {type: 'reset', id}   {type: 'op', id, name, args: {a, b, outLength, ...}}
// (an op runs without a model: the kernel playground's C++ path, wasm/op_api.cpp).
// Messages out: {type: 'progress', id, loaded, total, phase} while the weights arrive ('download')
// and while the engine reads them ('upload'), {type: 'text', id, text} as text streams,
// {type: 'done', id, result} and {type: 'error', id, message}.
// The model is never whole in wasm memory: the engine reads its header, then each tensor as its
// upload to the GPU reaches it, from Module.wgcSource (wasm/engine_api.js): a download's chunks as
// they arrive (kept here, in JavaScript memory, until the load ends: the engine's order need not be
// the file's), or slices of the user's File (read when needed: no copy at all).
/* global createWgcCore */
'use strict';

let missing = null; // why the wasm build could not be loaded
try {
  importScripts('wgc-core.js');
} catch (e) {
  missing = `the engine (wgc-core.js beside this page) could not be loaded: ${e.message}. ` +
            'It is built by scripts/build_wasm.sh (Debian\'s emscripten), which scripts/build.sh runs';
}

let core = null; // the module, once instantiated
let busy = Promise.resolve(); // calls into wasm run one at a time (one ASYNCIFY stack)
let current = 0; // id of the request whose text is streaming

const CHUNK = 4 << 20; // bytes per slice read from a File

function post(msg) {
  self.postMessage(msg);
}

async function instance() {
  if (missing) throw new Error(missing);
  if (!core) {
    core = await createWgcCore({
      locateFile: (f) => new URL(f, self.location.href).href,
      print: (s) => console.log(s),
      printErr: (s) => console.warn(s),
      onText: (text) => post({ type: 'text', id: current, text }),
    });
  }
  return core;
}

function lastError(m) {
  return m.UTF8ToString(m._wgc_last_error());
}

// Calls an exported C function that may wait on the GPU; throws the engine's error message.
async function call(m, name, types, args) {
  const rc = await m.ccall(name, 'number', types, args, { async: true });
  if (rc !== 0) throw new Error(lastError(m));
}

// Progress messages, at most one per 100 ms (and the last).
function progress(id, phase) {
  let last = 0;
  return (loaded, total, final) => {
    const now = performance.now();
    if (final || now - last > 100) {
      post({ type: 'progress', id, loaded, total, phase });
      last = now;
    }
  };
}

// A File's bytes for the engine: each read takes the slices it needs, when it needs them.
function fileSource(file, onRead) {
  let read = 0;
  return {
    size: file.size,
    async read(offset, n, put) {
      for (let at = 0; at < n; at += CHUNK) { // slices of CHUNK bytes, so that JavaScript holds one at a time
        const end = Math.min(n, at + CHUNK);
        put(new Uint8Array(await file.slice(offset + at, offset + end).arrayBuffer()), at);
      }
      onRead((read += n), file.size);
    },
  };
}

// A download's bytes for the engine: the response body's chunks, kept as they arrive; a read
// waits until its range has arrived (or the download has ended short of it, which it reports).
function downloadSource(url, res, onDownload, onRead) {
  // The body's length, where the server says it and the body is not re-encoded (a gzip'd body's
  // Content-Length is the compressed one): else the size is known at the end of the download.
  const encoding = (res.headers.get('Content-Encoding') || 'identity').toLowerCase();
  const declared = encoding === 'identity' ? Number(res.headers.get('Content-Length')) || 0 : 0;
  const chunks = []; // {at, bytes}, in order
  let received = 0, ended = false, failure = null, read = 0;
  let waiters = [];
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  const reader = res.body.getReader();
  const finished = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        chunks.push({ at: received, bytes: value });
        received += value.length;
        onDownload(received, declared, false);
        wake();
      }
    } catch (e) {
      failure = e;
    }
    ended = true;
    onDownload(received, declared || received, true);
    wake();
    if (failure && !declared) throw failure;
    return received;
  })();
  const source = {
    size: declared,
    finished,
    cancel: () => reader.cancel().catch(() => {}),
    async read(offset, n, put) {
      const end = offset + n;
      while (received < end && !ended) await new Promise((r) => waiters.push(r));
      if (received < end)
        throw new Error(`the download of ${url} stopped at ${received} of ${source.size} bytes` +
                        (failure ? ` (${failure.message || failure})` : ''));
      let lo = 0, hi = chunks.length - 1; // the last chunk that starts at or before offset
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (chunks[mid].at <= offset) lo = mid;
        else hi = mid - 1;
      }
      for (let i = lo; i < chunks.length && chunks[i].at < end; i++) {
        const c = chunks[i], from = Math.max(offset, c.at), to = Math.min(end, c.at + c.bytes.length);
        if (to > from) put(c.bytes.subarray(from - c.at, to - c.at), from - offset);
      }
      read += n;
      if (ended) onRead(read, source.size); // while it downloads, the download's progress shows
    },
  };
  return source;
}

// The model (a URL or a File) as Module.wgcSource, with progress.
async function modelSource(id, model) {
  const uploaded = progress(id, 'upload');
  if (typeof model !== 'string') return fileSource(model, (n, total) => uploaded(n, total, n === total));
  const res = await fetch(model);
  if (!res.ok) throw new Error(`could not fetch the model ${model}: HTTP ${res.status} ${res.statusText}`);
  const source = downloadSource(model, res, progress(id, 'download'), (n, total) => uploaded(n, total, false));
  if (!source.size) source.size = await source.finished; // no length given: the header's checks need it
  return source;
}

const handlers = {
  async load(m, msg) {
    const name = msg.name || (typeof msg.model === 'string' ? msg.model.split('/').pop().split('?')[0] : msg.model.name);
    m.wgcDeferErrorScopes = !!msg.deferErrorScopes; // src/gpu/webgpu_browser.cpp
    const source = await modelSource(msg.id, msg.model);
    const before = m.HEAP8.length;
    m.wgcSource = source;
    try {
      await call(m, 'wgc_open', ['string', 'number', 'number'],
                 [name.replace(/[^A-Za-z0-9._-]/g, '_') || 'model.gguf', source.size, msg.maxCtx || 0]);
    } finally {
      m.wgcSource = null; // the weights are on the GPU: the download's chunks can go
      source.cancel?.(); // (a load that failed early leaves the rest of the download unread)
    }
    // Wasm memory only grows: its size now is the load's peak.
    return { ...JSON.parse(m.UTF8ToString(m._wgc_info())), waits: m.wgcWaitStats(),
             wasm_memory: { before_load: before, after_load: m.HEAP8.length } };
  },
  async generate(m, msg) {
    await call(m, 'wgc_generate', ['string', 'string'], [msg.prompt, JSON.stringify(msg.options || {})]);
    return JSON.parse(m.UTF8ToString(m._wgc_result()));
  },
  async chat(m, msg) {
    await call(m, 'wgc_chat', ['string'], [JSON.stringify({ ...(msg.options || {}), messages: msg.messages })]);
    return JSON.parse(m.UTF8ToString(m._wgc_result()));
  },
  async reset(m) {
    m._wgc_reset();
    return null;
  },
  // A library op on Float32Array inputs a (and b); the result is a Float32Array of outLength.
  async op(m, msg) {
    const { a, b, outLength, ...fields } = msg.args;
    const put = (x) => {
      if (!x) return 0;
      const p = m._malloc(x.length * 4);
      m.HEAPF32.set(x, p >> 2);
      return p;
    };
    const pa = put(a), pb = put(b), po = m._malloc(Math.max(outLength, 1) * 4);
    try {
      const rc = await m.ccall('wgc_op', 'number', ['string', 'number', 'number', 'number'],
                               [JSON.stringify({ op: msg.name, ...fields }), pa, pb, po], { async: true });
      if (rc !== 0) throw new Error(m.UTF8ToString(m._wgc_op_error()));
      return m.HEAPF32.slice(po >> 2, (po >> 2) + outLength);
    } finally {
      for (const p of [pa, pb, po]) if (p) m._free(p);
    }
  },
};

self.onmessage = (e) => {
  const msg = e.data;
  // Abort goes straight in, while a generation sleeps on the GPU: it sets a flag the engine checks
  // before keeping the next token.
  if (msg.type === 'abort') {
    if (core) core._wgc_abort();
    return;
  }
  const handler = handlers[msg.type];
  if (!handler) {
    post({ type: 'error', id: msg.id, message: `unknown request ${msg.type}` });
    return;
  }
  busy = busy.then(async () => {
    try {
      const m = await instance();
      current = msg.id;
      post({ type: 'done', id: msg.id, result: await handler(m, msg) });
    } catch (err) {
      post({ type: 'error', id: msg.id, message: err && err.message ? err.message : String(err) });
    }
  });
};
