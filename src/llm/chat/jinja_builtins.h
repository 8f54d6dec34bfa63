// The engine's built-ins (filters, tests, methods of str/dict/list, global functions) and the
// Python-semantics helpers they share with the interpreter.
#pragma once

#include "llm/chat/jinja.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace wgc::llm::jinja {

// Text and list operations charge the active render's budget (jinja_budget.h) and check its
// size limits; errors without a location are ValueErrors, which the render locates.
size_t cp_count(const std::string& s);  // code points of UTF-8 text
// Byte offsets where code points start, and s.size() at the end (invalid bytes count as one).
std::vector<size_t> cp_starts(const std::string& s);
// A short description of a value for error messages (a long string is cut, a list is counted).
std::string brief(const Value& v);
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
// The join filter / str.join: items (or their `attribute`) as strings, separated.
std::string join(const std::vector<Value>& items, const std::string& sep, const Value& attribute);
// Error when `inserted` holds `container` (a list or dict put inside itself, directly or deeper):
// such a cycle would print forever and never be freed.
void check_no_cycle(const Value& container, const Value& inserted, const std::string& where);

// The globals every render sees: raise_exception, strftime_now, namespace, dict, range.
void add_globals(std::unordered_map<std::string, Value>& scope, const std::string& template_name);

}  // namespace wgc::llm::jinja
