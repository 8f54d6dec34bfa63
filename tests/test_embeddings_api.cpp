// POST /v1/embeddings' request handling (server/embeddings.h) without HTTP: every input shape
// OpenAI takes, float and base64 answers that decode to the same numbers, usage counts, dimensions,
// and the errors (status, param) for what it refuses. The model is a stand-in whose vectors say
// which tokens it was given; the HTTP route itself is checked by tests/serve/embeddings.test.mjs.
#include "server/api_error.h"
#include "server/embeddings.h"
#include "test_util.h"
#include "util/base64.h"
#include "util/json.h"

#include <cmath>
#include <cstring>

using namespace wgc;
using namespace wgc::server;

namespace {

llm::Tokenizer word_tokenizer() {
  llm::TokenizerSpec s;
  s.source = "test";
  s.vocab = {"[UNK]", "[CLS]", "[SEP]", "hello", "world", "a", "b", "c"};
  s.wordpiece = true;
  s.unk_id = 0;
  s.continuing_subword_prefix = "##";
  llm::PreTokenizerStep p;
  p.kind = llm::PreTokenizerStep::Kind::Bert;
  s.pre_tokenizer.push_back(p);
  s.prefix = {1};
  s.suffix = {2};
  return llm::Tokenizer(std::move(s));
}

// dim 4: [n tokens, first id, last id, sum of ids] / its norm (so a test can tell sequences apart).
std::shared_ptr<Embedder> stand_in(const llm::Tokenizer& tok, int* calls) {
  auto e = std::make_shared<Embedder>();
  e->model_id = "tiny-embed";
  e->tokenizer = &tok;
  e->dim = 4;
  e->max_tokens = 6;
  e->vocab = 8;
  e->run = [calls](std::span<const std::vector<int32_t>> seqs) {
    ++*calls;
    std::vector<float> out;
    for (const auto& s : seqs) {
      double v[4] = {double(s.size()), double(s.front()), double(s.back()), 0};
      for (int32_t id : s) v[3] += id;
      double n = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3]);
      for (double x : v) out.push_back(float(x / n));
    }
    return out;
  };
  return e;
}

std::vector<float> decode_base64(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : 63;
  };
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    uint32_t v = uint32_t(val(s[i]) << 18 | val(s[i + 1]) << 12);
    if (s[i + 2] != '=') v |= uint32_t(val(s[i + 2]) << 6);
    if (s[i + 3] != '=') v |= uint32_t(val(s[i + 3]));
    bytes.push_back(uint8_t(v >> 16));
    if (s[i + 2] != '=') bytes.push_back(uint8_t(v >> 8));
    if (s[i + 3] != '=') bytes.push_back(uint8_t(v));
  }
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

std::vector<float> floats(const json::Value& arr) {
  std::vector<float> v;
  for (const auto& x : arr.items()) v.push_back(float(x.as_double()));
  return v;
}

ApiError error_of(Embedder& e, const std::string& body) {
  try {
    embeddings_response(body, e);
  } catch (const ApiError& err) {
    return err;
  }
  ADD_FAILURE() << "no error for " << body;
  return ApiError(0, "");
}

}  // namespace

TEST(EmbeddingsApi, Base64IsRfc4648) {
  auto b = [](const char* s) { return base64(std::as_bytes(std::span<const char>(s, std::strlen(s)))); };
  EXPECT_EQ(b(""), "");
  EXPECT_EQ(b("f"), "Zg==");
  EXPECT_EQ(b("fo"), "Zm8=");
  EXPECT_EQ(b("foo"), "Zm9v");
  EXPECT_EQ(b("foobar"), "Zm9vYmFy");
}

TEST(EmbeddingsApi, EveryInputShapeFloatAndBase64) {
  auto tok = word_tokenizer();
  int calls = 0;
  auto e = stand_in(tok, &calls);
  // A string: [CLS] hello world [SEP].
  json::Value r = json::parse(embeddings_response(R"({"input": "hello world", "model": "tiny-embed"})", *e));
  EXPECT_EQ(r["object"].as_string(), "list");
  EXPECT_EQ(r["model"].as_string(), "tiny-embed");
  ASSERT_EQ(r["data"].size(), 1u);
  EXPECT_EQ(r["data"][0]["object"].as_string(), "embedding");
  EXPECT_EQ(r["data"][0]["index"].as_int(), 0);
  std::vector<float> one = floats(r["data"][0]["embedding"]);
  ASSERT_EQ(one.size(), 4u);
  EXPECT_NEAR(one[1] / one[0], 1.0 / 4, 1e-6);  // first id 1 ([CLS]) over 4 tokens
  EXPECT_EQ(r["usage"]["prompt_tokens"].as_int(), 4);
  EXPECT_EQ(r["usage"]["total_tokens"].as_int(), 4);
  // An array of strings and token arrays, in one call to the model, in order.
  r = json::parse(embeddings_response(R"({"input": ["a b c", [5, 6], "hello"], "encoding_format": "float"})", *e));
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(r["data"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r["data"][i]["index"].as_int(), i);
  EXPECT_EQ(r["usage"]["prompt_tokens"].as_int(), 5 + 2 + 3);
  std::vector<float> tok_arr = floats(r["data"][1]["embedding"]);
  EXPECT_NEAR(tok_arr[1] / tok_arr[0], 5.0 / 2, 1e-5);  // token arrays go in as given: no [CLS]
  // One token array.
  r = json::parse(embeddings_response(R"({"input": [3, 4]})", *e));
  EXPECT_EQ(r["usage"]["prompt_tokens"].as_int(), 2);
  // base64: the same float32 values.
  json::Value f = json::parse(embeddings_response(R"({"input": ["hello world", "c"]})", *e));
  json::Value b =
      json::parse(embeddings_response(R"({"input": ["hello world", "c"], "encoding_format": "base64"})", *e));
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(decode_base64(b["data"][i]["embedding"].as_string()), floats(f["data"][i]["embedding"]));
  // dimensions: the first values, normalised again.
  r = json::parse(embeddings_response(R"({"input": "hello world", "dimensions": 2})", *e));
  std::vector<float> two = floats(r["data"][0]["embedding"]);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_NEAR(two[0] * two[0] + two[1] * two[1], 1.0, 1e-6);
  EXPECT_NEAR(two[1] / two[0], one[1] / one[0], 1e-6);
}

TEST(EmbeddingsApi, ErrorsNameTheField) {
  auto tok = word_tokenizer();
  int calls = 0;
  auto e = stand_in(tok, &calls);
  struct Case {
    const char* body;
    int status;
    const char* param;
    const char* says;
  };
  for (const Case& c :
       {Case{"not json", 400, "", "request body"}, Case{"[1]", 400, "", "object"},
        Case{R"({"model": "tiny-embed"})", 400, "input", "required"}, Case{R"({"input": ""})", 400, "input", "empty"},
        Case{R"({"input": []})", 400, "input", "empty"}, Case{R"({"input": [[]]})", 400, "input", "empty"},
        Case{R"({"input": 3})", 400, "input", "string"}, Case{R"({"input": [1, "a"]})", 400, "input", "not a token id"},
        Case{R"({"input": [[1, 8]]})", 400, "input", "outside the vocabulary"},
        Case{R"({"input": [-1]})", 400, "input", "outside the vocabulary"},
        Case{R"({"input": ["a", {"x": 1}]})", 400, "input", "input[1]"},
        Case{R"({"input": "a b c a b c"})", 400, "input", "maximum is 6"},
        Case{R"({"input": "a", "model": "gpt-4"})", 404, "model", "does not exist"},
        Case{R"({"input": "a", "encoding_format": "hex"})", 400, "encoding_format", "base64"},
        Case{R"({"input": "a", "dimensions": 5})", 400, "dimensions", "1..4"},
        Case{R"({"input": "a", "dimensions": 0})", 400, "dimensions", "1..4"}}) {
    ApiError err = error_of(*e, c.body);
    EXPECT_EQ(err.status, c.status) << c.body;
    EXPECT_EQ(err.param, c.param) << c.body;
    EXPECT_TRUE(test::has(err.what(), c.says)) << c.body << ": " << err.what();
  }
  EXPECT_EQ(calls, 0);  // nothing reached the model
  std::string many = R"({"input": [)";
  for (int i = 0; i < 2049; ++i) many += std::string(i ? "," : "") + "\"a\"";
  EXPECT_EQ(error_of(*e, many + "]}").param, "input");
}
