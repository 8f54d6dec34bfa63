// The name table (tensor_names.h): per architecture, each role's Hugging Face and llama.cpp names
// ("{L}" the layer, "{E}" the expert), from transformers' modeling files and llama.cpp's
// gguf-py/gguf/tensor_mapping.py and src/models/<arch>.cpp.
#include "llm/formats/tensor_names.h"

#include "util/error.h"

#include <charconv>
#include <iterator>
#include <map>
#include <mutex>

namespace wgc::llm {

namespace {

using R = TensorRole;

struct Row {
  TensorRole role;
  std::string_view hf;    // "" when absent
  std::string_view gguf;  // "" when absent
};

// Llama's layer, shared by the decoders (Mistral, Qwen, Mixtral, OLMoE, ... add or drop rows).
const Row kLlamaModel[] = {
    {R::TokenEmbd, "model.embed_tokens.weight", "token_embd.weight"},
    {R::OutputNorm, "model.norm.weight", "output_norm.weight"},
    {R::Output, "lm_head.weight", "output.weight"},
    {R::RopeFreqs, "", "rope_freqs.weight"},
};
const Row kAttn[] = {
    {R::AttnNorm, "model.layers.{L}.input_layernorm.weight", "blk.{L}.attn_norm.weight"},
    {R::AttnQ, "model.layers.{L}.self_attn.q_proj.weight", "blk.{L}.attn_q.weight"},
    {R::AttnK, "model.layers.{L}.self_attn.k_proj.weight", "blk.{L}.attn_k.weight"},
    {R::AttnV, "model.layers.{L}.self_attn.v_proj.weight", "blk.{L}.attn_v.weight"},
    {R::AttnQBias, "model.layers.{L}.self_attn.q_proj.bias", "blk.{L}.attn_q.bias"},
    {R::AttnKBias, "model.layers.{L}.self_attn.k_proj.bias", "blk.{L}.attn_k.bias"},
    {R::AttnVBias, "model.layers.{L}.self_attn.v_proj.bias", "blk.{L}.attn_v.bias"},
    {R::AttnOut, "model.layers.{L}.self_attn.o_proj.weight", "blk.{L}.attn_output.weight"},
    {R::AttnQNorm, "model.layers.{L}.self_attn.q_norm.weight", "blk.{L}.attn_q_norm.weight"},
    {R::AttnKNorm, "model.layers.{L}.self_attn.k_norm.weight", "blk.{L}.attn_k_norm.weight"},
};
const Row kLlamaFfn[] = {
    {R::FfnNorm, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.ffn_norm.weight"},
    {R::FfnGate, "model.layers.{L}.mlp.gate_proj.weight", "blk.{L}.ffn_gate.weight"},
    {R::FfnUp, "model.layers.{L}.mlp.up_proj.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnDown, "model.layers.{L}.mlp.down_proj.weight", "blk.{L}.ffn_down.weight"},
};
const Row kGemma[] = {
    {R::AttnPostNorm, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.post_attention_norm.weight"},
    {R::FfnNorm, "model.layers.{L}.pre_feedforward_layernorm.weight", "blk.{L}.ffn_norm.weight"},
    {R::FfnPostNorm, "model.layers.{L}.post_feedforward_layernorm.weight", "blk.{L}.post_ffw_norm.weight"},
    {R::FfnGate, "model.layers.{L}.mlp.gate_proj.weight", "blk.{L}.ffn_gate.weight"},
    {R::FfnUp, "model.layers.{L}.mlp.up_proj.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnDown, "model.layers.{L}.mlp.down_proj.weight", "blk.{L}.ffn_down.weight"},
};
const Row kPhi3[] = {
    {R::RopeFactorsLong, "", "rope_factors_long.weight"},
    {R::RopeFactorsShort, "", "rope_factors_short.weight"},
    {R::AttnNorm, "model.layers.{L}.input_layernorm.weight", "blk.{L}.attn_norm.weight"},
    {R::AttnQkv, "model.layers.{L}.self_attn.qkv_proj.weight", "blk.{L}.attn_qkv.weight"},
    {R::AttnOut, "model.layers.{L}.self_attn.o_proj.weight", "blk.{L}.attn_output.weight"},
    {R::FfnNorm, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.ffn_norm.weight"},
    {R::FfnGateUp, "model.layers.{L}.mlp.gate_up_proj.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnDown, "model.layers.{L}.mlp.down_proj.weight", "blk.{L}.ffn_down.weight"},
};
// GLM-4: sandwich norms under its own names, gate and up fused as stored (llama.cpp: ffn_up).
const Row kGlm4[] = {
    {R::AttnPostNorm, "model.layers.{L}.post_self_attn_layernorm.weight", "blk.{L}.post_attention_norm.weight"},
    {R::FfnNorm, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.ffn_norm.weight"},
    {R::FfnPostNorm, "model.layers.{L}.post_mlp_layernorm.weight", "blk.{L}.post_ffw_norm.weight"},
    {R::FfnGateUp, "model.layers.{L}.mlp.gate_up_proj.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnDown, "model.layers.{L}.mlp.down_proj.weight", "blk.{L}.ffn_down.weight"},
};
const Row kMixtralMoe[] = {
    {R::FfnNorm, "model.layers.{L}.post_attention_layernorm.weight", "blk.{L}.ffn_norm.weight"},
    {R::MoeRouter, "model.layers.{L}.block_sparse_moe.gate.weight", "blk.{L}.ffn_gate_inp.weight"},
    {R::ExpertsGate, "model.layers.{L}.block_sparse_moe.experts.{E}.w1.weight", "blk.{L}.ffn_gate_exps.weight"},
    {R::ExpertsUp, "model.layers.{L}.block_sparse_moe.experts.{E}.w3.weight", "blk.{L}.ffn_up_exps.weight"},
    {R::ExpertsDown, "model.layers.{L}.block_sparse_moe.experts.{E}.w2.weight", "blk.{L}.ffn_down_exps.weight"},
};
const Row kQwenMoe[] = {
    {R::MoeRouter, "model.layers.{L}.mlp.gate.weight", "blk.{L}.ffn_gate_inp.weight"},
    {R::ExpertsGate, "model.layers.{L}.mlp.experts.{E}.gate_proj.weight", "blk.{L}.ffn_gate_exps.weight"},
    {R::ExpertsUp, "model.layers.{L}.mlp.experts.{E}.up_proj.weight", "blk.{L}.ffn_up_exps.weight"},
    {R::ExpertsDown, "model.layers.{L}.mlp.experts.{E}.down_proj.weight", "blk.{L}.ffn_down_exps.weight"},
};
const Row kQwenShared[] = {
    {R::SharedExpertRouter, "model.layers.{L}.mlp.shared_expert_gate.weight", "blk.{L}.ffn_gate_inp_shexp.weight"},
    {R::SharedGate, "model.layers.{L}.mlp.shared_expert.gate_proj.weight", "blk.{L}.ffn_gate_shexp.weight"},
    {R::SharedUp, "model.layers.{L}.mlp.shared_expert.up_proj.weight", "blk.{L}.ffn_up_shexp.weight"},
    {R::SharedDown, "model.layers.{L}.mlp.shared_expert.down_proj.weight", "blk.{L}.ffn_down_shexp.weight"},
};
const Row kBert[] = {
    {R::TokenEmbd, "embeddings.word_embeddings.weight", "token_embd.weight"},
    {R::TokenTypes, "embeddings.token_type_embeddings.weight", "token_types.weight"},
    {R::PositionEmbd, "embeddings.position_embeddings.weight", "position_embd.weight"},
    {R::EmbdNorm, "embeddings.LayerNorm.weight", "token_embd_norm.weight"},
    {R::EmbdNormBias, "embeddings.LayerNorm.bias", "token_embd_norm.bias"},
    {R::AttnQ, "encoder.layer.{L}.attention.self.query.weight", "blk.{L}.attn_q.weight"},
    {R::AttnQBias, "encoder.layer.{L}.attention.self.query.bias", "blk.{L}.attn_q.bias"},
    {R::AttnK, "encoder.layer.{L}.attention.self.key.weight", "blk.{L}.attn_k.weight"},
    {R::AttnKBias, "encoder.layer.{L}.attention.self.key.bias", "blk.{L}.attn_k.bias"},
    {R::AttnV, "encoder.layer.{L}.attention.self.value.weight", "blk.{L}.attn_v.weight"},
    {R::AttnVBias, "encoder.layer.{L}.attention.self.value.bias", "blk.{L}.attn_v.bias"},
    {R::AttnOut, "encoder.layer.{L}.attention.output.dense.weight", "blk.{L}.attn_output.weight"},
    {R::AttnOutBias, "encoder.layer.{L}.attention.output.dense.bias", "blk.{L}.attn_output.bias"},
    {R::AttnOutNorm, "encoder.layer.{L}.attention.output.LayerNorm.weight", "blk.{L}.attn_output_norm.weight"},
    {R::AttnOutNormBias, "encoder.layer.{L}.attention.output.LayerNorm.bias", "blk.{L}.attn_output_norm.bias"},
    {R::FfnUp, "encoder.layer.{L}.intermediate.dense.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnUpBias, "encoder.layer.{L}.intermediate.dense.bias", "blk.{L}.ffn_up.bias"},
    {R::FfnDown, "encoder.layer.{L}.output.dense.weight", "blk.{L}.ffn_down.weight"},
    {R::FfnDownBias, "encoder.layer.{L}.output.dense.bias", "blk.{L}.ffn_down.bias"},
    {R::LayerOutNorm, "encoder.layer.{L}.output.LayerNorm.weight", "blk.{L}.layer_output_norm.weight"},
    {R::LayerOutNormBias, "encoder.layer.{L}.output.LayerNorm.bias", "blk.{L}.layer_output_norm.bias"},
};

// ModernBERT (transformers' ModernBertModel names; ModernBertForMaskedLM's "model." prefix is
// dropped by canonical_hf_name). Layer 0 has no attn_norm. The biases that attention_bias, mlp_bias
// and norm_bias would add are not read (no released ModernBERT has them; the encoder refuses them).
const Row kModernBert[] = {
    {R::TokenEmbd, "embeddings.tok_embeddings.weight", "token_embd.weight"},
    {R::EmbdNorm, "embeddings.norm.weight", "token_embd_norm.weight"},
    {R::AttnNorm, "layers.{L}.attn_norm.weight", "blk.{L}.attn_norm.weight"},
    {R::AttnQkv, "layers.{L}.attn.Wqkv.weight", "blk.{L}.attn_qkv.weight"},
    {R::AttnOut, "layers.{L}.attn.Wo.weight", "blk.{L}.attn_output.weight"},
    {R::FfnNorm, "layers.{L}.mlp_norm.weight", "blk.{L}.ffn_norm.weight"},
    {R::FfnGateUp, "layers.{L}.mlp.Wi.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnDown, "layers.{L}.mlp.Wo.weight", "blk.{L}.ffn_down.weight"},
    {R::OutputNorm, "final_norm.weight", "output_norm.weight"},
};

// nomic-bert (nomic's NomicBertModel names, as llama.cpp's tensor_mapping.py maps them; a
// pre-training checkpoint's "bert." prefix is dropped by canonical_hf_name): fc11 is the up
// projection, fc12 the gate through SiLU.
const Row kNomicBert[] = {
    {R::TokenEmbd, "embeddings.word_embeddings.weight", "token_embd.weight"},
    {R::TokenTypes, "embeddings.token_type_embeddings.weight", "token_types.weight"},
    {R::EmbdNorm, "emb_ln.weight", "token_embd_norm.weight"},
    {R::EmbdNormBias, "emb_ln.bias", "token_embd_norm.bias"},
    {R::AttnQkv, "encoder.layers.{L}.attn.Wqkv.weight", "blk.{L}.attn_qkv.weight"},
    {R::AttnOut, "encoder.layers.{L}.attn.out_proj.weight", "blk.{L}.attn_output.weight"},
    {R::AttnOutNorm, "encoder.layers.{L}.norm1.weight", "blk.{L}.attn_output_norm.weight"},
    {R::AttnOutNormBias, "encoder.layers.{L}.norm1.bias", "blk.{L}.attn_output_norm.bias"},
    {R::FfnUp, "encoder.layers.{L}.mlp.fc11.weight", "blk.{L}.ffn_up.weight"},
    {R::FfnGate, "encoder.layers.{L}.mlp.fc12.weight", "blk.{L}.ffn_gate.weight"},
    {R::FfnDown, "encoder.layers.{L}.mlp.fc2.weight", "blk.{L}.ffn_down.weight"},
    {R::LayerOutNorm, "encoder.layers.{L}.norm2.weight", "blk.{L}.layer_output_norm.weight"},
    {R::LayerOutNormBias, "encoder.layers.{L}.norm2.bias", "blk.{L}.layer_output_norm.bias"},
};

std::vector<Row> build(Architecture a) {
  std::vector<Row> t;
  auto add = [&](std::span<const Row> rows) { t.insert(t.end(), rows.begin(), rows.end()); };
  switch (a) {
    case Architecture::Llama:
    case Architecture::Mistral:
    case Architecture::Qwen2:
    case Architecture::Qwen3:
      add(kLlamaModel);
      add(kAttn);
      add(kLlamaFfn);
      break;
    case Architecture::Gemma2:
    case Architecture::Gemma3:
      add(kLlamaModel);
      add(kAttn);
      add(kGemma);
      break;
    case Architecture::Phi3:
      add(kLlamaModel);
      add(kPhi3);
      break;
    case Architecture::Glm4:
      add(kLlamaModel);
      add(kAttn);
      add(kGlm4);
      break;
    case Architecture::Mixtral:
      add(kLlamaModel);
      add(kAttn);
      add(kMixtralMoe);
      break;
    case Architecture::Qwen2Moe:
    case Architecture::Qwen3Moe:
    case Architecture::Olmoe:
      add(kLlamaModel);
      add(kAttn);
      add(kLlamaFfn);  // the dense layers (mlp_only_layers) and the pre-MLP norm
      add(kQwenMoe);
      if (a == Architecture::Qwen2Moe) add(kQwenShared);
      break;
    case Architecture::Bert: add(kBert); break;
    case Architecture::ModernBert: add(kModernBert); break;
    case Architecture::NomicBert: add(kNomicBert); break;
  }
  return t;
}

const std::vector<Row>& table(Architecture a) {
  static std::mutex mu;
  static std::map<Architecture, std::vector<Row>> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(a);
  if (it == cache.end()) it = cache.emplace(a, build(a)).first;
  return it->second;
}

const Row* row_of(Architecture a, TensorRole role) {
  for (const Row& r : table(a))
    if (r.role == role) return &r;
  return nullptr;
}

// `pattern` with {L} and {E} filled; expert < 0 drops "{E}." (the merged tensor's canonical name).
std::string fill(std::string_view pattern, int64_t layer, int64_t expert) {
  std::string out;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 3) == "{L}") {
      out += std::to_string(layer);
      i += 3;
    } else if (pattern.substr(i, 3) == "{E}") {
      if (expert >= 0) {
        out += std::to_string(expert);
        i += 3;
      } else {
        i += 3;
        if (i < pattern.size() && pattern[i] == '.') ++i;
        if (!out.empty() && out.back() == '.' && (i >= pattern.size())) out.pop_back();
      }
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

// Whether `name` matches `pattern` (with one {L}, no {E}); the layer in `layer`.
bool match(std::string_view pattern, std::string_view name, int64_t& layer) {
  size_t at = pattern.find("{L}");
  if (at == std::string_view::npos) {
    layer = -1;
    return pattern == name;
  }
  std::string_view pre = pattern.substr(0, at), post = pattern.substr(at + 3);
  if (name.size() <= pre.size() + post.size() || !name.starts_with(pre) || !name.ends_with(post)) return false;
  std::string_view digits = name.substr(pre.size(), name.size() - pre.size() - post.size());
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), layer);
  return r.ec == std::errc() && r.ptr == digits.data() + digits.size() && layer >= 0;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::string_view to_string(TensorRole r) {
  switch (r) {
    case R::TokenEmbd: return "token_embd";
    case R::TokenTypes: return "token_types";
    case R::PositionEmbd: return "position_embd";
    case R::EmbdNorm: return "token_embd_norm";
    case R::EmbdNormBias: return "token_embd_norm.bias";
    case R::OutputNorm: return "output_norm";
    case R::Output: return "output";
    case R::RopeFreqs: return "rope_freqs";
    case R::RopeFactorsLong: return "rope_factors_long";
    case R::RopeFactorsShort: return "rope_factors_short";
    case R::AttnNorm: return "attn_norm";
    case R::AttnQ: return "attn_q";
    case R::AttnK: return "attn_k";
    case R::AttnV: return "attn_v";
    case R::AttnQkv: return "attn_qkv";
    case R::AttnQBias: return "attn_q.bias";
    case R::AttnKBias: return "attn_k.bias";
    case R::AttnVBias: return "attn_v.bias";
    case R::AttnOut: return "attn_output";
    case R::AttnOutBias: return "attn_output.bias";
    case R::AttnQNorm: return "attn_q_norm";
    case R::AttnKNorm: return "attn_k_norm";
    case R::AttnPostNorm: return "post_attention_norm";
    case R::AttnOutNorm: return "attn_output_norm";
    case R::AttnOutNormBias: return "attn_output_norm.bias";
    case R::FfnNorm: return "ffn_norm";
    case R::FfnPostNorm: return "post_ffw_norm";
    case R::FfnGate: return "ffn_gate";
    case R::FfnUp: return "ffn_up";
    case R::FfnGateUp: return "ffn_gate_up";
    case R::FfnDown: return "ffn_down";
    case R::FfnUpBias: return "ffn_up.bias";
    case R::FfnDownBias: return "ffn_down.bias";
    case R::LayerOutNorm: return "layer_output_norm";
    case R::LayerOutNormBias: return "layer_output_norm.bias";
    case R::MoeRouter: return "ffn_gate_inp";
    case R::ExpertsGate: return "ffn_gate_exps";
    case R::ExpertsUp: return "ffn_up_exps";
    case R::ExpertsDown: return "ffn_down_exps";
    case R::SharedExpertRouter: return "ffn_gate_inp_shexp";
    case R::SharedGate: return "ffn_gate_shexp";
    case R::SharedUp: return "ffn_up_shexp";
    case R::SharedDown: return "ffn_down_shexp";
  }
  return "?";
}

bool is_layer_role(TensorRole r) { return int(r) >= int(R::AttnNorm); }
bool is_expert_role(TensorRole r) { return r == R::ExpertsGate || r == R::ExpertsUp || r == R::ExpertsDown; }

TensorNames tensor_names(Architecture arch, TensorRole role, int64_t layer, int64_t expert) {
  const Row* r = row_of(arch, role);
  if (!r) return {};
  return {fill(r->hf, layer, expert), fill(r->gguf, layer, -1)};
}

std::vector<TensorRole> model_roles(Architecture arch) {
  std::vector<TensorRole> out;
  for (const Row& r : table(arch))
    if (!is_layer_role(r.role)) out.push_back(r.role);
  return out;
}

std::vector<TensorRole> layer_roles(Architecture arch) {
  std::vector<TensorRole> out;
  for (const Row& r : table(arch))
    if (is_layer_role(r.role)) out.push_back(r.role);
  return out;
}

std::string hf_name_for_gguf(Architecture arch, std::string_view g) {
  for (const Row& r : table(arch)) {
    if (r.gguf.empty()) continue;
    int64_t layer = -1;
    if (match(r.gguf, g, layer)) return r.hf.empty() ? std::string(g) : fill(r.hf, layer, -1);
  }
  return std::string(g);
}

std::string canonical_hf_name(Architecture arch, std::string_view n) {
  std::string s(n);
  if (arch == Architecture::Bert) {
    for (std::string_view p : {"bert.", "roberta."})
      if (s.starts_with(p)) s = s.substr(p.size());
    if (s.ends_with(".gamma")) s = s.substr(0, s.size() - 6) + ".weight";
    if (s.ends_with(".beta")) s = s.substr(0, s.size() - 5) + ".bias";
    return s;
  }
  if (arch == Architecture::ModernBert) return s.starts_with("model.") ? s.substr(6) : s;
  if (arch == Architecture::NomicBert) return s.starts_with("bert.") ? s.substr(5) : s;
  static const std::pair<std::string_view, std::string_view> kWrappers[] = {
      {"model.language_model.", "model."},
      {"language_model.model.", "model."},
      {"language_model.lm_head.", "lm_head."},
  };
  for (const auto& [from, to] : kWrappers)
    if (s.starts_with(from)) {
      s = std::string(to) + s.substr(from.size());
      break;
    }
  // transformers 5 names Mixtral's router and experts as the Qwen-style MoE ("mlp.gate", "mlp.experts.").
  if (arch == Architecture::Mixtral)
    for (std::string_view from : {".mlp.gate.weight", ".mlp.experts."})
      if (size_t at = s.find(from); at != std::string::npos)
        s.replace(at, from.size(),
                  from == ".mlp.gate.weight" ? ".block_sparse_moe.gate.weight" : ".block_sparse_moe.experts.");
  // A base model (Qwen3Model, ...) saved alone has no "model." prefix.
  if (s.starts_with("layers.") || s == "embed_tokens.weight" || s == "norm.weight") return "model." + s;
  return s;
}

ModelTensor tensor_rows(const ModelTensor& t, int64_t row0, int64_t rows) {
  const int64_t n = t.rows(), len = t.row_length();
  if (row0 < 0 || rows < 0 || row0 + rows > n || n <= 0)
    throw Error("tensor '" + t.name + "': rows " + std::to_string(row0) + "+" + std::to_string(rows) + " of " +
                std::to_string(n));
  const uint64_t rb = t.byte_size() / uint64_t(n);
  ModelTensor v = t;
  v.shape = {rows, len};
  if (!t.data.empty()) v.data = t.data.subspan(size_t(uint64_t(row0) * rb), size_t(uint64_t(rows) * rb));
  if (t.source_bytes) {  // a streamed file's tensor: the rows' place in the source (ModelFile::load)
    v.source_offset = t.source_offset + uint64_t(row0) * rb;
    v.source_bytes = uint64_t(rows) * rb;
  }
  return v;
}

ModelTensor tensor_slice(const ModelTensor& t, int64_t index) {
  if (t.shape.size() != 3 || index < 0 || index >= t.shape[0])
    throw Error("tensor '" + t.name + "' of shape " + shape_str(t.shape) + " has no matrix " + std::to_string(index));
  ModelTensor v = tensor_rows(t, index * t.shape[1], t.shape[1]);
  v.name = t.name + "[" + std::to_string(index) + "]";
  return v;
}

std::optional<ModelTensor> find_role(const ModelFile& m, TensorRole role, int64_t layer, int64_t expert) {
  const Architecture a = m.config().architecture;
  TensorNames n = tensor_names(a, role, layer, expert);
  if (n.hf.empty() && n.gguf.empty()) return std::nullopt;
  const std::string& canonical = n.hf.empty() ? n.gguf : n.hf;
  if (!is_expert_role(role) || expert < 0) {
    if (const ModelTensor* t = m.find(canonical)) return *t;
    return std::nullopt;
  }
  if (const ModelTensor* t = m.find(canonical)) return *t;  // one tensor per expert
  // Merged [n_experts, rows, cols] (GGUF, canonically named without the expert).
  if (const ModelTensor* t = m.find(tensor_names(a, role, layer, -1).hf); t && t->shape.size() == 3)
    return tensor_slice(*t, expert);
  // transformers 5: gate and up fused along the rows of each expert's matrix.
  std::string base = tensor_names(a, R::ExpertsGate, layer, -1).hf;  // "...experts.gate_proj.weight"
  base = base.substr(0, base.rfind(".experts.") + 9);
  for (std::string suffix : {"", ".weight"}) {
    if (role == R::ExpertsDown) {
      if (const ModelTensor* t = m.find(base + "down_proj" + suffix); t && t->shape.size() == 3)
        return tensor_slice(*t, expert);
    } else if (const ModelTensor* t = m.find(base + "gate_up_proj" + suffix); t && t->shape.size() == 3) {
      ModelTensor e = tensor_slice(*t, expert);
      const int64_t half = e.shape[0] / 2;
      return tensor_rows(e, role == R::ExpertsGate ? 0 : half, half);
    }
  }
  return std::nullopt;
}

ModelTensor role_tensor(const ModelFile& m, TensorRole role, int64_t layer, int64_t expert) {
  if (auto t = find_role(m, role, layer, expert)) return *t;
  TensorNames n = tensor_names(m.config().architecture, role, layer, expert);
  throw Error(m.path().string() + ": missing tensor '" + (n.hf.empty() ? n.gguf : n.hf) + "' (" +
              std::string(to_string(role)) + (layer >= 0 ? " of layer " + std::to_string(layer) : std::string()) +
              (expert >= 0 ? ", expert " + std::to_string(expert) : std::string()) + ", " +
              std::string(to_string(m.config().architecture)) + ")");
}

std::vector<ExpectedTensor> expected_layer_tensors(const ModelConfig& c, int64_t l) {
  std::vector<ExpectedTensor> out;
  const int64_t h = c.hidden_size, q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  auto add = [&](TensorRole r, std::vector<int64_t> s) { out.push_back({r, l, std::move(s)}); };
  const bool bert = c.architecture == Architecture::Bert, nomic = c.architecture == Architecture::NomicBert;
  if (!bert && !nomic && !(c.architecture == Architecture::ModernBert && l == 0)) add(R::AttnNorm, {h});
  if (c.fused_qkv) {
    add(R::AttnQkv, {q + 2 * kv, h});
  } else {
    add(R::AttnQ, {q, h});
    add(R::AttnK, {kv, h});
    add(R::AttnV, {kv, h});
  }
  add(R::AttnOut, {h, q});
  if (c.attention_bias) {
    add(R::AttnQBias, {q});
    add(R::AttnKBias, {kv});
    add(R::AttnVBias, {kv});
  }
  if (c.qk_norm) {
    add(R::AttnQNorm, {c.head_dim});
    add(R::AttnKNorm, {c.head_dim});
  } else if (c.qk_norm_whole) {
    add(R::AttnQNorm, {q});
    add(R::AttnKNorm, {kv});
  }
  if (bert || nomic) {
    if (c.attention_out_bias) add(R::AttnOutBias, {h});
    add(R::AttnOutNorm, {h});
    add(R::AttnOutNormBias, {h});
    if (nomic) add(R::FfnGate, {c.ffn_size, h});
    add(R::FfnUp, {c.ffn_size, h});
    add(R::FfnDown, {h, c.ffn_size});
    if (c.ffn_bias) {
      add(R::FfnUpBias, {c.ffn_size});
      add(R::FfnDownBias, {h});
    }
    add(R::LayerOutNorm, {h});
    add(R::LayerOutNormBias, {h});
    return out;
  }
  if (c.norm_placement == NormPlacement::Sandwich) {
    add(R::AttnPostNorm, {h});
    add(R::FfnPostNorm, {h});
  }
  add(R::FfnNorm, {h});
  if (c.layer_is_moe(l)) {
    add(R::MoeRouter, {c.n_experts, h});
    add(R::ExpertsGate, {c.expert_ffn_size, h});
    add(R::ExpertsUp, {c.expert_ffn_size, h});
    add(R::ExpertsDown, {h, c.expert_ffn_size});
    if (c.shared_expert_ffn_size > 0) {
      add(R::SharedExpertRouter, {1, h});
      add(R::SharedGate, {c.shared_expert_ffn_size, h});
      add(R::SharedUp, {c.shared_expert_ffn_size, h});
      add(R::SharedDown, {h, c.shared_expert_ffn_size});
    }
  } else if (c.fused_gate_up) {
    add(R::FfnGateUp, {2 * c.ffn_size, h});
    add(R::FfnDown, {h, c.ffn_size});
  } else {
    add(R::FfnGate, {c.ffn_size, h});
    add(R::FfnUp, {c.ffn_size, h});
    add(R::FfnDown, {h, c.ffn_size});
  }
  return out;
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t h = c.hidden_size;
  auto add = [&](TensorRole r, std::vector<int64_t> s) { out.push_back({r, -1, std::move(s)}); };
  const bool bert = c.architecture == Architecture::Bert || c.architecture == Architecture::NomicBert;
  add(R::TokenEmbd, {c.vocab_size, h});
  if (bert) {
    if (c.absolute_positions) add(R::PositionEmbd, {c.max_position_embeddings, h});
    if (c.type_vocab_size > 0) add(R::TokenTypes, {c.type_vocab_size, h});
    add(R::EmbdNorm, {h});
    add(R::EmbdNormBias, {h});
  } else if (c.architecture == Architecture::ModernBert) {
    add(R::EmbdNorm, {h});
  }
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::vector<ExpectedTensor> layer = expected_layer_tensors(c, l);
    out.insert(out.end(), std::make_move_iterator(layer.begin()), std::make_move_iterator(layer.end()));
  }
  if (!bert) add(R::OutputNorm, {h});
  if (!c.tie_word_embeddings && !c.embedding_model) add(R::Output, {c.vocab_size, h});
  return out;
}

void check_model_tensors(const ModelFile& m) {
  const ModelConfig& c = m.config();
  const std::string src = m.path().string();
  auto check = [&](const ModelTensor& t, const std::vector<int64_t>& shape, const std::string& name) {
    bool ok = t.shape == shape;
    // Qwen2-MoE's shared-expert gate is [1, hidden] in HF files and [hidden] in llama.cpp's.
    if (!ok && shape.size() == 2 && shape[0] == 1 && t.shape == std::vector<int64_t>{shape[1]}) ok = true;
    if (!ok)
      throw Error(src + ": tensor '" + name + "' has shape " + shape_str(t.shape) + ", expected " + shape_str(shape) +
                  " from the config");
    if (!is_float_like(t.type))
      throw Error(src + ": tensor '" + name + "' has integer type " + std::string(to_string(t.type)));
  };
  for (const ExpectedTensor& e : expected_tensors(c)) {
    if (!is_expert_role(e.role)) {
      TensorNames n = tensor_names(c.architecture, e.role, e.layer);
      const std::string& name = n.hf.empty() ? n.gguf : n.hf;
      const ModelTensor* t = m.find(name);
      if (!t) throw Error(src + ": missing tensor '" + name + "'");
      check(*t, e.shape, name);
      continue;
    }
    // Experts: every expert's matrix, from whichever form the file has.
    for (int64_t x = 0; x < c.n_experts; ++x) {
      auto t = find_role(m, e.role, e.layer, x);
      if (!t) throw Error(src + ": missing tensor '" + tensor_names(c.architecture, e.role, e.layer, x).hf + "'");
      check(*t, e.shape, t->name);
    }
  }
}

}  // namespace wgc::llm
