// The template interpreter's state: the parsed body and the evaluation of expressions and nodes.
#pragma once

#include "llm/chat/jinja.h"
#include "llm/chat/jinja_parse.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace wgc::llm::jinja {

enum class Flow { Normal, Break, Continue };

struct Template::Impl {
  std::string name;
  Body body;

  struct Frame {
    std::vector<std::unordered_map<std::string, Value>> scopes;
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
  Value call_filter(Frame& f, const std::string& name, Value subject, Args& args, int line) const;
  bool run_test(Frame& f, const std::string& name, const Value& v, Args& args, int line) const;
  Value call_method(const Value& obj, const std::string& m, Args& args, int line, bool& found) const;
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
