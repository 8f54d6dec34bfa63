// The chat-template engine's syntax tree and its parser (lexer + recursive-descent parser).
#pragma once

#include "llm/chat/jinja.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wgc::llm::jinja {

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,
    Name,
    List,
    Dict,
    Tuple,
    Attr,
    Item,
    Slice,
    Call,
    Filter,
    Test,
    Unary,
    Binary,
    And,
    Or,
    Not,
    Cond,
    Compare
  } kind;
  int line = 0;
  Value value;                                        // Literal
  std::string name;                                   // Name, Attr, Filter, Test; op for Unary/Binary
  ExprP a, b, c;                                      // operands: Attr/Item/Slice(a[b:c:d]) object=a
  ExprP d;                                            // Slice step
  std::vector<ExprP> items;                           // List/Tuple/Call args/Filter args/Dict keys
  std::vector<ExprP> values;                          // Dict values
  std::vector<std::pair<std::string, ExprP>> kwargs;  // Call/Filter/Test
  std::vector<std::string> ops;                       // Compare: ops between items
  bool negated = false;                               // Test: is not
};

struct Node;
using NodeP = std::unique_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
  enum Kind { Text, Output, If, For, Set, SetBlock, Macro, FilterBlock, Break, Continue, Call } kind;
  int line = 0;
  std::string text;                                   // Text
  ExprP expr;                                         // Output, Set value, For iterable, Call expr
  std::vector<std::pair<ExprP, Body>> branches;       // If: (cond or null for else, body)
  std::vector<std::string> targets;                   // For/Set/SetBlock names (Set: "ns.attr")
  ExprP cond;                                         // For ... if cond
  Body body, else_body;                               // For, SetBlock, Macro, FilterBlock
  std::string name;                                   // Macro/FilterBlock filter name
  std::vector<std::pair<std::string, ExprP>> params;  // Macro params with defaults
  ExprP filter_call;                                  // FilterBlock: filter with args (a = null)
};

// Parses a template source into its syntax tree; errors throw jinja::Error "name:line: message".
Body parse(std::string_view source, const std::string& name, const Limits& limits);

// Python's str.isspace() for ASCII (also what the lexer skips).
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace wgc::llm::jinja
