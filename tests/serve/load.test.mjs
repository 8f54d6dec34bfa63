// Load on loopback: CLIENTS concurrent streaming clients (default 32) for SECONDS (default 15, or
// $WGC_SERVE_LOAD_SECONDS; the full run is 120) send chat and completion requests of
// varied lengths, some of them aborted midway, against one `wgc serve`. Every request that was not
// aborted must end with a finish_reason and [DONE]; resident memory must stay flat (no growth
// from the first third of the run to the last beyond a small margin) and the GPU buffers after
// the run must be those after the warm-up.
// Usage: node load.test.mjs --wgc build/wgc --deps .deps [--seconds 20] [--clients 32]
import test from 'node:test';
import assert from 'node:assert/strict';
import { metrics, options, readEvents, rssBytes, startServer, until } from './lib.mjs';

const opt = options();
const SECONDS = Number(opt.seconds ?? process.env.WGC_SERVE_LOAD_SECONDS ?? 15);
const CLIENTS = Number(opt.clients ?? 32);
const MiB = 1 << 20;

const prompts = ['The moon', 'A', 'Bread is made of', 'Love', 'The king of the north said that',
  'Rain', 'Define: ocean', 'Stars are', 'Why', 'The history of the word'];

// One request; 'aborted' when `abortAfter` chunks came and it was cancelled on purpose.
async function one(url, i, abortAfter) {
  const chat = i % 2 === 0;
  const prompt = prompts[i % prompts.length];
  const body = {
    max_tokens: 4 + (i * 7) % 9,
    temperature: 0.8,
    seed: i,
    stream: true,
    ...(chat ? { messages: [{ role: 'user', content: prompt }] } : { prompt }),
  };
  const controller = new AbortController();
  const t0 = performance.now();
  const r = await fetch(`${url}/v1/${chat ? 'chat/completions' : 'completions'}`, {
    method: 'POST', body: JSON.stringify(body), signal: controller.signal,
  });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${await r.text()}`);
  if (abortAfter) {
    const reader = r.body.getReader();
    for (let n = 0; n < abortAfter; ++n) if ((await reader.read()).done) break;
    controller.abort();
    return { aborted: true };
  }
  const { events, done } = await readEvents(r);
  if (!done) throw new Error('the stream ended without [DONE]');
  const last = events.at(-1);
  if (last.error) throw new Error(`error event: ${JSON.stringify(last.error)}`);
  const finish = last.choices[0]?.finish_reason;
  if (finish !== 'stop' && finish !== 'length') throw new Error(`finish_reason ${finish}`);
  return { aborted: false, ms: performance.now() - t0 };
}

test(`${CLIENTS} streaming clients for ${SECONDS} s: no failed request, flat memory`, { timeout: (SECONDS + 300) * 1000 },
  async () => {
    // 8 sequences at once, the rest of the clients wait in the queue: both paths under load.
    const server = await startServer(opt.wgc, ['--parallel', '8', '--max-queue', String(Math.max(64, CLIENTS))]);
    try {
      // Warm-up: every prompt shape once, so the buffers the run needs exist before the baseline.
      await Promise.all(prompts.map((_, i) => one(server.url, i, 0)));
      const warm = await metrics(server.url);
      const rss = [];  // [seconds into the run, bytes]
      const t0 = Date.now();
      const end = t0 + SECONDS * 1000;
      const sampler = setInterval(() => rss.push([(Date.now() - t0) / 1000, rssBytes(server.pid)]), 250);
      let next = 0;
      const failures = [];
      let done = 0;
      let aborted = 0;
      await Promise.all(Array.from({ length: CLIENTS }, async () => {
        while (Date.now() < end) {
          const i = next++;
          try {
            const r = await one(server.url, i, i % 7 === 3 ? 2 : 0);
            if (r.aborted) ++aborted;
            else ++done;
          } catch (e) {
            failures.push(`request ${i}: ${e.message}`);
          }
        }
      }));
      clearInterval(sampler);
      const after = await metrics(server.url);
      const third = rss.length / 3;
      const first = Math.max(...rss.slice(0, Math.ceil(third)).map((x) => x[1]));
      const last = Math.max(...rss.slice(Math.floor(2 * third)).map((x) => x[1]));
      const tokens = after.wgc_generation_tokens_total - warm.wgc_generation_tokens_total;
      console.log(`load: ${CLIENTS} clients, ${SECONDS} s: ${done} requests finished, ${aborted} aborted on purpose, ` +
        `${failures.length} failed; ${tokens} tokens (${(tokens / SECONDS).toFixed(1)}/s); RSS first third max ` +
        `${(first / MiB).toFixed(1)} MiB, last third max ${(last / MiB).toFixed(1)} MiB; GPU buffers ` +
        `${warm.wgc_gpu_buffers} (${(warm.wgc_gpu_buffer_bytes / MiB).toFixed(1)} MiB) after warm-up, ` +
        `${after.wgc_gpu_buffers} (${(after.wgc_gpu_buffer_bytes / MiB).toFixed(1)} MiB) after the run`);
      assert.deepEqual(failures, []);
      assert.ok(done >= CLIENTS, `only ${done} requests finished`);
      assert.ok(last <= first + 16 * MiB, `RSS grew from ${first} to ${last} bytes`);
      assert.ok(after.wgc_gpu_buffer_bytes <= warm.wgc_gpu_buffer_bytes * 1.05 + 4 * MiB,
        `GPU buffers grew from ${warm.wgc_gpu_buffer_bytes} to ${after.wgc_gpu_buffer_bytes} bytes`);
      // A sequence leaves the counts just after its last bytes are sent: wait for that, not a while.
      const idleNow = (m) => m.wgc_running_sequences === 0 && m.wgc_queue_length === 0;
      await until(async () => idleNow(await metrics(server.url)), 10_000, 'the server to go idle').catch(() => {});
      const idle = await metrics(server.url);
      assert.equal(idle.wgc_running_sequences, 0);
      assert.equal(idle.wgc_queue_length, 0);
      assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log());
    } finally {
      await server.stop('SIGKILL');
    }
  });
