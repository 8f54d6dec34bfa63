// A stand-in for `wgc serve` for working on the chat page's layout without a model: the site's
// static files, /v1/models, and a /v1/chat/completions that streams a canned Markdown reply word by
// word (OpenAI's SSE chunks, usage last, [DONE]). CI's tests run the real server; `chat.test.mjs --mock`
// runs against this one, for work on the page.
// Usage: node mock_server.mjs --site build/web [--port 8080] [--api-key KEY]
// (--api-key: /v1/ answers 401 without "Authorization: Bearer KEY", as wgc serve --api-key does)
import http from 'node:http';
import { fileHandler, options } from './harness.mjs';

const opt = options();
const files = fileHandler(opt.site || 'build/web');
const REPLY = 'Here is **Markdown** with `inline code`, a [link](https://example.org) and a list:\n\n' +
  '- first\n- second\n\nThen a code block, and a last sentence that makes the reply long enough to be cut short.\n\n```cpp\nint main() { return 0; }\n```\n\nAnd a <script>alert(1)</script> shown as text.';

http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (opt['api-key'] && url.pathname.startsWith('/v1/') && req.headers.authorization !== `Bearer ${opt['api-key']}`) {
    res.writeHead(401, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer' });
    res.end(JSON.stringify({ error: { message: 'invalid or missing API key', type: 'authentication_error' } }));
    return;
  }
  if (url.pathname === '/health') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"status":"ok"}');
    return;
  }
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
      const all = REPLY.split(/(?<=\s)/);
      const words = all.slice(0, r.max_tokens ?? all.length);
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      const send = (o) => res.write(`data: ${typeof o === 'string' ? o : JSON.stringify(o)}\n\n`);
      let i = 0;
      const timer = setInterval(() => {
        if (i < words.length) {
          send({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: words[i++] }, finish_reason: null }] });
          return;
        }
        clearInterval(timer);
        send({ object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: words.length < all.length ? 'length' : 'stop' }] });
        send({ object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 12, completion_tokens: words.length } });
        send('[DONE]');
        res.end();
      }, 60);
      res.on('close', () => clearInterval(timer));
    });
    return;
  }
  files(req, res);
}).listen(Number(opt.port || 8080), '127.0.0.1', () => console.log(`mock server on http://127.0.0.1:${opt.port || 8080}/`));
