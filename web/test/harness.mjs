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
export async function launch({ puppeteer, chromium }, { webgpu }) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-chromium-'));
  const args = ['--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
                '--disable-component-update', '--disable-sync', '--disable-default-apps', '--mute-audio'];
  if (webgpu) args.push('--enable-unsafe-webgpu');
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

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css',
               '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml' };

// Serves the files under `root` on 127.0.0.1 (a free port); resolves to { url, close }.
export function staticServer(root) {
  const base = path.resolve(root);
  const server = http.createServer((req, res) => {
    let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (p.endsWith('/')) p += 'index.html';
    const file = path.resolve(base, '.' + p);
    if (!file.startsWith(base + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      if (fs.existsSync(file) && fs.statSync(file).isDirectory()) {
        res.writeHead(301, { Location: p + '/' }).end();
        return;
      }
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() })));
}
