// Bad input of every format wgc reads: each case must fail with a clear wgc::Error naming the
// file, field or limit, never crash (the sanitizer build runs this file), hang or allocate
// without bound, and each within a time bound. Formats: chat templates (below), then GGUF,
// safetensors, config.json, tokenizer.json / tokenizer_config.json, .npy, PNG / JPEG.
#include "llm/chat/jinja.h"
#include "test_util.h"

#include <chrono>
#include <functional>
#include <string>

namespace wgc {
namespace {

using llm::jinja::Limits;
using llm::jinja::Template;
using llm::jinja::Value;

// Seconds any one bad input may take to be rejected (generous: sanitizers and a shared machine).
constexpr double kTimeBound = 5.0;

// The message of the wgc::Error that f throws; a test failure if it throws nothing, something
// else, or takes longer than kTimeBound.
std::string error_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  std::string what = "(no error)";
  try {
    f();
  } catch (const Error& e) {
    what = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a wgc::Error: " << e.what();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, kTimeBound) << what;
  return what;
}

std::string render(const std::string& src, const Limits& limits = {}) {
  Template t(src, "t", limits);
  return t.render(Value::object());
}

std::string template_error(const std::string& src, const Limits& limits = {}) {
  return error_of([&] { render(src, limits); });
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not in: " << text.substr(0, 400);
}
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(contains(text, part))

std::string repeat(const std::string& s, size_t n) {
  std::string r;
  for (size_t i = 0; i < n; ++i) r += s;
  return r;
}

// ---- Chat templates: the lexer ------------------------------------------------------------------

TEST(BadTemplate, UnclosedRawAndTags) {
  EXPECT_CONTAINS(template_error("{% raw %}{% endraw"), "t:1: unclosed tag");  // read past the end before
  EXPECT_CONTAINS(template_error("{% raw %}abc"), "unclosed raw block");
  EXPECT_CONTAINS(template_error("{% raw %}{%"), "unclosed raw block");
  EXPECT_CONTAINS(template_error("{% raw x %}{% endraw %}"), "unexpected 'x' in {% raw %}");
  EXPECT_CONTAINS(template_error("{% raw %}{% endraw x %}"), "unexpected 'x'");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endrawx %}{%- endraw -%}  y"), "{{ x }}{% endrawx %}y");
  EXPECT_CONTAINS(template_error("a\n{# comment"), "t:2: unclosed comment");
  EXPECT_CONTAINS(template_error("{{ 'abc"), "unterminated string");
  EXPECT_CONTAINS(template_error("{{ 'a\\"), "unterminated string");
  EXPECT_CONTAINS(template_error("{{ '\\x4"), "bad escape");
  EXPECT_CONTAINS(template_error("{{ '\\U00110000' }}"), "beyond U+10FFFF");
  EXPECT_CONTAINS(template_error("{{ 1 "), "unclosed tag");
  EXPECT_CONTAINS(template_error("{{ 1 -"), "unclosed tag");
  EXPECT_CONTAINS(template_error("{{ 1 @ 2 }}"), "unexpected character '@'");
}

// Every prefix of a template that uses every lexer state ends in output or a jinja::Error.
TEST(BadTemplate, EveryTruncationOfATemplate) {
  const std::string src =
      "{%- raw -%} {{ x }} {%+ endraw %}\n{# c #}{{ 'a\\n\\u00e9\\x41' ~ \"b\" }}{%- if [1, {'k': (2)}][0] -%}"
      "{% for a, b in [[1, 2]] if a %}{{ a|string }}{% else %}e{% endfor %}{% endif +%}"
      "{% set ns = namespace(x=1.5e3) %}{% macro m(p=1) %}{{ p }}{% endmacro %}{{ m(p=2) }}";
  render(src);  // the whole one renders
  for (size_t n = 0; n < src.size(); ++n) {
    std::string prefix = src.substr(0, n);
    try {
      render(prefix);
    } catch (const llm::jinja::Error&) {
    }
  }
}

// ---- Chat templates: nesting -------------------------------------------------------------------

TEST(BadTemplate, DeepNestingIsAnError) {
  const char* limit = "nesting deeper than 256 (the depth limit, jinja::kMaxDepth)";
  EXPECT_CONTAINS(template_error("{{ " + repeat("(", 10000) + "1" + repeat(")", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ " + repeat("[", 10000) + repeat("]", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ " + repeat("{'a': ", 10000) + "1" + repeat("}", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error(repeat("{% if 1 %}", 10000) + repeat("{% endif %}", 10000)), limit);
  EXPECT_CONTAINS(template_error(repeat("{% for x in [1] %}", 10000)), limit);
  EXPECT_CONTAINS(template_error("{{ " + repeat("not ", 10000) + "1 }}"), limit);
  EXPECT_CONTAINS(template_error("{{ " + repeat("- ", 10000) + "1 }}"), limit);
  // Left-associative chains build a tree as deep as nesting does.
  EXPECT_CONTAINS(template_error("{{ 1" + repeat(" + 1", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ x" + repeat(".a", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ x" + repeat("|string", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ x" + repeat(" and x", 10000) + " }}"), limit);
  EXPECT_CONTAINS(template_error("{{ x" + repeat("[0]", 10000) + " }}"), limit);
  // Within the limit, both parse and render.
  EXPECT_EQ(render("{{ " + repeat("(", 50) + "1" + repeat(")", 50) + " + 1" + repeat(" + 1", 50) + " }}"), "52");
  // A smaller limit is honoured.
  Limits small;
  small.depth = 8;
  EXPECT_CONTAINS(template_error("{{ [[[[[[[[[1]]]]]]]]] }}", small), "nesting deeper than 8");
}

TEST(BadTemplate, RecursionAtRenderTimeIsAnError) {
  const char* limit = "nesting deeper than 256";
  // A macro calling itself, and two calling each other through a namespace.
  EXPECT_CONTAINS(template_error("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}"), limit);
  EXPECT_CONTAINS(template_error("{% set ns = namespace() %}{% macro a() %}{{ ns.b() }}{% endmacro %}"
                                 "{% macro b() %}{{ a() }}{% endmacro %}{% set ns.b = b %}{{ a() }}"),
                  limit);
  // map('map', 'map', ...) recurses through the filter itself.
  EXPECT_CONTAINS(template_error("{% set ns = namespace(a=[]) %}{% for i in range(400) %}{% set ns.a = [ns.a] %}"
                                 "{% endfor %}{{ ns.a|map(" +
                                 repeat("'map', ", 300) + "'length')|list }}"),
                  limit);
  // Unsupported recursion constructs are syntax errors.
  EXPECT_CONTAINS(template_error("{% include 'self' %}"), "unknown or unsupported tag 'include'");
  EXPECT_CONTAINS(template_error("{% extends 'self' %}"), "unknown or unsupported tag 'extends'");
}

TEST(BadTemplate, ValuesNestedTooDeepOrInThemselves) {
  // A list or dict put inside itself would print forever and never be freed.
  EXPECT_CONTAINS(template_error("{% set a = [] %}{% do a.append(a) %}{{ a|tojson }}"),
                  "t:1: a list or dict cannot contain itself");
  EXPECT_CONTAINS(template_error("{% set a = [] %}{% set b = [a] %}{% do a.append(b) %}"), "cannot contain itself");
  EXPECT_CONTAINS(template_error("{% set ns = namespace() %}{% set ns.me = ns %}"), "cannot contain itself");
  EXPECT_CONTAINS(template_error("{% set d = {} %}{% do d.update(me=d) %}"), "cannot contain itself");
  EXPECT_CONTAINS(template_error("{% set d = {} %}{% do d.update({'me': [d]}) %}"), "cannot contain itself");
  // A chain 100,000 deep: counting it works, freeing it does not recurse, printing it is an error.
  const std::string chain =
      "{% set ns = namespace(a=[]) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}{% endfor %}";
  EXPECT_EQ(render(chain + "{{ ns.a|length }}"), "1");
  for (const char* use : {"{{ ns.a }}", "{{ ns.a|tojson }}", "{{ ns.a == ns.a }}", "{{ ns.a < ns.a }}"})
    EXPECT_CONTAINS(template_error(chain + use), "nesting deeper than 256") << use;
  // Values from JSON nested deeper than the limit.
  std::string deep = repeat("[", 300) + repeat("]", 300);
  EXPECT_CONTAINS(error_of([&] { Value::from_json(json::parse(deep)); }), "nesting deeper than 256");
}

// ---- Chat templates: arithmetic ----------------------------------------------------------------

TEST(BadTemplate, IntegerOverflowIsAnError) {
  const std::string min = "(-9223372036854775807 - 1)";
  EXPECT_CONTAINS(template_error("{{ " + min + " // -1 }}"), "t:1: integer overflow");  // was SIGFPE
  EXPECT_EQ(render("{{ " + min + " % -1 }} {{ " + min + " // 1 }} {{ 7 // -1 }} {{ -7 % -1 }}"),
            "0 -9223372036854775808 -7 0");
  for (const char* e : {"9223372036854775807 + 1", "(-9223372036854775807) - 2", "4611686018427387904 * 2", "2 ** 63",
                        "3 ** 40", "2 ** 1000000000000", "-(-9223372036854775807 - 1)",
                        "(-9223372036854775807 - 1)|abs", "[9223372036854775807, 1]|sum"})
    EXPECT_CONTAINS(template_error(std::string("{{ ") + e + " }}"), "integer overflow") << e;
  EXPECT_EQ(render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 1 ** 1000000000000 }} {{ (-1) ** 1000000000001 }} {{ 2 ** -1 }}"),
            "4611686018427387904 -9223372036854775808 1 -1 0.5");
  // Floats that do not fit an integer.
  EXPECT_CONTAINS(template_error("{{ 1e300|int }}"), "does not fit a 64-bit integer");
  EXPECT_CONTAINS(template_error("{{ (1e308 * 10)|int }}"), "the float inf does not fit");
  EXPECT_CONTAINS(template_error("{{ '1e300'|int }}"), "does not fit");
  EXPECT_CONTAINS(template_error("{{ range(1e300) }}"), "does not fit");
  // Literals out of range name the literal.
  EXPECT_CONTAINS(template_error("{{ 99999999999999999999 }}"), "integer literal 99999999999999999999 is out");
  EXPECT_CONTAINS(template_error("{{ 1e999 }}"), "float literal 1e999 is out");
  EXPECT_CONTAINS(template_error("{{ x.99999999999999999999 }}"), "integer literal");
  // Slices and ranges at the ends of the 64-bit range.
  EXPECT_EQ(render("{{ [1, 2, 3][::" + min + "] }} {{ [1, 2, 3][::9223372036854775807] }} {{ 'abc'[" + min +
                   ":9223372036854775807] }}"),
            "[3] [1] abc");
  EXPECT_EQ(render("{{ range(" + min + ", 9223372036854775807, 9223372036854775807)|list }}"),
            "[-9223372036854775808, -1, 9223372036854775806]");
  EXPECT_EQ(render("{{ 8 is divisibleby(-1) }} {{ " + min + " is divisibleby(-1) }}"), "True True");
}

// ---- Chat templates: resources -----------------------------------------------------------------

TEST(BadTemplate, ResourceLimits) {
  EXPECT_CONTAINS(template_error("{{ range(10**8)|length }}"),
                  "range of 100000000 items exceeds the limit of 100000 (jinja::kMaxRangeItems)");
  EXPECT_CONTAINS(template_error("{{ range(9223372036854775807)|length }}"), "kMaxRangeItems");
  EXPECT_EQ(render("{{ range(100000)|length }}"), "100000");
  const char* strings = "(jinja::kMaxStringBytes)";
  for (const char* e :
       {"'x' * 10**9", "'ab' * 10**18", "range(100000)|join('x' * 1000)", "('a' * 1000000)|replace('a', 'b' * 100)",
        "('a' * 1000000)|replace('', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')",
        "[[[1]]]|tojson(indent=1000000000)", "'x'|indent(10**12, true)", "('a\\n' * 1000000)|indent('x' * 100)",
        "'x'|center(10**12)", "'a'.center(10**12)",
        "('x' * 10000000) ~ ('x' * 10000000) ~ ('x' * 10000000) ~ ('x' * 10000000)", "('<' * 10000000)|escape"})
    EXPECT_CONTAINS(template_error(std::string("{{ ") + e + " }}"), strings) << e;
  // Doubling a string or a list in a loop.
  EXPECT_CONTAINS(template_error("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                                 "{% endfor %}"),
                  strings);
  EXPECT_CONTAINS(template_error("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
                                 "{% endfor %}"),
                  "exceed the limit of 1048576 (jinja::kMaxListItems)");
  // The output as a whole.
  EXPECT_CONTAINS(template_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"),
                  "the output: a string of");
  // Work: nested loops, exponential macros, quadratic built-ins. With the default budget (about a
  // second of work), then with a smaller one to keep this test fast.
  const char* steps = "steps (the work limit, jinja::kMaxSteps)";
  EXPECT_CONTAINS(template_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
                  steps);
  Limits work;
  work.steps = 1'000'000;
  EXPECT_CONTAINS(template_error("{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}"
                                 "{{ m(60) }}",
                                 work),
                  steps);
  EXPECT_CONTAINS(template_error("{% set l = range(100000)|list %}{% for i in range(100000) %}{{ l|unique|length }}"
                                 "{% endfor %}",
                                 work),
                  steps);
  EXPECT_CONTAINS(
      template_error("{% set s = 'x' * 1000000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}", work), steps);
  // Exponential values: a list of itself twice, 60 times over.
  EXPECT_CONTAINS(template_error("{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}"
                                 "{% endfor %}{{ ns.a }}",
                                 work),
                  "jinja::kMax");
  // A tighter budget stops sooner; the error names the template line.
  Limits small;
  small.steps = 1000;
  EXPECT_CONTAINS(template_error("\n{% for i in range(10000) %}{{ i }}{% endfor %}", small),
                  "t:2: the render took more than 1000 steps");
}

// A macro value that outlives its render cannot run (it would reach freed state).
TEST(BadTemplate, MacroCalledAfterItsRender) {
  Template t("{% macro m() %}x{% endmacro %}{% do out.append(m) %}", "t");
  Value ctx = Value::object();
  ctx.set("out", Value::array());
  t.render(ctx);
  Value m = ctx.get("out").items().at(0);
  ASSERT_TRUE(m.is_function());
  llm::jinja::Args args;
  args.where = "caller";
  EXPECT_CONTAINS(error_of([&] { m.function()(args); }), "called after the render that defined it ended");
}

}  // namespace
}  // namespace wgc
