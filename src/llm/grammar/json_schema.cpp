#include "llm/grammar/json_schema.h"

#include "llm/grammar/grammar.h"
#include "util/error.h"
#include "util/json.h"

#include <algorithm>
#include <map>
#include <vector>

namespace wgc::llm {

namespace {

// The grammar's shared pieces: JSON's whitespace (bounded, so a model cannot pad forever),
// strings, numbers (digits bounded likewise) and literals.
constexpr const char* kCommon = R"(space ::= | " " | "\n" [ \t]{0,20}
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\"" space
integer ::= "-"? ("0" | [1-9] [0-9]{0,15}) space
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})? space
boolean ::= ("true" | "false") space
null ::= "null" space
)";

std::string literal(const std::string& text) { return gbnf_literal(text); }

class Converter {
 public:
  Converter(const json::Value& root, const SchemaLimits& lim, std::string prefix)
      : root_(root), lim_(lim), prefix_(std::move(prefix)) {}

  // The rules, the schema's own as `name`.
  std::string run(const std::string& name) {
    const std::string top = visit(root_, "", 0);
    std::string out = name + " ::= " + top + "\n";
    for (const auto& r : rules_) out += r + "\n";
    return out;
  }

 private:
  const json::Value& root_;
  const SchemaLimits& lim_;
  std::vector<std::string> rules_;
  std::string prefix_;                       // of the rules made here
  std::map<std::string, std::string> refs_;  // "#/$defs/x" -> its rule name

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error("json_schema: at " + (where.empty() ? std::string("/") : where) + ": " + what);
  }
  std::string rule(const std::string& body) {
    if (rules_.size() >= lim_.max_rules) fail("", "more than " + std::to_string(lim_.max_rules) + " rules");
    const std::string name = prefix_ + std::to_string(rules_.size());
    rules_.push_back(name + " ::= " + body);
    return name;
  }
  size_t count(const json::Value& s, const char* key, const std::string& at, size_t dflt) const {
    const json::Value* v = s.find(key);
    if (!v) return dflt;
    if (!v->is_int() || v->as_int() < 0 || size_t(v->as_int()) > lim_.max_items)
      fail(at, std::string(key) + " must be an integer from 0 to " + std::to_string(lim_.max_items));
    return size_t(v->as_int());
  }
  // `one` repeated min..max times with `sep` between.
  std::string repeat(const std::string& one, const std::string& sep, size_t min, size_t max, bool unbounded) {
    if (max == 0 && !unbounded) return "\"\"";
    const std::string tail = "(" + sep + " " + one + ")";
    std::string rest;
    if (unbounded)
      rest = tail + "*";
    else if (max > 1)
      rest = tail + "{" + std::to_string(min > 0 ? min - 1 : 0) + "," + std::to_string(max - 1) + "}";
    const std::string some = "(" + one + (rest.empty() ? "" : " " + rest) + ")";
    return min == 0 ? some + "?" : some;
  }

  std::string visit(const json::Value& s, const std::string& at, size_t depth) {
    if (depth > lim_.max_depth) fail(at, "schemas nested deeper than " + std::to_string(lim_.max_depth));
    if (s.is_bool()) {
      if (!s.as_bool()) fail(at, "the schema false allows nothing");
      return "value";  // true: anything
    }
    if (!s.is_object()) fail(at, "a schema must be an object or a boolean");
    for (const char* k : {"pattern", "format", "multipleOf", "exclusiveMinimum", "exclusiveMaximum", "not", "if",
                          "patternProperties", "dependentRequired", "dependentSchemas", "uniqueItems", "contains",
                          "minProperties", "maxProperties", "propertyNames", "unevaluatedProperties"})
      if (s.find(k)) fail(at, std::string("'") + k + "' is not supported in structured output");
    if (const json::Value* r = s.find("$ref")) return ref(*r, at, depth);
    if (const json::Value* c = s.find("const")) return rule(literal(c->dump()) + " space");
    if (const json::Value* e = s.find("enum")) {
      if (!e->is_array() || e->items().empty()) fail(at, "enum must be a non-empty array");
      if (e->size() > lim_.max_enum) fail(at, "more than " + std::to_string(lim_.max_enum) + " enum values");
      std::string alts;
      for (const auto& v : e->items()) alts += (alts.empty() ? "" : " | ") + literal(v.dump());
      return rule("(" + alts + ") space");
    }
    for (const char* k : {"anyOf", "oneOf"})
      if (const json::Value* list = s.find(k)) {
        if (!list->is_array() || list->items().empty()) fail(at, std::string(k) + " must be a non-empty array");
        std::string alts;
        for (size_t i = 0; i < list->size(); ++i)
          alts += (i ? " | " : "") + visit(list->items()[i], at + "/" + k + "/" + std::to_string(i), depth + 1);
        return rule(alts);
      }
    if (const json::Value* all = s.find("allOf")) {
      if (!all->is_array() || all->size() != 1) fail(at, "allOf is supported with one schema only");
      return visit(all->items()[0], at + "/allOf/0", depth + 1);
    }
    const json::Value* type = s.find("type");
    if (!type) {
      if (s.find("properties")) return object(s, at, depth);
      if (s.find("items") || s.find("prefixItems")) return array(s, at, depth);
      return "value";
    }
    if (type->is_array()) {
      std::string alts;
      for (const auto& t : type->items()) {
        if (!t.is_string()) fail(at, "type must be a string or an array of strings");
        alts += (alts.empty() ? "" : " | ") + typed(t.as_string(), s, at, depth);
      }
      return rule(alts);
    }
    if (!type->is_string()) fail(at, "type must be a string or an array of strings");
    return typed(type->as_string(), s, at, depth);
  }

  std::string typed(const std::string& t, const json::Value& s, const std::string& at, size_t depth) {
    if (t == "object") return object(s, at, depth);
    if (t == "array") return array(s, at, depth);
    if (t == "string") return string(s, at);
    if (t == "integer") return integer(s, at);
    if (t == "number") {
      if (s.find("minimum") || s.find("maximum")) fail(at, "minimum/maximum on a number are not supported");
      return "number";
    }
    if (t == "boolean") return "boolean";
    if (t == "null") return "null";
    fail(at, "unknown type '" + t + "'");
  }

  std::string string(const json::Value& s, const std::string& at) {
    const size_t lo = count(s, "minLength", at, 0);
    const bool unbounded = !s.find("maxLength");
    const size_t hi = count(s, "maxLength", at, 0);
    if (!unbounded && hi < lo) fail(at, "maxLength < minLength");
    if (lo == 0 && unbounded) return "string";
    const std::string reps =
        unbounded ? "{" + std::to_string(lo) + ",}" : "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
    return rule("\"\\\"\" char" + reps + " \"\\\"\" space");
  }

  std::string integer(const json::Value& s, const std::string& at) {
    const json::Value *lo = s.find("minimum"), *hi = s.find("maximum");
    if (!lo && !hi) return "integer";
    auto num = [&](const json::Value* v, const char* k) {
      if (!v->is_int()) fail(at, std::string(k) + " of an integer must be an integer");
      return v->as_int();
    };
    if (lo && !hi) {
      if (num(lo, "minimum") != 0) fail(at, "an integer's minimum alone is supported only as 0");
      return rule(R"(("0" | [1-9] [0-9]{0,15}) space)");
    }
    if (!lo) fail(at, "an integer's maximum alone is not supported");
    const int64_t a = num(lo, "minimum"), b = num(hi, "maximum");
    if (b < a || b - a > 256) fail(at, "integer bounds more than 256 apart are not supported");
    std::string alts;
    for (int64_t v = a; v <= b; ++v) alts += (alts.empty() ? "" : " | ") + literal(std::to_string(v));
    return rule("(" + alts + ") space");
  }

  std::string object(const json::Value& s, const std::string& at, size_t depth) {
    const json::Value* props = s.find("properties");
    if (props && !props->is_object()) fail(at, "properties must be an object");
    std::vector<std::string> required;
    if (const json::Value* r = s.find("required")) {
      if (!r->is_array()) fail(at, "required must be an array");
      for (const auto& x : r->items()) {
        if (!x.is_string()) fail(at, "required must list strings");
        if (!props || !props->find(x.as_string()))
          fail(at, "required names '" + x.as_string() + "', not in properties");
        required.push_back(x.as_string());
      }
    }
    const json::Value* extra = s.find("additionalProperties");
    // Map-like objects: no properties, additionalProperties a schema: any keys, those values.
    if ((!props || props->size() == 0) && extra && extra->is_object()) {
      const std::string v = visit(*extra, at + "/additionalProperties", depth + 1);
      const std::string kv = rule("string \":\" space " + v);
      return rule("\"{\" space " + repeat(kv, "\",\" space", 0, 0, true) + " \"}\" space");
    }
    if (!props || props->size() == 0) return rule(R"("{" space "}" space)");
    // Properties in their order; the optional ones may be left out. A chain of rules keeps the
    // commas right: tail_i is "the properties from i on, none written before" or after one.
    struct Prop {
      std::string kv;
      bool req;
    };
    std::vector<Prop> ps;
    for (const auto& [name, sub] : props->members()) {
      const std::string v = visit(sub, at + "/properties/" + name, depth + 1);
      const bool req = std::find(required.begin(), required.end(), name) != required.end();
      ps.push_back({rule(literal(json::Value(name).dump()) + " space \":\" space " + v), req});
    }
    // after[i]: the properties from i on, at least one written before them (each one ", kv").
    // first[i]: the same with none written before.
    const size_t n = ps.size();
    std::vector<std::string> after(n + 1), first(n + 1);
    after[n] = first[n] = "\"\"";
    for (size_t i = n; i-- > 0;) {
      const std::string with_after = "\",\" space " + ps[i].kv + " " + after[i + 1];
      after[i] = rule(ps[i].req ? with_after : "(" + with_after + ") | " + after[i + 1]);
      const std::string with_first = ps[i].kv + " " + after[i + 1];
      first[i] = rule(ps[i].req ? with_first : "(" + with_first + ") | " + first[i + 1]);
    }
    return rule("\"{\" space " + first[0] + " \"}\" space");
  }

  std::string array(const json::Value& s, const std::string& at, size_t depth) {
    const size_t lo = count(s, "minItems", at, 0);
    const bool unbounded = !s.find("maxItems");
    const size_t hi = count(s, "maxItems", at, 0);
    if (!unbounded && hi < lo) fail(at, "maxItems < minItems");
    if (const json::Value* pre = s.find("prefixItems")) {
      if (!pre->is_array()) fail(at, "prefixItems must be an array");
      if (s.find("items") && !(s["items"].is_bool() && !s["items"].as_bool()))
        fail(at, "prefixItems is supported with items: false only");
      std::string seq;
      for (size_t i = 0; i < pre->size(); ++i)
        seq += std::string(i ? " \",\" space " : " ") +
               visit(pre->items()[i], at + "/prefixItems/" + std::to_string(i), depth + 1);
      return rule("\"[\" space" + seq + " \"]\" space");
    }
    const json::Value* items = s.find("items");
    const std::string one = items ? visit(*items, at + "/items", depth + 1) : "value";
    return rule("\"[\" space " + repeat(one, "\",\" space", lo, hi, unbounded) + " \"]\" space");
  }

  std::string ref(const json::Value& r, const std::string& at, size_t depth) {
    if (!r.is_string()) fail(at, "$ref must be a string");
    const std::string& p = r.as_string();
    if (auto it = refs_.find(p); it != refs_.end()) return it->second;
    std::string key;
    const json::Value* defs = nullptr;
    for (const char* prefix : {"#/$defs/", "#/definitions/"})
      if (p.rfind(prefix, 0) == 0) {
        key = p.substr(std::string(prefix).size());
        defs = root_.find(std::string(prefix).substr(2, std::string(prefix).size() - 3));
      }
    if (!defs || !defs->find(key)) fail(at, "$ref '" + p + "' does not name a schema in $defs or definitions");
    // The rule's name first, so a recursive reference finds it.
    const std::string name = prefix_ + "ref" + std::to_string(refs_.size());
    refs_[p] = name;
    rules_.push_back(name + " ::= " + visit(*defs->find(key), p.substr(1), depth + 1));
    return name;
  }
};

// Any JSON value (for `true` schemas and items without a schema), nested at most max_depth.
std::string any_value_rules(size_t max_depth) {
  std::string g;
  for (size_t d = 0; d <= max_depth; ++d) {
    const std::string v = d == 0 ? "value" : "value" + std::to_string(d);
    const std::string next = "value" + std::to_string(d + 1);
    g += v + " ::= string | number | boolean | null";
    if (d < max_depth)
      g += " | \"{\" space (string \":\" space " + next + " (\",\" space string \":\" space " + next +
           ")*)? \"}\" space | \"[\" space (" + next + " (\",\" space " + next + ")*)? \"]\" space";
    g += "\n";
  }
  return g;
}

}  // namespace

std::string json_grammar_common(size_t max_depth) { return std::string(kCommon) + any_value_rules(max_depth); }

std::string json_schema_rules(const json::Value& schema, const std::string& name, const SchemaLimits& limits) {
  return Converter(schema, limits, name + "-").run(name);
}

std::string json_schema_to_grammar(const json::Value& schema, const SchemaLimits& limits) {
  return json_schema_rules(schema, "root", limits) + json_grammar_common();
}

std::string json_object_grammar(size_t max_depth) {
  const std::string next = max_depth > 0 ? "value1" : "value";
  return "root ::= \"{\" space (string \":\" space " + next + " (\",\" space string \":\" space " + next +
         ")*)? \"}\" space\n" + json_grammar_common(max_depth);
}

}  // namespace wgc::llm
