// Chat templates: the Jinja engine (semantics, whitespace control as transformers configures it,
// errors) and real templates of the Llama 3 / 3.1, Qwen 2 / 3, Mistral and Gemma families.
#include "llm/chat/chat_template.h"
#include "llm/chat/jinja.h"
#include "llm/tokenizer/loaders.h"
#include "test_util.h"
#include "tokenizer_ref/tok_test_util.h"

namespace wgc::llm {
namespace {

namespace fs = std::filesystem;

std::string render(const std::string& src, const std::string& ctx_json = "{}") {
  jinja::Template t(src, "t");
  return t.render(jinja::Value::from_json(json::parse(ctx_json)));
}

std::string render_error(const std::string& src, const std::string& ctx_json = "{}") {
  try {
    render(src, ctx_json);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- Engine -------------------------------------------------------------------------------------

TEST(Jinja, ExpressionsAndOperators) {
  EXPECT_EQ(
      render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }}"),
      "7 9 3 -4 1 2 1024");
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3 * 1.5 }}"),
            "3.5 1.0 0.30000000000000004 1e+20 4.5");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ 'ab' + 'cd' }} {{ 'x' * 3 }} {{ [1] + [2, 3] }}"),
            "a1None abcd xxx [1, 2, 3]");
  EXPECT_EQ(render("{{ true and 'yes' }} {{ false or 'no' }} {{ not 0 }} {{ 1 if 0 else 2 }} {{ 'x' if true }}"),
            "yes no True 2 x");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 'b' > 'a' }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ 2 >= 3 }}"),
            "True True True False False");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}"),
            "True True True True");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [true, none, 'x']} }} {{ (1, 'two') }}"),
            "{'a': 1, 'b': [True, None, 'x']} [1, 'two']");
  EXPECT_EQ(render("{{ 'it''s' }} {{ \"q\\\"d\\n\" }}|{{ '\\u00e9\\x41' }}"),
            "its q\"d\n|\xC3\xA9"
            "A");
  EXPECT_EQ(render("{{ undefined_thing }}|{{ undefined_thing.attr }}|{{ none }}"), "||None");
}

TEST(Jinja, SubscriptsAndSlices) {
  const std::string ctx = R"({"s": "héllo", "l": [0, 1, 2, 3, 4], "d": {"k": "v", "n": {"m": 5}}})";
  EXPECT_EQ(render("{{ s[1] }} {{ s[-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[:-2] }}", ctx), "é o él olléh hél");
  EXPECT_EQ(render("{{ l[1:] }} {{ l[::2] }} {{ l[-2:] }} {{ l[::-1] }} {{ l[3:1:-1] }} {{ l[10] }}", ctx),
            "[1, 2, 3, 4] [0, 2, 4] [3, 4] [4, 3, 2, 1, 0] [3, 2] ");
  EXPECT_EQ(render("{{ d.k }} {{ d['k'] }} {{ d.n.m }} {{ d['n']['m'] }} {{ d.missing }}|{{ l.0 }}", ctx),
            "v v 5 5 |0");
}

TEST(Jinja, Filters) {
  const std::string ctx = R"({"items": [{"n": "b", "v": 2}, {"n": "a", "v": 1}, {"n": "c", "v": 3}],
                              "s": "  Hello World  ", "xs": [3, 1, 2, 1]})";
  EXPECT_EQ(render("[{{ s | trim }}] {{ s | length }} {{ s | upper | trim }} {{ s | lower | trim }}", ctx),
            "[Hello World] 15 HELLO WORLD hello world");
  EXPECT_EQ(render("{{ xs | first }} {{ xs | last }} {{ xs | length }} {{ xs | join(',') }} {{ xs | sort }} "
                   "{{ xs | unique | list }} {{ xs | reverse | list }} {{ xs | sum }} {{ xs | min }} {{ xs | max }}",
                   ctx),
            "3 1 4 3,1,2,1 [1, 1, 2, 3] [3, 1, 2] [1, 2, 1, 3] 7 1 3");
  EXPECT_EQ(render("{{ items | map(attribute='n') | join }} {{ items | selectattr('v', 'gt', 1) | map(attribute='n') "
                   "| list }} {{ items | rejectattr('n', 'equalto', 'a') | length }} {{ items | sort(attribute='n') "
                   "| map(attribute='v') | list }} {{ xs | select('odd') | list }}",
                   ctx),
            "bac ['b', 'c'] 2 [1, 2, 3] [3, 1, 1]");
  EXPECT_EQ(render("{{ missing | default('d') }} {{ '' | default('e', true) }} {{ 'x' | d('y') }}"), "d e x");
  EXPECT_EQ(render("{{ '42' | int + 1 }} {{ 'x' | int }} {{ 2 | float }} {{ 3.7 | int }} {{ 2.567 | round(2) }} "
                   "{{ -3 | abs }} {{ 5 | string ~ '!' }}"),
            "43 0 2.0 3 2.57 3 5!");
  EXPECT_EQ(render("{{ 'a-b-a' | replace('a', 'x') }} {{ 'hello world' | title }} {{ 'hELLO' | capitalize }} "
                   "{{ '<a&b>' | e }} {{ 'one two  three' | wordcount }}"),
            "x-b-x Hello World Hello &lt;a&amp;b&gt; 3");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | items | list }} {{ {'b': 1, 'a': 2} | dictsort }}"),
            "[['b', 1], ['a', 2]] [['a', 2], ['b', 1]]");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'x\\ny' | indent(2, true) }}"), "a\n  b\n\n  c|  x\n  y");
}

TEST(Jinja, ToJsonIsPythonJsonDumps) {
  const std::string ctx = R"({"t": {"name": "f", "args": {"x": 1.5, "y": [1, "é\n\"q\""], "z": null, "b": true},
                              "empty": {}, "el": []}})";
  EXPECT_EQ(render("{{ t | tojson }}", ctx),
            R"({"name": "f", "args": {"x": 1.5, "y": [1, "é\n\"q\""], "z": null, "b": true}, "empty": {}, "el": []})");
  EXPECT_EQ(render("{{ t.args | tojson(indent=2) }}", ctx),
            "{\n  \"x\": 1.5,\n  \"y\": [\n    1,\n    \"é\\n\\\"q\\\"\"\n  ],\n  \"z\": null,\n  \"b\": true\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} {{ 'x' | tojson }} {{ 3 | tojson }}"),
            R"({"a": 2, "b": 1} "x" 3)");
}

TEST(Jinja, StringMethods) {
  EXPECT_EQ(
      render("{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|"
             "{{ 'x\\n\\n'.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}"),
      "x|a|x\n|x|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.upper() }} "
                   "{{ 'ABC'.lower() }} {{ 'a-b'.replace('-', '+') }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }} "
                   "{{ ', '.join(['a', 'b']) }} {{ 'a b'.title() }} {{ 'a/b/c'.rsplit('/', 1) }}"),
            "True True ABC abc a+b 2 2 a, b A B ['a/b', 'c']");
  EXPECT_EQ(render("{% set d = {'a': 1} %}{{ d.get('a') }} {{ d.get('b') }} {{ d.get('b', 2) }} {{ d.keys() | list }} "
                   "{{ d.values() | list }}{% for k, v in d.items() %} {{ k }}={{ v }}{% endfor %}"),
            "1 None 2 ['a'] [1] a=1");
  EXPECT_EQ(render("{% set l = [1] %}{% do l.append(2) %}{{ l }} {{ l.pop() }} {{ l }}"), "[1, 2] 2 [1]");
}

TEST(Jinja, Tests) {
  const std::string ctx = R"({"s": "x", "n": 3, "f": 1.5, "l": [], "d": {}, "z": null, "b": false})";
  EXPECT_EQ(render("{{ s is defined }} {{ q is defined }} {{ q is undefined }} {{ z is none }} {{ s is not none }} "
                   "{{ s is string }} {{ n is number }} {{ n is integer }} {{ f is float }} {{ b is boolean }} "
                   "{{ d is mapping }} {{ l is iterable }} {{ s is iterable }} {{ n is odd }} {{ n is even }} "
                   "{{ n is divisibleby 3 }} {{ n is divisibleby(2) }} {{ s is equalto 'x' }} {{ b is false }} "
                   "{{ n is in [1, 3] }}",
                   ctx),
            "True False True True True True True True True True True True True True False True False True True "
            "True");
  EXPECT_EQ(render("{{ not s is defined }} {{ s is defined and n > 2 }}", ctx), "False True");
}

TEST(Jinja, ControlFlowAndLoops) {
  const std::string ctx = R"({"xs": ["a", "b", "c"]})";
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ x }}{% if loop.first %}F{% endif %}"
                   "{% if loop.last %}L{% endif %}{{ loop.length }}{{ loop.revindex }} {% endfor %}",
                   ctx),
            "10aF33 21b32 32cL31 ");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}"
                   "{% for x in [] %}x{% else %}empty{% endfor %}",
                   ctx),
            "a2c2empty");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{% if x == 'c' %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}",
                   ctx),
            "a");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }};{% endfor %}", ctx),
            ">a>b;a>b>c;b>c>;");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }},{% endfor %}"), "3,7,");
  EXPECT_EQ(render("{% if 0 %}a{% elif '' %}b{% elif [1] %}c{% else %}d{% endif %}"), "c");
  EXPECT_EQ(
      render("{% for i in range(3) %}{{ i }}{% endfor %} {{ range(1, 10, 3) | list }} {{ range(3, 0, -1) | list }}"),
      "012 [1, 4, 7] [3, 2, 1]");
}

TEST(Jinja, SetScopingAndNamespace) {
  // A set inside a loop does not leak out (hence namespace()); if blocks do not scope.
  EXPECT_EQ(render("{% set c = 0 %}{% for i in [1, 2, 3] %}{% set c = c + i %}{{ c }}{% endfor %}|{{ c }}"), "123|0");
  EXPECT_EQ(render("{% set ns = namespace(c=0, items=[]) %}{% for i in [1, 2, 3] %}{% set ns.c = ns.c + i %}"
                   "{% endfor %}{{ ns.c }}"),
            "6");
  EXPECT_EQ(render("{% if true %}{% set x = 5 %}{% endif %}{{ x }}"), "5");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set block %}Hi {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[Hi 2]");
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} "
                   "{{ greet('B', punct='?') }}"),
            "Hi A! Hi B?");
  EXPECT_EQ(render("{% filter upper %}shout {{ 'this' }}{% endfilter %}"), "SHOUT THIS");
  EXPECT_EQ(render("{# a comment #}x{# another\nmultiline #}y"), "xy");
  EXPECT_EQ(render("{% raw %}{{ not rendered }}{% endraw %}"), "{{ not rendered }}");
}

TEST(Jinja, WhitespaceControlAsTransformers) {
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nend"), "yes\nend");
  EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
  // Expressions are not block tags: their surroundings stay.
  EXPECT_EQ(render("  {{ 'x' }}\n  y"), "  x\n  y");
  // Explicit - strips all whitespace on that side, newlines included; + keeps it.
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true %} b {% endif -%}\n\n c"), "a b c");
  EXPECT_EQ(render("a\n    {%+ if true %}b{% endif +%}\nc"), "a\n    b\nc");
  // keep_trailing_newline is off: one final newline of the source goes.
  EXPECT_EQ(render("x\n"), "x");
  EXPECT_EQ(render("x\n\n"), "x\n");
  // A comment line disappears entirely.
  EXPECT_EQ(render("a\n  {# c #}\nb"), "a\nb");
}

TEST(Jinja, GlobalsAndErrors) {
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
  EXPECT_EQ(render("{{ dict(a=1, b='x') }}"), "{'a': 1, 'b': 'x'}");
  EXPECT_EQ(render_error("{{ raise_exception('Only user and assistant roles are supported!') }}"),
            "t: raise_exception: Only user and assistant roles are supported!");
  EXPECT_EQ(render_error("line1\n{% if x %}\n{{ 1 + }}\n{% endif %}"), "t:3: unexpected end of expression");
  EXPECT_EQ(render_error("{% for x in y %}"), "t:1: missing '{% endfor %}'");
  EXPECT_EQ(render_error("{% endif %}"), "t:1: unknown or unsupported tag 'endif'");
  EXPECT_EQ(render_error("{% include 'x' %}"), "t:1: unknown or unsupported tag 'include'");
  EXPECT_EQ(render_error("a\n\n{{ x | nofilter }}"), "t:3: unknown filter 'nofilter'");
  EXPECT_EQ(render_error("{{ 'a' - 1 }}"), "t:1: unsupported operands for -: 'a' and 1");
  EXPECT_EQ(render_error("{{ nothing() }}"), "t:1: 'nothing' is not callable (undefined)");
  EXPECT_EQ(render_error("{{ 'unterminated }}"), "t:1: unterminated string");
  EXPECT_EQ(render_error("{{ x "), "t:1: unclosed tag, expected '}}'");
}

// ---- Real templates -------------------------------------------------------------------------------

const char* kConversation = R"([{"role": "system", "content": "You are terse."},
  {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
  {"role": "user", "content": "And 3+3?"}])";

json::Value conversation() { return json::parse(kConversation); }

TEST(ChatTemplate, Llama3GoldenFromTokenizerConfig) {
  auto golden = test::fixtures_dir() / "tiny-llama3-bf16/golden.json";
  WGC_REQUIRE_FILE(golden);
  std::string want = json::parse_file(golden)["chat_template_rendered"].as_string();
  auto cfg = test::lenml_models("llama3") / "tokenizer.json";
  if (!fs::exists(cfg)) GTEST_SKIP() << cfg << " absent (run scripts/setup_test_refs.sh)";
  auto tok = load_tokenizer(cfg);
  auto tmpl = ChatTemplate::for_tokenizer(tok);
  EXPECT_FALSE(tmpl.is_fallback());
  EXPECT_EQ(tmpl.render_json(conversation()), want);
}

TEST(ChatTemplate, Llama3GoldenFromGguf) {
  auto golden = test::fixtures_dir() / "tiny-llama3-bf16/golden.json";
  auto gguf = test::fixtures_dir() / "tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf";
  WGC_REQUIRE_FILE(golden);
  WGC_REQUIRE_FILE(gguf);
  auto tok = load_tokenizer(gguf);
  std::string want = json::parse_file(golden)["chat_template_rendered"].as_string();
  std::vector<ChatMessage> msgs = {
      {"system", "You are terse."}, {"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}};
  EXPECT_EQ(ChatTemplate::for_tokenizer(tok).render(msgs), want);
  // The rendered text carries its own BOS: encode without the post-processor.
  auto ids = tok.encode(want, false);
  EXPECT_EQ(ids.front(), *tok.bos_id());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *tok.token_id("<|eot_id|>")), 4);
  EXPECT_EQ(tok.decode(ids), want);
}

TEST(ChatTemplate, Qwen3FromNpm) {
  auto p = test::lenml_models("qwen3") / "tokenizer.json";
  if (!fs::exists(p)) GTEST_SKIP() << p << " absent (run scripts/setup_test_refs.sh)";
  auto tok = load_tokenizer(p);
  auto tmpl = ChatTemplate::for_tokenizer(tok);
  EXPECT_EQ(tmpl.render_json(conversation()),
            "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n");
  ChatOptions no_think;
  no_think.extra = json::parse(R"({"enable_thinking": false})");
  EXPECT_EQ(tmpl.render_json(json::parse(R"([{"role": "user", "content": "Hi"}])"), no_think),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  // Reasoning after the last user turn is kept in <think>; the content loses its leading newlines.
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(tmpl.render_json(json::parse(R"([{"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello"}])"),
                             no_prompt),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nhmm\n</think>\n\nHello<|im_end|>\n");
  // Tools: tojson of each tool, tool calls with dict arguments, tool responses grouped in a user turn.
  ChatOptions tools;
  tools.extra = json::parse(R"({"tools": [{"type": "function", "function": {"name": "add",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}]})");
  std::string got = tmpl.render_json(json::parse(R"([{"role": "system", "content": "Sys."},
      {"role": "user", "content": "Add."},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1}}}]},
      {"role": "tool", "content": "1"}, {"role": "tool", "content": "2"}])"),
                                     tools);
  EXPECT_EQ(got,
            "<|im_start|>system\nSys.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
            "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\": {\"type\": \"object\", "
            "\"properties\": {\"a\": {\"type\": \"integer\"}}}}}\n</tools>\n\nFor each function call, return a json "
            "object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
            "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nAdd.<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\", "
            "\"arguments\": {\"a\": 1}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n1\n"
            "</tool_response>\n<tool_response>\n2\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
  // Encoded, the special markers are single tokens.
  auto ids = tok.encode(got, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *tok.token_id("<|im_start|>")), 5);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *tok.token_id("<tool_call>")), 3);  // 2 in the system prompt
}

// The official Llama 3.1 template (tools, date_string, system message slot).
const char* kLlama31 = R"TPL({{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
)TPL";

TEST(ChatTemplate, Llama31) {
  ChatTemplate t(kLlama31, "<|begin_of_text|>", "<|eot_id|>", "llama3.1");
  EXPECT_EQ(t.render_json(conversation()),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nYou are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is "
            "2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|><|start_header_id|>user<|end_"
            "header_id|>\n\nAnd 3+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  ChatOptions dated;
  dated.date_string = "01 Jan 2025";
  dated.add_generation_prompt = false;
  EXPECT_EQ(t.render_json(json::parse(R"([{"role": "user", "content": " Hi "}])"), dated),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 01 Jan 2025\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  ChatOptions tools;
  tools.extra = json::parse(R"({"tools": [{"name": "f", "parameters": {"x": 1}}]})");
  std::string got = t.render_json(json::parse(R"([{"role": "user", "content": "Call f."},
      {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 2}}}]},
      {"role": "tool", "content": "done"}])"),
                                  tools);
  EXPECT_EQ(got,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge "
            "Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Given the following functions, please respond with a JSON for a function call with its proper arguments "
            "that best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": "
            "dictionary of argument name and its value}.Do not use variables.\n\n{\n    \"name\": \"f\",\n    "
            "\"parameters\": {\n        \"x\": 1\n    }\n}\n\nCall f.<|eot_id|><|start_header_id|>assistant<|end_"
            "header_id|>\n\n{\"name\": \"f\", \"parameters\": {\"x\": 2}}<|eot_id|><|start_header_id|>ipython<|end_"
            "header_id|>\n\n\"done\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_NE(render_error(kLlama31, R"({"tools": [], "messages": []})").find("no first user message"),
            std::string::npos);
}

TEST(ChatTemplate, Qwen2) {
  const char* src =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
      "You are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>"
      "assistant\\n' }}{% endif %}";
  ChatTemplate t(src, "", "<|im_end|>");
  EXPECT_EQ(t.render(std::vector<ChatMessage>{{"user", "Hi"}}),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, MistralAndGemma) {
  const char* mistral =
      "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
      "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == "
      "'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles "
      "are supported!') }}{% endif %}{% endfor %}";
  ChatTemplate m(mistral, "<s>", "</s>", "mistral");
  std::vector<ChatMessage> chat = {{"user", "Hi"}, {"assistant", "Hello"}, {"user", "How?"}};
  EXPECT_EQ(m.render(chat), "<s>[INST] Hi [/INST]Hello</s>[INST] How? [/INST]");
  try {
    m.render_json(conversation());
    FAIL() << "expected raise_exception";
  } catch (const jinja::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "mistral: raise_exception: Conversation roles must alternate user/assistant/user/assistant/...");
  }
  // Mistral v0.3: system prompt folded into the last user turn, namespace counter, selectattr.
  const char* mistral3 = R"TPL({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)TPL";
  ChatTemplate m3(mistral3, "<s>", "</s>", "mistral-v3");
  EXPECT_EQ(m3.render_json(conversation()),
            "<s>[INST] What is 2+2?[/INST] 4</s>[INST] You are terse.\n\nAnd 3+3?[/INST]");

  const char* gemma =
      "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
      "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
      "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";
  ChatTemplate g(gemma, "<bos>", "<eos>", "gemma");
  EXPECT_EQ(g.render(chat),
            "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n<start_of_turn>user\n"
            "How?<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_THROW(g.render_json(conversation()), jinja::Error);
}

TEST(ChatTemplate, FallbackForModelsWithout) {
  auto p = test::models_dir() / "wgc-tiny-dict/tokenizer.json";
  WGC_REQUIRE_FILE(p);
  auto tmpl = ChatTemplate::for_tokenizer(load_tokenizer(p));
  EXPECT_TRUE(tmpl.is_fallback());
  EXPECT_EQ(tmpl.render(std::vector<ChatMessage>{{"user", "Love is"}}), "<|begin_of_text|>user: Love is\n\nassistant:");
}

}  // namespace
}  // namespace wgc::llm
