// BERT's WordPiece tokenizer against Hugging Face `tokenizers` (through @anush008/tokenizers in
// Node.js): tokenizer.json files written here with a WordPiece model over a vocabulary of the
// corpus' own characters (each alone and as a "##" continuation) plus whole words and subwords, so
// that the normalizer (BertNormalizer: control characters, Chinese characters, accents, lowercase;
// or NFD + Lowercase + StripAccents), the pre-tokenizer (BertPreTokenizer, Whitespace), the
// longest-match split, [UNK] and the decoder all decide ids. Plus the GGUF form of a BERT
// vocabulary (llama.cpp's phantom-space pieces). Skips, saying why, when node or the npm packages
// are absent (scripts/setup_test_refs.sh).
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "llm/tokenizer/unicode.h"
#include "test_util.h"
#include "tokenizer_ref/tok_test_util.h"
#include "util/json.h"

#include <fstream>
#include <set>

namespace wgc::llm {
namespace {

namespace fs = std::filesystem;
using test::show;

std::vector<std::string> texts() {
  auto t = test::corpus(160);
  for (const char* extra :
       {"Hello, World!", "The QUICK brown fox's jumped.", "naïve café Ångström résumé", "東京は日本の首都です。",
        "tab\there\nnewline\r\nend", "ctrl\x01\x02 chars\xE2\x80\x8B zero-width", "don't stop; it's 3.14!",
        "[CLS] x [SEP]", "running runner runs ran", "unbelievably-long-hyphenated-words", "ÉCOLE İstanbul ΣΊΣΥΦΟΣ",
        "a [MASK] b", "supercalifragilisticexpialidocious", "  leading and trailing  ", "", "ﬁ ligature ①②"})
    t.push_back(extra);
  return t;
}

// The WordPiece vocabulary: specials, then words and subwords, then every character of the texts
// alone and with "##".
json::Value vocab_of(const std::vector<std::string>& ts) {
  std::vector<std::string> pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (const char* w :
       {"the",   "hello", "world", "run",  "##ning", "##ner", "##s",   "un",    "##believ", "##ably", "quick",
        "brown", "fox",   "jump",  "##ed", "cafe",   "naive", "super", "##cal", "##i",      "long",   "word",
        "a",     "b",     "it",    "don",  "stop",   "t",     "s",     "the",   "##e",      "##ing"})
    pieces.push_back(w);
  for (const auto& t : ts)
    for (size_t i = 0; i < t.size();) {
      std::string c = unicode::to_utf8(unicode::next_codepoint(t, i));
      if (c == "\xE2\x96\x81") continue;  // U+2581: llama.cpp's GGUF form cannot hold "##\u2581"
      pieces.push_back(c);
      pieces.push_back("##" + c);
    }
  json::Value v = json::Value::object();
  std::set<std::string> seen;
  int64_t id = 0;
  for (const auto& p : pieces)
    if (seen.insert(p).second) v.set(p, id++);
  return v;
}

json::Value special_token(int64_t id, const std::string& s) {
  json::Value t = json::Value::object();
  t.set("id", id);
  t.set("content", s);
  t.set("single_word", false);
  t.set("lstrip", false);
  t.set("rstrip", false);
  t.set("normalized", false);
  t.set("special", true);
  return t;
}

json::Value bert_doc(const std::vector<std::string>& ts, const std::string& normalizer, const std::string& pre,
                     int max_chars = 100) {
  json::Value doc = json::Value::object();
  doc.set("version", "1.0");
  json::Value added = json::Value::array();
  const char* names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int64_t i = 0; i < 5; ++i) added.push_back(special_token(i, names[i]));
  doc.set("added_tokens", std::move(added));
  doc.set("normalizer", json::parse(normalizer, "normalizer"));
  doc.set("pre_tokenizer", json::parse(pre, "pre_tokenizer"));
  doc.set("post_processor", json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                         "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}})",
                                        "post"));
  doc.set("decoder", json::parse(R"({"type": "WordPiece", "prefix": "##", "cleanup": true})", "decoder"));
  json::Value model = json::Value::object();
  model.set("type", "WordPiece");
  model.set("unk_token", "[UNK]");
  model.set("continuing_subword_prefix", "##");
  model.set("max_input_chars_per_word", int64_t(max_chars));
  model.set("vocab", vocab_of(ts));
  doc.set("model", std::move(model));
  return doc;
}

void compare_doc(const std::string& name, const json::Value& doc, const std::vector<std::string>& ts) {
  auto dir = test::temp_dir("wordpiece_" + name);
  auto p = dir / "tokenizer.json";
  std::ofstream(p, std::ios::binary) << doc.dump();
  Tokenizer tok(spec_from_hf_json(doc, json::Value(), p.string()));
  std::string why;
  auto ref = test::run_reference(p, ts, why);
  if (!ref) GTEST_SKIP() << why;
  size_t bad = 0, bad_text = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    auto a = tok.encode(ts[i], true), b = tok.encode(ts[i], false);
    if ((a != ref->with_special[i] || b != ref->without_special[i]) && bad++ < 8)
      ADD_FAILURE() << name << " " << show(ts[i]) << "\n  ours " << show(a) << "\n  hf   "
                    << show(ref->with_special[i]);
    const auto& ids = ref->with_special[i];
    if ((tok.decode(ids, false) != ref->decoded[i] || tok.decode(ids, true) != ref->decoded_skip[i]) && bad_text++ < 8)
      ADD_FAILURE() << name << " decode " << show(ids) << "\n  ours " << show(tok.decode(ids, true)) << "\n  hf   "
                    << show(ref->decoded_skip[i]);
  }
  EXPECT_EQ(bad, 0u) << name << ": texts whose ids differ, of " << ts.size();
  EXPECT_EQ(bad_text, 0u);
}

}  // namespace

TEST(WordPiece, BertUncasedMatchesHfTokenizers) {
  auto ts = texts();
  compare_doc("uncased",
              bert_doc(ts, R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                               "strip_accents": null, "lowercase": true})",
                       R"({"type": "BertPreTokenizer"})"),
              ts);
}

TEST(WordPiece, BertCasedMatchesHfTokenizers) {
  auto ts = texts();
  compare_doc("cased",
              bert_doc(ts, R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": false,
                               "strip_accents": null, "lowercase": false})",
                       R"({"type": "BertPreTokenizer"})", 8),
              ts);
}

// The Whitespace pre-tokenizer's \w comes from Oniguruma's Unicode tables in tokenizers, older
// than PCRE2's: letters added since (U+0E9E, Unicode 12) split differently, so this variant runs
// on the corpus without the generated random code points.
TEST(WordPiece, SequenceNormalizerAndWhitespaceMatchHfTokenizers) {
  auto ts = texts();
  ts.erase(ts.begin() + std::ptrdiff_t(test::corpus(0).size()), ts.end() - 16);
  compare_doc("sequence",
              bert_doc(ts, R"({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"},
                               {"type": "StripAccents"}]})",
                       R"({"type": "Whitespace"})"),
              ts);
}

TEST(WordPiece, LongestMatchUnkAndDecodeWithoutReference) {
  auto ts = std::vector<std::string>{"x,!"};
  json::Value doc = bert_doc(ts, R"({"type": "BertNormalizer"})", R"({"type": "BertPreTokenizer"})", 12);
  Tokenizer tok(spec_from_hf_json(doc, json::Value(), "inline"));
  auto id = [&](const char* p) { return *tok.token_id(p); };
  // "running" = run ##ning (the longest prefix first), "Hello" lowercased, [UNK] for a word with a
  // character the vocabulary lacks, and for a word past max_input_chars_per_word.
  EXPECT_EQ(tok.encode("Running HELLO", false), (std::vector<int32_t>{id("run"), id("##ning"), id("hello")}));
  EXPECT_EQ(tok.encode("hello zebra", false), (std::vector<int32_t>{id("hello"), id("[UNK]")}));
  EXPECT_EQ(tok.encode("runningrunning", false), (std::vector<int32_t>{id("[UNK]")}));
  EXPECT_EQ(tok.encode("hi", true).front(), id("[CLS]"));
  EXPECT_EQ(tok.decode(tok.encode("hello, world!", true), true), "hello, world!");
}

// llama.cpp's GGUF form of a BERT vocabulary ("bert" model, phantom-space pieces) gives the ids of
// the tokenizer.json it was converted from.
TEST(WordPiece, GgufBertVocabularyMatchesTokenizerJson) {
  auto ts = texts();
  json::Value doc = bert_doc(ts, R"({"type": "BertNormalizer"})", R"({"type": "BertPreTokenizer"})");
  Tokenizer hf(spec_from_hf_json(doc, json::Value(), "inline"));
  std::vector<std::string> tokens(hf.vocab_size());
  std::vector<int32_t> types(hf.vocab_size(), 1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = hf.token(int32_t(i));
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
      types[i] = 3;
    } else if (t.starts_with("##")) {
      t = t.substr(2);
    } else {
      t = "\xE2\x96\x81" + t;
    }
    tokens[i] = t;
  }
  GgufWriter w;
  w.add("general.architecture", GgufMetaValue::string("bert"));
  w.add("tokenizer.ggml.model", GgufMetaValue::string("bert"));
  w.add("tokenizer.ggml.tokens", GgufMetaValue::strings(tokens));
  w.add("tokenizer.ggml.token_type", GgufMetaValue::array(std::span<const int32_t>(types)));
  w.add("tokenizer.ggml.bos_token_id", GgufMetaValue::u32(2));
  w.add("tokenizer.ggml.seperator_token_id", GgufMetaValue::u32(3));
  w.add("tokenizer.ggml.unknown_token_id", GgufMetaValue::u32(1));
  w.add("tokenizer.ggml.padding_token_id", GgufMetaValue::u32(0));
  auto p = test::temp_dir("wordpiece_gguf") / "vocab.gguf";
  GgufWriteOptions wo;
  wo.progress = false;
  w.write(p, {}, wo);
  Tokenizer g = load_tokenizer(p);
  size_t bad = 0;
  for (const auto& t : ts)
    if (g.encode(t, true) != hf.encode(t, true) && bad++ < 5)
      ADD_FAILURE() << show(t) << "\n  gguf " << show(g.encode(t, true)) << "\n  json " << show(hf.encode(t, true));
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(g.decode(g.encode("Hello, world!", true), true), "hello, world!");
}

}  // namespace wgc::llm
