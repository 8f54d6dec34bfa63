// Browser test of the chat page (web/index.html) in headless Chromium against `wgc serve` with the
// built-in model: the model's name from /v1/models, a reply streamed token by token with its
// statistics, the Stop button, settings that reach the request (and survive a reload), the
// Markdown renderer's safety, the theme. The pages run from the server's embedded copy; the kernel
// playground's checks pass from there too.
// Usage: node chat.test.mjs --wgc build/wgc --deps .deps [--screenshots docs]
//        node chat.test.mjs --mock --site build/web --deps .deps   (page work without a model only)
import test from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, launch, loadPuppeteer, openPage, options, skip, startServer } from './harness.mjs';

const opt = options();
if (!opt.deps || !(opt.wgc || (opt.mock && opt.site)))
  throw new Error('usage: chat.test.mjs --wgc BIN --deps DIR [--screenshots DIR] | --mock --site DIR --deps DIR');
const driver = await loadPuppeteer(opt.deps);
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
let server;
if (opt.mock) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  server = await startServer(process.execPath, [path.join(here, 'mock_server.mjs'), '--site', opt.site, '--port', String(port)], url);
} else {
  const { spawnSync } = await import('node:child_process');
  const help = spawnSync(opt.wgc, ['serve', '--help'], { encoding: 'utf8' });
  if (help.status !== 0) skip(`${opt.wgc} has no serve command (${(help.stderr || help.stdout || '').trim().split('\n')[0]})`);
  server = await startServer(opt.wgc, ['serve', '--host', '127.0.0.1', '--port', String(port)], url);
}
const browser = await launch(driver, { webgpu: false });
const TIMEOUT = 180_000;

const modelId = (await (await fetch(`${url}/v1/models`)).json()).data[0].id;

// A fresh page on the chat, settings cleared; the bodies of its chat requests are collected.
// ignoreEos adds `ignore_eos: true` to them on the way out (a server option the page does not
// offer), so that a reply cannot end early by chance where a test needs it long.
async function chatPage({ ignoreEos = false } = {}) {
  const page = await openPage(browser, `${url}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  await page.evaluate(() => localStorage.clear());
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  page.requests = [];
  await page.setRequestInterception(true);
  page.on('request', (r) => {
    if (!r.url().endsWith('/v1/chat/completions')) return r.continue();
    const body = JSON.parse(r.postData());
    page.requests.push(body);
    return r.continue(ignoreEos ? { postData: JSON.stringify({ ...body, ignore_eos: true }) } : {});
  });
  return page;
}

async function setField(page, id, value) {
  await page.$eval(`#${id}`, (e) => (e.value = ''));
  await page.type(`#${id}`, value);
  await page.$eval(`#${id}`, (e) => e.dispatchEvent(new Event('change')));
}

// Sends a prompt and waits until its reply has begun (its message exists: a short reply may have
// ended already, so the 'streaming' state itself can come and go between two polls).
async function ask(page, text) {
  const before = await page.$$eval('.msg.assistant', (ms) => ms.length);
  await page.type('#prompt', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.msg.assistant').length > n, { timeout: TIMEOUT }, before);
}

const lastReply = (page) =>
  page.$$eval('.msg.assistant', (ms) => {
    const m = ms.at(-1);
    return { status: m.dataset.status, text: m.querySelector('.content').textContent, meta: m.querySelector('.meta')?.textContent ?? '' };
  });

test("the page names the server's model", { timeout: TIMEOUT }, async () => {
  const page = await chatPage();
  assert.equal(await page.$eval('#model', (e) => e.textContent), `model: ${modelId}`);
  await page.close();
});

test('a reply streams in token by token, with its statistics', { timeout: TIMEOUT }, async () => {
  const page = await chatPage({ ignoreEos: true });
  await setField(page, 'max_tokens', '32');
  await setField(page, 'seed', '7');
  // The reply's text as it grows, one length per render of the reply (a MutationObserver: each
  // render replaces the content's children, so a record's added nodes hold that render's text;
  // polling the DOM would miss renders when a fast engine streams the reply within one poll).
  await page.evaluate(() => {
    window.lengths = [];
    new MutationObserver((records) => {
      for (const r of records)
        if (r.target.classList?.contains('content') && r.target.closest('.msg.assistant') && r.addedNodes.length)
          window.lengths.push([...r.addedNodes].reduce((n, x) => n + x.textContent.length, 0));
    }).observe(document.getElementById('messages'), { childList: true, subtree: true });
  });
  await ask(page, 'A cat is');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  const seen = new Set((await page.evaluate(() => window.lengths)).filter((n) => n > 0));
  const r = await lastReply(page);
  assert.equal(r.status, 'done', page.log.join('\n'));
  assert.ok(r.text.trim().length > 0, 'an empty reply');
  assert.ok(seen.size >= 2, `the reply arrived in one piece (lengths seen: ${[...seen]})`);
  assert.match(r.meta, /^\d+ tokens? · [\d.]+ tokens\/s · time to first token \d+ ms/);
  const tokens = Number(/^(\d+)/.exec(r.meta)[1]);
  assert.equal(tokens, 32, r.meta);
  assert.match(r.meta, /finish: length$/);
  assert.equal(page.requests.length, 1);
  const body = page.requests[0];
  assert.equal(body.stream, true);
  assert.equal(body.max_tokens, 32);
  assert.equal(body.seed, 7);
  assert.equal(body.model, modelId);
  assert.deepEqual(body.messages, [{ role: 'user', content: 'A cat is' }]);
  if (opt.screenshots) await page.screenshot({ path: path.join(opt.screenshots, 'web_chat.png') });
  await page.close();
});

test('Stop ends a reply early, the next one runs, and New chat starts over', { timeout: TIMEOUT }, async () => {
  const page = await chatPage({ ignoreEos: true });
  // The CPU engine writes 400 tokens of the built-in model faster than a click: the stream reaches
  // the page at ~2 KB/s (a few dozen tokens a second) so that Stop and New chat find it running.
  await page.emulateNetworkConditions({ download: 2048, upload: -1, latency: 0 });
  await setField(page, 'max_tokens', '400');
  await ask(page, 'The word house means');
  await page.waitForFunction(() => document.querySelector('.msg.assistant:last-child .content').textContent.length > 0,
                             { timeout: TIMEOUT });
  await page.click('#stop');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  const stopped = await lastReply(page);
  assert.equal(stopped.status, 'stopped');
  assert.match(stopped.meta, /stopped$/);
  await new Promise((res) => setTimeout(res, 300));
  assert.equal((await lastReply(page)).text, stopped.text, 'text kept arriving after Stop');
  // The server is free again: a short second turn carries the first one in its history.
  await setField(page, 'max_tokens', '4');
  await ask(page, 'And a dog?');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  assert.equal((await lastReply(page)).status, 'done');
  const second = page.requests.at(-1);
  assert.deepEqual(second.messages.map((m) => m.role), ['user', 'assistant', 'user']);
  // The history holds the raw reply; the page shows it rendered as Markdown (line breaks become
  // paragraphs), so render the sent text with the page's own renderer before comparing.
  const shown = await page.evaluate(async (text) => {
    const { renderMarkdown } = await import(new URL('markdown.js', document.baseURI).href);
    const div = document.createElement('div');
    div.replaceChildren(renderMarkdown(text));
    return div.textContent;
  }, second.messages[1].content);
  assert.equal(shown, stopped.text);
  // New chat while a reply streams: it stops, and the next request starts a fresh history.
  await setField(page, 'max_tokens', '400');
  await ask(page, 'A third question');
  await page.click('#new-chat');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  assert.equal(await page.$$eval('.msg', (ms) => ms.length), 0);
  await setField(page, 'max_tokens', '2');
  await ask(page, 'Fresh start');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  assert.deepEqual(page.requests.at(-1).messages, [{ role: 'user', content: 'Fresh start' }]);
  await page.close();
});

test('settings reach the request and are kept across a reload', { timeout: TIMEOUT }, async () => {
  const page = await chatPage();
  await setField(page, 'system', 'You write definitions.');
  await setField(page, 'temperature', '0');
  await setField(page, 'top_p', '0.5');
  await setField(page, 'max_tokens', '3');
  await ask(page, 'Cat');
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  const r = await lastReply(page);
  assert.equal(r.status, 'done', page.log.join('\n'));
  assert.match(r.meta, /^[1-3] tokens?/, 'max tokens 3');
  const body = page.requests[0];
  assert.equal(body.temperature, 0);
  assert.equal(body.top_p, 0.5);
  assert.equal(body.max_tokens, 3);
  assert.deepEqual(body.messages[0], { role: 'system', content: 'You write definitions.' });
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
  const kept = await page.evaluate(() => ['system', 'temperature', 'top_p', 'max_tokens'].map((k) => document.getElementById(k).value));
  assert.deepEqual(kept, ['You write definitions.', '0', '0.5', '3']);
  // A bad value is refused with a message, before any request.
  await setField(page, 'seed', '1.5');
  await page.type('#prompt', 'x');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => !document.getElementById('error').hidden, { timeout: TIMEOUT });
  assert.match(await page.$eval('#error', (e) => e.textContent), /seed must be an integer/);
  await page.close();
});

test('replies render as Markdown, and markup in them stays text', { timeout: TIMEOUT }, async () => {
  const page = await chatPage();
  const html = await page.evaluate(async () => {
    const { renderMarkdown } = await import(new URL('markdown.js', document.baseURI).href);
    const div = document.createElement('div');
    div.append(renderMarkdown([
      '## Title', 'Some **bold**, *italic* and `x < y` code.', '',
      '```js', 'if (a < b) alert("<b>");', '```', '',
      '- one', '- two', '', '1. first', '2. second', '',
      '> quoted', '',
      '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>',
      '[safe](https://example.org/a?b=1) [bad](javascript:window.pwned=3) [rel](/v1/models)',
      '```', 'unclosed fence while streaming',
    ].join('\n')));
    document.body.append(div);
    return {
      h: div.querySelector('h4')?.textContent,
      strong: div.querySelector('strong')?.textContent,
      em: div.querySelector('em')?.textContent,
      code: [...div.querySelectorAll('pre code')].map((c) => [c.className, c.textContent]),
      inline: div.querySelector('p code')?.textContent,
      ul: div.querySelectorAll('ul li').length,
      ol: div.querySelectorAll('ol li').length,
      quote: div.querySelector('blockquote')?.textContent,
      links: [...div.querySelectorAll('a')].map((a) => a.getAttribute('href')),
      elements: [...div.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()),
      pwned: window.pwned ?? null,
      text: div.textContent,
    };
  });
  assert.equal(html.h, 'Title');
  assert.equal(html.strong, 'bold');
  assert.equal(html.em, 'italic');
  assert.equal(html.inline, 'x < y');
  assert.deepEqual(html.code, [['language-js', 'if (a < b) alert("<b>");'], ['', 'unclosed fence while streaming']]);
  assert.equal(html.ul, 2);
  assert.equal(html.ol, 2);
  assert.equal(html.quote, 'quoted');
  assert.deepEqual(html.links, ['https://example.org/a?b=1']);
  assert.ok(!html.elements.includes('img') && !html.elements.includes('script'), html.elements.join(' '));
  assert.match(html.text, /<img src=x onerror="window.pwned=1"> <script>window.pwned=2<\/script>/);
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(await page.evaluate(() => window.pwned ?? null), null);
  await page.close();
});

test('the theme toggles between light and dark', { timeout: TIMEOUT }, async () => {
  const page = await chatPage();
  const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
  const first = await theme();
  await page.click('#theme');
  assert.notEqual(await theme(), first);
  await page.reload({ waitUntil: 'load' });
  assert.notEqual(await theme(), first, 'the choice is kept');
  await page.click('#theme');
  assert.equal(await theme(), first);
  await page.close();
});

test('the server also serves the kernel playground, whose checks pass from the embedded copy', { timeout: TIMEOUT }, async () => {
  const moved = await fetch(`${url}/kernels?run=1`, { redirect: 'manual' });
  assert.equal(moved.status, 301);
  const to = new URL(moved.headers.get('location'), url);
  assert.equal(to.pathname + to.search, '/kernels/?run=1');
  const page = await fetch(`${url}/kernels/`);
  assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
  if (opt.mock) return; // the mock serves files from disk: the embedded copy is wgc serve's
  const gpuBrowser = await launch(driver, { webgpu: true });
  try {
    const p = await openPage(gpuBrowser, `${url}/kernels/?run=1&only=add,map`);
    await p.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.status), { timeout: TIMEOUT });
    const results = await p.$$eval('#checks tbody tr', (trs) => trs.map((tr) => tr.dataset.result));
    assert.equal(results.length, 4, p.log.join('\n')); // add.wgsl and the map ladder's x + y
    assert.ok(results.every((r) => r === 'pass'), `${results}\n${p.log.join('\n')}`);
  } finally {
    await gpuBrowser.close();
  }
});

test('with wgc serve --api-key the page asks for the key, keeps it, and says when it is wrong', { timeout: TIMEOUT }, async () => {
  const KEY = 'k3y-[with]/odd chars';
  const keyPort = await freePort();
  const keyUrl = `http://127.0.0.1:${keyPort}`;
  const keyed = opt.mock
    ? await startServer(process.execPath, [path.join(path.dirname(fileURLToPath(import.meta.url)), 'mock_server.mjs'), '--site', opt.site,
      '--port', String(keyPort), '--api-key', KEY], keyUrl, { probe: '/health' })
    : await startServer(opt.wgc, ['serve', '--host', '127.0.0.1', '--port', String(keyPort), '--api-key', KEY], keyUrl,
      { probe: '/health' });
  try {
    const page = await openPage(browser, `${keyUrl}/`);
    await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
    await page.evaluate(() => localStorage.clear());
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
    // No key: "unauthorized" and where to enter one, not "server not reachable".
    assert.equal(await page.$eval('#model', (e) => e.textContent), 'unauthorized');
    assert.match(await page.$eval('#error', (e) => e.textContent), /requires an API key.*--api-key.*Server/);
    // A wrong key: refused, said so.
    await setField(page, 'api_key', 'wrong');
    await page.waitForFunction(() => /refused this API key/.test(document.getElementById('error').textContent), { timeout: TIMEOUT });
    await page.type('#prompt', 'Hi');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('.msg.assistant')?.dataset.status === 'error', { timeout: TIMEOUT });
    assert.match(await page.$eval('#error', (e) => e.textContent), /^Unauthorized: the server refused this API key/);
    // The right key: the model is listed and a reply streams; the key survives a reload.
    await setField(page, 'api_key', KEY);
    await page.waitForFunction(() => document.getElementById('model').textContent.startsWith('model: '), { timeout: TIMEOUT });
    assert.equal(await page.$eval('#error', (e) => e.hidden), true);
    await setField(page, 'max_tokens', '3');
    await ask(page, 'A cat is');
    await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
    assert.equal((await lastReply(page)).status, 'done', page.log.join('\n'));
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.state === 'idle', { timeout: TIMEOUT });
    assert.equal(await page.$eval('#api_key', (e) => e.value), KEY);
    assert.equal(await page.$eval('#api_key', (e) => e.type), 'password');
    assert.match(await page.$eval('#model', (e) => e.textContent), /^model: /);
    // Reset settings leaves the key; clearing the field forgets it.
    await page.click('#reset');
    assert.equal(await page.evaluate(() => localStorage.getItem('wgc-chat-api-key')), KEY);
    await setField(page, 'api_key', '');
    assert.equal(await page.evaluate(() => localStorage.getItem('wgc-chat-api-key')), null);
    await page.close();
  } finally {
    await keyed.stop();
  }
});

test.after(async () => {
  await browser.close();
  await server.stop();
});
