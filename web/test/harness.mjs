// Shared by the browser tests: finding puppeteer-core and Chromium (or the reason to skip), launching
// headless Chromium with the flags this machine and WebGPU need, and a tiny static file server.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

export const SKIP = 77; // CTest's SKIP_RETURN_CODE for these tests

// Command-line options --name value (or --name for true).
export function options(argv = process.argv.slice(2)) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    if (!argv[i].startsWith('--')) throw new Error(`unexpected argument ${argv[i]}`);
    const key = argv[i].slice(2);
    o[key] = i + 1 < argv.length && !argv[i + 1].startsWith('--') ? argv[++i] : true;
  }
  return o;
}

export function skip(why) {
  console.log(`SKIPPED: ${why}`);
  process.exit(SKIP);
}

// puppeteer-core from scripts/setup_web_tests.sh's install, and the Chromium binary.
export async function loadPuppeteer(deps) {
  const chromium = process.env.WGC_CHROMIUM || '/usr/bin/chromium';
  if (!fs.existsSync(chromium)) skip(`no Chromium at ${chromium} (scripts/setup.sh installs Debian's chromium)`);
  const dir = path.resolve(deps, 'web-test');
  let entry;
  try {
    entry = createRequire(path.join(dir, 'package.json')).resolve('puppeteer-core');
  } catch {
    skip(`puppeteer-core is not installed in ${dir} (run scripts/setup_web_tests.sh)`);
  }
  const puppeteer = (await import(pathToFileURL(entry).href)).default;
  return { puppeteer, chromium };
}

// Flags: headless without a sandbox (containers run as root); no background connections (they are
// refused on a closed network and slow the start); a fresh profile. `webgpu` adds the one flag that
// gives Chromium a WebGPU adapter on Linux, SwiftShader's where there is no GPU (docs/web.md).
// WGC_CHROMIUM_FLAGS (space-separated) adds flags with WebGPU: on a GPU machine, those that reach
// its GPU through Vulkan (scripts/web_device.sh).
export async function launch({ puppeteer, chromium }, { webgpu }) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-chromium-'));
  const args = ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
                '--disable-component-update', '--disable-sync', '--disable-default-apps', '--mute-audio'];
  if (webgpu) args.push('--enable-unsafe-webgpu', ...(process.env.WGC_CHROMIUM_FLAGS || '').split(/\s+/).filter(Boolean));
  const browser = await puppeteer.launch({ executablePath: chromium, headless: true, userDataDir: profile, args,
                                           protocolTimeout: 300_000 });
  const close = browser.close.bind(browser);
  browser.close = async () => {
    await close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return browser;
}

// A page that fails the test on script errors; console messages are kept for the failure report.
export async function openPage(browser, url, { width = 1280, height = 900 } = {}) {
  const page = await browser.newPage();
  page.log = [];
  page.on('console', (m) => page.log.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => page.log.push(`page error: ${e.message}`));
  await page.setViewport({ width, height });
  await page.goto(url, { waitUntil: 'load' });
  return page;
}

const MIME = { '.wasm': 'application/wasm', '.gguf': 'application/octet-stream', '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css',
               '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml' };

// A request handler serving the files under `root` ("/dir/" serves its index.html, "/dir?q" redirects
// to "/dir/?q"; nothing outside root).
export function fileHandler(root) {
  const base = path.resolve(root);
  return (req, res) => {
    const url = new URL(req.url, 'http://x');
    let p = decodeURIComponent(url.pathname);
    if (p.endsWith('/')) p += 'index.html';
    const file = path.resolve(base, '.' + p);
    const stat = file.startsWith(base + path.sep) && fs.existsSync(file) ? fs.statSync(file) : null;
    if (stat?.isDirectory()) {
      res.writeHead(301, { Location: `${url.pathname}/${url.search}` }).end();
    } else if (!stat?.isFile()) {
      res.writeHead(404).end('not found');
    } else {
      res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream' });
      fs.createReadStream(file).pipe(res);
    }
  };
}

// Serves the files under `root` on 127.0.0.1 (a free port); resolves to { url, close }.
export function staticServer(root) {
  const server = http.createServer(fileHandler(root));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() })));
}

// A free TCP port on 127.0.0.1 (asked of the OS; free when this returns, barring a race).
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = http.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Starts a server process (`command args...`, which must listen on `url`) and waits until `probe`
// (a path) answers 200; resolves to { url, stop, output() }. Its output is kept for failure reports.
export async function startServer(command, args, url, { probe = '/v1/models', timeoutMs = 120_000 } = {}) {
  const { spawn } = await import('node:child_process');
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  let exited = null;
  const exit = new Promise((resolve) => child.on('exit', (code, sig) => resolve((exited = sig || code))));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== null) throw new Error(`${command} ${args.join(' ')} exited (${exited}) before serving:\n${log}`);
    try {
      const res = await fetch(url + probe);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} did not answer ${probe} within ${timeoutMs / 1000} s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = async () => {
    if (exited !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exit;
    clearTimeout(timer);
  };
  return { url, stop, output: () => log };
}
