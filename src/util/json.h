// A small JSON DOM (RFC 8259): parse, navigate, build, write. Strings are UTF-8 (\uXXXX escapes
// incl. surrogate pairs are decoded; a lone surrogate is an error); objects keep their members
// in document order (duplicate keys: the last one wins in find()). Numbers keep an exact int64
// when the literal is an integer that fits, and a double always.
//
//   json::Value doc = json::parse(text, "tokenizer.json");
//   const json::Value* vocab = doc.find("model") ? doc["model"].find("vocab") : nullptr;
//   for (auto& [key, v] : vocab->members()) ...
//
// Parse errors throw json::ParseError (a wgc::Error) naming the source, line, column and offset.
#pragma once

#include "util/error.h"

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace wgc::json {

struct ParseError : Error {
  using Error::Error;
};

enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };
std::string_view to_string(Type t);

class Value;
using Array = std::vector<Value>;
using Member = std::pair<std::string, Value>;
using Object = std::vector<Member>;

class Value {
 public:
  struct Number {
    double d = 0;
    int64_t i = 0;
    bool is_int = false;  // the literal was an integer that fits in int64 (then d == double(i))
    friend bool operator==(const Number& a, const Number& b) { return a.is_int && b.is_int ? a.i == b.i : a.d == b.d; }
  };

  Value() = default;                                              // null
  Value(std::nullptr_t) {}                                        // NOLINT
  Value(bool b) : v_(b) {}                                        // NOLINT
  Value(int v) : v_(Number{double(v), v, true}) {}                // NOLINT
  Value(int64_t v) : v_(Number{double(v), v, true}) {}            // NOLINT
  Value(uint32_t v) : v_(Number{double(v), int64_t(v), true}) {}  // NOLINT
  Value(uint64_t v);                                              // NOLINT: exact int when it fits in int64
  Value(double v) : v_(Number{v, 0, false}) {}                    // NOLINT
  Value(std::string s) : v_(std::move(s)) {}                      // NOLINT
  Value(std::string_view s) : v_(std::string(s)) {}               // NOLINT
  Value(const char* s) : v_(std::string(s)) {}                    // NOLINT
  Value(Array a) : v_(std::move(a)) {}                            // NOLINT
  Value(Object o) : v_(std::move(o)) {}                           // NOLINT
  static Value array() { return Value(Array{}); }
  static Value object() { return Value(Object{}); }

  Type type() const { return Type(v_.index()); }
  bool is_null() const { return type() == Type::Null; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_number() const { return type() == Type::Number; }
  bool is_int() const { return is_number() && std::get<Number>(v_).is_int; }
  bool is_string() const { return type() == Type::String; }
  bool is_array() const { return type() == Type::Array; }
  bool is_object() const { return type() == Type::Object; }

  // Accessors: throw wgc::Error ("expected a string, got a number") on the wrong type.
  bool as_bool() const;
  double as_double() const;
  int64_t as_int() const;  // an integer literal, or a double with an exact integer value in range
  const std::string& as_string() const;
  const Array& items() const;
  Array& items();
  const Object& members() const;
  Object& members();
  // The number of items (array) or members (object); 0 for scalars.
  size_t size() const;

  // Object lookup (linear; for big objects, iterate members() once). nullptr when absent or when
  // this is not an object.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  // Throwing lookups: operator[] on an object with a missing key, or an index out of range.
  const Value& operator[](std::string_view key) const;
  const Value& operator[](size_t i) const;
  const Value& operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  const Value& operator[](int i) const { return (*this)[size_t(i)]; }

  // Convenience with defaults: the value of `key` if present and of the right type, else `def`.
  std::string get_string(std::string_view key, std::string_view def = {}) const;
  double get_double(std::string_view key, double def = 0) const;
  int64_t get_int(std::string_view key, int64_t def = 0) const;
  bool get_bool(std::string_view key, bool def = false) const;

  // Building.
  Value& set(std::string key, Value v);  // object: replaces an existing key or appends
  Value& push_back(Value v);             // array

  // Compact JSON (indent < 0) or pretty-printed with `indent` spaces.
  std::string dump(int indent = -1) const;

  bool operator==(const Value& o) const = default;

 private:
  std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> v_{nullptr};
};

struct ParseOptions {
  size_t max_depth = 512;  // nesting deeper than this is an error (no stack overflow)
};

// Parses a whole document (surrounding whitespace allowed, nothing else). `source` names the text
// in error messages (a file name).
Value parse(std::string_view text, std::string_view source = "JSON", ParseOptions opt = {});
// Reads and parses a file; errors name the file.
Value parse_file(const std::filesystem::path& path, ParseOptions opt = {});

// Appends `s` as a JSON string literal (quotes, escapes; invalid UTF-8 bytes become U+FFFD).
void write_string(std::string& out, std::string_view s);
std::string quote(std::string_view s);

}  // namespace wgc::json
