// A small Markdown renderer for model replies that builds DOM nodes: text only ever goes in through
// text nodes (never innerHTML), links only to http(s) and mailto, so a reply can show code but
// can never run it. Covers what chat replies use: paragraphs (single newlines kept as line
// breaks), headings, fenced code blocks (an unclosed fence, as while a reply streams, runs to the
// end), inline code, bold, italic, links, lists, block quotes and rules.

const MAX_DEPTH = 8; // nesting of inline spans (bold inside a link inside italics ...)

export function renderMarkdown(text, doc = document) {
  const root = doc.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const el = (tag, cls) => {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    return e;
  };
  let para = null; // the open paragraph, if any
  let list = null; // the open list: { node, ordered }
  let quote = null; // the open block quote
  const closeBlocks = () => {
    para = null;
    list = null;
    quote = null;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)\s*([\w+#.-]*)\s*$/.exec(line);
    if (fence) {
      closeBlocks();
      const body = [];
      for (i++; i < lines.length && !new RegExp(`^\\s*${fence[1]}\\s*$`).test(lines[i]); i++) body.push(lines[i]);
      const pre = el('pre');
      const code = el('code');
      if (fence[2]) {
        code.className = `language-${fence[2]}`;
        pre.dataset.lang = fence[2];
      }
      code.textContent = body.join('\n');
      pre.append(code);
      root.append(pre);
      continue;
    }
    if (/^\s*$/.test(line)) {
      closeBlocks();
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      closeBlocks();
      const h = el(`h${Math.min(6, heading[1].length + 2)}`); // h3..h6: replies sit inside the page
      inline(h, heading[2], doc, 0);
      root.append(h);
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      closeBlocks();
      root.append(el('hr'));
      continue;
    }
    const quoted = /^\s*>\s?(.*)$/.exec(line);
    if (quoted) {
      if (!quote) {
        closeBlocks();
        quote = el('blockquote');
        root.append(quote);
      } else {
        quote.append(doc.createElement('br'));
      }
      inline(quote, quoted[1], doc, 0);
      continue;
    }
    const item = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/.exec(line);
    if (item) {
      const ordered = !item[1];
      if (!list || list.ordered !== ordered) {
        closeBlocks();
        list = { node: el(ordered ? 'ol' : 'ul'), ordered };
        if (ordered && item[2] !== '1') list.node.start = Number(item[2]);
        root.append(list.node);
      }
      const li = el('li');
      inline(li, item[3], doc, 0);
      list.node.append(li);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      // A continuation line of the last list item.
      const li = list.node.lastChild;
      li.append(doc.createElement('br'));
      inline(li, line.trim(), doc, 0);
      continue;
    }
    if (!para) {
      closeBlocks();
      para = el('p');
      root.append(para);
    } else {
      para.append(doc.createElement('br'));
    }
    inline(para, line, doc, 0);
  }
  return root;
}

// Inline spans: `code`, **bold**, __bold__, *italic*, _italic_, [text](url).
const SPAN = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|__(?=\S)([\s\S]*?\S)__|\*(?=[^\s*])([^*]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_]*?[^\s_])_(?![\w])|\[([^\]\n]+)\]\(([^()\s]+)\)/;

function inline(parent, text, doc, depth) {
  while (text) {
    const m = depth < MAX_DEPTH ? SPAN.exec(text) : null;
    if (!m) {
      parent.append(doc.createTextNode(text));
      return;
    }
    if (m.index) parent.append(doc.createTextNode(text.slice(0, m.index)));
    if (m[1]) {
      const code = doc.createElement('code');
      code.textContent = m[2].replace(/^ (.*) $/, '$1');
      parent.append(code);
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const b = doc.createElement('strong');
      inline(b, m[3] ?? m[4], doc, depth + 1);
      parent.append(b);
    } else if (m[5] !== undefined || m[6] !== undefined) {
      const it = doc.createElement('em');
      inline(it, m[5] ?? m[6], doc, depth + 1);
      parent.append(it);
    } else {
      const href = safeUrl(m[8]);
      if (href) {
        const a = doc.createElement('a');
        a.href = href;
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        inline(a, m[7], doc, depth + 1);
        parent.append(a);
      } else {
        parent.append(doc.createTextNode(m[0]));
      }
    }
    text = text.slice(m.index + m[0].length);
  }
}

// The URL if it is absolute http(s) or mailto, else null (javascript:, data:, relative ...).
function safeUrl(s) {
  try {
    const u = new URL(s);
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}
