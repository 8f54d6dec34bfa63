// GGUF tokenizer.ggml.* metadata -> TokenizerSpec, with llama.cpp's defaults and pre-tokenizers.
#include "llm/formats/gguf.h"
#include "llm/tokenizer/loaders.h"
#include "util/error.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace wgc::llm {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kTekkenRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreType {
  const char* regex;  // nullptr: GPT-2's regex inside ByteLevel
  bool ignore_merges;
  bool add_bos;
  bool nfc;
};

// tokenizer.ggml.pre -> how llama.cpp pre-tokenizes (the types whose regex wgc knows).
const PreType* find_pre(const std::string& pre) {
  static const std::unordered_map<std::string, PreType> table = {
      {"default", {nullptr, false, false, false}},
      {"gpt-2", {nullptr, false, false, false}},
      {"gpt2", {nullptr, false, false, false}},
      {"phi-2", {nullptr, false, false, false}},
      {"llama3", {kLlama3Regex, true, true, false}},
      {"llama-v3", {kLlama3Regex, true, true, false}},
      {"llama-bpe", {kLlama3Regex, true, true, false}},
      {"falcon3", {kLlama3Regex, true, true, false}},
      // llama.cpp leaves ignore_merges off for smaug-bpe; the Llama 3 tokenizer.json that its
      // converter names so (same pre-tokenizer hash) has it on, and the ids must agree with it.
      {"smaug-bpe", {kLlama3Regex, true, false, false}},
      {"qwen2", {kQwen2Regex, false, false, true}},
      {"deepseek-r1-qwen", {kQwen2Regex, false, false, true}},
      {"tekken", {kTekkenRegex, true, true, false}},
  };
  auto it = table.find(pre);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

TokenizerSpec spec_from_gguf(const GgufFile& f) {
  TokenizerSpec spec;
  spec.source = f.name();
  auto fail = [&](const std::string& key, const std::string& what) -> void {
    throw Error(f.name() + ": " + key + ": " + what);
  };
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model.empty()) fail("tokenizer.ggml.model", "missing: the file holds no tokenizer");
  if (model != "gpt2" && model != "llama" && model != "bert" && model != "t5")
    fail("tokenizer.ggml.model", "'" + model + "' is not supported (gpt2, llama, bert, t5 are)");
  bool spm = model == "llama", wpm = model == "bert", ugm = model == "t5";

  if (const GgufValue* t = f.find("tokenizer.ggml.tokens"); t && t->is_array() && int64_t(t->size()) > kMaxVocabSize)
    fail("tokenizer.ggml.tokens", std::to_string(t->size()) + " tokens exceed the vocabulary limit of " +
                                      std::to_string(kMaxVocabSize) + " (kMaxVocabSize)");
  spec.vocab = f.get_string_array("tokenizer.ggml.tokens");
  if (spec.vocab.empty()) fail("tokenizer.ggml.tokens", "missing or empty");
  size_t n = spec.vocab.size();
  std::vector<int32_t> types = f.get_i32_array("tokenizer.ggml.token_type");
  if (!types.empty() && types.size() != n)
    fail("tokenizer.ggml.token_type", std::to_string(types.size()) + " entries for " + std::to_string(n) + " tokens");
  if (types.empty()) types.assign(n, kNormal);

  // Control, unknown and user-defined tokens are matched in the text first, as llama.cpp does.
  for (size_t i = 0; i < n; ++i) {
    int32_t t = types[i];
    if (t == kControl || t == kUnknown || t == kUserDefined) {
      if (spec.vocab[i].empty()) continue;
      AddedToken a;
      a.id = int32_t(i);
      a.content = spec.vocab[i];
      a.special = t != kUserDefined;
      a.normalized = false;
      spec.added.push_back(std::move(a));
    }
  }

  auto opt_id = [&](const char* key) -> std::optional<int32_t> {
    const GgufValue* v = f.find(key);
    if (!v) return std::nullopt;
    auto x = v->to_i64();
    if (!x) fail(key, "expected an integer");
    if (*x < 0) return std::nullopt;  // -1: none
    if (size_t(*x) >= n) fail(key, "id " + std::to_string(*x) + " out of range (" + std::to_string(n) + " tokens)");
    return int32_t(*x);
  };
  spec.bos_id = opt_id("tokenizer.ggml.bos_token_id");
  spec.eos_id = opt_id("tokenizer.ggml.eos_token_id");
  spec.pad_id = opt_id("tokenizer.ggml.padding_token_id");
  auto unk = opt_id("tokenizer.ggml.unknown_token_id");
  std::vector<std::optional<int32_t>> stops = {spec.eos_id, opt_id("tokenizer.ggml.eot_token_id"),
                                               opt_id("tokenizer.ggml.eom_token_id")};

  bool add_bos = false, add_eos = false;
  if (wpm) {
    // llama.cpp's converter stores BERT's WordPiece vocabulary with a phantom space: word-initial
    // pieces as "\u2581" + piece, continuations without their "##", [BRACKETED] specials as they
    // are. Undone here, then BERT's uncased pipeline as llama.cpp runs it (lowercase, accents
    // stripped, punctuation split), [CLS] text [SEP].
    for (size_t i = 0; i < n; ++i) {
      std::string& t = spec.vocab[i];
      if (t.size() >= 2 && t.front() == '[' && t.back() == ']') continue;
      if (t.starts_with("\xE2\x96\x81"))
        t.erase(0, 3);
      else
        t.insert(0, "##");
    }
    for (auto& a : spec.added) a.content = spec.vocab[size_t(a.id)];
    spec.wordpiece = true;
    spec.continuing_subword_prefix = "##";
    // Special tokens: the keys, else the pieces' names (what llama.cpp's defaults 100..103 are in
    // BERT's own vocabulary).
    auto named = [&](const char* piece) -> std::optional<int32_t> {
      for (size_t i = 0; i < n; ++i)
        if (spec.vocab[i] == piece) return int32_t(i);
      return std::nullopt;
    };
    spec.unk_id = unk ? unk : named("[UNK]");
    NormalizerStep bn;
    bn.kind = NormalizerStep::Kind::Bert;
    spec.normalizer.push_back(bn);
    PreTokenizerStep bp;
    bp.kind = PreTokenizerStep::Kind::Bert;
    spec.pre_tokenizer.push_back(bp);
    DecoderStep wd;
    wd.kind = DecoderStep::Kind::WordPiece;
    wd.a = "##";
    spec.decoder.push_back(wd);
    if (!spec.bos_id) spec.bos_id = opt_id("tokenizer.ggml.cls_token_id");
    if (!spec.bos_id) spec.bos_id = named("[CLS]");
    std::optional<int32_t> sep = opt_id("tokenizer.ggml.seperator_token_id");  // llama.cpp's spelling
    if (!sep) sep = spec.eos_id;
    if (!sep) sep = named("[SEP]");
    if (spec.bos_id) spec.prefix.push_back(*spec.bos_id);
    if (sep) spec.suffix.push_back(*sep);
    if (!spec.eos_id) spec.eos_id = sep;
  } else if (ugm) {
    // SentencePiece Unigram ("t5": T5, XLM-RoBERTa): the pieces' log-probabilities, the compiled
    // character map, then what tokenizer.json says with a Metaspace pre-tokenizer (llama.cpp
    // segments the whole text at once; its pieces never span a U+2581, so the words' segmentations
    // are the same). Control, unknown, unused and byte tokens are no candidates.
    std::vector<float> scores = f.get_f32_array("tokenizer.ggml.scores");
    if (scores.size() != n)
      fail("tokenizer.ggml.scores", std::to_string(scores.size()) + " entries for " + std::to_string(n) + " tokens");
    spec.unigram = true;
    spec.unigram_scores.assign(scores.begin(), scores.end());
    for (size_t i = 0; i < n; ++i) {
      if (types[i] == kByte) spec.byte_fallback = true;
      if (types[i] != kNormal && types[i] != kUserDefined)
        spec.unigram_scores[i] = -std::numeric_limits<double>::infinity();
    }
    spec.fuse_unk = true;
    spec.unk_id = unk;
    for (size_t i = 0; i < n && !spec.unk_id; ++i)
      if (types[i] == kUnknown) spec.unk_id = int32_t(i);
    using NK = NormalizerStep::Kind;
    if (const GgufValue* cm = f.find("tokenizer.ggml.precompiled_charsmap"); cm && cm->size() > 0) {
      if (!cm->is_array() || (cm->array_type() != GgufType::U8 && cm->array_type() != GgufType::I8))
        fail("tokenizer.ggml.precompiled_charsmap", "expected an array of bytes");
      NormalizerStep s;
      s.kind = NK::Precompiled;
      s.a.assign(reinterpret_cast<const char*>(cm->raw().data()), cm->raw().size());
      spec.normalizer.push_back(std::move(s));
    }
    if (f.get_bool("tokenizer.ggml.remove_extra_whitespaces", false)) {
      NormalizerStep strip;
      strip.kind = NK::Strip;
      strip.left = strip.right = true;
      spec.normalizer.push_back(strip);
      spec.normalizer.push_back({NK::ReplaceRegex, " {2,}", " ", false, false, true, true, true, true});
    }
    const bool space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
    PreTokenizerStep ms;
    ms.kind = PreTokenizerStep::Kind::Metaspace;
    ms.prepend = space_prefix ? PreTokenizerStep::Prepend::Always : PreTokenizerStep::Prepend::Never;
    spec.pre_tokenizer.push_back(ms);
    spec.decoder.push_back({DecoderStep::Kind::Metaspace, "\xE2\x96\x81", "", 0, 0, space_prefix, true});
    add_eos = true;  // llama.cpp's default for this tokenizer (the keys below decide where present)
  } else if (spm) {
    spec.scores = f.get_f32_array("tokenizer.ggml.scores");
    if (spec.scores.size() != n)
      fail("tokenizer.ggml.scores",
           std::to_string(spec.scores.size()) + " entries for " + std::to_string(n) + " tokens");
    // Only normal pieces are merge targets (as a tokenizer.json converted from the same model).
    for (size_t i = 0; i < n; ++i)
      if (types[i] != kNormal) spec.scores[i] = -std::numeric_limits<float>::infinity();
    spec.byte_fallback = true;
    spec.fuse_unk = true;
    spec.unk_id = unk ? unk : std::optional<int32_t>(0);
    bool space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", true);
    using NK = NormalizerStep::Kind;
    if (space_prefix)
      spec.normalizer.push_back({NK::Prepend, "\xE2\x96\x81", "", false, false, true, true, true, true});
    spec.normalizer.push_back({NK::Replace, " ", "\xE2\x96\x81", false, false, true, true, true, true});
    using DK = DecoderStep::Kind;
    spec.decoder.push_back({DK::Replace, "\xE2\x96\x81", " ", 0, 0, true, true});
    spec.decoder.push_back({DK::ByteFallback, "", "", 0, 0, true, true});
    spec.decoder.push_back({DK::Fuse, "", "", 0, 0, true, true});
    if (space_prefix) spec.decoder.push_back({DK::Strip, " ", "", 1, 0, true, true});
    add_bos = true;
  } else {
    std::vector<std::string> merges = f.get_string_array("tokenizer.ggml.merges");
    if (merges.empty()) fail("tokenizer.ggml.merges", "missing or empty for a gpt2 (BPE) tokenizer");
    spec.merges.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const std::string& m = merges[i];
      size_t sp = m.find(' ', 1);
      if (sp == std::string::npos)
        fail("tokenizer.ggml.merges[" + std::to_string(i) + "]", "expected two pieces separated by a space");
      spec.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
    std::string pre = f.get_string("tokenizer.ggml.pre", "default");
    const PreType* pt = find_pre(pre);
    if (!pt) fail("tokenizer.ggml.pre", "pre-tokenizer '" + pre + "' is not supported");
    using PK = PreTokenizerStep::Kind;
    if (pt->nfc) spec.normalizer.push_back({NormalizerStep::Kind::NFC, "", "", false, false, true, true, true, true});
    if (pt->regex) {
      PreTokenizerStep split;
      split.kind = PK::Split;
      split.pattern = pt->regex;
      split.behavior = SplitBehavior::Isolated;
      spec.pre_tokenizer.push_back(split);
    }
    PreTokenizerStep bl;
    bl.kind = PK::ByteLevel;
    bl.add_prefix_space = false;
    bl.use_regex = pt->regex == nullptr;
    spec.pre_tokenizer.push_back(bl);
    spec.decoder.push_back({DecoderStep::Kind::ByteLevel, "", "", 0, 0, true, true});
    spec.ignore_merges = pt->ignore_merges;
    add_bos = pt->add_bos;
    spec.unk_id = unk;
  }
  if (const GgufValue* v = f.find("tokenizer.ggml.add_bos_token")) {
    auto b = v->to_bool();
    if (!b) fail("tokenizer.ggml.add_bos_token", "expected a bool");
    add_bos = *b;
  }
  if (const GgufValue* v = f.find("tokenizer.ggml.add_eos_token")) {
    auto b = v->to_bool();
    if (!b) fail("tokenizer.ggml.add_eos_token", "expected a bool");
    add_eos = *b;
  }
  if (add_bos && spec.bos_id && !wpm) spec.prefix.push_back(*spec.bos_id);
  if (add_eos && spec.eos_id && !wpm) spec.suffix.push_back(*spec.eos_id);
  if (spec.bos_id) spec.bos_token = spec.vocab[size_t(*spec.bos_id)];
  if (spec.eos_id) spec.eos_token = spec.vocab[size_t(*spec.eos_id)];
  spec.chat_template = f.get_string("tokenizer.chat_template");

  for (auto& s : stops)
    if (s) spec.stop_ids.push_back(*s);
  for (auto& a : spec.added)
    for (const char* name : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>"})
      if (a.content == name) spec.stop_ids.push_back(a.id);
  std::sort(spec.stop_ids.begin(), spec.stop_ids.end());
  spec.stop_ids.erase(std::unique(spec.stop_ids.begin(), spec.stop_ids.end()), spec.stop_ids.end());
  return spec;
}

}  // namespace wgc::llm
