// JSON Schema to grammar (grammar.h), for structured output: text generated under the grammar
// parses as JSON and validates against the schema.
//
// Supported: type (one or a list), object (properties in their order, required, additionalProperties
// false / true / a schema for map-like objects), array (items, prefixItems, minItems, maxItems),
// string (minLength, maxLength, enum, const), integer (minimum >= 0 alone, or both bounds at most
// 256 apart), number, boolean, null, enum and const of any JSON value, anyOf / oneOf, allOf of one
// schema, $ref to "#/$defs/NAME" or "#/definitions/NAME" (recursive references allowed). What it
// cannot guarantee (pattern, format, multipleOf, other numeric bounds, ...) is an error naming the
// keyword and where it is, never a grammar that would generate invalid output.
#pragma once

#include <string>

namespace wgc::json {
class Value;
}

namespace wgc::llm {

struct SchemaLimits {
  size_t max_depth = 32;    // nesting of schemas
  size_t max_rules = 2048;  // grammar rules made
  size_t max_items = 256;   // minItems / maxItems, minLength / maxLength
  size_t max_enum = 1024;   // values of one enum
};

// The GBNF text of the schema (rule root). Throws wgc::Error ("json_schema: at /properties/x: ...").
std::string json_schema_to_grammar(const json::Value& schema, const SchemaLimits& limits = {});

// For grammars that embed schemas (tool calls): the rules of `schema` as a rule named `name`, its
// helper rules named `name` + "-N", referring to the shared JSON rules of json_grammar_common().
std::string json_schema_rules(const json::Value& schema, const std::string& name, const SchemaLimits& limits = {});
// The shared rules (space, string, integer, number, boolean, null, value: any JSON value nested at
// most max_depth), once per grammar.
std::string json_grammar_common(size_t max_depth = 8);

// Any JSON object (response_format {"type": "json_object"}), values nested at most max_depth.
std::string json_object_grammar(size_t max_depth = 16);

}  // namespace wgc::llm
