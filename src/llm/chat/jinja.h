// A small Jinja2 engine for chat templates (the subset Hugging Face chat templates use), rendering
// as transformers does: trim_blocks and lstrip_blocks on, loop controls, Python semantics for
// values, strings, slicing and truthiness.
//
//   jinja::Template t(source, "tokenizer_config.json chat_template");
//   jinja::Value ctx = jinja::Value::object();
//   ctx.set("messages", jinja::Value::from_json(messages_json));
//   std::string text = t.render(ctx);
//
// Supported: {{ }}, {% %}, {# #}, {% raw %}, whitespace control (-/+); if/elif/else, for (with
// else, an `if` filter, tuple unpacking, loop.index/index0/revindex/revindex0/first/last/length/
// previtem/nextitem/cycle), break/continue, set (incl. ns.attr, tuples and block set), macro
// (positional/keyword args, defaults), filter blocks, generation blocks (rendered), do;
// literals, lists, dicts, tuples (as lists), attribute/subscript, slicing, calls,
// `~ + - * / // % **`, "%s" % x, chained comparisons, `in`/`not in`, `and or not`,
// `x if c else y`. Tests: defined, undefined, none, string, number, integer, float, boolean,
// mapping, iterable, sequence, callable, true, false, odd, even, divisibleby, eq/equalto/sameas,
// ne, lt, gt, le, ge, in, lower, upper. Filters: trim, length/count, tojson (indent, sort_keys),
// upper, lower, title, capitalize, first, last, join, default/d, string, int, float, list, items,
// dictsort, reverse, replace, safe, escape/e, select, reject, selectattr, rejectattr, map, unique,
// sort, sum, min, max, round, abs, indent, wordcount, center, batch. Globals: raise_exception,
// strftime_now, namespace, range, dict. Methods: str strip/lstrip/rstrip/split/rsplit/splitlines/
// startswith/endswith/upper/lower/title/capitalize/replace/find/rfind/index/count/join/center/
// is*; dict items/keys/values/get/update; list append/pop/index/count.
// Not supported: include/import/extends, call blocks, recursive loops. upper/lower/title change
// ASCII letters only; tuples print as lists; integers are 64-bit (overflow is an error, where
// Python would grow the integer).
//
// Templates ship with model files and are untrusted: every depth, size and amount of work is
// bounded (Limits, below), and a template that would exceed a bound fails with a jinja::Error
// naming the limit, instead of exhausting the stack, the memory or the time.
#pragma once

#include "util/error.h"
#include "util/json.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wgc::llm::jinja {

// Template syntax and render errors: "name:line: message". raise_exception(msg) gives
// "name: raise_exception: msg".
struct Error : wgc::Error {
  using wgc::Error::Error;
};

// The resource bounds of one template. Each default is a named constant; raise one by passing
// Limits to Template (or by changing the constant).
// Nesting: parenthesized/list/dict expressions and blocks when parsing; blocks, expressions and
// macro calls together when rendering; lists and dicts when printing or comparing values.
inline constexpr size_t kMaxDepth = 256;
// Items of one range() (what Hugging Face's sandboxed Jinja allows: MAX_RANGE).
inline constexpr int64_t kMaxRangeItems = 100'000;
// Bytes of any one string a render builds, the output included (repetition, join, replace,
// indent, center, tojson, concatenation).
inline constexpr size_t kMaxStringBytes = size_t(32) << 20;
// Items of any one list or dict a render builds.
inline constexpr size_t kMaxListItems = size_t(1) << 20;
// Work of one render, in steps: one per expression or statement evaluated, per item visited and
// per 64 bytes of text built or scanned. A real chat template takes thousands to a few hundred
// thousand; the cap stops runaway loops and exponential macros within seconds.
inline constexpr uint64_t kMaxSteps = 10'000'000;

struct Limits {
  size_t depth = kMaxDepth;
  int64_t range_items = kMaxRangeItems;
  size_t string_bytes = kMaxStringBytes;
  size_t list_items = kMaxListItems;
  uint64_t steps = kMaxSteps;
};

// An error of a value operation (an integer overflow, nesting beyond kMaxDepth); a render adds
// the template's name and line to it.
struct ValueError : Error {
  using Error::Error;
};

class Value;
struct Args;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // insertion order, like Python dicts
using Function = std::function<Value(Args&)>;

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() = default;  // undefined
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
  // Frees nested lists and dicts iteratively: a value nested a million deep does not recurse.
  ~Value();
  Value(std::nullptr_t) : kind_(Kind::None) {}                                                          // NOLINT
  Value(bool b) : kind_(Kind::Bool), i_(b) {}                                                           // NOLINT
  Value(int v) : kind_(Kind::Int), i_(v) {}                                                             // NOLINT
  Value(int64_t v) : kind_(Kind::Int), i_(v) {}                                                         // NOLINT
  Value(double v) : kind_(Kind::Float), f_(v) {}                                                        // NOLINT
  Value(std::string s) : kind_(Kind::String), s_(std::make_shared<std::string>(std::move(s))) {}        // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}                                                  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                                                       // NOLINT
  Value(Array a) : kind_(Kind::List), a_(std::make_shared<Array>(std::move(a))) { note_elements(); }    // NOLINT
  Value(Object o) : kind_(Kind::Dict), o_(std::make_shared<Object>(std::move(o))) { note_elements(); }  // NOLINT
  Value(Function f) : kind_(Kind::Callable), fn_(std::make_shared<Function>(std::move(f))) {}           // NOLINT
  static Value array() { return Value(Array{}); }
  static Value object() { return Value(Object{}); }
  static Value from_json(const json::Value& j);
  json::Value to_json() const;

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::List; }
  bool is_object() const { return kind_ == Kind::Dict; }
  bool is_function() const { return kind_ == Kind::Callable; }

  bool truthy() const;
  // Floats truncate toward zero; one outside the 64-bit range (or NaN) is a ValueError.
  int64_t as_int() const { return kind_ == Kind::Float ? float_to_int(f_) : i_; }
  double as_double() const { return kind_ == Kind::Float ? f_ : double(i_); }
  const std::string& str() const { return *s_; }  // strings only
  Array& items() const { return *a_; }            // arrays only (shared: mutations are visible)
  Object& members() const { return *o_; }         // objects only
  const Function& function() const { return *fn_; }

  // Object access: nullptr / undefined when absent.
  const Value* find(std::string_view key) const;
  Value get(std::string_view key) const;
  Value& set(std::string key, Value v);  // objects only; replaces or appends
  void push_back(Value v);               // arrays only

  // str(): how {{ }} prints it (Python str(): True, None, 1.0, ['a', 1], {'k': 'v'}).
  std::string to_string() const;
  // repr(): strings quoted ('a'), used inside containers.
  std::string repr() const;
  // json.dumps(): what the tojson filter gives (indent < 0: one line, ", " and ": " separators).
  std::string to_json_text(int indent = -1, bool sort_keys = false) const;

  friend bool operator==(const Value& a, const Value& b);

  // The list or dict behind this value (nullptr for others): identity, for cycle checks.
  const void* container() const { return a_ ? static_cast<const void*>(a_.get()) : o_.get(); }

 private:
  static int64_t float_to_int(double d);
  void note_elements() const;  // tells the active render which containers are now elements
  void release_containers() noexcept;

  Kind kind_ = Kind::Undefined;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<std::string> s_;
  std::shared_ptr<Array> a_;
  std::shared_ptr<Object> o_;
  std::shared_ptr<Function> fn_;
};

// Arguments of a call: positional, then keyword.
struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  std::string where;  // "name:line" for messages
  // The i-th positional, or the keyword `name`, or `def`.
  Value get(size_t i, std::string_view name, Value def = Value()) const;
};

class Template {
 public:
  // Parses `source`; syntax errors throw jinja::Error naming `name` and the line.
  explicit Template(std::string_view source, std::string name = "template", Limits limits = {});
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with `context` (an object) as the global variables, plus the globals range, dict,
  // namespace, raise_exception and strftime_now.
  std::string render(const Value& context) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wgc::llm::jinja
