// wgc inspect MODEL [--json]: what a model file holds (config, tensors, metadata, tokenizer).
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "llm/formats/gguf.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

constexpr size_t kMaxItems = 8;     // array items shown
constexpr size_t kMaxString = 120;  // characters of a string shown

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

json::Value ints(const std::vector<int64_t>& v) {
  json::Value a = json::Value::array();
  for (int64_t x : v) a.push_back(x);
  return a;
}

// A GGUF value as JSON; arrays longer than kMaxItems become {"type", "count", "head"}.
json::Value gguf_json(const GgufValue& v) {
  if (v.is_string()) {
    std::string_view s = *v.to_string();
    if (s.size() <= kMaxString * 8) return json::Value(s);
    json::Value o = json::Value::object();
    o.set("type", "string");
    o.set("length", uint64_t(s.size()));
    o.set("head", std::string(s.substr(0, kMaxString)));
    return o;
  }
  if (v.type() == GgufType::Bool) return json::Value(*v.to_bool());
  if (v.is_float()) return json::Value(*v.to_f64());
  if (v.is_integer()) {
    if (auto i = v.to_i64()) return json::Value(*i);
    return json::Value(*v.to_u64());
  }
  json::Value items = json::Value::array();
  size_t n = std::min(v.size(), kMaxItems);
  for (size_t i = 0; i < n; ++i) items.push_back(gguf_json(v.at(i)));
  if (v.size() <= kMaxItems) return items;
  json::Value o = json::Value::object();
  o.set("type", "array");
  o.set("element_type", std::string(to_string(v.array_type())));
  o.set("count", uint64_t(v.size()));
  o.set("head", std::move(items));
  return o;
}

// Abbreviates a config.json value: long arrays cut to their head.
json::Value abbreviated(const json::Value& v) {
  if (v.is_array() && v.size() > kMaxItems) {
    json::Value o = json::Value::object();
    o.set("type", "array");
    o.set("count", uint64_t(v.size()));
    json::Value head = json::Value::array();
    for (size_t i = 0; i < kMaxItems; ++i) head.push_back(abbreviated(v[i]));
    o.set("head", std::move(head));
    return o;
  }
  if (v.is_object()) {
    json::Value o = json::Value::object();
    for (const auto& [k, x] : v.members()) o.set(k, abbreviated(x));
    return o;
  }
  return v;
}

std::string short_text(const json::Value& v) {
  std::string s = v.dump();
  if (s.size() > kMaxString) s = s.substr(0, kMaxString) + "...";
  return s;
}

json::Value config_json(const ModelConfig& c) {
  json::Value o = json::Value::object();
  o.set("architecture", std::string(to_string(c.architecture)));
  o.set("vocab_size", c.vocab_size);
  o.set("hidden_size", c.hidden_size);
  o.set("n_layers", c.n_layers);
  o.set("n_heads", c.n_heads);
  o.set("n_kv_heads", c.n_kv_heads);
  o.set("head_dim", c.head_dim);
  o.set("ffn_size", c.ffn_size);
  o.set("rope_dim", c.rope_dim);
  o.set("rope_theta", c.rope_theta);
  json::Value rs = json::Value::object();
  rs.set("type", std::string(to_string(c.rope_scaling.type)));
  if (c.rope_scaling.type != RopeScalingType::None) {
    rs.set("factor", c.rope_scaling.factor);
    if (c.rope_freq_factors.empty() && c.rope_scaling.type == RopeScalingType::Llama3) {
      rs.set("low_freq_factor", c.rope_scaling.low_freq_factor);
      rs.set("high_freq_factor", c.rope_scaling.high_freq_factor);
    }
    if (c.rope_scaling.original_max_position_embeddings)
      rs.set("original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings);
    if (!c.rope_freq_factors.empty()) rs.set("freq_factors_tensor", true);
  }
  o.set("rope_scaling", std::move(rs));
  o.set("rms_norm_eps", c.rms_norm_eps);
  o.set("tie_word_embeddings", c.tie_word_embeddings);
  o.set("attention_bias", c.attention_bias);
  o.set("qk_norm", c.qk_norm);
  o.set("max_position_embeddings", c.max_position_embeddings);
  // What the layers do beyond Llama's (config fields of the same names).
  o.set("norm", std::string(to_string(c.norm)));
  o.set("norm_placement", std::string(to_string(c.norm_placement)));
  o.set("activation", std::string(to_string(c.activation)));
  o.set("gated_ffn", c.gated_ffn);
  o.set("attention_scale", c.attention_scale());
  if (c.embedding_scale != 1) o.set("embedding_scale", c.embedding_scale);
  if (c.attn_logit_softcap > 0) o.set("attn_logit_softcap", c.attn_logit_softcap);
  if (c.final_logit_softcap > 0) o.set("final_logit_softcap", c.final_logit_softcap);
  if (c.sliding_window) {
    o.set("sliding_window", *c.sliding_window);
    json::Value layers = json::Value::array();
    for (int64_t l = 0; l < c.n_layers; ++l)
      if (c.layer_is_sliding(l)) layers.push_back(l);
    o.set("sliding_layers", std::move(layers));
    if (c.sliding_rope_theta) o.set("sliding_rope_theta", *c.sliding_rope_theta);
  }
  if (c.is_moe()) {
    json::Value moe = json::Value::object();
    moe.set("experts", c.n_experts);
    moe.set("experts_used", c.n_experts_used);
    moe.set("expert_ffn_size", c.expert_ffn_size);
    if (c.shared_expert_ffn_size) moe.set("shared_expert_ffn_size", c.shared_expert_ffn_size);
    moe.set("norm_topk_prob", c.norm_topk_prob);
    o.set("moe", std::move(moe));
  }
  if (c.embedding_model) {
    o.set("pooling", std::string(to_string(c.pooling)));
    o.set("causal", c.causal);
  }
  o.set("bos_token_id", c.bos_token_id ? json::Value(int64_t(*c.bos_token_id)) : json::Value());
  json::Value eos = json::Value::array();
  for (int32_t e : c.eos_token_ids) eos.push_back(int64_t(e));
  o.set("eos_token_ids", std::move(eos));
  o.set("sliding_window", c.sliding_window ? json::Value(*c.sliding_window) : json::Value());
  json::Value notes = json::Value::array();
  for (const auto& n : c.notes) notes.push_back(n);
  o.set("notes", std::move(notes));
  return o;
}

// A summary of the tokenizer: from GGUF metadata, or tokenizer.json in the model folder.
json::Value tokenizer_json(const ModelFile& m) {
  json::Value o = json::Value::object();
  const ModelConfig& c = m.config();
  auto token_text = [](const std::vector<std::string_view>& vocab, std::optional<int64_t> id) -> json::Value {
    if (!id || *id < 0 || size_t(*id) >= vocab.size()) return json::Value();
    return json::Value(vocab[size_t(*id)]);
  };
  if (const GgufFile* g = m.gguf()) {
    if (!g->find("tokenizer.ggml.model")) return json::Value();
    o.set("source", "gguf");
    std::string model = g->get_string("tokenizer.ggml.model");
    o.set("type", model == "gpt2" ? "BPE (byte-level)" : model == "llama" ? "BPE (SentencePiece, scores)" : model);
    o.set("ggml_model", model);
    if (g->find("tokenizer.ggml.pre")) o.set("pre", g->get_string("tokenizer.ggml.pre"));
    std::vector<std::string_view> vocab;
    if (const GgufValue* t = g->find("tokenizer.ggml.tokens")) {
      auto s = t->strings();
      vocab.assign(s.begin(), s.end());
    }
    o.set("vocab_size", uint64_t(vocab.size()));
    if (const GgufValue* mg = g->find("tokenizer.ggml.merges")) o.set("merges", uint64_t(mg->size()));
    std::optional<int64_t> bos;
    if (g->find("tokenizer.ggml.bos_token_id")) bos = g->get_u32("tokenizer.ggml.bos_token_id");
    o.set("bos_token_id", bos ? json::Value(*bos) : json::Value());
    o.set("bos_token", token_text(vocab, bos));
    json::Value eos = json::Value::array();
    for (int32_t e : c.eos_token_ids) {
      json::Value one = json::Value::object();
      one.set("id", int64_t(e));
      one.set("token", token_text(vocab, e));
      eos.push_back(std::move(one));
    }
    o.set("eos", std::move(eos));
    if (g->find("tokenizer.ggml.add_bos_token")) o.set("add_bos_token", g->get_bool("tokenizer.ggml.add_bos_token"));
    o.set("chat_template", g->find("tokenizer.chat_template") != nullptr);
    return o;
  }
  fs::path dir = fs::is_directory(m.path()) ? m.path() : m.path().parent_path();
  fs::path tj = dir / "tokenizer.json";
  if (!fs::exists(tj)) return json::Value();
  json::Value doc = json::parse_file(tj);
  o.set("source", "tokenizer.json");
  // Only the texts of the special ids are kept; the size is the largest id + 1.
  std::map<int64_t, std::string_view> wanted;
  if (c.bos_token_id) wanted[*c.bos_token_id] = {};
  for (int32_t e : c.eos_token_ids) wanted[e] = {};
  int64_t size = 0;
  auto note = [&](int64_t id, std::string_view text) {
    size = std::max(size, id + 1);
    if (auto it = wanted.find(id); it != wanted.end()) it->second = text;
  };
  const json::Value* model = doc.find("model");
  if (model && model->is_object()) {
    o.set("type", model->get_string("type", "?"));
    if (const json::Value* v = model->find("vocab")) {
      if (v->is_object()) {
        for (const auto& [tok, id] : v->members())
          if (id.is_int()) note(id.as_int(), tok);
      } else if (v->is_array()) {  // Unigram: [[piece, score], ...]
        int64_t i = 0;
        for (const auto& e : v->items()) {
          note(i++, e.is_array() && e.size() && e[0].is_string() ? std::string_view(e[0].as_string()) : "");
        }
      }
    }
    if (const json::Value* mg = model->find("merges"); mg && mg->is_array()) o.set("merges", uint64_t(mg->size()));
  }
  if (const json::Value* added = doc.find("added_tokens"); added && added->is_array())
    for (const auto& a : added->items())
      if (a.is_object() && a.find("id") && a["id"].is_int() && a.find("content") && a["content"].is_string())
        note(a["id"].as_int(), a["content"].as_string());
  auto text = [&](int64_t id) -> json::Value {
    auto it = wanted.find(id);
    if (it == wanted.end() || it->second.data() == nullptr) return json::Value();
    return json::Value(it->second);
  };
  o.set("vocab_size", size);
  o.set("bos_token_id", c.bos_token_id ? json::Value(int64_t(*c.bos_token_id)) : json::Value());
  o.set("bos_token", c.bos_token_id ? text(*c.bos_token_id) : json::Value());
  json::Value eos = json::Value::array();
  for (int32_t e : c.eos_token_ids) {
    json::Value one = json::Value::object();
    one.set("id", int64_t(e));
    one.set("token", text(e));
    eos.push_back(std::move(one));
  }
  o.set("eos", std::move(eos));
  if (fs::exists(dir / "tokenizer_config.json")) {
    json::Value tc = json::parse_file(dir / "tokenizer_config.json");
    o.set("chat_template", tc.find("chat_template") != nullptr);
  }
  return o;
}

json::Value describe_json(const ModelFile& m) {
  json::Value o = json::Value::object();
  o.set("path", m.path().string());
  o.set("format", m.format() == ModelFile::Format::Gguf ? "gguf" : "safetensors");
  if (const GgufFile* g = m.gguf()) {
    o.set("gguf_version", uint64_t(g->version()));
    o.set("alignment", g->alignment());
  }
  o.set("tensor_bytes", m.total_bytes());
  uint64_t params = 0;
  for (const auto& t : m.tensors()) params += uint64_t(t.numel());
  o.set("parameters", params);
  o.set("config", config_json(m.config()));
  json::Value ts = json::Value::array();
  for (const auto& t : m.tensors()) {
    json::Value e = json::Value::object();
    e.set("name", t.name);
    if (t.file_name != t.name) e.set("file_name", t.file_name);
    e.set("type", std::string(to_string(t.type)));
    e.set("shape", ints(t.shape));
    e.set("bytes", uint64_t(t.data.size()));
    if (t.unpermuted) e.set("unpermuted", true);
    ts.push_back(std::move(e));
  }
  o.set("tensors", std::move(ts));
  json::Value md = json::Value::object();
  if (const GgufFile* g = m.gguf()) {
    for (const auto& kv : g->metadata()) md.set(std::string(kv.key), gguf_json(kv.value));
  } else {
    fs::path dir = fs::is_directory(m.path()) ? m.path() : m.path().parent_path();
    md.set("config.json", abbreviated(json::parse_file(dir / "config.json")));
    if (const SafetensorsModel* st = m.safetensors())
      for (const auto& f : st->files())
        if (!f.metadata().empty()) {
          json::Value fm = json::Value::object();
          for (const auto& [k, v] : f.metadata()) fm.set(k, v);
          md.set(fs::path(f.name()).filename().string(), std::move(fm));
        }
  }
  o.set("metadata", std::move(md));
  o.set("tokenizer", tokenizer_json(m));
  return o;
}

void print_text(const ModelFile& m) {
  const ModelConfig& c = m.config();
  const GgufFile* g = m.gguf();
  std::printf("%s\n", m.path().string().c_str());
  if (g)
    std::printf("  format         GGUF v%u (alignment %llu)\n", g->version(),
                static_cast<unsigned long long>(g->alignment()));
  else
    std::printf("  format         Hugging Face safetensors (%zu file%s)\n", m.safetensors()->files().size(),
                m.safetensors()->files().size() == 1 ? "" : "s");
  uint64_t params = 0;
  for (const auto& t : m.tensors()) params += uint64_t(t.numel());
  std::printf("  architecture   %s, %.2f M parameters, %s of tensors\n", std::string(to_string(c.architecture)).c_str(),
              double(params) / 1e6, human_bytes(m.total_bytes()).c_str());
  std::printf("  sizes          vocab %lld, hidden %lld, layers %lld, heads %lld (kv %lld), head_dim %lld, ffn %lld\n",
              (long long)c.vocab_size, (long long)c.hidden_size, (long long)c.n_layers, (long long)c.n_heads,
              (long long)c.n_kv_heads, (long long)c.head_dim, (long long)c.ffn_size);
  std::string scaling(to_string(c.rope_scaling.type));
  if (c.rope_scaling.type == RopeScalingType::Linear) {
    scaling += " factor " + std::to_string(c.rope_scaling.factor);
  } else if (c.rope_scaling.type == RopeScalingType::Llama3) {
    char buf[160];
    if (c.rope_freq_factors.empty())
      std::snprintf(buf, sizeof buf, " (factor %g, low %g, high %g, original context %lld)", c.rope_scaling.factor,
                    c.rope_scaling.low_freq_factor, c.rope_scaling.high_freq_factor,
                    (long long)c.rope_scaling.original_max_position_embeddings);
    else
      std::snprintf(buf, sizeof buf, " (from rope_freqs.weight, max factor %g)", c.rope_scaling.factor);
    scaling += buf;
  } else if (c.rope_scaling.type == RopeScalingType::Yarn || c.rope_scaling.type == RopeScalingType::LongRope) {
    scaling += " factor " + std::to_string(c.rope_scaling.factor) + ", original context " +
               std::to_string(c.rope_scaling.original_max_position_embeddings) + ", attention factor " +
               std::to_string(c.rope_attention_factor());
  }
  std::printf("  rope           theta %g, dim %lld, scaling %s\n", c.rope_theta, (long long)c.rope_dim,
              scaling.c_str());
  std::printf("  norm           %s eps %g, %s%s\n", c.norm == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm",
              c.rms_norm_eps, std::string(to_string(c.norm_placement)).c_str(),
              c.norm == NormKind::RmsNormOnePlus ? ", weights used as 1 + w"
              : c.qk_norm                        ? ", q/k norm"
              : c.qk_norm_whole                  ? ", q/k norm over all heads"
                                                 : "");
  std::string window;
  if (c.sliding_window) {
    int64_t n = 0;
    for (int64_t l = 0; l < c.n_layers; ++l) n += c.layer_is_sliding(l);
    window = ", sliding window " + std::to_string(*c.sliding_window) + " on " + std::to_string(n) + " of " +
             std::to_string(c.n_layers) + " layers";
    if (c.sliding_rope_theta) window += " (rope theta " + std::to_string(int64_t(*c.sliding_rope_theta)) + ")";
  }
  std::printf("  context        %lld%s\n", (long long)c.max_position_embeddings, window.c_str());
  std::string layer = std::string(to_string(c.activation)) + (c.gated_ffn ? " gated" : "");
  if (c.attn_logit_softcap > 0 || c.final_logit_softcap > 0)
    layer += ", soft-caps attention " + std::to_string(c.attn_logit_softcap) + " final " +
             std::to_string(c.final_logit_softcap);
  if (c.embedding_scale != 1) layer += ", embeddings x " + std::to_string(c.embedding_scale);
  if (c.fused_qkv) layer += ", fused qkv";
  std::printf("  layers         %s\n", layer.c_str());
  if (c.is_moe())
    std::printf(
        "  experts        %lld, %lld per token (%s), ffn %lld%s\n", (long long)c.n_experts, (long long)c.n_experts_used,
        c.norm_topk_prob ? "weights renormalised" : "raw weights", (long long)c.expert_ffn_size,
        c.shared_expert_ffn_size ? (", shared expert " + std::to_string(c.shared_expert_ffn_size)).c_str() : "");
  if (c.embedding_model)
    std::printf("  embeddings     pooling %s, %s attention\n", std::string(to_string(c.pooling)).c_str(),
                c.causal ? "causal" : "bidirectional");
  std::printf("  flags          tie_word_embeddings %s, attention_bias %s\n", c.tie_word_embeddings ? "yes" : "no",
              c.attention_bias ? "yes" : "no");
  std::string eos;
  for (int32_t e : c.eos_token_ids) eos += (eos.empty() ? "" : ", ") + std::to_string(e);
  std::printf("  special ids    bos %s, eos [%s]\n", c.bos_token_id ? std::to_string(*c.bos_token_id).c_str() : "-",
              eos.c_str());

  for (const auto& n : c.notes) std::printf("  note           %s\n", n.c_str());

  json::Value tok = tokenizer_json(m);
  if (tok.is_object()) {
    std::string line = tok.get_string("type") + ", " + std::to_string(tok.get_int("vocab_size")) + " tokens";
    if (tok.find("merges")) line += ", " + std::to_string(tok.get_int("merges")) + " merges";
    if (tok.find("pre")) line += ", pre-tokenizer '" + tok.get_string("pre") + "'";
    std::printf("  tokenizer      %s (%s)\n", line.c_str(), tok.get_string("source").c_str());
    std::string b = tok["bos_token_id"].is_null() ? "-" : std::to_string(tok["bos_token_id"].as_int());
    if (tok["bos_token"].is_string()) b += " " + json::quote(tok["bos_token"].as_string());
    std::string e;
    for (const auto& x : tok["eos"].items()) {
      e += (e.empty() ? "" : ", ") + std::to_string(x["id"].as_int());
      if (x["token"].is_string()) e += " " + json::quote(x["token"].as_string());
    }
    std::printf("                 bos %s, eos %s", b.c_str(), e.c_str());
    if (tok.find("add_bos_token")) std::printf(", add_bos %s", tok["add_bos_token"].as_bool() ? "yes" : "no");
    if (tok.find("chat_template")) std::printf(", chat template %s", tok["chat_template"].as_bool() ? "yes" : "no");
    std::printf("\n");
  } else {
    std::printf("  tokenizer      none found\n");
  }

  size_t w = 4;
  for (const auto& t : m.tensors()) w = std::max(w, t.name.size());
  std::printf("\ntensors (%zu):\n  %-*s  %-5s  %-16s  %10s\n", m.tensors().size(), int(w), "name", "type", "shape",
              "bytes");
  for (const auto& t : m.tensors()) {
    std::string note;
    if (t.file_name != t.name) note = "  (" + t.file_name + (t.unpermuted ? ", rope rows un-permuted)" : ")");
    std::printf("  %-*s  %-5s  %-16s  %10llu%s\n", int(w), t.name.c_str(), std::string(to_string(t.type)).c_str(),
                shape_str(t.shape).c_str(), static_cast<unsigned long long>(t.data.size()), note.c_str());
  }

  if (g) {
    std::printf("\nmetadata (%zu keys):\n", g->metadata().size());
    for (const auto& kv : g->metadata())
      std::printf("  %.*s = %s\n", int(kv.key.size()), kv.key.data(), kv.value.describe(kMaxItems, kMaxString).c_str());
  } else {
    fs::path dir = fs::is_directory(m.path()) ? m.path() : m.path().parent_path();
    json::Value cfg = json::parse_file(dir / "config.json");
    std::printf("\nconfig.json:\n");
    for (const auto& [k, v] : cfg.members()) std::printf("  %s = %s\n", k.c_str(), short_text(v).c_str());
    for (const auto& f : m.safetensors()->files())
      if (!f.metadata().empty()) {
        std::printf("\n%s __metadata__:\n", fs::path(f.name()).filename().string().c_str());
        for (const auto& [k, v] : f.metadata())
          std::printf("  %s = %s\n", k.c_str(), short_text(json::Value(v)).c_str());
      }
  }
}

struct Flags {
  std::optional<std::string> model, positional;
  bool json = false;
};

int inspect(const Flags& f) {
  if (f.model && f.positional) throw UsageError("give the model once: as MODEL or as --model");
  OpenOptions opt;
  opt.prefault = false;  // only headers are needed
  opt.progress = false;
  opt.any_architecture = true;  // describing a model needs no engine
  ModelFile m = open_model(model_path(f.model ? f.model : f.positional), opt);
  if (f.json)
    std::cout << describe_json(m).dump(2) << "\n";
  else
    print_text(m);
  return 0;
}

Register reg{{"inspect",
              "a model file or folder (GGUF, safetensors): architecture, sizes, tensors, metadata, tokenizer",
              [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                app.add_flag("--json", f->json, "print JSON instead of text");
                add_text(app, "--model,-m", f->model, kModelHelp)->type_name("MODEL");
                add_text(app, "MODEL", f->positional, "the model, as --model takes it");
                return [f] { return inspect(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
