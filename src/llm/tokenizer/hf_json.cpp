// tokenizer.json (Hugging Face tokenizers) -> TokenizerSpec.
#include "llm/tokenizer/loaders.h"
#include "util/base64.h"
#include "util/error.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace wgc::llm {
namespace {

using json::Value;

// Reads fields with errors that name the file and the field path.
struct Reader {
  const std::string& source;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(source + ": " + field + ": " + what);
  }
  const Value& need(const Value& obj, const std::string& field, const std::string& key) const {
    const Value* v = obj.is_object() ? obj.find(key) : nullptr;
    if (!v) fail(field, "missing '" + key + "'");
    return *v;
  }
  std::string str(const Value& v, const std::string& field) const {
    if (!v.is_string()) fail(field, std::string("expected a string, got ") + std::string(json::to_string(v.type())));
    return v.as_string();
  }
  std::string str(const Value& obj, const std::string& field, const std::string& key) const {
    return str(need(obj, field, key), field + "." + key);
  }
  std::string str_or(const Value& obj, const std::string& field, const std::string& key, std::string def) const {
    const Value* v = obj.find(key);
    return v && !v->is_null() ? str(*v, field + "." + key) : def;
  }
  bool boolean(const Value& obj, const std::string& field, const std::string& key, bool def) const {
    const Value* v = obj.find(key);
    if (!v || v->is_null()) return def;
    if (!v->is_bool()) fail(field + "." + key, "expected a boolean");
    return v->as_bool();
  }
  int64_t integer(const Value& v, const std::string& field) const {
    if (!v.is_number()) fail(field, std::string("expected a number, got ") + std::string(json::to_string(v.type())));
    try {
      return v.as_int();
    } catch (const Error&) {
      fail(field, "expected an integer");
    }
  }
  int32_t id(const Value& v, const std::string& field) const {
    int64_t i = integer(v, field);
    if (i < 0 || i > INT32_MAX) fail(field, "id " + std::to_string(i) + " out of range");
    return int32_t(i);
  }
  const Value& object(const Value& v, const std::string& field) const {
    if (!v.is_object()) fail(field, std::string("expected an object, got ") + std::string(json::to_string(v.type())));
    return v;
  }
  const json::Array& array(const Value& v, const std::string& field) const {
    if (!v.is_array()) fail(field, std::string("expected an array, got ") + std::string(json::to_string(v.type())));
    return v.items();
  }
  // {"String": s} or {"Regex": r}: (pattern, is_regex)
  std::pair<std::string, bool> pattern(const Value& obj, const std::string& field) const {
    const Value& p = object(need(obj, field, "pattern"), field + ".pattern");
    if (const Value* s = p.find("String")) return {str(*s, field + ".pattern.String"), false};
    if (const Value* r = p.find("Regex")) return {str(*r, field + ".pattern.Regex"), true};
    fail(field + ".pattern", "expected String or Regex");
  }
};

void read_normalizer(const Reader& r, const Value& n, const std::string& field, std::vector<NormalizerStep>& out) {
  if (n.is_null()) return;
  r.object(n, field);
  std::string type = r.str(n, field, "type");
  using K = NormalizerStep::Kind;
  NormalizerStep s;
  if (type == "Sequence") {
    const auto& items = r.array(r.need(n, field, "normalizers"), field + ".normalizers");
    for (size_t i = 0; i < items.size(); ++i)
      read_normalizer(r, items[i], field + ".normalizers[" + std::to_string(i) + "]", out);
    return;
  } else if (type == "NFC") {
    s.kind = K::NFC;
  } else if (type == "Prepend") {
    s.kind = K::Prepend;
    s.a = r.str(n, field, "prepend");
  } else if (type == "Replace") {
    auto [pat, is_regex] = r.pattern(n, field);
    s.kind = is_regex ? K::ReplaceRegex : K::Replace;
    s.a = pat;
    s.b = r.str(n, field, "content");
  } else if (type == "Strip") {
    s.kind = K::Strip;
    s.left = r.boolean(n, field, "strip_left", true);
    s.right = r.boolean(n, field, "strip_right", true);
  } else if (type == "BertNormalizer") {
    s.kind = K::Bert;
    s.clean_text = r.boolean(n, field, "clean_text", true);
    s.chinese_chars = r.boolean(n, field, "handle_chinese_chars", true);
    s.lowercase = r.boolean(n, field, "lowercase", true);
    s.strip_accents = r.boolean(n, field, "strip_accents", s.lowercase);  // null: as lowercase
  } else if (type == "NFD") {
    s.kind = K::NFD;
  } else if (type == "Lowercase") {
    s.kind = K::Lowercase;
  } else if (type == "StripAccents") {
    s.kind = K::StripAccents;
  } else if (type == "Precompiled") {
    s.kind = K::Precompiled;
    s.a = base64_decode(r.str(n, field, "precompiled_charsmap"), r.source + ": " + field + ".precompiled_charsmap");
  } else {
    r.fail(field + ".type", "normalizer '" + type +
                                "' is not supported (NFC, NFD, Prepend, Replace, Strip, StripAccents, Lowercase, "
                                "BertNormalizer, Precompiled, Sequence are)");
  }
  out.push_back(std::move(s));
}

SplitBehavior behavior(const Reader& r, const std::string& b, const std::string& field) {
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  r.fail(field, "unknown split behavior '" + b + "'");
}

PreTokenizerStep::Prepend prepend_scheme(const Reader& r, const Value& n, const std::string& field) {
  if (const Value* p = n.find("prepend_scheme"); p && !p->is_null()) {
    std::string s = r.str(*p, field + ".prepend_scheme");
    if (s == "always") return PreTokenizerStep::Prepend::Always;
    if (s == "never") return PreTokenizerStep::Prepend::Never;
    if (s == "first") return PreTokenizerStep::Prepend::First;
    r.fail(field + ".prepend_scheme", "unknown value '" + s + "'");
  }
  return r.boolean(n, field, "add_prefix_space", true) ? PreTokenizerStep::Prepend::Always
                                                       : PreTokenizerStep::Prepend::Never;
}

void read_pre_tokenizer(const Reader& r, const Value& n, const std::string& field, std::vector<PreTokenizerStep>& out) {
  if (n.is_null()) return;
  r.object(n, field);
  std::string type = r.str(n, field, "type");
  using K = PreTokenizerStep::Kind;
  PreTokenizerStep s;
  if (type == "Sequence") {
    const auto& items = r.array(r.need(n, field, "pretokenizers"), field + ".pretokenizers");
    for (size_t i = 0; i < items.size(); ++i)
      read_pre_tokenizer(r, items[i], field + ".pretokenizers[" + std::to_string(i) + "]", out);
    return;
  } else if (type == "Split") {
    s.kind = K::Split;
    std::tie(s.pattern, s.regex) = r.pattern(n, field);
    s.behavior = behavior(r, r.str(n, field, "behavior"), field + ".behavior");
    s.invert = r.boolean(n, field, "invert", false);
  } else if (type == "ByteLevel") {
    s.kind = K::ByteLevel;
    s.add_prefix_space = r.boolean(n, field, "add_prefix_space", true);
    s.use_regex = r.boolean(n, field, "use_regex", true);
  } else if (type == "Metaspace") {
    s.kind = K::Metaspace;
    s.replacement = r.str_or(n, field, "replacement", "\xE2\x96\x81");
    s.prepend = prepend_scheme(r, n, field);
    s.split = r.boolean(n, field, "split", true);
  } else if (type == "Digits") {
    s.kind = K::Digits;
    s.individual_digits = r.boolean(n, field, "individual_digits", false);
  } else if (type == "WhitespaceSplit") {
    s.kind = K::WhitespaceSplit;
  } else if (type == "BertPreTokenizer") {
    s.kind = K::Bert;
  } else if (type == "Whitespace") {
    // HF: the matches of \w+|[^\w\s]+ kept, the rest removed, \w as Rust's regex has it (letters,
    // marks, decimal digits, connectors, joiners: wider than PCRE2's).
    s.kind = K::Split;
    s.pattern =
        "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]+|[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{"
        "200D}\\s]+";
    s.behavior = SplitBehavior::Removed;
    s.invert = true;
  } else {
    r.fail(field + ".type", "pre-tokenizer '" + type +
                                "' is not supported (Split, ByteLevel, Metaspace, Digits, WhitespaceSplit, Whitespace, "
                                "BertPreTokenizer, Sequence are)");
  }
  out.push_back(std::move(s));
}

void read_decoder(const Reader& r, const Value& n, const std::string& field, std::vector<DecoderStep>& out) {
  if (n.is_null()) return;
  r.object(n, field);
  std::string type = r.str(n, field, "type");
  using K = DecoderStep::Kind;
  DecoderStep s;
  if (type == "Sequence") {
    const auto& items = r.array(r.need(n, field, "decoders"), field + ".decoders");
    for (size_t i = 0; i < items.size(); ++i)
      read_decoder(r, items[i], field + ".decoders[" + std::to_string(i) + "]", out);
    return;
  } else if (type == "ByteLevel") {
    s.kind = K::ByteLevel;
  } else if (type == "Replace") {
    auto [pat, is_regex] = r.pattern(n, field);
    if (is_regex) r.fail(field + ".pattern", "a Regex pattern in a Replace decoder is not supported");
    s.kind = K::Replace;
    s.a = pat;
    s.b = r.str(n, field, "content");
  } else if (type == "ByteFallback") {
    s.kind = K::ByteFallback;
  } else if (type == "Fuse") {
    s.kind = K::Fuse;
  } else if (type == "Strip") {
    s.kind = K::Strip;
    s.a = r.str(n, field, "content");
    s.start = int(r.integer(r.need(n, field, "start"), field + ".start"));
    s.stop = int(r.integer(r.need(n, field, "stop"), field + ".stop"));
  } else if (type == "Metaspace") {
    s.kind = K::Metaspace;
    s.a = r.str_or(n, field, "replacement", "\xE2\x96\x81");
    s.prepend = prepend_scheme(r, n, field) != PreTokenizerStep::Prepend::Never;
  } else if (type == "WordPiece") {
    s.kind = K::WordPiece;
    s.a = r.str_or(n, field, "prefix", "##");
    s.cleanup = r.boolean(n, field, "cleanup", true);
  } else {
    r.fail(field + ".type", "decoder '" + type +
                                "' is not supported (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, "
                                "WordPiece, Sequence are)");
  }
  out.push_back(std::move(s));
}

// Post-processor -> ids before and after the sequence.
void read_post_processor(const Reader& r, const Value& n, const std::string& field, TokenizerSpec& spec) {
  if (n.is_null()) return;
  r.object(n, field);
  std::string type = r.str(n, field, "type");
  if (type == "Sequence") {
    const auto& items = r.array(r.need(n, field, "processors"), field + ".processors");
    for (size_t i = 0; i < items.size(); ++i)
      read_post_processor(r, items[i], field + ".processors[" + std::to_string(i) + "]", spec);
  } else if (type == "ByteLevel") {
    // offsets only
  } else if (type == "TemplateProcessing") {
    const Value& specials = r.object(r.need(n, field, "special_tokens"), field + ".special_tokens");
    const auto& single = r.array(r.need(n, field, "single"), field + ".single");
    bool seen_a = false;
    for (size_t i = 0; i < single.size(); ++i) {
      std::string f = field + ".single[" + std::to_string(i) + "]";
      const Value& item = r.object(single[i], f);
      if (const Value* st = item.find("SpecialToken")) {
        std::string name = r.str(*st, f + ".SpecialToken", "id");
        const Value* tok = specials.find(name);
        if (!tok) r.fail(f, "special token '" + name + "' is not in special_tokens");
        const auto& ids =
            r.array(r.need(*tok, field + ".special_tokens." + name, "ids"), field + ".special_tokens." + name + ".ids");
        for (auto& id : ids) (seen_a ? spec.suffix : spec.prefix).push_back(r.id(id, f));
      } else if (const Value* sq = item.find("Sequence")) {
        std::string which = r.str(*sq, f + ".Sequence", "id");
        if (which != "A") r.fail(f, "single template uses sequence '" + which + "'");
        seen_a = true;
      } else {
        r.fail(f, "expected SpecialToken or Sequence");
      }
    }
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    auto pair_id = [&](const char* key) {
      const auto& p = r.array(r.need(n, field, key), field + "." + key);
      if (p.size() != 2) r.fail(field + "." + key, "expected [token, id]");
      return r.id(p[1], field + "." + key + "[1]");
    };
    spec.prefix.push_back(pair_id("cls"));
    spec.suffix.insert(spec.suffix.begin(), pair_id("sep"));
  } else {
    r.fail(field + ".type", "post-processor '" + type +
                                "' is not supported (TemplateProcessing, ByteLevel, RobertaProcessing, "
                                "BertProcessing, Sequence are)");
  }
}

void read_model(const Reader& r, const Value& m, TokenizerSpec& spec) {
  r.object(m, "model");
  std::string type = r.str_or(m, "model", "type", "BPE");
  if (type != "BPE" && type != "WordPiece" && type != "Unigram")
    r.fail("model.type", "model '" + type + "' is not supported (BPE, WordPiece and Unigram are)");
  spec.wordpiece = type == "WordPiece";
  if (type == "Unigram") {
    // "vocab": [[piece, log-probability], ...] (ids by position), "unk_id", "byte_fallback".
    const auto& vocab = r.array(r.need(m, "model", "vocab"), "model.vocab");
    if (int64_t(vocab.size()) > kMaxVocabSize)
      r.fail("model.vocab", std::to_string(vocab.size()) + " pieces exceed the vocabulary limit of " +
                                std::to_string(kMaxVocabSize) + " (kMaxVocabSize)");
    spec.unigram = true;
    spec.vocab.reserve(vocab.size());
    spec.unigram_scores.reserve(vocab.size());
    for (size_t i = 0; i < vocab.size(); ++i) {
      const std::string f = "model.vocab[" + std::to_string(i) + "]";
      const Value& e = vocab[i];
      if (!e.is_array() || e.size() != 2 || !e[1].is_number()) r.fail(f, "expected [piece, score]");
      spec.vocab.push_back(r.str(e[0], f + "[0]"));
      spec.unigram_scores.push_back(e[1].as_double());
    }
    if (const Value* u = m.find("unk_id"); u && !u->is_null()) {
      const int32_t id = r.id(*u, "model.unk_id");
      if (size_t(id) >= vocab.size()) r.fail("model.unk_id", std::to_string(id) + " is not a piece's id");
      spec.unk_id = id;
    }
    spec.byte_fallback = r.boolean(m, "model", "byte_fallback", false);
    spec.fuse_unk = true;  // tokenizers' Unigram always fuses unknowns
    return;
  }
  if (const Value* d = m.find("dropout"); d && !d->is_null() && d->is_number() && d->as_double() != 0)
    r.fail("model.dropout", "BPE dropout is not supported");
  const Value& vocab = r.object(r.need(m, "model", "vocab"), "model.vocab");
  // Ids index a dense table: bound them by the limit and by the entry count (a vocabulary is
  // dense: an id far past the entries is a broken file, not a sparse vocabulary).
  int64_t max_id = -1;
  const int64_t entries = int64_t(vocab.members().size());
  for (auto& [piece, idv] : vocab.members()) {
    std::string field = "model.vocab." + piece;
    int64_t id = r.id(idv, field);
    if (id >= kMaxVocabSize)
      r.fail(field, "id " + std::to_string(id) + " exceeds the vocabulary limit of " + std::to_string(kMaxVocabSize) +
                        " (kMaxVocabSize)");
    if (id >= 2 * entries + 1024)
      r.fail(field, "id " + std::to_string(id) + " is far past the " + std::to_string(entries) +
                        " entries of the vocabulary (its ids must be about 0.." + std::to_string(entries - 1) + ")");
    max_id = std::max(max_id, id);
  }
  spec.vocab.assign(size_t(max_id + 1), std::string());
  for (auto& [piece, idv] : vocab.members()) spec.vocab[size_t(idv.as_int())] = piece;

  if (spec.wordpiece) {
    const std::string unk = r.str_or(m, "model", "unk_token", "[UNK]");
    const Value* id = vocab.find(unk);
    if (!id) r.fail("model.unk_token", "'" + unk + "' is not in the vocabulary");
    spec.unk_id = int32_t(id->as_int());
    spec.continuing_subword_prefix = r.str_or(m, "model", "continuing_subword_prefix", "##");
    if (const Value* mx = m.find("max_input_chars_per_word"); mx && !mx->is_null()) {
      spec.max_input_chars_per_word = r.integer(*mx, "model.max_input_chars_per_word");
      if (spec.max_input_chars_per_word < 1) r.fail("model.max_input_chars_per_word", "must be >= 1");
    }
    return;
  }
  const auto& merges = r.array(r.need(m, "model", "merges"), "model.merges");
  spec.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Value& mv = merges[i];
    std::string f = "model.merges[" + std::to_string(i) + "]";
    if (mv.is_string()) {
      const std::string& s = mv.as_string();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        r.fail(f, "expected two pieces separated by one space, got '" + s + "'");
      spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (mv.is_array() && mv.size() == 2) {
      spec.merges.emplace_back(r.str(mv[0], f + "[0]"), r.str(mv[1], f + "[1]"));
    } else {
      r.fail(f, "expected \"a b\" or [a, b]");
    }
  }
  if (const Value* u = m.find("unk_token"); u && !u->is_null()) {
    std::string unk = r.str(*u, "model.unk_token");
    const Value* id = vocab.find(unk);
    if (!id) r.fail("model.unk_token", "'" + unk + "' is not in the vocabulary");
    spec.unk_id = int32_t(id->as_int());
  }
  spec.fuse_unk = r.boolean(m, "model", "fuse_unk", false);
  spec.byte_fallback = r.boolean(m, "model", "byte_fallback", false);
  spec.ignore_merges = r.boolean(m, "model", "ignore_merges", false);
  spec.continuing_subword_prefix = r.str_or(m, "model", "continuing_subword_prefix", "");
  spec.end_of_word_suffix = r.str_or(m, "model", "end_of_word_suffix", "");
}

// tokenizer_config.json tokens are strings or {"content": ...} objects.
std::string config_token(const Reader& r, const Value& config, const std::string& key) {
  const Value* v = config.is_object() ? config.find(key) : nullptr;
  if (!v || v->is_null()) return {};
  if (v->is_string()) return v->as_string();
  if (v->is_object()) return r.str(*v, key, "content");
  r.fail(key, "expected a string or an object with content");
}

}  // namespace

TokenizerSpec spec_from_hf_json(const json::Value& doc, const json::Value& config, const std::string& source) {
  TokenizerSpec spec;
  spec.source = source;
  Reader r{spec.source};
  r.object(doc, "(document)");
  read_model(r, r.need(doc, "(document)", "model"), spec);

  if (const Value* added = doc.find("added_tokens"); added && !added->is_null()) {
    const auto& items = r.array(*added, "added_tokens");
    for (size_t i = 0; i < items.size(); ++i) {
      std::string f = "added_tokens[" + std::to_string(i) + "]";
      const Value& a = r.object(items[i], f);
      AddedToken t;
      t.id = r.id(r.need(a, f, "id"), f + ".id");
      t.content = r.str(a, f, "content");
      t.special = r.boolean(a, f, "special", false);
      t.single_word = r.boolean(a, f, "single_word", false);
      t.lstrip = r.boolean(a, f, "lstrip", false);
      t.rstrip = r.boolean(a, f, "rstrip", false);
      t.normalized = r.boolean(a, f, "normalized", !t.special);
      if (t.content.empty()) r.fail(f + ".content", "empty");
      spec.added.push_back(std::move(t));
    }
  }
  if (const Value* n = doc.find("normalizer")) read_normalizer(r, *n, "normalizer", spec.normalizer);
  if (const Value* n = doc.find("pre_tokenizer")) read_pre_tokenizer(r, *n, "pre_tokenizer", spec.pre_tokenizer);
  if (const Value* n = doc.find("post_processor")) read_post_processor(r, *n, "post_processor", spec);
  if (const Value* n = doc.find("decoder")) read_decoder(r, *n, "decoder", spec.decoder);

  // Token lookup by text: added tokens, then the vocabulary.
  std::unordered_map<std::string, int32_t> added_ids;
  for (auto& a : spec.added) added_ids[a.content] = a.id;
  auto find_id = [&](const std::string& text) -> std::optional<int32_t> {
    if (text.empty()) return std::nullopt;
    if (auto it = added_ids.find(text); it != added_ids.end()) return it->second;
    for (size_t i = 0; i < spec.vocab.size(); ++i)
      if (spec.vocab[i] == text) return int32_t(i);
    return std::nullopt;
  };

  Reader rc{spec.source + " (tokenizer_config.json)"};
  spec.bos_token = config_token(rc, config, "bos_token");
  spec.eos_token = config_token(rc, config, "eos_token");
  std::string pad = config_token(rc, config, "pad_token");
  if (config.is_object())
    if (const Value* t = config.find("chat_template"); t && !t->is_null()) {
      if (t->is_string()) {
        spec.chat_template = t->as_string();
      } else if (t->is_array()) {  // [{"name": "default", "template": ...}, ...]
        for (auto& e : t->items())
          if (e.is_object() && e.get_string("name") == "default") spec.chat_template = e.get_string("template");
        if (spec.chat_template.empty() && t->size() > 0 && (*t)[0].is_object())
          spec.chat_template = (*t)[0].get_string("template");
      } else {
        rc.fail("chat_template", "expected a string or a list of named templates");
      }
    }
  // Without a config: the post-processor's first token, or well-known names.
  auto first_known = [&](std::initializer_list<const char*> names) -> std::string {
    for (const char* nm : names)
      if (find_id(nm)) return nm;
    return {};
  };
  if (spec.bos_token.empty() && !config.is_object()) {
    if (!spec.prefix.empty())
      spec.bos_token = spec.prefix[0] < int32_t(spec.vocab.size()) ? spec.vocab[size_t(spec.prefix[0])] : "";
    for (auto& a : spec.added)
      if (!spec.prefix.empty() && a.id == spec.prefix[0]) spec.bos_token = a.content;
    if (spec.bos_token.empty()) spec.bos_token = first_known({"<|begin_of_text|>", "<s>", "<bos>"});
  }
  if (spec.eos_token.empty() && !config.is_object())
    spec.eos_token = first_known({"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>"});
  spec.bos_id = find_id(spec.bos_token);
  spec.eos_id = find_id(spec.eos_token);
  spec.pad_id = find_id(pad);
  if (spec.eos_id) spec.stop_ids.push_back(*spec.eos_id);
  for (const char* name : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|endoftext|>"})
    if (auto id = added_ids.find(name); id != added_ids.end()) spec.stop_ids.push_back(id->second);
  std::sort(spec.stop_ids.begin(), spec.stop_ids.end());
  spec.stop_ids.erase(std::unique(spec.stop_ids.begin(), spec.stop_ids.end()), spec.stop_ids.end());
  return spec;
}

TokenizerSpec spec_from_hf_file(const std::filesystem::path& path) {
  Value doc = json::parse_file(path);
  auto dir = path.parent_path();
  Value config;
  if (std::filesystem::exists(dir / "tokenizer_config.json")) config = json::parse_file(dir / "tokenizer_config.json");
  TokenizerSpec spec = spec_from_hf_json(doc, config, path.string());
  // generation_config.json: eos_token_id (an id or a list) adds stop tokens.
  if (std::filesystem::exists(dir / "generation_config.json")) {
    Value gen = json::parse_file(dir / "generation_config.json");
    if (const Value* e = gen.is_object() ? gen.find("eos_token_id") : nullptr) {
      std::vector<const Value*> vals;
      if (e->is_array())
        for (auto& x : e->items()) vals.push_back(&x);
      else
        vals.push_back(e);
      for (auto* v : vals)
        if (v->is_int() && v->as_int() >= 0) spec.stop_ids.push_back(int32_t(v->as_int()));
      std::sort(spec.stop_ids.begin(), spec.stop_ids.end());
      spec.stop_ids.erase(std::unique(spec.stop_ids.begin(), spec.stop_ids.end()), spec.stop_ids.end());
    }
  }
  return spec;
}

}  // namespace wgc::llm
