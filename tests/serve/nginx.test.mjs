// Two `wgc serve` replicas behind nginx on loopback, with the example configuration
// (examples/nginx/wgc.conf, its ports rewritten): requests through nginx reach both replicas, and
// when one replica stops (SIGTERM) the requests go on, answered by the other. Skipped, saying why,
// where nginx is not installed (scripts/setup.sh installs it).
// Usage: node nginx.test.mjs --wgc build/wgc --deps .deps
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { metrics, options, skip, startServer, until } from './lib.mjs';

const opt = options();
const nginx = ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => fs.existsSync(p));
if (!nginx) skip('nginx is not installed (scripts/setup.sh installs the Debian package nginx-light)');
const example = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../examples/nginx/wgc.conf');

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// nginx with the example, in a scratch folder: { url, stop() }.
async function startNginx(replicaPorts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-nginx-'));
  const port = await freePort();
  let site = fs.readFileSync(example, 'utf8')
    .replace('127.0.0.1:8000', `127.0.0.1:${port}`)
    .replace('127.0.0.1:8080', `127.0.0.1:${replicaPorts[0]}`)
    .replace('127.0.0.1:8081', `127.0.0.1:${replicaPorts[1]}`);
  fs.writeFileSync(path.join(dir, 'wgc.conf'), site);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((t) => `${t}_temp_path ${dir}/${t};`).join('\n  ');
  fs.writeFileSync(path.join(dir, 'nginx.conf'), `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log ${dir}/access.log;
  ${temp}
  include ${dir}/wgc.conf;
}
`);
  execFileSync(nginx, ['-t', '-q', '-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'pipe' });
  const child = spawn(nginx, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' });
  const exit = new Promise((resolve) => child.on('exit', resolve));
  const url = `http://127.0.0.1:${port}`;
  await until(async () => (await fetch(`${url}/health`).catch(() => null))?.status === 200, 20_000, 'nginx');
  return {
    url,
    log: () => fs.readFileSync(path.join(dir, 'error.log'), 'utf8'),
    async stop() {
      child.kill('SIGQUIT');  // graceful
      await exit;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const completions = (m) => m['wgc_requests_total{route="/v1/completions",status="200"}'] ?? 0;

// The /metrics of `urls`, once their completions add up to at least `want`, or after 10 s (the
// caller then checks the exact count). A server counts a request once its response is written,
// which can be just after the client has read that response, so an immediate read can miss it.
async function metricsWhenCounted(urls, want) {
  let ms = [];
  const counted = async () => {
    ms = await Promise.all(urls.map((u) => metrics(u)));
    return ms.reduce((sum, m) => sum + completions(m), 0) >= want;
  };
  await until(counted, 10_000, `${want} completions counted`).catch(() => {});
  return ms;
}

async function ask(url, i) {
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    body: JSON.stringify({ prompt: `Request ${i}:`, max_tokens: 3, temperature: 0, stream: i % 2 === 1 }),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  if (i % 2 === 1) assert.match(text, /data: \[DONE\]\n\n$/);
  else assert.equal(JSON.parse(text).object, 'text_completion');
}

test('requests through nginx reach both replicas, and go on when one stops', { timeout: 300_000 }, async () => {
  const replicas = await Promise.all([startServer(opt.wgc), startServer(opt.wgc)]);
  let proxy;
  try {
    proxy = await startNginx(replicas.map((r) => r.port));
    for (let i = 0; i < 8; ++i) await ask(proxy.url, i);
    const before = await metricsWhenCounted(replicas.map((r) => r.url), 8);
    assert.equal(completions(before[0]) + completions(before[1]), 8);
    for (const m of before) assert.ok(completions(m) > 0, 'a replica got no request');

    // Stop the first replica: nginx sends everything to the second.
    assert.deepEqual(await replicas[0].stop(), { code: 0, signal: null }, replicas[0].log());
    for (let i = 8; i < 16; ++i) await ask(proxy.url, i);
    const [after] = await metricsWhenCounted([replicas[1].url], completions(before[1]) + 8);
    assert.equal(completions(after) - completions(before[1]), 8);
  } finally {
    if (proxy) await proxy.stop();
    for (const r of replicas) await r.stop('SIGKILL');
  }
});
