// A lost GPU device under load (issue 32): `wgc serve` on SwiftShader (--backend cpu-vulkan) with
// WGC_INJECT_DEVICE_LOSS=FILE, 16 streaming clients; the test creates FILE once tokens flow, and
// the next queue submit loses the device (Dawn's wgpuDeviceForceLoss). The server rebuilds the
// model on a new device and serves on: every request either completes with the text it gives
// after the recovery (greedy) or ends with the retryable error (code device_lost), /health says
// "recovering" during the rebuild and "ok" with one recovery after it. Prints the recovery time.
// Usage: node recovery.test.mjs --wgc build/wgc --deps .deps [--streams 16]
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { options, readEvents, sleep, startServer, until } from './lib.mjs';

const opt = options();
const STREAMS = Number(opt.streams ?? 16);
const prompts = ['The moon', 'Bread is made of', 'Rain', 'Define: ocean', 'Stars are', 'The king said'];

// One streamed greedy completion: { text } when it finished, { code } when it ended with an error.
async function one(url, i) {
  const body = { prompt: prompts[i % prompts.length], max_tokens: 6 + (i % 4), temperature: 0, stream: true };
  const r = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify(body) });
  if (r.status !== 200) return { status: r.status, code: (await r.json()).error?.code };
  const { events, done } = await readEvents(r);
  if (!done) throw new Error(`request ${i}: the stream ended without [DONE]`);
  const last = events.at(-1);
  if (last.error) return { code: last.error.code, message: last.error.message, tokens: events.length - 1 };
  return { text: events.map((e) => e.choices[0]?.text ?? '').join('') };
}

test(`${STREAMS} streams, the GPU device lost midway: each request completes correctly or is retryable`, {
  timeout: 600_000,
}, async () => {
  const trigger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-loss-')), 'lose');
  const server = await startServer(opt.wgc, ['--backend', 'cpu-vulkan', '--parallel', '4', '--ctx', '64'],
    { env: { WGC_INJECT_DEVICE_LOSS: trigger } });
  try {
    // /health while it runs: every status it reports.
    const seen = new Set();
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const h = await (await fetch(`${server.url}/health`)).json();
        seen.add(h.status);
        await sleep(50);
      }
    })();
    // Lose the device once the first tokens have gone out (the streams then are mid-flight).
    let tokens = 0;
    const runs = Array.from({ length: STREAMS }, (_, i) => one(server.url, i));
    await until(async () => {
      const m = await (await fetch(`${server.url}/metrics`)).text();
      tokens = Number((m.match(/^wgc_generation_tokens_total (\S+)/m) ?? [])[1] ?? 0);
      return tokens >= 3;
    }, 300_000, 'the first tokens');
    fs.writeFileSync(trigger, '');
    const got = await Promise.all(runs);
    await until(async () => (await (await fetch(`${server.url}/health`)).json()).status === 'ok', 120_000, 'health ok');
    polling = false;
    await poller;
    assert.ok(!fs.existsSync(trigger), 'the device was never lost (the trigger file is still there)');
    const health = await (await fetch(`${server.url}/health`)).json();
    console.log(`health after: ${JSON.stringify(health)}; statuses seen: ${[...seen]}`);
    assert.equal(health.recoveries, 1);
    assert.ok(seen.has('recovering'), `/health never said recovering: ${[...seen]}`);

    // The reference: the same requests on the rebuilt model (greedy: the same text whatever runs beside).
    const wants = await Promise.all(Array.from({ length: STREAMS }, (_, i) => one(server.url, i)));
    let completed = 0, retryable = 0;
    for (let i = 0; i < STREAMS; ++i) {
      const want = wants[i];
      assert.ok('text' in want, `request ${i} after the recovery: ${JSON.stringify(want)}`);
      if ('text' in got[i]) {
        assert.equal(got[i].text, want.text, `request ${i}`);
        ++completed;
      } else {
        assert.equal(got[i].code, 'device_lost', `request ${i}: ${JSON.stringify(got[i])}`);
        ++retryable;
      }
    }
    console.log(`device lost after ${tokens} tokens: ${completed} requests completed correctly, ${retryable} ` +
      `ended retryable (device_lost); recovery took ${health.last_recovery_s.toFixed(2)} s (the built-in model, ` +
      'SwiftShader)');
    assert.ok(retryable >= 1 && completed >= 1, `${completed} completed, ${retryable} retryable`);
    assert.match(server.log(), /rebuilt on a new device in/);
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.log());
  } finally {
    await server.stop('SIGKILL');
  }
});
