// Tokenizers: unit tests on small hand-made vocabularies, the fixtures' goldens (tokenizer.json and
// GGUF), GGUF vs tokenizer.json on the corpus, streaming decode, errors. No Node.js needed here
// (test_tokenizer_ref compares against Hugging Face tokenizers).
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "llm/tokenizer/unicode.h"
#include "test_util.h"
#include "tokenizer_ref/tok_test_util.h"

#include <chrono>
#include <fstream>

namespace wgc::llm {
namespace {

using test::fixtures_dir;
using test::models_dir;
namespace fs = std::filesystem;

// ---- Unicode helpers ---------------------------------------------------------------------------

TEST(Unicode, ByteLevelAlphabet) {
  const auto& m = unicode::byte_to_unicode();
  EXPECT_EQ(m[' '], char32_t(0x120));   // Ġ
  EXPECT_EQ(m['\n'], char32_t(0x10A));  // Ċ
  EXPECT_EQ(m['a'], char32_t('a'));
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unicode::unicode_to_byte(m[size_t(b)]), b);
  EXPECT_EQ(unicode::bytes_to_byte_level(" hi\n"), "\xC4\xA0hi\xC4\x8A");
}

TEST(Unicode, Utf8) {
  EXPECT_TRUE(unicode::valid_utf8("h\xC3\xA9llo \xF0\x9F\x9A\x80"));
  EXPECT_FALSE(unicode::valid_utf8("\xC3"));
  EXPECT_FALSE(unicode::valid_utf8("\xED\xA0\x80"));  // surrogate
  EXPECT_FALSE(unicode::valid_utf8("\xC0\xAF"));      // overlong
  EXPECT_EQ(unicode::sanitize_utf8("a\xFF"
                                   "b\xE6\x97"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(unicode::complete_utf8_prefix("ab\xE6\x97"), 2u);
  EXPECT_EQ(unicode::complete_utf8_prefix("ab\xE6\x97\xA5"), 5u);
  EXPECT_EQ(unicode::complete_utf8_prefix("ab\xFF"), 3u);
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(unicode::nfc("cafe\xCC\x81"), "caf\xC3\xA9");                           // e + acute -> é
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB"), "\xC3\x85");                              // Angstrom sign -> Å
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(unicode::nfc("x\xCC\x87\xCC\xA3"), "\xE1\xBA\x8B\xCC\xA3");             // reordered, then x + dot above
  EXPECT_EQ(unicode::nfc("\xE0\xA4\x95\xE0\xA4\xBC"), "\xE0\xA4\x95\xE0\xA4\xBC");  // excluded
  EXPECT_EQ(unicode::nfc("plain ascii"), "plain ascii");
}

// ---- Hand-made vocabularies --------------------------------------------------------------------

// Byte-level BPE over the 256-character alphabet plus a few merges.
TokenizerSpec tiny_byte_level(bool bad_merge = false) {
  TokenizerSpec s;
  s.source = "tiny-byte-level";
  for (int b = 0; b < 256; ++b) s.vocab.push_back(unicode::to_utf8(unicode::byte_to_unicode()[size_t(b)]));
  auto merge = [&](std::string a, std::string b) {
    s.merges.emplace_back(a, b);
    s.vocab.push_back(a + b);
  };
  merge("h", "e");
  merge("l", "l");
  merge("he", "ll");
  merge("hell", "o");
  merge("\xC4\xA0", "w");  // Ġw
  merge("o", "r");
  merge("\xC4\xA0w", "or");
  if (bad_merge) merge("\xC4\xA0wor", "ld");  // "ld" is no piece
  PreTokenizerStep split;
  split.kind = PreTokenizerStep::Kind::Split;
  split.pattern = R"( ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+)";
  PreTokenizerStep bl;
  bl.kind = PreTokenizerStep::Kind::ByteLevel;
  bl.use_regex = false;
  s.pre_tokenizer = {split, bl};
  s.decoder = {{DecoderStep::Kind::ByteLevel, "", "", 0, 0, true, true}};
  AddedToken bos{int32_t(s.vocab.size()), "<bos>", true, false, false, false, false};
  s.vocab.push_back("<bos>");
  s.added.push_back(bos);
  s.prefix = {bos.id};
  s.bos_id = bos.id;
  return s;
}

TEST(Tokenizer, ByteLevelMerges) {
  Tokenizer tok(tiny_byte_level());
  auto id = [&](const std::string& p) { return *tok.token_id(p); };
  auto ids = tok.encode("hello world");
  std::vector<int32_t> want = {id("<bos>"), id("hello"), id("\xC4\xA0wor"), id("l"), id("d")};
  EXPECT_EQ(ids, want);
  EXPECT_EQ(tok.decode(ids), "<bos>hello world");
  EXPECT_EQ(tok.decode(ids, true), "hello world");
  EXPECT_EQ(tok.encode("hello", false), std::vector<int32_t>{id("hello")});
  EXPECT_EQ(tok.encode("", true), std::vector<int32_t>{id("<bos>")});
  EXPECT_TRUE(tok.encode("", false).empty());
  // Added token inside text; bytes of a 4-byte character.
  auto e = tok.encode("x<bos>\xF0\x9F\x9A\x80", false);
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[1], id("<bos>"));
  EXPECT_EQ(tok.decode(e), "x<bos>\xF0\x9F\x9A\x80");
}

TEST(Tokenizer, MergeNamingMissingPieceThrows) {
  auto spec = tiny_byte_level(true);
  try {
    Tokenizer tok(spec);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("tiny-byte-level"), std::string::npos) << m;
    EXPECT_NE(m.find("merges[7]"), std::string::npos) << m;
  }
}

// SentencePiece-style: ▁ prefix, scores, byte fallback.
TokenizerSpec tiny_spm() {
  TokenizerSpec s;
  s.source = "tiny-spm";
  s.vocab = {"<unk>", "<s>", "</s>"};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    s.vocab.push_back(name);
  }
  s.scores.assign(s.vocab.size(), -std::numeric_limits<float>::infinity());
  auto piece = [&](std::string p, float score) {
    s.vocab.push_back(p);
    s.scores.push_back(score);
  };
  const std::string sp = "\xE2\x96\x81";  // ▁
  piece(sp, -1);
  piece("h", -2), piece("i", -2), piece("t", -2), piece("e", -2), piece("r", -2);
  piece(sp + "h", -3);
  piece(sp + "hi", -4);
  piece("er", -5);
  piece("th", -6);
  piece("the", -7);
  piece("ther", -20);
  piece("e" + std::string("\xC3\xA9"), -1);  // "eé" (é itself is no piece: byte fallback)
  using NK = NormalizerStep::Kind;
  s.normalizer = {{NK::Prepend, sp, "", false, false, true, true, true, true},
                  {NK::Replace, " ", sp, false, false, true, true, true, true}};
  using DK = DecoderStep::Kind;
  s.decoder = {{DK::Replace, sp, " ", 0, 0, true, true},
               {DK::ByteFallback, "", "", 0, 0, true, true},
               {DK::Fuse, "", "", 0, 0, true, true},
               {DK::Strip, " ", "", 1, 0, true, true}};
  s.byte_fallback = true;
  s.fuse_unk = true;
  s.unk_id = 0;
  for (int i = 0; i < 3; ++i) s.added.push_back({i, s.vocab[size_t(i)], true, false, false, false, false});
  s.prefix = {1};
  s.bos_id = 1;
  s.eos_id = 2;
  s.stop_ids = {2};
  return s;
}

TEST(Tokenizer, SentencePieceScoresAndByteFallback) {
  Tokenizer tok(tiny_spm());
  auto id = [&](const std::string& p) { return *tok.token_id(p); };
  const std::string sp = "\xE2\x96\x81";
  EXPECT_EQ(tok.encode("hi"), (std::vector<int32_t>{1, id(sp + "hi")}));
  // "ther": t+h (-6) before e+r (-5)? No: er (-5) wins, then th (-6); "ther" (-20) needs th+er.
  EXPECT_EQ(tok.encode("ther", false), (std::vector<int32_t>{id(sp), id("ther")}));
  // é (C3 A9) is no piece: two byte tokens.
  auto ids = tok.encode("h\xC3\xA9", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{id(sp + "h"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok.decode(ids), "h\xC3\xA9");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{3 + 0xC3}), "\xEF\xBF\xBD");
  // Special tokens split the text; each part gets its own ▁.
  auto s = tok.encode("hi</s>hi", false);
  EXPECT_EQ(s, (std::vector<int32_t>{id(sp + "hi"), 2, id(sp + "hi")}));
  EXPECT_EQ(tok.decode(s), "hi</s> hi");
  EXPECT_EQ(tok.decode(s, true), "hi hi");
  EXPECT_TRUE(tok.is_stop(2));
  EXPECT_FALSE(tok.is_stop(1));
}

TEST(Tokenizer, DecodeBytesKeepsPartsOfCharacters) {
  Tokenizer tok(tiny_spm());
  // Byte-fallback tokens of é (C3 A9): one byte each, where decode() says U+FFFD.
  EXPECT_EQ(tok.decode_bytes(std::vector<int32_t>{3 + 0xC3}), "\xC3");
  EXPECT_EQ(tok.decode_bytes(std::vector<int32_t>{3 + 0xA9}), "\xA9");
  const std::string text = "hi h\xC3\xA9 \xF0\x9F\x9A\x80 ther";
  auto ids = tok.encode(text, false);
  EXPECT_EQ(tok.decode_bytes(ids), tok.decode(ids));  // valid text: the same as decode()
  // Byte-level: each token's bytes, joined, are the text.
  Tokenizer bl(tiny_byte_level());
  const std::string utf8 = "a\xC3\xA9\xE4\xB8\xAD";
  auto bl_ids = bl.encode(utf8, false);
  std::string joined;
  for (int32_t id : bl_ids) joined += bl.decode_bytes(std::span<const int32_t>(&id, 1));
  EXPECT_EQ(joined, utf8);
  EXPECT_EQ(bl.decode_bytes(bl_ids), bl.decode(bl_ids));
}

TEST(Tokenizer, AddedTokenFlags) {
  auto spec = tiny_byte_level();
  AddedToken mask{int32_t(spec.vocab.size()), "<mask>", true, false, true, true, false};
  spec.vocab.push_back("<mask>");
  spec.added.push_back(mask);
  AddedToken word{int32_t(spec.vocab.size()), "cat", false, true, false, false, true};
  spec.vocab.push_back("cat");
  spec.added.push_back(word);
  spec.prefix.clear();
  Tokenizer tok(spec);
  auto id = [&](const std::string& p) { return *tok.token_id(p); };
  // lstrip/rstrip swallow the spaces around <mask>.
  EXPECT_EQ(tok.encode("a  <mask>  b"), (std::vector<int32_t>{id("a"), mask.id, id("b")}));
  // single_word: "cat" alone is the token, inside "concatenate" it is not.
  EXPECT_EQ(tok.encode("cat"), std::vector<int32_t>{word.id});
  auto in_word = tok.encode("concatenate");
  EXPECT_EQ(std::count(in_word.begin(), in_word.end(), word.id), 0);
}

TEST(Tokenizer, StreamDecoderNeverSplitsCharacters) {
  Tokenizer tok(tiny_spm());
  const std::string text = "hi h\xC3\xA9 \xF0\x9F\x9A\x80 ther";
  auto ids = tok.encode(text);
  StreamDecoder sd(tok);
  std::string all;
  for (int32_t id : ids) {
    std::string piece = sd.push(id);
    EXPECT_TRUE(unicode::valid_utf8(piece)) << test::show(piece);
    all += piece;
  }
  all += sd.flush();
  EXPECT_EQ(all, tok.decode(ids));
  // skip_special: the leading space rule still holds after BOS.
  StreamDecoder sd2(tok, true);
  std::string s2;
  for (int32_t id : ids) s2 += sd2.push(id);
  s2 += sd2.flush();
  EXPECT_EQ(s2, text);
  // An incomplete character at the end comes out as U+FFFD on flush.
  StreamDecoder sd3(tok);
  EXPECT_EQ(sd3.push(3 + 0xF0), "");
  EXPECT_EQ(sd3.push(3 + 0x9F), "");
  EXPECT_EQ(sd3.flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Tokenizer, BadSpecErrors) {
  auto s = tiny_spm();
  s.scores.pop_back();
  EXPECT_THROW(Tokenizer{s}, Error);
  auto s2 = tiny_spm();
  s2.bos_id = 99999;
  try {
    Tokenizer t{s2};
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiny-spm: bos id 99999"), std::string::npos) << e.what();
  }
  Tokenizer ok(tiny_spm());
  EXPECT_THROW(ok.decode(std::vector<int32_t>{-1}), Error);
  EXPECT_THROW(ok.decode(std::vector<int32_t>{int32_t(ok.vocab_size())}), Error);
}

// ---- tokenizer.json errors ---------------------------------------------------------------------

std::string hf_error(const std::string& doc_text) {
  auto doc = json::parse(doc_text, "t.json");
  try {
    Tokenizer t(spec_from_hf_json(doc, json::Value(), "t.json"));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfJson, ErrorsNameFileAndField) {
  EXPECT_EQ(hf_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})"), "t.json: model: missing 'merges'");
  EXPECT_EQ(hf_error(R"({"model": {"type": "WordLevel", "vocab": {}}})"),
            "t.json: model.type: model 'WordLevel' is not supported (BPE, WordPiece and Unigram are)");
  EXPECT_EQ(hf_error(R"({"model": {"type": "Unigram", "vocab": []}})"), "t.json: the vocabulary is empty");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": "x"}, "merges": []}})"),
            "t.json: model.vocab.a: expected a number, got string");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": 0}, "merges": ["a"]}})"),
            "t.json: model.merges[0]: expected two pieces separated by one space, got 'a'");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": 0}, "merges": []},
                        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKD"}]}})"),
            "t.json: normalizer.normalizers[0].type: normalizer 'NFKD' is not supported (NFC, NFD, Prepend, "
            "Replace, Strip, StripAccents, Lowercase, BertNormalizer, Precompiled, Sequence are)");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": 0}, "merges": []},
                        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Isolated"}})")
                .substr(0, 53),
            "t.json: pre_tokenizer 0: regex does not compile at of");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": [{"content": "x"}]})"),
            "t.json: added_tokens[0]: missing 'id'");
  EXPECT_EQ(hf_error(R"({"model": {"vocab": {"a": 0}, "merges": []},
                        "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}],
                                           "special_tokens": {}}})"),
            "t.json: post_processor.single[0]: special token '<s>' is not in special_tokens");
}

TEST(HfJson, BadFileNamesTheFile) {
  auto p = fs::temp_directory_path() / "wgc_bad_tokenizer.json";
  std::ofstream(p) << "{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [}";
  try {
    load_tokenizer(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  fs::remove(p);
  EXPECT_THROW(load_tokenizer("/nonexistent/tokenizer.json"), Error);
}

// ---- GGUF metadata -----------------------------------------------------------------------------

// A byte-level BPE vocabulary in GGUF form: the 256 byte characters, "he", "ll", "hell", "hello".
GgufWriter tiny_gguf(const std::string& model = "gpt2") {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  if (!model.empty()) w.add_string("tokenizer.ggml.model", model);
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(unicode::to_utf8(unicode::byte_to_unicode()[size_t(b)]));
  for (const char* t : {"he", "ll", "hell", "hello", "<|bos|>", "<|eos|>", "<think>"}) tokens.push_back(t);
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  std::vector<int32_t> types(tokens.size(), 1);
  types[260] = types[261] = 3;  // control
  types[262] = 4;               // user-defined
  w.add_i32_array("tokenizer.ggml.token_type", types);
  return w;
}

std::string gguf_error(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  try {
    auto f = GgufFile::parse(bytes, "t.gguf");
    Tokenizer t(spec_from_gguf(f));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Gguf, ByteLevelVocabulary) {
  auto w = tiny_gguf();
  std::vector<std::string> merges = {"h e", "l l", "he ll", "hell o"};
  w.add_string_array("tokenizer.ggml.merges", merges);
  w.add_string("tokenizer.ggml.pre", "llama-bpe");
  w.add_u32("tokenizer.ggml.bos_token_id", 260);
  w.add_u32("tokenizer.ggml.eos_token_id", 261);
  w.add_bool("tokenizer.ggml.add_eos_token", true);
  w.add_string("tokenizer.chat_template", "{{ bos_token }}x");
  auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes, "t.gguf");
  Tokenizer tok(spec_from_gguf(f));
  // llama-bpe: BOS by default; add_eos_token adds EOS; <|eos|> in the text is one token.
  EXPECT_EQ(tok.encode("hello<|eos|>"), (std::vector<int32_t>{260, 259, 261, 261}));
  EXPECT_EQ(tok.encode("hello <think>", false), (std::vector<int32_t>{259, ' ', 262}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{260, 259, 262, 261}, true), "hello<think>");
  EXPECT_EQ(tok.bos_token(), "<|bos|>");
  EXPECT_EQ(tok.chat_template(), "{{ bos_token }}x");
  EXPECT_TRUE(tok.is_stop(261));
  // add_bos_token = false wins over the pre-tokenizer's default.
  w.add_bool("tokenizer.ggml.add_bos_token", false);
  auto bytes2 = w.to_bytes();
  Tokenizer tok2(spec_from_gguf(GgufFile::parse(bytes2, "t.gguf")));
  EXPECT_EQ(tok2.encode("hello"), (std::vector<int32_t>{259, 261}));
}

TEST(Gguf, ErrorsNameFileAndKey) {
  EXPECT_EQ(gguf_error(tiny_gguf("")), "t.gguf: tokenizer.ggml.model: missing: the file holds no tokenizer");
  EXPECT_EQ(gguf_error(tiny_gguf("rwkv")),
            "t.gguf: tokenizer.ggml.model: 'rwkv' is not supported (gpt2, llama, bert, t5 are)");
  EXPECT_EQ(gguf_error(tiny_gguf("t5")), "t.gguf: tokenizer.ggml.scores: 0 entries for 263 tokens");
  EXPECT_EQ(gguf_error(tiny_gguf("gpt2")),
            "t.gguf: tokenizer.ggml.merges: missing or empty for a gpt2 (BPE) tokenizer");
  auto w = tiny_gguf("gpt2");
  std::vector<std::string> merges = {"h e"};
  w.add_string_array("tokenizer.ggml.merges", merges);
  w.add_string("tokenizer.ggml.pre", "mystery");
  EXPECT_EQ(gguf_error(w), "t.gguf: tokenizer.ggml.pre: pre-tokenizer 'mystery' is not supported");
  auto w2 = tiny_gguf("gpt2");
  std::vector<std::string> bad = {"x y"};
  w2.add_string_array("tokenizer.ggml.merges", bad);
  EXPECT_EQ(gguf_error(w2), "t.gguf: merges[0] ('x y') names a piece that is not in the vocabulary");
  auto w3 = tiny_gguf("llama");
  std::vector<float> scores = {0.f, 1.f};
  w3.add_f32_array("tokenizer.ggml.scores", scores);
  EXPECT_EQ(gguf_error(w3), "t.gguf: tokenizer.ggml.scores: 2 entries for 263 tokens");
  auto w4 = tiny_gguf("gpt2");
  w4.add_string_array("tokenizer.ggml.merges", merges);
  w4.add_u32("tokenizer.ggml.bos_token_id", 999);
  EXPECT_EQ(gguf_error(w4), "t.gguf: tokenizer.ggml.bos_token_id: id 999 out of range (263 tokens)");
  auto w5 = tiny_gguf("gpt2");
  w5.add_string_array("tokenizer.ggml.merges", merges);
  w5.add_string("tokenizer.ggml.add_bos_token", "yes");
  EXPECT_EQ(gguf_error(w5), "t.gguf: tokenizer.ggml.add_bos_token: expected a bool");
}

// ---- Fixtures: goldens, GGUF vs tokenizer.json -------------------------------------------------

struct Case {
  const char* name;
  fs::path json;  // tokenizer.json
  fs::path gguf;
  fs::path golden_dir;  // golden.json + golden.safetensors
};

std::vector<Case> cases() {
  return {
      {"tiny-dict", models_dir() / "wgc-tiny-dict/tokenizer.json",
       models_dir() / "wgc-tiny-dict/wgc-tiny-dict-q8_0.gguf", models_dir() / "wgc-tiny-dict"},
      {"llama2", test::lenml_models("llama2") / "tokenizer.json",
       fixtures_dir() / "tiny-llama2-f32/tiny-llama2-f32-q8_0.gguf", fixtures_dir() / "tiny-llama2-f32"},
      {"llama3", test::lenml_models("llama3") / "tokenizer.json",
       fixtures_dir() / "tiny-llama3-bf16/tiny-llama3-bf16-f16.gguf", fixtures_dir() / "tiny-llama3-bf16"},
  };
}

class Fixture : public ::testing::TestWithParam<size_t> {};

TEST_P(Fixture, JsonMatchesGolden) {
  const Case c = cases()[GetParam()];
  WGC_REQUIRE_FILE(c.golden_dir / "golden.safetensors");
  if (!fs::exists(c.json)) GTEST_SKIP() << c.json << " absent (run scripts/setup_test_refs.sh)";
  const auto& tok = test::cached_tokenizer(c.json);
  auto texts = test::golden_texts(c.golden_dir / "golden.json");
  auto want = test::golden_tokens(c.golden_dir / "golden.safetensors");
  ASSERT_EQ(texts.size(), want.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tok.encode(texts[i]);
    EXPECT_EQ(ids, want[i]) << c.name << " p" << i << ": got " << test::show(ids) << " want " << test::show(want[i]);
    EXPECT_EQ(tok.decode(ids, true), texts[i]);
  }
}

TEST_P(Fixture, GgufMatchesGolden) {
  const Case c = cases()[GetParam()];
  WGC_REQUIRE_FILE(c.gguf);
  const auto& tok = test::cached_tokenizer(c.gguf);
  auto texts = test::golden_texts(c.golden_dir / "golden.json");
  auto want = test::golden_tokens(c.golden_dir / "golden.safetensors");
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tok.encode(texts[i]);
    EXPECT_EQ(ids, want[i]) << c.name << " p" << i << ": got " << test::show(ids) << " want " << test::show(want[i]);
    EXPECT_EQ(tok.decode(ids, true), texts[i]);
  }
  // golden.json "decoded" (where given) is decode() with the special tokens kept.
  auto doc = json::parse_file(c.golden_dir / "golden.json");
  for (size_t i = 0; i < texts.size(); ++i) {
    if (auto* d = doc["prompts"][i].find("decoded")) {
      EXPECT_EQ(tok.decode(want[i]), d->as_string());
    }
  }
}

TEST_P(Fixture, GgufMatchesJsonOnCorpus) {
  const Case c = cases()[GetParam()];
  WGC_REQUIRE_FILE(c.gguf);
  if (!fs::exists(c.json)) GTEST_SKIP() << c.json << " absent (run scripts/setup_test_refs.sh)";
  const auto& a = test::cached_tokenizer(c.json);
  const auto& b = test::cached_tokenizer(c.gguf);
  EXPECT_EQ(a.bos_id(), b.bos_id());
  EXPECT_EQ(a.eos_id(), b.eos_id());
  EXPECT_EQ(a.vocab_size(), b.vocab_size());
  size_t bad = 0;
  for (auto& t : test::corpus()) {
    for (bool special : {true, false}) {
      auto x = a.encode(t, special), y = b.encode(t, special);
      if (x != y && bad++ < 10)
        ADD_FAILURE() << c.name << " " << test::show(t) << " special=" << special << ": json " << test::show(x)
                      << " gguf " << test::show(y);
      if (special) {
        EXPECT_EQ(a.decode(x), b.decode(x)) << test::show(t);
        EXPECT_EQ(a.decode(x, true), b.decode(x, true)) << test::show(t);
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST_P(Fixture, StreamingEqualsDecode) {
  const Case c = cases()[GetParam()];
  fs::path src = fs::exists(c.json) ? c.json : c.gguf;
  WGC_REQUIRE_FILE(src);
  const auto& tok = test::cached_tokenizer(src);
  for (auto& t : test::corpus(60)) {
    auto ids = tok.encode(t);
    for (bool skip : {false, true}) {
      StreamDecoder sd(tok, skip);
      std::string all;
      for (int32_t id : ids) {
        std::string piece = sd.push(id);
        EXPECT_EQ(unicode::complete_utf8_prefix(piece), piece.size()) << test::show(t);
        all += piece;
      }
      all += sd.flush();
      EXPECT_EQ(all, tok.decode(ids, skip)) << test::show(t);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Fixture, ::testing::Values(0, 1, 2),
                         [](const ::testing::TestParamInfo<size_t>& p) {
                           std::string n = cases()[p.param].name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(Tokenizer, MetadataOfTinyDict) {
  auto p = models_dir() / "wgc-tiny-dict/tokenizer.json";
  WGC_REQUIRE_FILE(p);
  auto tok = load_tokenizer(p.parent_path());
  EXPECT_EQ(tok.bos_id(), 0);
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_EQ(tok.bos_token(), "<|begin_of_text|>");
  EXPECT_TRUE(tok.is_stop(1));
  EXPECT_TRUE(tok.is_special(0));
  EXPECT_FALSE(tok.is_special(2));
  EXPECT_EQ(tok.vocab_size(), 8192u);
  EXPECT_TRUE(tok.chat_template().empty());
}

TEST(Tokenizer, EncodeSpeed) {
  auto p = models_dir() / "wgc-tiny-dict/tokenizer.json";
  WGC_REQUIRE_FILE(p);
  auto tok = load_tokenizer(p);
  std::string text;
  for (auto& t : test::corpus(200)) text += t + "\n";
  while (text.size() < (1u << 20)) text += text;
  auto t0 = std::chrono::steady_clock::now();
  auto ids = tok.encode(text, false);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("encode: %.1f MB/s (%zu bytes -> %zu tokens)\n", double(text.size()) / s / 1e6, text.size(), ids.size());
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_LT(s, 10.0);
}

// ---- wgc tokenize / detokenize ------------------------------------------------------------------

std::string run_cli(const std::string& args, int* rc = nullptr, const std::string& env = "") {
  std::string cmd = env + " '" + WGC_CLI_PATH + "' " + args + " 2>&1";
  std::FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  if (rc) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(Cli, TokenizeAndDetokenize) {
  if (!fs::exists(WGC_CLI_PATH)) GTEST_SKIP() << WGC_CLI_PATH << " not built";
  auto dir = models_dir() / "wgc-tiny-dict";
  WGC_REQUIRE_FILE(dir / "wgc-tiny-dict-q8_0.gguf");
  std::string gguf = "--model '" + (dir / "wgc-tiny-dict-q8_0.gguf").string() + "'";
  std::string folder = "--model '" + dir.string() + "'";
  EXPECT_EQ(run_cli("tokenize " + gguf + " Love is"), "0 45 795 361\n");
  EXPECT_EQ(run_cli("tokenize " + folder + " --json 'Love is'"), "[0,45,795,361]\n");
  EXPECT_EQ(run_cli("tokenize --model '" + (dir / "tokenizer.json").string() + "' --no-special 'Love is'"),
            "45 795 361\n");
  EXPECT_EQ(run_cli("tokenize " + gguf + " --pieces 'Love is'"),
            "0\t\"<|begin_of_text|>\"\n45\t\"L\"\n795\t\"ove\"\n361\t\"\xC4\xA0is\"\n");
  EXPECT_EQ(run_cli("detokenize " + gguf + " 0 45 795 361"), "<|begin_of_text|>Love is\n");
  EXPECT_EQ(run_cli("detokenize " + folder + " --skip-special '[0,45,795,361]'"), "Love is\n");
  EXPECT_EQ(run_cli("detokenize " + gguf + " 0,45 795,361"), "<|begin_of_text|>Love is\n");
  int rc = 0;
  EXPECT_EQ(run_cli("detokenize " + gguf + " 99999", &rc),
            (dir / "wgc-tiny-dict-q8_0.gguf").string() + ": token id 99999 is outside the vocabulary (8192)\n");
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(run_cli("detokenize " + gguf + " 12x", &rc), "wgc detokenize: '12x' is not a token id\n");
  // Without --model: the default model (WGC_DEFAULT_MODEL here).
  std::string env = "WGC_DEFAULT_MODEL='" + (dir / "wgc-tiny-dict-q8_0.gguf").string() + "'";
  EXPECT_EQ(run_cli("tokenize --json 'Love is'", &rc, env), "[0,45,795,361]\n");
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace wgc::llm
