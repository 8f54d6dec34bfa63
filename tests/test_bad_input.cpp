// Bad input of every format wgc reads: each case must fail with a clear wgc::Error naming the
// file, field or limit, never crash (the sanitizer build runs this file), hang or allocate
// without bound, and each within a time bound. Formats: chat templates (below), then GGUF,
// safetensors, config.json, tokenizer.json / tokenizer_config.json, .npy, PNG / JPEG; then issue
// 32's cases: values that would give wrong results (overlapping GGUF tensors, NaN weights, token
// ids past the vocabulary, an ONNX value with two writers) and sizes bounded before memory is
// spent (an elongated image, a growing tokenizer normalizer, an ONNX Expand).
#include "cnn/imagenet.h"
#include "cnn/model.h"
#include "cnn/onnx.h"
#include "io/image.h"
#include "io/npy.h"
#include "llm/chat/jinja.h"
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/formats/value_check.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/loaders.h"
#include "test_llm_util.h"

#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

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
  // A chain 100,000 deep: counting it works and freeing it does not recurse (it overflowed the
  // stack); printing, converting or comparing one deeper than the limit is an error.
  auto chain = [](int n) {
    return "{% set ns = namespace(a=[]) %}{% for i in range(" + std::to_string(n) +
           ") %}{% set ns.a = [ns.a] %}{% endfor %}";
  };
  EXPECT_EQ(render(chain(100000) + "{{ ns.a|length }}"), "1");
  for (const char* use : {"{{ ns.a }}", "{{ ns.a|tojson }}", "{{ ns.a == ns.a }}", "{{ ns.a < ns.a }}"})
    EXPECT_CONTAINS(template_error(chain(1000) + use), "nesting deeper than 256") << use;
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
  static_assert(Limits{}.depth == llm::jinja::kMaxDepth && Limits{}.steps == llm::jinja::kMaxSteps &&
                Limits{}.range_items == llm::jinja::kMaxRangeItems &&
                Limits{}.string_bytes == llm::jinja::kMaxStringBytes &&
                Limits{}.list_items == llm::jinja::kMaxListItems);
  EXPECT_CONTAINS(template_error("{{ range(10**8)|length }}"),
                  "range of 100000000 items exceeds the limit of 100000 (jinja::kMaxRangeItems)");
  EXPECT_CONTAINS(template_error("{{ range(9223372036854775807)|length }}"), "kMaxRangeItems");
  EXPECT_EQ(render("{{ range(100000)|length }}"), "100000");
  // Sizes checked before anything is built, with the default limits.
  const std::string strings = "limit of 33554432 (jinja::kMaxStringBytes)";
  for (const char* e : {"'x' * 10**9", "'ab' * 10**18", "[[[1]]]|tojson(indent=1000000000)", "'x'|indent(10**12, true)",
                        "'x'|center(10**12)", "'a'.center(10**12)"})
    EXPECT_CONTAINS(template_error(std::string("{{ ") + e + " }}"), strings) << e;
  // Sizes reached while building, with smaller limits (the mechanism is the same; the defaults
  // would take this test seconds under the sanitizers).
  Limits small;
  small.string_bytes = 1 << 20;
  small.list_items = 1 << 16;
  small.steps = 1'000'000;
  const std::string small_strings = "limit of 1048576 (jinja::kMaxStringBytes)";
  for (const char* e : {"range(10000)|join('x' * 1000)", "('a' * 100000)|replace('a', 'b' * 100)",
                        "('a' * 100000)|replace('', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')",
                        "('a\\n' * 100000)|indent('x' * 100)", "('x' * 400000) ~ ('x' * 400000) ~ ('x' * 400000)",
                        "('<' * 400000)|escape", "('x' * 1048576) + 'y'"})
    EXPECT_CONTAINS(template_error(std::string("{{ ") + e + " }}", small), small_strings) << e;
  // Doubling a string or a list in a loop.
  EXPECT_CONTAINS(template_error("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                                 "{% endfor %}",
                                 small),
                  small_strings);
  EXPECT_CONTAINS(template_error("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}"
                                 "{% endfor %}",
                                 small),
                  "exceed the limit of 65536 (jinja::kMaxListItems)");
  EXPECT_CONTAINS(template_error("{{ ('a ' * 100000).split() }}", small), "split: 65537 items exceed the limit");
  // The output as a whole.
  EXPECT_CONTAINS(template_error("{% for i in range(10000) %}{{ 'x' * 1000 }}{% endfor %}", small),
                  "the output: a string of");
  // Work: nested loops, exponential macros, quadratic built-ins, exponential values (200,000 steps:
  // a million took 6-7 s under the sanitizers on a loaded machine).
  Limits work = small;
  work.steps = 200'000;
  const char* steps = "t:1: the render took more than 200000 steps (the work limit, jinja::kMaxSteps)";
  for (const char* t : {
           "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
           "{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(60) }}",
           "{% set l = range(10000)|list %}{% for i in range(10000) %}{{ l|unique|length }}{% endfor %}",
           "{% set s = 'x' * 100000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}",
           "{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}"
           "{{ ns.a == ns.a }}",
       })
    EXPECT_CONTAINS(template_error(t, work), steps) << t;
  // The error names the line.
  Limits tiny;
  tiny.steps = 1000;
  EXPECT_CONTAINS(template_error("\n{% for i in range(10000) %}{{ i }}{% endfor %}", tiny),
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

// ---- Binary formats: truncations and corruptions -----------------------------------------------

using Bytes = std::vector<std::byte>;

Bytes to_bytes(std::string_view s) {
  Bytes b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

void put_u64(Bytes& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

// Every proper prefix of `whole` is rejected with a wgc::Error naming `name`; every single-byte
// corruption (each byte set to 0xFF, then to 0) gives a result or a wgc::Error, never a crash.
// `complete`: the length from which on a prefix holds all the data (PNG without its IEND chunk).
void truncations_and_corruptions(const Bytes& whole, const std::string& name,
                                 const std::function<void(std::span<const std::byte>)>& read, size_t complete = 0,
                                 std::initializer_list<std::byte> values = {std::byte{0xFF}, std::byte{0}}) {
  auto t0 = std::chrono::steady_clock::now();
  for (size_t n = 0; n < (complete ? complete : whole.size()); ++n) {
    std::string what = error_of([&] { read(std::span(whole).first(n)); });
    EXPECT_CONTAINS(what, name) << "prefix of " << n << " bytes";
  }
  for (size_t i = 0; i < whole.size(); ++i)
    for (std::byte v : values) {
      Bytes b = whole;
      b[i] = v;
      try {
        read(b);
      } catch (const Error& e) {
        EXPECT_CONTAINS(e.what(), name);
      }
    }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4 * kTimeBound);
}

Bytes small_gguf() {
  llm::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.context_length", 64);
  w.add_u32("llama.embedding_length", 8);
  w.add_u32("llama.block_count", 1);
  w.add_u32("llama.feed_forward_length", 16);
  w.add_u32("llama.attention.head_count", 2);
  w.add_f32_array("llama.some_floats", std::vector<float>{1, 2, 3});
  std::vector<std::string> tokens = {"a", "b", "ab"};
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_string("tokenizer.ggml.model", "gpt2");
  std::vector<float> data(8 * 3, 0.5f);
  w.add_tensor("token_embd.weight", llm::TensorType::F32, {8, 3}, std::as_bytes(std::span(data)));
  return w.to_bytes();
}

TEST(BadFile, GgufTruncatedOrCorrupted) {
  truncations_and_corruptions(small_gguf(), "bad.gguf", [](std::span<const std::byte> b) {
    llm::GgufFile f = llm::GgufFile::parse(b, "bad.gguf");
    for (const auto& kv : f.metadata()) (void)kv.value.describe();
    (void)llm::config_from_gguf(f);
  });
}

TEST(BadFile, GgufHugeCountsAndSizes) {
  Bytes b = small_gguf();
  auto parse = [](const Bytes& x) { return error_of([&] { llm::GgufFile::parse(x, "bad.gguf"); }); };
  Bytes t = b;
  put_u64(t, 8, uint64_t(1) << 62);  // the tensor count
  EXPECT_CONTAINS(parse(t), "tensor count 4611686018427387904 cannot fit");
  t = b;
  put_u64(t, 16, ~uint64_t(0));  // the metadata count
  EXPECT_CONTAINS(parse(t), "metadata count 18446744073709551615 cannot fit");
  t = b;
  put_u64(t, 24, uint64_t(1) << 40);  // the first key's length
  EXPECT_CONTAINS(parse(t), "string length 1099511627776 at offset 24 runs past the end");
  // A context length beyond 32 bits (it used to wrap through int).
  llm::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.context_length", 0x80000000u);
  for (const char* k : {"llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
                        "llama.attention.head_count", "llama.vocab_size"})
    w.add_u32(k, 8);
  Bytes ctx = w.to_bytes();
  EXPECT_CONTAINS(error_of([&] { llm::config_from_gguf(llm::GgufFile::parse(ctx, "big.gguf")); }),
                  "big.gguf: metadata key 'llama.context_length' is 2147483648, beyond the largest context");
}

Bytes small_safetensors() {
  std::vector<float> a(6, 1.f), b(2, 2.f);
  std::vector<llm::SafetensorsEntry> ts = {{"a", llm::TensorType::F32, {2, 3}, std::as_bytes(std::span(a))},
                                           {"b", llm::TensorType::F32, {2}, std::as_bytes(std::span(b))}};
  return llm::safetensors_bytes(ts, {{"format", "pt"}});
}

// A safetensors file with `header` (padded) and `data_bytes` bytes of data.
Bytes raw_safetensors(const std::string& header, size_t data_bytes) {
  std::string h = header;
  while (h.size() % 8) h += ' ';
  Bytes out(8 + h.size() + data_bytes);
  put_u64(out, 0, h.size());
  std::memcpy(out.data() + 8, h.data(), h.size());
  return out;
}

TEST(BadFile, SafetensorsTruncatedOrCorrupted) {
  truncations_and_corruptions(small_safetensors(), "bad.safetensors",
                              [](std::span<const std::byte> b) { llm::SafetensorsFile::parse(b, "bad.safetensors"); });
}

TEST(BadFile, SafetensorsOffsets) {
  auto err = [](const std::string& header, size_t data) {
    Bytes b = raw_safetensors(header, data);
    return error_of([&] { llm::SafetensorsFile::parse(b, "st"); });
  };
  // Overlapping tensors (the reference library rejects them; they were accepted).
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                      12),
                  "st: tensor 'b': data_offsets [4, 12] overlap tensor 'a' (which ends at 8)");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                      8),
                  "overlap tensor");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                  "leave 4 bytes unused before it (at the start of the data)");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8),
                  "4 bytes after the last tensor's data");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [18446744073709551615, 4]}})", 8),
                  "tensor 'a'");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}})", 8),
                  "overflows");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": "F32", "shape": "x", "data_offsets": [0, 4]}})", 4), "non-array \"shape\"");
  EXPECT_CONTAINS(err(R"({"a": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})", 4), "non-string \"dtype\"");
  EXPECT_CONTAINS(err(R"({"a": )" + repeat("[", 100) + repeat("]", 100) + "}", 0), "nesting deeper than 64");
  Bytes huge = raw_safetensors("{}", 0);
  put_u64(huge, 0, uint64_t(1) << 62);
  EXPECT_CONTAINS(error_of([&] { llm::SafetensorsFile::parse(huge, "st"); }), "runs past the end of the file");
}

// ---- JSON files: config.json, tokenizer.json, tokenizer_config.json ----------------------------

std::string config_error(const std::string& patch) {
  std::string base = R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1,
                         "num_attention_heads": 2, "intermediate_size": 16)";
  json::Value v = json::parse(base + (patch.empty() ? "" : ", " + patch) + "}");
  return error_of([&] { llm::config_from_hf(v, "config.json"); });
}

TEST(BadFile, ConfigJson) {
  EXPECT_EQ(config_error(""), "(no error)");
  // A negative context length silently became 4096; one of 2^31 wrapped through int.
  EXPECT_CONTAINS(config_error(R"("max_position_embeddings": -5)"),
                  "config.json: \"max_position_embeddings\" is -5, expected 0..2147483647");
  EXPECT_CONTAINS(config_error(R"("max_position_embeddings": 2147483648)"), "is 2147483648, expected 0..");
  EXPECT_CONTAINS(config_error(R"("max_position_embeddings": 1e300)"), "\"max_position_embeddings\" is 1e+300");
  EXPECT_CONTAINS(config_error(R"("bos_token_id": 1099511627776)"),
                  "\"bos_token_id\" is 1099511627776, not a token id");
  EXPECT_CONTAINS(config_error(R"("vocab_size": 3000000000)"), "vocab_size is 3000000000, expected 0..");
  EXPECT_CONTAINS(config_error(R"("hidden_size": "8")"), "\"hidden_size\" is \"8\", expected an integer");
  EXPECT_CONTAINS(config_error(R"("num_attention_heads": 0)"), "the head count is 0");
  EXPECT_CONTAINS(config_error(R"("num_key_value_heads": 3)"), "is not a multiple of 3 KV heads");
  EXPECT_CONTAINS(config_error(R"("rope_scaling": [1])"), "rope scaling is [1], expected an object");
  EXPECT_CONTAINS(config_error(R"("rope_scaling": {"rope_type": "llama3", "factor": 8})"),
                  "missing \"original_max_position_embeddings\"");
  EXPECT_CONTAINS(config_error(R"("sliding_window": -1, "model_type": "mistral")"), "sliding_window is -1");
  EXPECT_CONTAINS(error_of([] { json::parse(repeat("[", 100000), "deep.json"); }), "deep.json");
}

std::string tokenizer_error(const std::string& model, const std::string& rest = "", const std::string& config = "") {
  return error_of([&] {
    json::Value doc = json::parse(R"({"model": )" + model + rest + "}", "tokenizer.json");
    json::Value cfg = config.empty() ? json::Value() : json::parse(config);
    llm::Tokenizer(llm::spec_from_hf_json(doc, cfg, "tokenizer.json"));
  });
}

TEST(BadFile, TokenizerJson) {
  const std::string ok_model = R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  EXPECT_EQ(tokenizer_error(ok_model), "(no error)");
  // One id of 2^31-1 sized a table of 2^31 strings.
  EXPECT_CONTAINS(
      tokenizer_error(R"({"vocab": {"a": 2147483647}, "merges": []})"),
      "tokenizer.json: model.vocab.a: id 2147483647 exceeds the vocabulary limit of 16777216 (kMaxVocabSize)");
  EXPECT_CONTAINS(tokenizer_error(R"({"vocab": {"a": 0, "b": 5000}, "merges": []})"),
                  "model.vocab.b: id 5000 is far past the 2 entries");
  EXPECT_CONTAINS(tokenizer_error(R"({"vocab": {"a": -1}, "merges": []})"), "model.vocab.a: id -1 out of range");
  EXPECT_CONTAINS(tokenizer_error(R"({"vocab": {"a": 1e300}, "merges": []})"), "model.vocab.a");
  EXPECT_CONTAINS(tokenizer_error(R"({"vocab": [], "merges": []})"), "model.vocab: expected an object");
  EXPECT_CONTAINS(tokenizer_error(R"({"vocab": {"a": 0}, "merges": [7]})"), "model.merges[0]");
  EXPECT_CONTAINS(tokenizer_error(ok_model, R"(, "added_tokens": [{"id": -3, "content": "x"}])"),
                  "added_tokens[0].id: id -3 out of range");
  EXPECT_CONTAINS(tokenizer_error(ok_model, R"(, "added_tokens": [{"id": 9, "content": ""}])"),
                  "added_tokens[0].content: empty");
  EXPECT_CONTAINS(tokenizer_error(ok_model, R"(, "pre_tokenizer": {"type": "Nope"})"), "pre_tokenizer.type");
  EXPECT_CONTAINS(tokenizer_error(ok_model, R"(, "post_processor": {"type": "TemplateProcessing",
                                     "single": [{"SpecialToken": {"id": "x"}}],
                                     "special_tokens": {"x": {"ids": [4294967296]}}})"),
                  "post_processor.single[0]: id 4294967296 out of range");
  EXPECT_CONTAINS(tokenizer_error(ok_model, R"(, "post_processor": {"type": "TemplateProcessing",
                                     "single": [{"SpecialToken": {"id": "x"}}], "special_tokens": {"x": {"ids": [7]}}})"),
                  "post-processor id 7 out of range");
  // Nested sequences: as deep as the JSON reader allows is fine, deeper is its error.
  std::string nested = R"({"type": "Sequence", "pretokenizers": [)";
  EXPECT_EQ(tokenizer_error(ok_model, ", \"pre_tokenizer\": " + repeat(nested, 200) + repeat("]}", 200)), "(no error)");
  EXPECT_CONTAINS(tokenizer_error(ok_model, ", \"pre_tokenizer\": " + repeat(nested, 300) + repeat("]}", 300)),
                  "tokenizer.json: JSON error at line 1");
  // (the JSON reader: nesting deeper than 512)
  EXPECT_CONTAINS(tokenizer_error(ok_model, "", R"({"chat_template": 5})"),
                  "tokenizer.json (tokenizer_config.json): chat_template: expected a string");
  EXPECT_CONTAINS(tokenizer_error(ok_model, "", R"({"bos_token": [1]})"), "bos_token: expected a string");
}

// ---- .npy and images ---------------------------------------------------------------------------

TEST(BadFile, NpyTruncatedOrCorrupted) {
  std::string h = npy::header("<f4", std::vector<int64_t>{2, 3});
  Bytes whole = to_bytes(h);
  whole.resize(whole.size() + 24);
  truncations_and_corruptions(whole, "x.npy", [](std::span<const std::byte> b) { (void)npy::parse(b, "x.npy"); });
  Bytes huge = to_bytes(npy::header("<f4", std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_CONTAINS(error_of([&] { npy::parse(huge, "x.npy"); }), "x.npy: array too large");
}

// Writes `b` to a scratch file and reads it as an image.
void read_image_bytes(std::span<const std::byte> b, const std::string& name) {
  std::filesystem::path p = test::temp_dir() / name;
  {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  }
  (void)read_image(p);
}

Bytes file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return to_bytes(s);
}

Image test_image() {
  Image img(13, 7, 3);
  for (size_t i = 0; i < img.data.size(); ++i) img.data[i] = uint8_t(i * 37);
  return img;
}

TEST(BadFile, PngTruncatedOrHuge) {
  if (!png_supported()) GTEST_SKIP() << "no libpng in this build";
  std::filesystem::path p = test::temp_dir() / "ok.png";
  write_png(p, test_image());
  Bytes whole = file_bytes(p);
  truncations_and_corruptions(whole, "bad.png", [](std::span<const std::byte> b) { read_image_bytes(b, "bad.png"); },
                              whole.size() - 12, {std::byte{0xFF}});
  // A header claiming 32768 x 32768 pixels (with a valid CRC) in a file of a few hundred bytes.
  Bytes big = whole;
  const uint8_t dims[8] = {0, 0, 0x80, 0, 0, 0, 0x80, 0};
  std::memcpy(big.data() + 16, dims, 8);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 12; i < 29; ++i) {  // "IHDR" and its 13 bytes
    crc ^= uint32_t(big[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
  }
  crc = ~crc;
  for (int k = 0; k < 4; ++k) big[29 + size_t(k)] = std::byte(uint8_t(crc >> (24 - 8 * k)));
  EXPECT_CONTAINS(error_of([&] { read_image_bytes(big, "big.png"); }),
                  "PNG size 32768x32768 cannot be stored in a file this small");
}

TEST(BadFile, JpegTruncatedOrHuge) {
  if (!jpeg_supported()) GTEST_SKIP() << "no libjpeg in this build";
  std::filesystem::path p = test::temp_dir() / "ok.jpg";
  write_jpeg(p, test_image());
  Bytes whole = file_bytes(p);
  truncations_and_corruptions(whole, "bad.jpg", [](std::span<const std::byte> b) { read_image_bytes(b, "bad.jpg"); }, 0,
                              {std::byte{0xFF}});
  // The frame header (SOF0: FF C0, length, precision, height, width) claiming 32768 x 32768.
  Bytes big = whole;
  for (size_t i = 0; i + 8 < big.size(); ++i)
    if (big[i] == std::byte{0xFF} && big[i + 1] == std::byte{0xC0}) {
      const uint8_t dims[4] = {0x80, 0, 0x80, 0};
      std::memcpy(big.data() + i + 5, dims, 4);
      break;
    }
  EXPECT_CONTAINS(error_of([&] { read_image_bytes(big, "big.jpg"); }), "size 32768x32768 is out of range for a file");
  // The same as a progressive frame (SOF2: FF C2), 30000 x 30000. For a progressive JPEG,
  // jpeg_start_decompress allocates and clears coefficients for the whole image (fuzz_image found a
  // 265-byte file that took 10 s and 800 MB there), so the size must be refused from the header,
  // before the scans are looked at (these scan parameters are not valid for a progressive frame).
  for (size_t i = 0; i + 8 < big.size(); ++i)
    if (big[i] == std::byte{0xFF} && big[i + 1] == std::byte{0xC0}) {
      const uint8_t dims[4] = {0x75, 0x30, 0x75, 0x30};
      big[i + 1] = std::byte{0xC2};
      std::memcpy(big.data() + i + 5, dims, 4);
      break;
    }
  EXPECT_CONTAINS(error_of([&] { read_image_bytes(big, "big_progressive.jpg"); }),
                  "size 30000x30000 is out of range for a file");
}

// ---- The engine: context length against the device and the host -------------------------------

TEST(BadFile, ContextLengthBeyondTheDevice) {
  std::filesystem::path model = test::default_model();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "no " << model;
  llm::ModelFile f = llm::open_model(model);
  for (int ctx : {1'000'000'000, 2'000'000'000}) {
    llm::EngineOptions opt;
    opt.max_ctx = ctx;
    opt.progress = false;
    std::string what = error_of([&] { llm::LlamaModel m(test::ctx(), f, opt); });  // was std::bad_alloc
    EXPECT_CONTAINS(what, "a context of " + std::to_string(ctx) + " positions (max_ctx)");
  }
  llm::EngineOptions neg;
  neg.max_ctx = -5;
  EXPECT_CONTAINS(error_of([&] { llm::LlamaModel m(test::ctx(), f, neg); }), "max_ctx is -5");
}

// ---- Issue 32: wrong results accepted silently ---------------------------------------------------

// GGUF tensor infos at the byte where `name`'s type (u32) is, for 2-D tensors.
size_t gguf_type_at(const Bytes& b, const std::string& name) {
  std::string_view all(reinterpret_cast<const char*>(b.data()), b.size());
  size_t at = all.find(name);
  EXPECT_NE(at, std::string_view::npos);
  return at + name.size() + 4 + 2 * 8;  // after the name: dimension count, two dimensions
}

TEST(BadFile, GgufTensorsThatShareBytes) {
  std::vector<uint16_t> half(8 * 4, 0x3c00);
  llm::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_tensor("first.weight", llm::TensorType::F16, {8, 4}, std::as_bytes(std::span(half)));
  w.add_tensor("second.weight", llm::TensorType::F16, {8, 4}, std::as_bytes(std::span(half)));
  Bytes ok = w.to_bytes();
  auto parse = [](const Bytes& x) { return error_of([&] { llm::GgufFile::parse(x, "t.gguf"); }); };
  EXPECT_EQ(parse(ok), "(no error)");
  // F16 -> F32 in the first tensor's type: twice the bytes, read into the second tensor's data.
  Bytes t = ok;
  uint32_t f32 = 0;
  std::memcpy(t.data() + gguf_type_at(t, "first.weight"), &f32, 4);
  EXPECT_CONTAINS(parse(t), "t.gguf: tensor 'first.weight' (F32, data [0, +128)) overlaps tensor 'second.weight'");
  // Two tensors at one offset.
  t = ok;
  put_u64(t, gguf_type_at(t, "second.weight") + 4, 0);
  EXPECT_CONTAINS(parse(t), "overlaps tensor");
}

TEST(BadFile, TokenIdsPastTheVocabulary) {
  EXPECT_CONTAINS(config_error(R"("bos_token_id": 1000000)"),
                  "config.json: bos_token_id 1000000 is not a token id (the vocabulary has 16 tokens)");
  EXPECT_CONTAINS(config_error(R"("eos_token_id": [2, 16])"), "eos_token_id 16 is not a token id");
  EXPECT_EQ(config_error(R"("bos_token_id": 15, "eos_token_id": 0)"), "(no error)");
}

TEST(BadFile, NanOrInfinityInWeights) {
  auto tensor = [](llm::TensorType type, std::vector<int64_t> shape, const Bytes& data) {
    llm::ModelTensor t;
    t.type = type;
    t.shape = std::move(shape);
    t.data = data;
    return llm::first_non_finite(t);
  };
  std::vector<float> f(5, 1.f);
  EXPECT_EQ(tensor(llm::TensorType::F32, {5}, to_bytes({reinterpret_cast<char*>(f.data()), 20})), std::nullopt);
  f[3] = std::nanf("");
  EXPECT_EQ(tensor(llm::TensorType::F32, {5}, to_bytes({reinterpret_cast<char*>(f.data()), 20})), 3);
  std::vector<uint16_t> h = {0x3c00, 0x7c00, 0x3c00};  // 1, +inf, 1 (F16); 0x7c00 is 1.3e36 in BF16
  Bytes hb = to_bytes({reinterpret_cast<char*>(h.data()), 6});
  EXPECT_EQ(tensor(llm::TensorType::F16, {3}, hb), 1);
  EXPECT_EQ(tensor(llm::TensorType::BF16, {3}, hb), std::nullopt);
  h[2] = 0xff80;  // -inf in BF16
  EXPECT_EQ(tensor(llm::TensorType::BF16, {3}, to_bytes({reinterpret_cast<char*>(h.data()), 6})), 2);
  // Q8_0: two blocks of 32; the second's scale a NaN makes its 32 values NaN.
  Bytes q(2 * 34, std::byte{1});
  const uint16_t one = 0x3c00, nan = 0x7e00;
  std::memcpy(q.data(), &one, 2);
  std::memcpy(q.data() + 34, &one, 2);
  EXPECT_EQ(tensor(llm::TensorType::Q8_0, {64}, q), std::nullopt);
  std::memcpy(q.data() + 34, &nan, 2);
  EXPECT_EQ(tensor(llm::TensorType::Q8_0, {64}, q), 32);

  // The built-in model with a NaN in its final norm, then an infinite scale in its embedding: refused.
  std::filesystem::path model = test::default_model();
  WGC_REQUIRE_FILE(model);
  // The file with `value` written `at` bytes into the data of a tensor; open_model's error.
  auto patched = [&](const std::string& tensor_name, size_t at, std::span<const std::byte> value) {
    Bytes b = file_bytes(model);
    llm::GgufFile g = llm::GgufFile::parse(b, "m");
    const llm::GgufTensorInfo* t = g.find_tensor(tensor_name);
    EXPECT_NE(t, nullptr);
    std::memcpy(b.data() + size_t(g.data_offset() + t->offset) + at, value.data(), value.size());
    std::filesystem::path p = test::temp_dir() / ("nan-" + tensor_name + ".gguf");
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return error_of([&] { llm::open_model(p, {false, false}); });
  };
  const float nanf = std::nanf("");
  EXPECT_CONTAINS(patched("output_norm.weight", 4 * 42, std::as_bytes(std::span(&nanf, 1))),
                  "tensor 'output_norm.weight' (F32) holds a NaN or an infinity at element 42");
  const uint16_t inf = 0x7c00;  // the scale of block 5 + 8 * 10 (row 10 of 256 columns, from column 160)
  EXPECT_CONTAINS(patched("token_embd.weight", 34 * (5 + 8 * 10), std::as_bytes(std::span(&inf, 1))),
                  "tensor 'token_embd.weight' (Q8_0) holds a NaN or an infinity at element 2720 (row 10, column 160)");
}

// An ONNX model (protobuf) where two nodes write the value "y".
std::string onnx_two_writers() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  const std::string x = "x", y = "y";  // (protobuf's const char* setters trip GCC's -Wrestrict)
  for (const std::string op : {"Relu", "Sigmoid"}) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->add_input(x);
    n->add_output(y);
  }
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(1);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  declare(g->add_input(), x);
  declare(g->add_output(), y);
  return m.SerializeAsString();
}

TEST(BadFile, OnnxValueWithTwoWriters) {
  std::string bytes = onnx_two_writers();
  EXPECT_CONTAINS(error_of([&] { cnn::parse_onnx(std::as_bytes(std::span(bytes)), "two.onnx"); }),
                  "two.onnx: node '-> y' (Sigmoid, opset 13): output 'y' is already a graph input, an initializer or "
                  "another node's output");
}

TEST(BadFile, NpyHeaderThatIsNotADict) {
  std::string h = npy::header("<f4", std::vector<int64_t>{2});
  size_t brace = h.rfind('}');
  ASSERT_NE(brace, std::string::npos);
  h[brace] = ' ';
  Bytes b = to_bytes(h);
  b.resize(b.size() + 8);
  EXPECT_CONTAINS(error_of([&] { npy::parse(b, "x.npy"); }), "x.npy: the header is not a dict");
}

// ---- Issue 32: sizes that an input declares, bounded before memory is spent --------------------

TEST(BadFile, ElongatedImageForClassification) {
  // 999,999 x 1 pixels (a 1 KB PNG): resized to a shorter side of 256 it would be 256M x 256.
  Image img(999999, 1, 3);
  std::string what = error_of([&] { cnn::imagenet_input(img); });
  EXPECT_CONTAINS(what, "a 999999x1 image resized to a shorter side of 256 would be 255999744x256");
  EXPECT_CONTAINS(what, "more than the limit of 1073741824 pixels");
  EXPECT_CONTAINS(error_of([&] { cnn::resize_bilinear(Image(4, 4, 1), 1 << 20, 1 << 20); }),
                  "passes the limit of 1073741824 pixels");
}

TEST(BadFile, TokenizerNormalizerThatGrowsTheText) {
  const std::string model = R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []})";
  json::Value doc = json::parse(R"({"model": )" + model + R"(, "normalizer": {"type": "Replace",
      "pattern": {"String": "a"}, "content": ")" +
                                    repeat("b", 100000) + R"("}})",
                                "tokenizer.json");
  llm::Tokenizer tok(llm::spec_from_hf_json(doc, json::Value(), "tokenizer.json"));
  // 2 KB of "a" became 200 MB (4.4 GB with 2 KB of input and a longer replacement): refused.
  EXPECT_CONTAINS(error_of([&] { tok.encode(repeat("a", 2000), false); }),
                  "tokenizer.json: the normalizer's Replace makes a text of 2000 bytes longer than 8064 bytes");
  EXPECT_EQ(tok.encode("", false).size(), 0u);
}

TEST(BadFile, OnnxExpandPastTheTensorLimit) {
  cnn::Graph g;
  g.source = "expand.onnx";
  g.opset = 13;
  g.inputs.push_back({"x", 1, true, {1}});
  g.outputs.push_back({"y", 1, false, {}});
  g.constants["shape"] =
      std::make_shared<cnn::HostTensor>(cnn::HostTensor::ints({3}, {int64_t(2048), int64_t(1024), int64_t(1024)}));
  cnn::Node n;
  n.name = "big";
  n.op = "Expand";
  n.inputs = {"x", "shape"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  // 2^31 elements (8 GiB): refused while the plan is made, on the CPU path and the GPU path alike.
  for (bool gpu : {false, true}) {
    cnn::Model m(gpu ? std::optional<Context>(test::ctx()) : std::nullopt, g, {gpu ? Device::Gpu : Device::Cpu});
    EXPECT_CONTAINS(error_of([&] { m.run(cnn::HostTensor({1}, {1.f})); }),
                    "expand.onnx: node 'big' (Expand, opset 13): an output of [2048, 1024, 1024] has more than "
                    "536870912 elements (the limit of one tensor)");
  }
}

// ---- Flags: what parses but is out of range (the rest of the flags: test_cli, test_sampler) ------

TEST(BadFlags, BlurSigmaThatParsesButOverflowsTheRadius) {
  // 1e30 is a float, but 3 * sigma converted to an integer radius was undefined behaviour.
  auto r = test::run_cli("blur --sigma 1e30 /nonexistent-in.png " +
                         test::quote((test::temp_dir() / "blur-out.png").string()));
  EXPECT_EQ(r.rc, 1) << r.err;  // an error, not a signal
  EXPECT_CONTAINS(r.err, "sigma 1e+30 gives radius 3e+30, above the limit");
}

}  // namespace
}  // namespace wgc
