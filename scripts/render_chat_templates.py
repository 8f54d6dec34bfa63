#!/usr/bin/env python3
"""Renders the chat templates of scripts/arch_chat_templates.py with Jinja2 (the library transformers
renders chat templates with), configured as transformers' apply_chat_template configures it: an
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension,
raise_exception, and the special tokens as variables. Writes the expected strings (or the error a
template raises) for tests/test_chat_template_arch.cpp:

    /usr/bin/python3 scripts/render_chat_templates.py tests/data/arch/chat_templates.json

Needs only Jinja2 >= 3.1 (Debian: python3-jinja2).
"""

import json
import sys
from pathlib import Path

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from arch_chat_templates import CONVERSATIONS, TEMPLATE_TOKENS, TEMPLATES  # noqa: E402


def compile_template(source):
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source)


def main():
    out = Path(sys.argv[1])
    res = {"renderer": f"jinja2 {jinja2.__version__}, configured as transformers' apply_chat_template",
           "conversations": CONVERSATIONS, "templates": {}}
    for name, source in TEMPLATES.items():
        bos, eos = TEMPLATE_TOKENS[name]
        tmpl = compile_template(source)
        entry = {"source": source, "bos_token": bos, "eos_token": eos, "renders": []}
        for conv, messages in CONVERSATIONS.items():
            for agp in (True, False):
                r = {"conversation": conv, "add_generation_prompt": agp}
                try:
                    r["text"] = tmpl.render(messages=messages, tools=None, documents=None, add_generation_prompt=agp,
                                            bos_token=bos, eos_token=eos)
                except TemplateError as e:
                    r["error"] = str(e)
                entry["renders"].append(r)
        res["templates"][name] = entry
    out.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
