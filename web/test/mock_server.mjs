// A stand-in for `wgc serve` for working on the chat page's layout without a model: the site's
// static files, /v1/models, and a /v1/chat/completions that streams a canned Markdown reply word by
// word (OpenAI's SSE chunks, usage last, [DONE]). Not used by the tests, which run the real server.
// Usage: node mock_server.mjs --site build/web [--port 8080]
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { options } from './harness.mjs';

const opt = options();
const site = path.resolve(opt.site || 'build/web');
const REPLY = 'Here is **Markdown** with `inline code`, a [link](https://example.org) and a list:\n\n' +
  '- first\n- second\n\n```cpp\nint main() { return 0; }\n```\n\nAnd a <script>alert(1)</script> shown as text.';
const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css' };

http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/v1/models') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'mock-model', object: 'model' }] }));
    return;
  }
  if (url.pathname === '/v1/chat/completions' && req.method === 'POST') {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const r = JSON.parse(body);
      const words = REPLY.split(/(?<=\s)/).slice(0, r.max_tokens ?? 1000);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      const send = (o) => res.write(`data: ${typeof o === 'string' ? o : JSON.stringify(o)}\n\n`);
      let i = 0;
      const timer = setInterval(() => {
        if (i < words.length) {
          send({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: words[i++] }, finish_reason: null }] });
          return;
        }
        clearInterval(timer);
        send({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: i < 1000 ? 'stop' : 'length' }] });
        send({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 12, completion_tokens: words.length } });
        send('[DONE]');
        res.end();
      }, 60);
      res.on('close', () => clearInterval(timer));
    });
    return;
  }
  let p = url.pathname.endsWith('/') ? url.pathname + 'index.html' : url.pathname;
  const file = path.resolve(site, '.' + decodeURIComponent(p));
  if (!file.startsWith(site + path.sep) || !fs.existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
}).listen(Number(opt.port || 8080), '127.0.0.1', () => console.log(`mock server on http://127.0.0.1:${opt.port || 8080}/`));
