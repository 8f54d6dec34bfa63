// The template interpreter's state: the parsed body and the evaluation of expressions and nodes.
#pragma once

#include "llm/chat/jinja.h"
#include "llm/chat/jinja_budget.h"
#include "llm/chat/jinja_parse.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace wgc::llm::jinja {

enum class Flow { Normal, Break, Continue };

using Scope = std::unordered_map<std::string, Value>;

// What one render call owns: its budget, the line being evaluated (for errors raised by value
// operations), and the global scopes macros were defined in. A macro value holds only a weak
// reference to its scope, so a namespace that stores the macro makes no reference cycle.
struct RenderState {
  explicit RenderState(const Limits& limits) : budget(limits) {}
  Budget budget;
  int line = 0;
  std::vector<std::shared_ptr<const Scope>> macro_scopes;
};

struct Template::Impl {
  std::string name;
  Limits limits;
  Body body;

  struct Frame {
    RenderState* st = nullptr;
    std::vector<Scope> scopes;
  };

  std::string where(int line) const { return name + ":" + std::to_string(line); }

  Value lookup(Frame& f, const std::string& n) const {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto v = it->find(n);
      if (v != it->end()) return v->second;
    }
    return Value();
  }

  Value eval(Frame& f, const Expr& e) const;
  Value eval_binary(Frame& f, const Expr& e) const;
  Value call_filter(Frame& f, const std::string& name, Value subject, Args& args, int line) const;
  bool run_test(Frame& f, const std::string& name, const Value& v, Args& args, int line) const;
  Value call_method(Frame& f, const Value& obj, const std::string& m, Args& args, int line, bool& found) const;
  Flow exec(Frame& f, const Body& nodes, std::string& out) const;
  Value make_macro(Frame& f, const Node& n) const;

  Args eval_args(Frame& f, const Expr& e) const {
    Args a;
    a.where = where(e.line);
    for (auto& x : e.items) a.pos.push_back(eval(f, *x));
    for (auto& [k, x] : e.kwargs) a.kw.emplace_back(k, eval(f, *x));
    return a;
  }
};

}  // namespace wgc::llm::jinja
