// The template interpreter: expressions, statements, macros, and Template's public entry points.
#include "llm/chat/jinja_render.h"

#include "llm/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace wgc::llm::jinja {

namespace {

thread_local RenderState* t_render = nullptr;

// Checked 64-bit integer arithmetic: Python's integers do not overflow, ours raise an error.
[[noreturn]] void overflow(int64_t a, const char* op, int64_t b) {
  throw ValueError("integer overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
                   " does not fit 64 bits");
}

int64_t int_arith(int64_t a, char op, int64_t b) {
  int64_t r = 0;
  bool over = op == '+'   ? __builtin_add_overflow(a, b, &r)
              : op == '-' ? __builtin_sub_overflow(a, b, &r)
                          : __builtin_mul_overflow(a, b, &r);
  if (over) overflow(a, op == '+' ? "+" : op == '-' ? "-" : "*", b);
  return r;
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t result = 1, b = base;
  for (int64_t e = exp; e > 0; e >>= 1) {
    if ((e & 1) && __builtin_mul_overflow(result, b, &result)) overflow(base, "**", exp);
    if (e > 1 && __builtin_mul_overflow(b, b, &b)) overflow(base, "**", exp);
  }
  return result;
}

// Python's floor division and modulo of integers (b != 0).
int64_t floor_div(int64_t a, int64_t b) {
  if (b == -1) {
    if (a == INT64_MIN) overflow(a, "//", b);
    return -a;
  }
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// The output grows: its size is bounded, and building it is work.
void append_output(std::string& out, std::string_view text) {
  check_string_size(out.size() + text.size(), "the output");
  charge_bytes(text.size());
  out += text;
}

// The caller's lists and dicts nested in a context value are elements already (check_no_cycle).
void note_nested_containers(const Value& top) {
  Budget& b = *Budget::active();
  std::vector<const Value*> todo{&top};
  std::unordered_set<const void*> seen;
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    if (!v->container() || !seen.insert(v->container()).second) continue;
    b.steps(1);
    if (v != &top) b.note_contained(v->container());
    if (v->is_array())
      for (auto& x : v->items()) todo.push_back(&x);
    else
      for (auto& [k, x] : v->members()) todo.push_back(&x);
  }
}

}  // namespace

Value Template::Impl::make_macro(Frame& f, const Node& n) const {
  const Node* node = &n;
  auto scope = std::make_shared<Scope>(f.scopes.front());
  f.st->budget.steps(scope->size());
  f.st->macro_scopes.push_back(scope);
  std::weak_ptr<const Scope> weak = scope;
  Value macro(Function([this, node, weak](Args& args) -> Value {
    std::shared_ptr<const Scope> globals = weak.lock();
    if (!globals || !t_render)
      throw Error(args.where + ": macro '" + node->name + "' called after the render that defined it ended");
    t_render->budget.steps(globals->size());
    Frame mf;
    mf.st = t_render;
    mf.scopes.push_back(*globals);
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
  (*scope)[n.name] = macro;  // the macro sees itself: it may recurse (a weak reference: no cycle)
  return macro;
}

Value Template::Impl::eval(Frame& f, const Expr& e) const {
  f.st->line = e.line;
  f.st->budget.steps(1);
  Budget::Nest nest(f.st->budget);
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
        const std::string& str = obj.str();
        std::vector<size_t> starts = cp_starts(str);
        int64_t i = key.as_int(), n = int64_t(starts.size()) - 1;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return Value(str.substr(starts[size_t(i)], starts[size_t(i) + 1] - starts[size_t(i)]));
      }
      return Value();
    }
    case Expr::Slice: {
      Value obj = eval(f, *e.a);
      Value b = e.b ? eval(f, *e.b) : Value(), c = e.c ? eval(f, *e.c) : Value(), d = e.d ? eval(f, *e.d) : Value();
      if (obj.is_string()) {
        const std::string& str = obj.str();
        std::vector<size_t> starts = cp_starts(str);
        std::string r;
        for (size_t i : slice_indices(int64_t(starts.size()) - 1, b, c, d))
          r.append(str, starts[i], starts[i + 1] - starts[i]);
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
          Value r = call_method(f, obj, e.a->name, args, e.line, found);
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
      if (v.is_float()) return Value(-v.as_double());
      if (v.as_int() == INT64_MIN) overflow(0, "-", v.as_int());
      return Value(-v.as_int());
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
    case Expr::Binary: return eval_binary(f, e);
  }
  return Value();
}

Value Template::Impl::eval_binary(Frame& f, const Expr& e) const {
  Value l = eval(f, *e.a), r = eval(f, *e.b);
  f.st->line = e.line;
  const std::string& op = e.name;
  if (op == "~") {
    std::string a = l.to_string(), b = r.to_string();
    check_string_size(a.size() + b.size(), "~");
    charge_bytes(a.size() + b.size());
    return Value(a + b);
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      check_string_size(l.str().size() + r.str().size(), "+");
      charge_bytes(l.str().size() + r.str().size());
      return Value(l.str() + r.str());
    }
    if (l.is_array() && r.is_array()) {
      check_list_size(l.items().size() + r.items().size(), "+");
      charge_steps(l.items().size() + r.items().size());
      Array a = l.items();
      a.insert(a.end(), r.items().begin(), r.items().end());
      return Value(std::move(a));
    }
  }
  if (op == "*" && ((l.is_string() && r.is_int()) || (l.is_int() && r.is_string()))) {
    const std::string& s = l.is_string() ? l.str() : r.str();
    int64_t n = std::max<int64_t>(0, l.is_string() ? r.as_int() : l.as_int());
    if (!s.empty() && uint64_t(n) > active_limits().string_bytes / s.size())
      check_string_size(active_limits().string_bytes + 1, "string repetition");
    size_t bytes = s.size() * size_t(n);
    charge_bytes(bytes);
    std::string out;
    out.reserve(bytes);
    for (int64_t i = 0; i < n; ++i) out += s;
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
          check_string_size(out.size(), "% formatting");
          ++k;
        }
      } else {
        out += s[i];
      }
    }
    charge_bytes(out.size());
    return Value(out);
  }
  bool num = (l.is_number() || l.is_bool()) && (r.is_number() || r.is_bool());
  std::string w = where(e.line);
  if (!num) throw Error(w + ": unsupported operands for " + op + ": " + brief(l) + " and " + brief(r));
  bool fl = l.is_float() || r.is_float();
  if (fl) {
    double a = l.as_double(), b = r.as_double();
    if (op == "+") return Value(a + b);
    if (op == "-") return Value(a - b);
    if (op == "*") return Value(a * b);
    if (op == "**") return Value(std::pow(a, b));
    if (b == 0) throw Error(w + ": division by zero");
    if (op == "/") return Value(a / b);
    double q = std::floor(a / b);
    if (op == "//") return Value(q);
    if (op == "%") return Value(a - q * b);
  } else {
    int64_t a = l.as_int(), b = r.as_int();
    if (op == "+" || op == "-" || op == "*") return Value(int_arith(a, op[0], b));
    if (op == "**") return b >= 0 ? Value(int_pow(a, b)) : Value(std::pow(double(a), double(b)));
    if (b == 0) throw Error(w + ": division by zero");
    if (op == "/") return Value(double(a) / double(b));
    if (op == "//") return Value(floor_div(a, b));
    if (op == "%") return Value(floor_mod(a, b));
  }
  throw Error(w + ": unknown operator " + op);
}

Flow Template::Impl::exec(Frame& f, const Body& nodes, std::string& out) const {
  Budget::Nest nest(f.st->budget);
  for (const auto& np : nodes) {
    const Node& n = *np;
    f.st->line = n.line;
    f.st->budget.steps(1);
    switch (n.kind) {
      case Node::Text: append_output(out, n.text); break;
      case Node::Output: append_output(out, eval(f, *n.expr).to_string()); break;
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
          f.st->budget.steps(8);  // an iteration costs about 8 steps (mostly building `loop`)
          Object loop;            // built directly: the keys are distinct, no search needed
          loop.reserve(10);
          loop.emplace_back("index", Value(int64_t(i + 1)));
          loop.emplace_back("index0", Value(int64_t(i)));
          loop.emplace_back("revindex", Value(int64_t(len - i)));
          loop.emplace_back("revindex0", Value(int64_t(len - i - 1)));
          loop.emplace_back("first", Value(i == 0));
          loop.emplace_back("last", Value(i + 1 == len));
          loop.emplace_back("length", Value(int64_t(len)));
          loop.emplace_back("previtem", i > 0 ? items[i - 1] : Value());
          loop.emplace_back("nextitem", i + 1 < len ? items[i + 1] : Value());
          loop.emplace_back(
              "cycle", Value(Function([i](Args& a) { return a.pos.empty() ? Value() : a.pos[i % a.pos.size()]; })));
          sc["loop"] = Value(std::move(loop));
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
          check_no_cycle(obj, val, where(n.line));
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
        append_output(out, s);
        if (fl != Flow::Normal) return fl;
        break;
      }
      case Node::Break: return Flow::Break;
      case Node::Continue: return Flow::Continue;
    }
  }
  return Flow::Normal;
}

Template::Template(std::string_view source, std::string name, Limits limits) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  impl_->limits = limits;
  // keep_trailing_newline = False: one newline at the very end of the source goes.
  if (source.ends_with("\r\n"))
    source.remove_suffix(2);
  else if (source.ends_with('\n'))
    source.remove_suffix(1);
  impl_->body = parse(source, impl_->name, impl_->limits);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
  RenderState st(impl_->limits);
  Budget::Activate active(st.budget);
  RenderState* prev = t_render;
  t_render = &st;
  struct Restore {
    RenderState* prev;
    ~Restore() { t_render = prev; }
  } restore{prev};
  Impl::Frame f;
  f.st = &st;
  f.scopes.emplace_back();
  auto& g = f.scopes.back();
  add_globals(g, impl_->name);
  std::string out;
  try {
    if (context.is_object()) {
      for (auto& [k, v] : context.members()) {
        g[k] = v;
        note_nested_containers(v);
      }
    }
    impl_->exec(f, impl_->body, out);
  } catch (const ValueError& e) {
    throw Error(impl_->where(st.line) + ": " + e.what());  // a value operation's error, located
  }
  return out;
}

}  // namespace wgc::llm::jinja
