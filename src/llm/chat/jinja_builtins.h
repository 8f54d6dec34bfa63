// The engine's built-ins (filters, tests, methods of str/dict/list, global functions) and the
// Python-semantics helpers they share with the interpreter.
#pragma once

#include "llm/chat/jinja.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace wgc::llm::jinja {

size_t cp_count(const std::string& s);                       // code points of UTF-8 text
std::vector<std::string> code_points(const std::string& s);  // one string per code point
// str.strip/lstrip/rstrip: `chars` undefined or none strips whitespace.
std::string strip(const std::string& s, const Value& chars, bool left, bool right);
std::string ascii_map(std::string s, int (*f)(int));  // f on ASCII letters only
std::string title_case(const std::string& s);
std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit);
std::string replace_str(const std::string& s, const std::string& from, const std::string& to, int64_t count);
// Python slicing indices for a sequence of length n.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_v);
// -1, 0, 1 as Python's < and == order numbers, strings and lists; other pairs are an error.
int compare_values(const Value& a, const Value& b, const std::string& where);
bool contains(const Value& container, const Value& x, const std::string& where);  // `x in container`
// Elements when iterating: arrays, object keys, string characters.
std::vector<Value> iterate(const Value& v, const std::string& where);

// The globals every render sees: raise_exception, strftime_now, namespace, dict, range.
void add_globals(std::unordered_map<std::string, Value>& scope, const std::string& template_name);

}  // namespace wgc::llm::jinja
