// wgc in the page: the engine (wgc compiled to WebAssembly, on the browser's WebGPU) in a Web
// Worker, behind a small API.
//
//   import { createEngine } from './wgc.js';
//   const e = await createEngine({ model: 'models/wgc-tiny-dict-q8_0.gguf',   // a URL, or a File
//                                  onProgress: ({ phase, loaded, total }) => {} });  // 'download', 'upload'
//   e.info                // the model, the adapter, the load's time and wasm memory (before/after)
//   for await (const t of e.generate('The moon', { maxTokens: 32, temperature: 0 })) show(t.text);
//   for await (const t of e.chat([{ role: 'user', content: 'Hi' }])) show(t.text);   // chat template
//   e.abort();            // ends the running generation before its next token
//   e.lastResult          // ids, text, stop reason, timings of the last generation
//
// Options (generate and chat): maxTokens, temperature, topK, topP, minP, repeatPenalty, seed, stop,
// ignoreEos; unset ones take the model's defaults (as `wgc generate`). Each yielded piece is
// {text}; the iterator's return value is the result. Errors (no WebGPU, a limit the adapter lacks,
// a file that is not a model) reject with the engine's message.

const workerUrl = new URL('wgc-worker.js', import.meta.url);

// Why this browser cannot run the engine, or null. (The worker finds out the same, in more detail.)
export function webgpuMissing() {
  if (!globalThis.isSecureContext) return 'WebGPU needs a secure context: open the page over https:// or from localhost';
  if (!('gpu' in navigator))
    return 'This browser has no WebGPU (navigator.gpu is missing): use Chrome or Edge 113+, Safari 26+ or Firefox 141+';
  return null;
}

// Why this browser offers no WebGPU adapter, or null (asks for one: WebGPU may be there but off).
export async function webgpuAdapterMissing() {
  const why = webgpuMissing();
  if (why) return why;
  try {
    if (await navigator.gpu.requestAdapter()) return null;
  } catch (e) {
    return `WebGPU failed to start: ${e.message}`;
  }
  return 'This browser has WebGPU but offers no adapter (it may be turned off, or this GPU blocked: see chrome://gpu)';
}

const OPTION_NAMES = { maxTokens: 'max_tokens', temperature: 'temperature', topK: 'top_k', topP: 'top_p', minP: 'min_p',
                       repeatPenalty: 'repeat_penalty', seed: 'seed', stop: 'stop', ignoreEos: 'ignore_eos',
                       addSpecial: 'add_special' };

function engineOptions(o = {}) {
  const out = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined || v === null) continue;
    if (!(k in OPTION_NAMES)) throw new Error(`unknown option ${k} (known: ${Object.keys(OPTION_NAMES).join(', ')})`);
    out[OPTION_NAMES[k]] = v;
  }
  return out;
}

class Engine {
  constructor(worker) {
    this.worker = worker;
    this.next = 1;
    this.pending = new Map(); // id -> {resolve, reject, onText, onProgress}
    this.info = null;
    this.lastResult = null;
    worker.onmessage = (e) => this.#receive(e.data);
    worker.onerror = (e) => {
      const err = new Error(`the engine's worker failed: ${e.message || 'could not load wgc-worker.js / wgc-core.js'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  #receive(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'text') p.onText?.(msg.text);
    else if (msg.type === 'progress') p.onProgress?.(msg);
    else {
      this.pending.delete(msg.id);
      if (msg.type === 'done') p.resolve(msg.result);
      else p.reject(new Error(msg.message));
    }
  }

  request(msg, { onText, onProgress, transfer } = {}) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onText, onProgress });
      this.worker.postMessage({ ...msg, id }, transfer || []);
    });
  }

  // Streams a request's text as an async iterator of {text}; returns the result.
  async *#stream(msg) {
    const queue = [];
    let wake = null;
    let finished = null;
    const done = this.request(msg, {
      onText: (text) => {
        queue.push({ text });
        wake?.();
      },
    }).then((r) => (finished = { r }), (e) => (finished = { e }));
    done.then(() => wake?.());
    try {
      for (;;) {
        while (queue.length) yield queue.shift();
        if (finished) break;
        await new Promise((r) => (wake = r));
        wake = null;
      }
    } finally {
      if (!finished) this.abort(); // the consumer left the loop early: stop the generation
    }
    if (finished.e) throw finished.e;
    this.lastResult = finished.r;
    return finished.r;
  }

  generate(prompt, options = {}) {
    return this.#stream({ type: 'generate', prompt, options: engineOptions(options) });
  }

  chat(messages, options = {}) {
    return this.#stream({ type: 'chat', messages, options: engineOptions(options) });
  }

  abort() {
    this.worker.postMessage({ type: 'abort' });
  }

  reset() {
    return this.request({ type: 'reset' });
  }

  // The playground's ops through the C++ library (wasm/op_api.cpp).
  op(name, args) {
    return this.request({ type: 'op', name, args });
  }

  terminate() {
    this.worker.terminate();
  }
}

// Starts the worker and, with `model`, loads it: a URL (fetched in chunks) or a File/Blob.
// deferErrorScopes: the GPU's error scopes answer at once and report errors one wait later (fewer
// round trips to the browser's GPU process per token; src/gpu/webgpu_browser.cpp).
export async function createEngine({ model, name, maxCtx, onProgress, deferErrorScopes } = {}) {
  const why = await webgpuAdapterMissing();
  if (why) throw new Error(why);
  const engine = new Engine(new Worker(workerUrl));
  if (model) {
    try {
      engine.info = await engine.request({ type: 'load', model, name, maxCtx, deferErrorScopes }, { onProgress });
    } catch (e) {
      engine.terminate();
      throw e;
    }
  }
  return engine;
}
