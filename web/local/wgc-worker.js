// The engine's Web Worker: loads the wasm build (wgc-core.js + wgc-core.wasm, scripts/build_wasm.sh)
// and runs one model on the browser's WebGPU, off the page's thread. Messages in (from wgc.js):
//   {type: 'load', id, model: URL string or File/Blob, name?, maxCtx?, deferErrorScopes?}
//   {type: 'generate', id, prompt, options}   {type: 'chat', id, messages, options}
//   {type: 'abort'}   {type: 'reset', id}   {type: 'op', id, name, args: {a, b, outLength, ...}}
// (an op runs without a model: the kernel playground's C++ path, wasm/op_api.cpp).
// Messages out: {type: 'progress', id, loaded, total, phase} while the weights arrive,
// {type: 'text', id, text} as text streams, {type: 'done', id, result} and {type: 'error', id, message}.
// The weights are streamed in chunks (fetch's body, or the File's slices) straight into a file of
// emscripten's file system, whose size is fixed first (one copy, in JavaScript memory; the engine
// then maps it into wasm memory while it uploads the weights to GPU buffers, and lets it go).
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

// A model's bytes into the file /models/<name>, with progress; returns its path.
async function fetchModel(m, id, model, name) {
  m.FS.mkdirTree('/models');
  const path = `/models/${name.replace(/[^A-Za-z0-9._-]/g, '_') || 'model.gguf'}`;
  let total = 0;
  let chunks;
  if (typeof model === 'string') {
    const res = await fetch(model);
    if (!res.ok) throw new Error(`could not fetch the model ${model}: HTTP ${res.status} ${res.statusText}`);
    total = Number(res.headers.get('Content-Length')) || 0;
    const reader = res.body.getReader();
    chunks = (async function* () {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        yield value;
      }
    })();
  } else {
    total = model.size;
    chunks = (async function* () {
      for (let at = 0; at < model.size; at += CHUNK)
        yield new Uint8Array(await model.slice(at, Math.min(at + CHUNK, model.size)).arrayBuffer());
    })();
  }
  const stream = m.FS.open(path, 'w');
  let loaded = 0;
  let last = 0;
  try {
    if (total) m.FS.ftruncate(stream.fd, total); // one allocation, not one per chunk
    for await (const c of chunks) {
      m.FS.write(stream, c, 0, c.length, loaded);
      loaded += c.length;
      const now = performance.now();
      if (now - last > 100) {
        post({ type: 'progress', id, loaded, total, phase: 'download' });
        last = now;
      }
    }
  } finally {
    m.FS.close(stream);
  }
  if (total && loaded !== total) throw new Error(`the model's download stopped at ${loaded} of ${total} bytes`);
  post({ type: 'progress', id, loaded, total: loaded, phase: 'download' });
  return path;
}

const handlers = {
  async load(m, msg) {
    const name = msg.name || (typeof msg.model === 'string' ? msg.model.split('/').pop().split('?')[0] : msg.model.name);
    m.wgcDeferErrorScopes = !!msg.deferErrorScopes; // src/gpu/webgpu_browser.cpp
    const path = await fetchModel(m, msg.id, msg.model, name);
    post({ type: 'progress', id: msg.id, loaded: 0, total: 0, phase: 'upload' });
    try {
      await call(m, 'wgc_open', ['string', 'number'], [path, msg.maxCtx || 0]);
    } finally {
      m.FS.unlink(path); // the engine holds the weights on the GPU now
    }
    return { ...JSON.parse(m.UTF8ToString(m._wgc_info())), waits: m.wgcWaitStats() };
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
