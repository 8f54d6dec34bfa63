// The chat page with the model in the browser (/local/): the same page as the server chat
// (../chat.js), whose replies come from wgc's engine compiled to WebAssembly and running on the
// browser's WebGPU in a Web Worker (wgc.js), instead of from /v1/chat/completions. The model is the
// built-in wgc-tiny-dict (served beside this page: models/), or a GGUF file the user opens; its
// weights are streamed into the worker with progress and uploaded to GPU buffers tensor by tensor.
import { createEngine, webgpuMissing, webgpuAdapterMissing } from './wgc.js';

const $ = (id) => document.getElementById(id);
const BUILTIN = { url: 'models/wgc-tiny-dict-q8_0.gguf', name: 'wgc-tiny-dict-q8_0.gguf' };
const FINISH = { eos: 'stop', stop: 'stop', length: 'length', context: 'length', cancelled: 'stop' };

let engine = null;
let changed = () => {};

function status(text, progress) {
  const p = $('progress');
  $('engine').firstChild.textContent = text + ' ';
  p.hidden = progress === undefined;
  if (progress !== undefined) {
    if (progress === null) p.removeAttribute('value');
    else p.value = progress;
  }
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

// Loads a model (a URL or a File) into a new engine; the old one keeps running until it is ready.
async function load(model, name) {
  const t0 = performance.now();
  status(`Loading ${name}…`, null);
  const e = await createEngine({
    model,
    name,
    onProgress: ({ phase, loaded, total }) => {
      if (phase === 'download') status(`Loading ${name}: ${mb(loaded)}${total ? ` of ${mb(total)}` : ''}`, total ? loaded / total : null);
      else status(`Uploading ${name} to the GPU${total ? `: ${mb(loaded)} of ${mb(total)}` : ''} and compiling its kernels…`, total ? loaded / total : null);
    },
  });
  engine?.terminate();
  engine = e;
  const i = e.info;
  const adapter = [i.adapter.vendor, i.adapter.architecture, i.adapter.device].filter(Boolean).join(' ') || 'WebGPU adapter';
  status(`${i.model} · ${mb(i.weight_bytes)} of weights on ${adapter}${i.adapter.cpu ? ' (a CPU adapter: slow)' : ''} · ` +
         `context ${i.max_ctx} · loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return i.model;
}

// A load's failure in the user's terms: what is missing, or the engine's own message.
function explain(e) {
  const m = e.message || String(e);
  if (/maxStorageBufferBindingSize|maxBufferSize|exceeds the device|larger than the device/.test(m))
    return `This model needs more than this browser's WebGPU adapter allows: ${m}`;
  return m;
}

async function swap(model, name) {
  if (!engine || document.body.dataset.state !== 'idle') return; // not while a reply streams
  document.body.dataset.state = 'loading';
  $('error').hidden = true;
  try {
    changed(await load(model, name));
  } catch (e) {
    status(`${engine.info.model} (still loaded)`);
    $('error').hidden = false;
    $('error').textContent = `Could not load ${name}: ${explain(e)}`;
  }
  document.body.dataset.state = 'idle';
}

globalThis.wgcChatBackend = {
  unreachable: 'no model',
  keepsFailure: true,
  describeFailure: (e) => (e.noWebGPU ? e.message : `Could not start the model in this browser: ${explain(e)}`),
  async model() {
    const why = webgpuMissing() ?? (await webgpuAdapterMissing());
    if (why) {
      status('No WebGPU here.');
      throw Object.assign(new Error(why), { noWebGPU: true });
    }
    try {
      return await load(BUILTIN.url, BUILTIN.name);
    } catch (e) {
      status('The engine did not start.');
      throw e;
    }
  },
  async stream({ messages, extra, signal, stats }, onPiece) {
    const options = { maxTokens: extra.max_tokens, temperature: extra.temperature, topP: extra.top_p, seed: extra.seed };
    const stop = () => engine.abort();
    signal.addEventListener('abort', stop);
    try {
      const it = engine.chat(messages, options);
      let r;
      for (;;) {
        const { value, done } = await it.next();
        if (done) {
          r = value;
          break;
        }
        onPiece(value.text);
      }
      stats.usage = { completion_tokens: r.ids.length, prompt_tokens: r.timings.prompt_tokens };
      stats.finish = FINISH[r.stop] ?? r.stop;
      const t = r.timings;
      status(`${engine.info.model} · last reply: ${r.ids.length} tokens, prompt ${t.prompt_tokens} tokens in ` +
             `${(t.prompt_ms / 1000).toFixed(2)} s, decode ${t.decode_tps.toFixed(2)} tokens/s (engine timings)`);
      if (signal.aborted) throw new DOMException('stopped', 'AbortError');
    } finally {
      signal.removeEventListener('abort', stop);
    }
  },
  onModelChange(cb) {
    changed = cb;
  },
};

// The running engine, for the browser's console and the tests (web/test/local.test.mjs).
globalThis.wgcEngine = () => engine;

$('model-file').addEventListener('change', () => {
  const f = $('model-file').files[0];
  $('model-file').value = '';
  if (f) swap(f, f.name);
});
$('builtin').addEventListener('click', () => swap(BUILTIN.url, BUILTIN.name));

await import('../chat.js');
