// safetensors reader (single and sharded, every dtype, bad files) and the JSON parser it uses.
#include "llm/formats/safetensors.h"
#include "test_util.h"
#include "util/json.h"

#include <cstring>
#include <fstream>

using namespace wgc::llm;
namespace json = wgc::json;
namespace fs = std::filesystem;

namespace {

using wgc::test::temp_dir;

fs::path write_file(const fs::path& p, std::string_view bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  return p;
}

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// A file from a raw JSON header and a data section.
std::string raw_file(std::string_view header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  out.append(data_bytes, '\x01');
  return out;
}

void expect_error(const std::string& name, std::string_view bytes, std::vector<std::string> parts) {
  fs::path p = write_file(temp_dir() / name, bytes);
  try {
    SafetensorsFile::open(p);
    ADD_FAILURE() << name << ": no error";
  } catch (const wgc::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p.string()), std::string::npos) << name << ": message does not name the file: " << msg;
    for (const auto& part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << name << ": message lacks '" << part << "': " << msg;
  }
}

}  // namespace

// --- JSON ---------------------------------------------------------------------------------------

TEST(Json, Scalars) {
  using json::parse;
  EXPECT_TRUE(parse("null").is_null());
  EXPECT_TRUE(parse(" true ").as_bool());
  EXPECT_FALSE(parse("false").as_bool());
  EXPECT_EQ(parse("0").as_int(), 0);
  EXPECT_EQ(parse("-12").as_int(), -12);
  EXPECT_TRUE(parse("9007199254740993").is_int());
  EXPECT_EQ(parse("9007199254740993").as_int(), 9007199254740993);  // exact beyond 2^53
  EXPECT_EQ(parse("-9223372036854775808").as_int(), INT64_MIN);
  EXPECT_FALSE(parse("9223372036854775808").is_int());  // past int64: a double
  EXPECT_EQ(parse("1.5e3").as_double(), 1500.0);
  EXPECT_EQ(parse("1e3").as_int(), 1000);  // a whole double converts
  EXPECT_THROW(parse("1.5").as_int(), wgc::Error);
  EXPECT_EQ(parse("-0.25").as_double(), -0.25);
  EXPECT_EQ(parse("1e400").as_double(), HUGE_VAL);
  EXPECT_EQ(parse("1e-400").as_double(), 0.0);
  EXPECT_EQ(parse("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"").as_string(), "a\"b\\c/d\b\f\n\r\t");
}

TEST(Json, UnicodeEscapes) {
  using json::parse;
  EXPECT_EQ(parse(R"("\u0041\u00e9\u4e2d")").as_string(), "A\xC3\xA9\xE4\xB8\xAD");
  EXPECT_EQ(parse(R"("\ud83d\ude80")").as_string(), "\xF0\x9F\x9A\x80");  // surrogate pair: U+1F680
  EXPECT_EQ(parse(R"("\uD800\uDC00")").as_string(), "\xF0\x90\x80\x80");  // U+10000
  EXPECT_EQ(parse(R"("\udbff\udfff")").as_string(), "\xF4\x8F\xBF\xBF");  // U+10FFFF
  EXPECT_EQ(parse(R"("\u0000")").as_string(), std::string(1, '\0'));
  EXPECT_EQ(parse("\"\xC4\xA0t\"").as_string(), "\xC4\xA0t");  // raw UTF-8 passes through
  EXPECT_THROW(parse(R"("\ud83d")"), json::ParseError);        // lone high surrogate
  EXPECT_THROW(parse(R"("\ud83dx")"), json::ParseError);
  EXPECT_THROW(parse(R"("\ud83d\u0041")"), json::ParseError);  // high + non-low
  EXPECT_THROW(parse(R"("\ude80")"), json::ParseError);        // lone low surrogate
  EXPECT_THROW(parse(R"("\u12G4")"), json::ParseError);
  EXPECT_THROW(parse(R"("\u12")"), json::ParseError);
  EXPECT_THROW(parse("\"\xC0\xAF\""), json::ParseError);      // overlong
  EXPECT_THROW(parse("\"\xED\xA0\x80\""), json::ParseError);  // encoded surrogate
  EXPECT_THROW(parse("\"\xF0\x9F\x9A\""), json::ParseError);  // truncated sequence
}

TEST(Json, Structures) {
  auto v = json::parse(R"( {"a": [1, 2, {"b": null}], "c": {}, "d": [], "a2": "x", "a": 5} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_EQ(v.size(), 5u);
  EXPECT_EQ(v.members()[0].first, "a");  // document order kept
  EXPECT_EQ(v["a"].as_int(), 5);         // last duplicate wins
  EXPECT_TRUE(v["c"].is_object());
  EXPECT_EQ(v["d"].size(), 0u);
  EXPECT_EQ(v.get_string("a2"), "x");
  EXPECT_EQ(v.get_string("zz", "def"), "def");
  EXPECT_EQ(v.get_int("a"), 5);
  EXPECT_EQ(v.find("nope"), nullptr);
  EXPECT_THROW(v["nope"], wgc::Error);
  const json::Value& first = v.members()[0].second;
  EXPECT_EQ(first[2]["b"].type(), json::Type::Null);
  EXPECT_THROW(first[3], wgc::Error);
  EXPECT_THROW(first.as_string(), wgc::Error);
}

TEST(Json, DumpRoundTrips) {
  std::string text = R"({"s":"\u0001\"\\\ud83d\ude80 é","n":[1,-2.5,1e+100,9007199254740993,true,false,null],"o":{}})";
  auto v = json::parse(text);
  std::string out = v.dump();
  EXPECT_EQ(json::parse(out), v);
  EXPECT_EQ(out,
            "{\"s\":\"\\u0001\\\"\\\\\xF0\x9F\x9A\x80 \xC3\xA9\",\"n\":[1,-2.5,1e+100,9007199254740993,true,false,"
            "null],\"o\":{}}");
  EXPECT_EQ(json::parse(v.dump(2)), v);
  EXPECT_EQ(json::quote("a\xFFz"), "\"a\xEF\xBF\xBDz\"");  // invalid UTF-8 -> U+FFFD
  json::Value b = json::Value::object();
  b.set("x", 1);
  b.set("arr", json::Value::array()).push_back("s");
  b.set("x", uint64_t(2));
  EXPECT_EQ(b.dump(), R"({"x":2,"arr":["s"]})");
  EXPECT_THROW(b["x"].items(), wgc::Error);
}

TEST(Json, Errors) {
  auto fails = [](std::string_view text, std::string part) {
    try {
      json::parse(text, "doc.json");
      ADD_FAILURE() << "no error for: " << text;
    } catch (const json::ParseError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("doc.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
    }
  };
  fails("", "expected a value");
  fails("{", "expected a string key");
  fails("{\"a\" 1}", "expected ':'");
  fails("{\"a\":1,}", "expected a string key");
  fails("[1,]", "expected a value");
  fails("[1 2]", "expected ',' or ']'");
  fails("{\"a\":1 \"b\":2}", "expected ',' or '}'");
  fails("01", "unexpected data after");
  fails("1.", "digits must follow '.'");
  fails("1e", "digits must follow the exponent");
  fails("-", "truncated number");
  fails("+1", "expected a value");
  fails("tru", "expected 'true'");
  fails("nul", "expected 'null'");
  fails("\"abc", "unterminated string");
  fails("\"a\nb\"", "control character");
  fails("\"\\x\"", "invalid escape");
  fails("[1]\n  x", "line 2, column 3");
  fails(std::string(600, '[') + std::string(600, ']'), "nesting deeper than 512");
}

TEST(Json, BigTokenizerFileIsFast) {
  // tokenizer.json of the default model (a few hundred KB); the 9 MB Llama 3 one is exercised by
  // the tokenizer tests.
  auto path = wgc::test::models_dir() / "wgc-tiny-dict" / "tokenizer.json";
  WGC_REQUIRE_FILE(path);
  auto t0 = std::chrono::steady_clock::now();
  auto v = json::parse_file(path);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(v["model"]["type"].as_string(), "BPE");
  EXPECT_EQ(v["model"]["vocab"].size() + 0, v["model"]["vocab"].members().size());
  EXPECT_GT(v["model"]["merges"].size(), 1000u);
  EXPECT_LT(ms, 2000) << "parsing took " << ms << " ms";
}

// --- safetensors --------------------------------------------------------------------------------

TEST(Safetensors, EveryDtypeRoundTrips) {
  std::vector<float> f32 = {1.f, -2.f, 3.5f, 0.f, 5.f, 6.f};
  std::vector<uint16_t> f16 = {0x3C00, 0xC000};
  std::vector<uint16_t> bf16 = {0x3F80, 0x4040, 0x0000};
  std::vector<int32_t> i32 = {-7, 8};
  std::vector<int64_t> i64 = {int64_t(1) << 40};
  std::vector<SafetensorsEntry> in = {
      {"w.f32", TensorType::F32, {2, 3}, bytes_of(f32)},    {"w.f16", TensorType::F16, {2}, bytes_of(f16)},
      {"w.bf16", TensorType::BF16, {1, 3}, bytes_of(bf16)}, {"w.i32", TensorType::I32, {2}, bytes_of(i32)},
      {"w.i64", TensorType::I64, {}, bytes_of(i64)},  // a scalar
  };
  auto p = temp_dir() / "all.safetensors";
  write_safetensors(p, in, {{"format", "pt"}});
  auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f.tensors().size(), 5u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  for (const auto& e : in) {
    const SafetensorsTensor* t = f.find(e.name);
    ASSERT_TRUE(t) << e.name;
    EXPECT_EQ(t->type, e.type);
    EXPECT_EQ(t->shape, e.shape);
    ASSERT_EQ(t->data.size(), e.data.size());
    EXPECT_EQ(std::memcmp(t->data.data(), e.data.data(), e.data.size()), 0);
  }
  EXPECT_EQ(f.find("w.i64")->numel(), 1);
  EXPECT_EQ(f.find("nope"), nullptr);
}

TEST(Safetensors, FixtureModel) {
  auto path = wgc::test::fixtures_dir() / "tiny-llama2-f32" / "model.safetensors";
  WGC_REQUIRE_FILE(path);
  auto m = SafetensorsModel::open(path.parent_path());
  ASSERT_EQ(m.files().size(), 1u);
  EXPECT_EQ(m.tensors().size(), 21u);  // 2 x 9 per layer + embed + norm + lm_head
  const SafetensorsTensor* e = m.find("model.embed_tokens.weight");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, TensorType::F32);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{32000, 16}));
  EXPECT_EQ(m.find("model.layers.1.self_attn.k_proj.weight")->shape, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(m.total_bytes(), 32000u * 16 * 4 * 2 + 16 * 4 + 2 * (4 * 16 * 16 * 4 + 3 * 48 * 16 * 4 + 2 * 16 * 4));
}

TEST(Safetensors, FixtureGoldenI32) {
  auto path = wgc::test::fixtures_dir() / "tiny-llama2-f32" / "golden.safetensors";
  WGC_REQUIRE_FILE(path);
  auto f = SafetensorsFile::open(path);
  const SafetensorsTensor* t = f.find("p0.tokens");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->type, TensorType::I32);
  ASSERT_GE(t->numel(), 2);
  int32_t first;
  std::memcpy(&first, t->data.data(), 4);
  EXPECT_EQ(first, 1);  // BOS
  const SafetensorsTensor* l = f.find("p0.logits_last4");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->shape, (std::vector<int64_t>{4, 32000}));
}

TEST(Safetensors, Sharded) {
  fs::path dir = temp_dir("sharded");
  std::vector<float> a = {1, 2}, b = {3, 4, 5};
  std::vector<SafetensorsEntry> s1 = {{"a", TensorType::F32, {2}, bytes_of(a)}};
  std::vector<SafetensorsEntry> s2 = {{"b", TensorType::F32, {3}, bytes_of(b)}};
  write_safetensors(dir / "model-00001-of-00002.safetensors", s1);
  write_safetensors(dir / "model-00002-of-00002.safetensors", s2);
  write_file(dir / "model.safetensors.index.json",
             R"({"metadata": {"total_size": 20}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                 "b": "model-00002-of-00002.safetensors"}})");
  for (const fs::path& p : {dir, dir / "model.safetensors.index.json"}) {
    auto m = SafetensorsModel::open(p);
    EXPECT_EQ(m.files().size(), 2u);
    ASSERT_EQ(m.tensors().size(), 2u);
    ASSERT_TRUE(m.find("b"));
    EXPECT_EQ(m.find("b")->file, 1u);
    float x;
    std::memcpy(&x, m.find("b")->data.data() + 8, 4);
    EXPECT_EQ(x, 5.f);
    EXPECT_EQ(m.total_bytes(), 20u);
  }
}

TEST(SafetensorsBad, ShardedIndex) {
  fs::path dir = temp_dir("badshards");
  std::vector<float> a = {1, 2};
  std::vector<SafetensorsEntry> s1 = {{"a", TensorType::F32, {2}, bytes_of(a)}};
  write_safetensors(dir / "one.safetensors", s1);
  auto fails = [&](std::string_view index, std::vector<std::string> parts) {
    fs::path p = write_file(dir / "model.safetensors.index.json", index);
    try {
      SafetensorsModel::open(dir);
      ADD_FAILURE() << "no error for " << index;
    } catch (const wgc::Error& e) {
      for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  fails(R"({"weight_map": {"a": "missing.safetensors"}})", {"missing.safetensors", "cannot open"});
  fails(R"({"weight_map": {"zz": "one.safetensors"}})", {"tensor 'zz'", "one.safetensors", "does not hold it"});
  fails(R"({"weight_map": {"a": "../one.safetensors"}})", {"not a file in the same folder"});
  fails(R"({"weight_map": [1]})", {"model.safetensors.index.json", "weight_map"});
  fails(R"({"weight_map": {"a": "one.safetensors")", {"model.safetensors.index.json", "JSON error"});
  fs::path empty = temp_dir("empty");
  EXPECT_THROW(SafetensorsModel::open(empty), wgc::Error);
}

TEST(SafetensorsBad, EveryTruncationIsAnError) {
  std::vector<float> a = {1, 2, 3};
  std::vector<SafetensorsEntry> in = {{"a", TensorType::F32, {3}, bytes_of(a)}};
  auto bytes = safetensors_bytes(in);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(SafetensorsFile::parse(std::span(bytes.data(), n), "cut"), wgc::Error) << n;
  EXPECT_NO_THROW(SafetensorsFile::parse(bytes, "whole"));
}

TEST(SafetensorsBad, Files) {
  expect_error("short.safetensors", "abc", {"too short for the 8-byte header length"});
  std::string huge(8, '\xff');
  huge += "{}";
  expect_error("hdrlen.safetensors", huge, {"header length 18446744073709551615", "runs past the end"});
  expect_error("notjson.safetensors", raw_file("GGUF....", 0), {"not a JSON object"});
  expect_error("badjson.safetensors", raw_file("{\"a\": [1,", 0), {"JSON error", "expected a value"});
  expect_error("array.safetensors", raw_file("{\"a\": 1}", 0), {"tensor 'a'", "expected an object"});
  expect_error("nodtype.safetensors", raw_file(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", 4),
               {"tensor 'a'", "\"dtype\""});
  expect_error("dtype.safetensors", raw_file(R"({"a": {"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]}})", 1),
               {"tensor 'a'", "unsupported dtype \"F8_E4M3\""});
  expect_error("negshape.safetensors", raw_file(R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
               {"tensor 'a'", "shape entry -1"});
  expect_error("fracshape.safetensors",
               raw_file(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4),
               {"tensor 'a'", "shape entry 1.5"});
  expect_error("past.safetensors", raw_file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8),
               {"tensor 'a'", "[0, 16]", "run past the end of the data (8 bytes"});
  expect_error("hugeoff.safetensors",
               raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 99999999999999999999]}})", 8),
               {"tensor 'a'", "data offset"});
  expect_error("size.safetensors", raw_file(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8),
               {"tensor 'a'", "hold 8 bytes", "needs 12"});
  expect_error("reversed.safetensors", raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8),
               {"tensor 'a'", "decrease"});
  expect_error("overflow.safetensors",
               raw_file(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 8),
               {"tensor 'a'", "overflows"});
  expect_error("dup.safetensors",
               raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                            "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                        8),
               {"tensor 'a'", "duplicate"});
  expect_error("meta.safetensors", raw_file(R"({"__metadata__": 3})", 0), {"__metadata__"});
  EXPECT_THROW(SafetensorsFile::open(temp_dir() / "does-not-exist.safetensors"), wgc::Error);
}
