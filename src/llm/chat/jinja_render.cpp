// The template interpreter: expressions, statements, macros, and Template's public entry points.
#include "llm/chat/jinja_render.h"

#include "llm/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>

namespace wgc::llm::jinja {

Value Template::Impl::make_macro(Frame& f, const Node& n) const {
  const Node* node = &n;
  auto globals = f.scopes.front();
  return Value(Function([this, node, globals](Args& args) -> Value {
    Frame mf;
    mf.scopes.push_back(globals);
    mf.scopes.emplace_back();
    auto& local = mf.scopes.back();
    for (size_t i = 0; i < node->params.size(); ++i) {
      const auto& [pname, def] = node->params[i];
      Value v = args.get(i, pname);
      if (v.is_undefined() && def) v = eval(mf, *def);
      local[pname] = v;
    }
    std::string out;
    exec(mf, node->body, out);
    return Value(out);
  }));
}

Value Template::Impl::eval(Frame& f, const Expr& e) const {
  switch (e.kind) {
    case Expr::Literal: return e.value;
    case Expr::Name: return lookup(f, e.name);
    case Expr::List:
    case Expr::Tuple: {
      Array a;
      for (auto& x : e.items) a.push_back(eval(f, *x));
      return Value(std::move(a));
    }
    case Expr::Dict: {
      Value o = Value::object();
      for (size_t i = 0; i < e.items.size(); ++i) o.set(eval(f, *e.items[i]).to_string(), eval(f, *e.values[i]));
      return o;
    }
    case Expr::Attr: {
      Value obj = eval(f, *e.a);
      if (obj.is_object()) return obj.get(e.name);
      return Value();
    }
    case Expr::Item: {
      Value obj = eval(f, *e.a);
      Value key = eval(f, *e.b);
      if (obj.is_object()) return key.is_string() ? obj.get(key.str()) : obj.get(key.to_string());
      if (obj.is_array() && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int(), n = int64_t(obj.items().size());
        if (i < 0) i += n;
        return i >= 0 && i < n ? obj.items()[size_t(i)] : Value();
      }
      if (obj.is_string() && key.is_int()) {
        auto cps = code_points(obj.str());
        int64_t i = key.as_int(), n = int64_t(cps.size());
        if (i < 0) i += n;
        return i >= 0 && i < n ? Value(cps[size_t(i)]) : Value();
      }
      return Value();
    }
    case Expr::Slice: {
      Value obj = eval(f, *e.a);
      Value b = e.b ? eval(f, *e.b) : Value(), c = e.c ? eval(f, *e.c) : Value(), d = e.d ? eval(f, *e.d) : Value();
      if (obj.is_string()) {
        auto cps = code_points(obj.str());
        std::string r;
        for (size_t i : slice_indices(int64_t(cps.size()), b, c, d)) r += cps[i];
        return Value(r);
      }
      if (obj.is_array()) {
        Array r;
        for (size_t i : slice_indices(int64_t(obj.items().size()), b, c, d)) r.push_back(obj.items()[i]);
        return Value(std::move(r));
      }
      if (obj.is_undefined()) return Value();
      throw Error(where(e.line) + ": cannot slice " + obj.repr());
    }
    case Expr::Call: {
      Args args = eval_args(f, e);
      if (e.a->kind == Expr::Attr) {
        Value obj = eval(f, *e.a->a);
        bool found = false;
        if (obj.is_string() || obj.is_array() || obj.is_object()) {
          Value r = call_method(obj, e.a->name, args, e.line, found);
          if (found) return r;
        }
        Value fn = obj.is_object() ? obj.get(e.a->name) : Value();
        if (fn.is_function()) return fn.function()(args);
        throw Error(where(e.line) + ": " + (obj.is_undefined() ? "undefined value" : obj.repr().substr(0, 40)) +
                    " has no method '" + e.a->name + "'");
      }
      Value fn = eval(f, *e.a);
      if (!fn.is_function())
        throw Error(where(e.line) + ": " + (e.a->kind == Expr::Name ? "'" + e.a->name + "'" : std::string("value")) +
                    " is not callable" + (fn.is_undefined() ? " (undefined)" : ""));
      return fn.function()(args);
    }
    case Expr::Filter: {
      Value subject = eval(f, *e.a);
      Args args = eval_args(f, e);
      return call_filter(f, e.name, std::move(subject), args, e.line);
    }
    case Expr::Test: {
      Value v = eval(f, *e.a);
      Args args = eval_args(f, e);
      return Value(run_test(f, e.name, v, args, e.line) != e.negated);
    }
    case Expr::Unary: {
      Value v = eval(f, *e.a);
      if (!v.is_number() && !v.is_bool()) throw Error(where(e.line) + ": unary " + e.name + " on " + v.repr());
      if (e.name == "+") return v;
      return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
    }
    case Expr::Not: return Value(!eval(f, *e.a).truthy());
    case Expr::And: {
      Value l = eval(f, *e.a);
      return l.truthy() ? eval(f, *e.b) : l;
    }
    case Expr::Or: {
      Value l = eval(f, *e.a);
      return l.truthy() ? l : eval(f, *e.b);
    }
    case Expr::Cond: {
      if (eval(f, *e.b).truthy()) return eval(f, *e.a);
      return e.c ? eval(f, *e.c) : Value();
    }
    case Expr::Compare: {
      Value l = eval(f, *e.items[0]);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value r = eval(f, *e.items[i + 1]);
        const std::string& op = e.ops[i];
        bool ok;
        if (op == "==")
          ok = l == r;
        else if (op == "!=")
          ok = !(l == r);
        else if (op == "in")
          ok = contains(r, l, where(e.line));
        else if (op == "not in")
          ok = !contains(r, l, where(e.line));
        else {
          int c = compare_values(l, r, where(e.line));
          ok = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
        }
        if (!ok) return Value(false);
        l = std::move(r);
      }
      return Value(true);
    }
    case Expr::Binary: {
      Value l = eval(f, *e.a), r = eval(f, *e.b);
      const std::string& op = e.name;
      std::string w = where(e.line);
      if (op == "~") return Value(l.to_string() + r.to_string());
      if (op == "+") {
        if (l.is_string() && r.is_string()) return Value(l.str() + r.str());
        if (l.is_array() && r.is_array()) {
          Array a = l.items();
          a.insert(a.end(), r.items().begin(), r.items().end());
          return Value(std::move(a));
        }
      }
      if (op == "*" && ((l.is_string() && r.is_int()) || (l.is_int() && r.is_string()))) {
        const Value& s = l.is_string() ? l : r;
        int64_t n = l.is_string() ? r.as_int() : l.as_int();
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s.str();
        return Value(out);
      }
      if (op == "%" && l.is_string()) {  // "%s" formatting
        std::vector<Value> vals = r.is_array() ? r.items() : std::vector<Value>{r};
        std::string out;
        size_t k = 0;
        const std::string& s = l.str();
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] == '%' && i + 1 < s.size()) {
            char c = s[++i];
            if (c == '%') {
              out += '%';
            } else if (k < vals.size()) {
              out += c == 'r' ? vals[k].repr() : vals[k].to_string();
              ++k;
            }
          } else {
            out += s[i];
          }
        }
        return Value(out);
      }
      bool num = (l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool());
      if (!num) throw Error(w + ": unsupported operands for " + op + ": " + l.repr() + " and " + r.repr());
      bool fl = l.is_float() || r.is_float();
      if (op == "+") return fl ? Value(l.as_double() + r.as_double()) : Value(l.as_int() + r.as_int());
      if (op == "-") return fl ? Value(l.as_double() - r.as_double()) : Value(l.as_int() - r.as_int());
      if (op == "*") return fl ? Value(l.as_double() * r.as_double()) : Value(l.as_int() * r.as_int());
      if (op == "/") {
        if (r.as_double() == 0) throw Error(w + ": division by zero");
        return Value(l.as_double() / r.as_double());
      }
      if (op == "//" || op == "%") {
        if (r.as_double() == 0) throw Error(w + ": division by zero");
        if (fl) {
          double q = std::floor(l.as_double() / r.as_double());
          return op == "//" ? Value(q) : Value(l.as_double() - q * r.as_double());
        }
        int64_t a = l.as_int(), b = r.as_int(), q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return op == "//" ? Value(q) : Value(a - q * b);
      }
      if (op == "**") {
        if (!fl && r.as_int() >= 0) {
          int64_t x = 1;
          for (int64_t i = 0; i < r.as_int(); ++i) x *= l.as_int();
          return Value(x);
        }
        return Value(std::pow(l.as_double(), r.as_double()));
      }
      throw Error(w + ": unknown operator " + op);
    }
  }
  return Value();
}

Flow Template::Impl::exec(Frame& f, const Body& nodes, std::string& out) const {
  for (const auto& np : nodes) {
    const Node& n = *np;
    switch (n.kind) {
      case Node::Text: out += n.text; break;
      case Node::Output: out += eval(f, *n.expr).to_string(); break;
      case Node::Call: eval(f, *n.expr); break;
      case Node::If:
        for (const auto& [cond, b] : n.branches) {
          if (!cond || eval(f, *cond).truthy()) {
            Flow fl = exec(f, b, out);
            if (fl != Flow::Normal) return fl;
            break;
          }
        }
        break;
      case Node::For: {
        std::vector<Value> all = iterate(eval(f, *n.expr), where(n.line));
        std::vector<Value> items;
        if (n.cond) {
          for (auto& x : all) {
            f.scopes.emplace_back();
            if (n.targets.size() == 1) {
              f.scopes.back()[n.targets[0]] = x;
            } else if (x.is_array()) {
              for (size_t k = 0; k < n.targets.size() && k < x.items().size(); ++k)
                f.scopes.back()[n.targets[k]] = x.items()[k];
            }
            bool keep = eval(f, *n.cond).truthy();
            f.scopes.pop_back();
            if (keep) items.push_back(x);
          }
        } else {
          items = std::move(all);
        }
        if (items.empty()) {
          Flow fl = exec(f, n.else_body, out);
          if (fl != Flow::Normal) return fl;
          break;
        }
        size_t len = items.size();
        for (size_t i = 0; i < len; ++i) {
          f.scopes.emplace_back();
          auto& sc = f.scopes.back();
          Value loop = Value::object();
          loop.set("index", Value(int64_t(i + 1)));
          loop.set("index0", Value(int64_t(i)));
          loop.set("revindex", Value(int64_t(len - i)));
          loop.set("revindex0", Value(int64_t(len - i - 1)));
          loop.set("first", Value(i == 0));
          loop.set("last", Value(i + 1 == len));
          loop.set("length", Value(int64_t(len)));
          loop.set("previtem", i > 0 ? items[i - 1] : Value());
          loop.set("nextitem", i + 1 < len ? items[i + 1] : Value());
          loop.set("cycle",
                   Value(Function([i](Args& a) { return a.pos.empty() ? Value() : a.pos[i % a.pos.size()]; })));
          sc["loop"] = loop;
          const Value& x = items[i];
          if (n.targets.size() == 1) {
            sc[n.targets[0]] = x;
          } else {
            if (!x.is_array() || x.items().size() != n.targets.size())
              throw Error(where(n.line) + ": cannot unpack " + x.repr() + " into " + std::to_string(n.targets.size()) +
                          " names");
            for (size_t k = 0; k < n.targets.size(); ++k) sc[n.targets[k]] = x.items()[k];
          }
          Flow fl = exec(f, n.body, out);
          f.scopes.pop_back();
          if (fl == Flow::Break) break;
        }
        break;
      }
      case Node::Set:
      case Node::SetBlock: {
        Value v;
        if (n.kind == Node::Set) {
          v = eval(f, *n.expr);
        } else {
          std::string s;
          exec(f, n.body, s);
          v = Value(s);
          if (n.filter_call) {
            Args args = eval_args(f, *n.filter_call);
            v = call_filter(f, n.filter_call->name, v, args, n.line);
          }
        }
        auto assign = [&](const std::string& target, Value val) {
          size_t dot = target.find('.');
          if (dot == std::string::npos) {
            f.scopes.back()[target] = std::move(val);
            return;
          }
          Value obj = lookup(f, target.substr(0, dot));
          if (!obj.is_object())
            throw Error(where(n.line) + ": cannot set '" + target + "': '" + target.substr(0, dot) +
                        "' is not a namespace");
          obj.set(target.substr(dot + 1), std::move(val));
        };
        if (n.targets.size() == 1) {
          assign(n.targets[0], v);
        } else {
          if (!v.is_array() || v.items().size() != n.targets.size())
            throw Error(where(n.line) + ": cannot unpack " + v.repr());
          for (size_t k = 0; k < n.targets.size(); ++k) assign(n.targets[k], v.items()[k]);
        }
        break;
      }
      case Node::Macro: f.scopes.back()[n.name] = make_macro(f, n); break;
      case Node::FilterBlock: {
        std::string s;
        Flow fl = exec(f, n.body, s);
        if (n.filter_call) {
          Args args = eval_args(f, *n.filter_call);
          s = call_filter(f, n.filter_call->name, Value(s), args, n.line).to_string();
        }
        out += s;
        if (fl != Flow::Normal) return fl;
        break;
      }
      case Node::Break: return Flow::Break;
      case Node::Continue: return Flow::Continue;
    }
  }
  return Flow::Normal;
}

Template::Template(std::string_view source, std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  // keep_trailing_newline = False: one newline at the very end of the source goes.
  if (source.ends_with("\r\n"))
    source.remove_suffix(2);
  else if (source.ends_with('\n'))
    source.remove_suffix(1);
  impl_->body = parse(source, impl_->name);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
  Impl::Frame f;
  f.scopes.emplace_back();
  auto& g = f.scopes.back();
  add_globals(g, impl_->name);
  if (context.is_object())
    for (auto& [k, v] : context.members()) g[k] = v;
  std::string out;
  impl_->exec(f, impl_->body, out);
  return out;
}

}  // namespace wgc::llm::jinja
