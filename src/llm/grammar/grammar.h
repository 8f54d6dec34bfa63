// Grammars for constrained generation, in the GBNF syntax llama.cpp's server takes:
//
//   root   ::= "{" ws pair ("," ws pair)* "}"      # rules; the start rule is `root`
//   pair   ::= string ":" ws [0-9]+ ("." [0-9]{1,3})?
//   string ::= "\"" [^"\\\x00-\x1f]* "\""
//   ws     ::= [ \t\n]*
//
// Literals "..." (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), character classes [a-z_] and
// negated ones [^"], the any-character dot, rule names, grouping, alternation |, and the
// repetitions * + ? {m} {m,} {m,n}. Text is matched as Unicode code points (UTF-8).
//
// A grammar comes from untrusted requests: the parser bounds its size, its nesting and the
// repetition counts, refuses left recursion (which a matcher cannot run) and undefined rules, and
// every error names the line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wgc::llm {

// One element of a rule's alternative.
struct GrammarElement {
  enum Kind : uint8_t { Chars, Rule } kind = Chars;
  // Chars: the code point ranges [lo, hi] it matches (negated: everything else).
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;
  uint32_t rule = 0;  // Rule: its index
  bool matches(uint32_t cp) const;
};

struct GrammarRule {
  std::string name;
  std::vector<std::vector<GrammarElement>> alternatives;  // an empty alternative matches ""
};

struct Grammar {
  std::vector<GrammarRule> rules;  // rules[root] is the start
  uint32_t root = 0;
};

struct GrammarLimits {
  size_t max_bytes = 256 * 1024;  // of the grammar's text
  size_t max_rules = 4096;        // after repetitions are expanded
  size_t max_depth = 64;          // nesting of parentheses
  uint32_t max_repeat = 1024;     // m and n of {m,n}
};

// A GBNF literal that matches exactly `text` (quotes, backslashes and control bytes escaped).
std::string gbnf_literal(std::string_view text);

// Throws wgc::Error ("grammar: line L, column C: ...") on a syntax error, a rule used but not
// defined, a missing `root`, left recursion, or a limit passed.
Grammar parse_grammar(std::string_view text, const GrammarLimits& limits = {});

}  // namespace wgc::llm
