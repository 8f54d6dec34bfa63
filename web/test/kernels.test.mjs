// Browser test of the kernel playground (web/kernels) in headless Chromium: with WebGPU (SwiftShader on
// machines without a GPU) every kernel's check passes and the timing table renders; a corrupted
// result is reported as a mismatch; an image the user picks goes through the stencils; without WebGPU
// the page says so and runs the JavaScript path.
// Usage: node kernels.test.mjs --site build/web --deps .deps [--screenshots docs]
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launch, loadPuppeteer, openPage, options, staticServer } from './harness.mjs';

const opt = options();
if (!opt.site || !opt.deps) throw new Error('usage: kernels.test.mjs --site DIR --deps DIR [--screenshots DIR]');
const driver = await loadPuppeteer(opt.deps);
const server = await staticServer(opt.site);
const TIMEOUT = 240_000;

// Waits until the page has finished what it was doing ('done', or 'error'), then returns the rows
// of a table: { result, cells } each.
async function rows(page, table) {
  return page.$$eval(`#${table} tbody tr`, (trs) =>
    trs.map((tr) => ({ result: tr.dataset.result, cells: [...tr.cells].map((c) => c.textContent) })));
}
async function settle(page) {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.status), { timeout: TIMEOUT });
  assert.equal(await page.evaluate(() => document.body.dataset.status), 'done', page.log.join('\n'));
}
const describe = (r) => r.cells.join(' | ');
function assertAllPass(list, what, page) {
  assert.ok(list.length > 0, `${what}: no rows`);
  for (const r of list) assert.equal(r.result, 'pass', `${what}: ${describe(r)}\n${page.log.join('\n')}`);
}

test('every kernel passes its check through WebGPU, and the timing table renders', { timeout: TIMEOUT }, async () => {
  const browser = await launch(driver, { webgpu: true });
  try {
    const page = await openPage(browser, `${server.url}/kernels/?run=1&size=64&repeats=2`);
    await settle(page);
    assert.match(await page.$eval('#adapter', (e) => e.textContent), /^WebGPU: /);
    const checks = await rows(page, 'checks');
    const subgroups = await page.evaluate(() => document.getElementById('adapter').textContent.includes('subgroups'));
    // Without the subgroups feature its reduction rows say why they are skipped; all others run.
    const ran = checks.filter((r) => !(r.result === 'skip' && !subgroups && r.cells[1] === 'subgroup'));
    assertAllPass(ran, 'checks', page);
    for (const k of ['add', 'map x + y', 'matmul', 'reduce sum', 'reduce max', 'conv2d + bias + relu'])
      assert.ok(checks.some((r) => r.cells[0] === k), `no ${k} check`);
    assert.equal(checks.filter((r) => r.cells[0] === 'matmul').length, 6, 'the matmul ladder has six rungs');
    const images = await rows(page, 'image-checks');
    assert.equal(images.length, 8, 'sobel and blur, four versions each');
    assertAllPass(images, 'image checks', page);
    const timing = await rows(page, 'timing');
    assert.equal(timing.length, 6);
    for (const r of timing) {
      assert.equal(r.result, 'pass', describe(r));
      assert.match(r.cells[3], /^\d+(\.\d+)?$/, `GPU ms of ${describe(r)}`);
      assert.match(r.cells[4], /^\d+(\.\d+)?$/, `GFLOP/s of ${describe(r)}`);
    }
    if (opt.screenshots)
      await page.screenshot({ path: path.join(opt.screenshots, 'web_kernels.png'), fullPage: true });
  } finally {
    await browser.close();
  }
});

test('a corrupted result shows as a mismatch (the check can fail)', { timeout: TIMEOUT }, async () => {
  const browser = await launch(driver, { webgpu: true });
  try {
    const page = await openPage(browser, `${server.url}/kernels/?run=1&only=matmul&size=64&repeats=1&inject=matmul/tiled`);
    await settle(page);
    for (const table of ['checks', 'timing']) {
      const list = await rows(page, table);
      assert.equal(list.length, 6, table);
      for (const r of list) {
        const want = r.cells[1] === 'tiled' ? 'fail' : 'pass';
        assert.equal(r.result, want, `${table}: ${describe(r)}`);
        if (want === 'fail') assert.match(r.cells.at(-1), /MISMATCH/);
      }
    }
  } finally {
    await browser.close();
  }
});

test('an image the user picks goes through every stencil version', { timeout: TIMEOUT }, async () => {
  const browser = await launch(driver, { webgpu: true });
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wgc-web-')), 'picked.png');
  try {
    const page = await openPage(browser, `${server.url}/kernels/`);
    await page.waitForFunction(() => document.body.dataset.status === 'ready', { timeout: TIMEOUT });
    // A small PNG drawn by the browser itself: 37 x 23 with an edge, so Sobel has work to do.
    const png = await page.evaluate(async () => {
      const c = new OffscreenCanvas(37, 23);
      const g = c.getContext('2d');
      g.fillStyle = '#3060c0';
      g.fillRect(0, 0, 37, 23);
      g.fillStyle = '#f0e020';
      g.fillRect(11, 5, 17, 12);
      const bytes = new Uint8Array(await (await c.convertToBlob({ type: 'image/png' })).arrayBuffer());
      return btoa(String.fromCharCode(...bytes));
    });
    fs.writeFileSync(file, Buffer.from(png, 'base64'));
    await (await page.$('#image')).uploadFile(file);
    await settle(page);
    const images = await rows(page, 'image-checks');
    assert.equal(images.length, 8);
    assertAllPass(images, 'image checks', page);
    for (const r of images) assert.match(r.cells[2], /^37x23 RGBA/, describe(r));
    const shown = await page.$eval('#img-sobel', (c) => [c.width, c.height]);
    assert.deepEqual(shown, [37, 23]);
  } finally {
    await browser.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
});

test('without WebGPU the page says so and runs the JavaScript path', { timeout: TIMEOUT }, async () => {
  const browser = await launch(driver, { webgpu: false });
  try {
    const page = await openPage(browser, `${server.url}/kernels/?run=1&size=64`);
    await settle(page);
    const notice = await page.$eval('#no-webgpu', (e) => (e.hidden ? '' : e.textContent));
    assert.match(notice, /WebGPU is not available here/);
    const checks = await rows(page, 'checks');
    assert.ok(checks.length >= 10);
    for (const r of [...checks, ...(await rows(page, 'image-checks'))]) assert.equal(r.result, 'cpu', describe(r));
    const timing = await rows(page, 'timing');
    assert.equal(timing.length, 1);
    assert.equal(timing[0].cells[1], 'JavaScript');
  } finally {
    await browser.close();
  }
});

test.after(() => server.close());
