// Shared by the `wgc serve` tests: start a server on a free port and stop it, the official openai
// and Anthropic clients and ajv (installed into $WGC_DEPS/serve-test by scripts/setup_test_refs.sh),
// server-sent events, metrics, memory.
// The tests exit 77 (CTest: skipped) with the reason when something they need is absent.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// --wgc PATH --deps DIR [--seconds N] [--clients N] from the command line.
export function options() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) out[argv[i].replace(/^--/, '')] = argv[i + 1];
  if (!out.wgc || !out.deps) throw new Error('usage: node TEST.mjs --wgc PATH --deps DIR [...]');
  return out;
}

export function skip(reason) {
  console.log(`SKIP: ${reason}`);
  process.exit(77);
}

// A package from $WGC_DEPS/serve-test (scripts/setup_test_refs.sh), or a skip saying why.
export function loadServeDep(deps, name, file = '') {
  const dir = path.resolve(deps, 'serve-test', 'node_modules', name);
  if (!fs.existsSync(dir)) skip(`${name} is not installed in ${dir} (scripts/setup_test_refs.sh)`);
  return createRequire(import.meta.url)(file ? path.join(dir, file) : dir);
}

// The official OpenAI client.
export const loadOpenAI = (deps) => loadServeDep(deps, 'openai').OpenAI;

// The official Anthropic client's module: { Anthropic, APIError, BadRequestError, ... }.
export const loadAnthropic = (deps) => loadServeDep(deps, '@anthropic-ai/sdk');

// ajv for JSON Schema draft 2020-12 (prefixItems, $defs, as OpenAI's structured outputs take): an
// instance, strict about the schemas it is given.
export function loadAjv(deps) {
  const Ajv = loadServeDep(deps, 'ajv', path.join('dist', '2020.js')).default;
  return new Ajv({ strict: true, strictTuples: false, allErrors: true, allowUnionTypes: true });
}

// The built-in model's file (tests that serve it under names of their own).
export const builtinModel = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'models',
  'wgc-tiny-dict-q8_0.gguf');

// A running `wgc serve`: { url, port, pid, log(), stop() }. Extra arguments go to the command line,
// `env` into its environment.
export async function startServer(wgc, args = [], { timeoutMs = 120_000, env = {} } = {}) {
  const child = spawn(wgc, ['serve', '--port', '0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env },
  });
  let log = '';
  let exited = null;
  const exit = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      resolve(exited);
    }));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`wgc serve did not start in ${timeoutMs} ms:\n${log}`)), timeoutMs);
    child.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/[^:]+:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    // A server that stops before listening must not leave the timer holding the test's process.
    exit.then((e) => {
      clearTimeout(timer);
      reject(new Error(`wgc serve exited (${JSON.stringify(e)}) before listening:\n${log}`));
    });
  });
  return {
    port,
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    exited: () => exited,
    // SIGTERM, then the exit status (a graceful stop exits 0).
    async stop(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      return exit;
    },
  };
}

// The events of a server-sent event stream as parsed JSON, and whether it ended with [DONE].
export async function readEvents(response) {
  const text = await response.text();
  const events = [];
  let done = false;
  for (const block of text.split('\n\n')) {
    if (!block.trim() || block.startsWith(':')) continue;
    if (!block.startsWith('data: ')) throw new Error(`not an SSE data event: ${block}`);
    const data = block.slice(6);
    if (data === '[DONE]') done = true;
    else events.push(JSON.parse(data));
  }
  return { events, done };
}

// Prometheus text -> { 'name{labels}': value }.
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

export async function metrics(url, headers = {}) {
  const r = await fetch(`${url}/metrics`, { headers });
  if (r.status !== 200) throw new Error(`/metrics: ${r.status}`);
  return parseMetrics(await r.text());
}

// Resident memory of a process in bytes (/proc/PID/status VmRSS).
export function rssBytes(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) * 1024 : NaN;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits until `fn()` is true (polling), or throws after `ms`.
export async function until(fn, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await sleep(50);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}
