// The SentencePiece Unigram tokenizer (XLM-RoBERTa's): ids against Hugging Face tokenizers on the
// xlmr fixture's texts (tests/data/arch/xlmr, made by scripts/make_arch_fixtures.py: a Unigram
// model trained by tokenizers, a Precompiled character map compiled by sentencepiece), from its
// tokenizer.json and from llama.cpp's GGUF of it; base64 against RFC 4648's vectors; malformed
// maps and vocabularies refused with wgc::Error.
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/unigram.h"
#include "test_util.h"
#include "util/base64.h"
#include "util/error.h"
#include "util/json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace wgc;
using namespace wgc::llm;
namespace fs = std::filesystem;

namespace {

fs::path xlmr_dir() { return fs::path(WGC_SOURCE_DIR) / "tests/data/arch/xlmr"; }

std::vector<int32_t> ints(const json::Value& v) {
  std::vector<int32_t> out;
  for (const auto& x : v.items()) out.push_back(int32_t(x.as_int()));
  return out;
}

void check_cases(const fs::path& model) {
  SCOPED_TRACE(model.string());
  json::Value info = json::parse_file(xlmr_dir() / "golden.json");
  ASSERT_TRUE(info.find("tokenizer_cases"));
  Tokenizer tok = load_tokenizer(model);
  size_t n = 0;
  for (const auto& c : info["tokenizer_cases"].items()) {
    const std::string text = c["text"].as_string();
    EXPECT_EQ(tok.encode(text, true), ints(c["ids"])) << text;
    EXPECT_EQ(tok.encode(text, false), ints(c["ids_no_special"])) << text;
    ++n;
  }
  EXPECT_GE(n, 15u);
}

}  // namespace

TEST(UnigramTokenizer, TokenizerJsonMatchesHuggingFace) {
  WGC_REQUIRE_FILE(xlmr_dir() / "golden.json");
  const json::Value doc = json::parse_file(xlmr_dir() / "tokenizer.json");
  ASSERT_EQ(doc["model"]["type"].as_string(), "Unigram");
  // The fixture exercises the character map (a file without one would pass trivially here).
  ASSERT_EQ(doc["normalizer"]["type"].as_string(), "Precompiled");
  check_cases(xlmr_dir() / "tokenizer.json");
}

TEST(UnigramTokenizer, GgufMatchesHuggingFace) {
  WGC_REQUIRE_FILE(xlmr_dir() / "xlmr-bf16.gguf");
  check_cases(xlmr_dir() / "xlmr-bf16.gguf");
}

TEST(Base64, Rfc4648VectorsAndBadInput) {
  const char* plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char* coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(base64(std::as_bytes(std::span<const char>(plain[i], std::strlen(plain[i])))), coded[i]);
    EXPECT_EQ(base64_decode(coded[i], "t"), plain[i]);
  }
  EXPECT_THROW(base64_decode("Zm9v!", "t"), Error);
  EXPECT_THROW(base64_decode("Zg=a", "t"), Error);
  EXPECT_THROW(base64_decode("Z", "t"), Error);
}

TEST(UnigramTokenizer, MalformedMapsAndModelsAreRefused) {
  using unigram::Charsmap;
  EXPECT_THROW(Charsmap("ab", "t"), Error);                                  // no header
  EXPECT_THROW(Charsmap(std::string("\x08\0\0\0\0\0", 6), "t"), Error);      // trie past the end
  EXPECT_THROW(Charsmap(std::string("\x03\0\0\0\0\0\0\0", 8), "t"), Error);  // not whole units
  // A trie whose units point anywhere: normalising stops at the end instead of reading past it.
  std::string blob("\x08\0\0\0", 4);
  const uint32_t units[2] = {0xFFFFFFFFu, 0xFFFFFFFFu};
  blob.append(reinterpret_cast<const char*>(units), 8);
  blob += "x";
  EXPECT_EQ(Charsmap(blob, "t").normalize("abc"), "abc");

  TokenizerSpec spec;
  spec.source = "t";
  spec.vocab = {"<unk>",
                "\xE2\x96\x81"
                "a",
                "b"};
  spec.unigram = true;
  spec.unigram_scores = {0.0, -1.0};  // one short
  EXPECT_THROW(Tokenizer{spec}, Error);
  spec.unigram_scores = {0.0, -1.0, -2.0};
  spec.unk_id = 0;
  spec.fuse_unk = true;
  PreTokenizerStep ms;
  ms.kind = PreTokenizerStep::Kind::Metaspace;
  spec.pre_tokenizer.push_back(ms);
  Tokenizer tok(spec);
  // "▁a" then "b", and the unknown "c" "d" fused into one <unk>.
  EXPECT_EQ(tok.encode("abcd", false), (std::vector<int32_t>{1, 2, 0}));
  const json::Value bad = json::parse(R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})");
  EXPECT_THROW(spec_from_hf_json(bad, json::Value(), "t"), Error);
}
