// The architectures of issue 34 as configs and tensor names: Hugging Face config.json files as the
// Hub ships them (transformers 4 spelling) and as transformers 5 saves them, GGUF metadata with
// llama.cpp's keys, the name table in both directions, and the fixtures of tests/data/arch (made by
// transformers and llama.cpp's converter: scripts/make_arch_fixtures.py) read back through both formats.
#include "llm/formats/gguf.h"
#include "llm/formats/gguf_writer.h"
#include "llm/formats/model_config.h"
#include "llm/formats/model_file.h"
#include "llm/formats/safetensors.h"
#include "llm/formats/tensor_names.h"
#include "test_util.h"
#include "util/json.h"

#include <cmath>
#include <numbers>

using namespace wgc::llm;
namespace json = wgc::json;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const wgc::Error& e) {
    return e.what();
  }
  return "(no error)";
}

ModelConfig hf(const std::string& text) { return config_from_hf(json::parse(text), "config.json"); }

std::string factors(int n, double first, double step) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(first + step * i);
  return s + "]";
}

}  // namespace

// --- Hugging Face configs as the Hub ships them ------------------------------------------------------

TEST(ArchConfigHf, Gemma2) {
  auto c = hf(R"({"architectures": ["Gemma2ForCausalLM"], "attn_logit_softcapping": 50.0, "bos_token_id": 2,
    "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "intermediate_size": 14336,
    "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
    "num_key_value_heads": 8, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
    "sliding_window": 4096, "vocab_size": 256000})");
  EXPECT_EQ(c.architecture, Architecture::Gemma2);
  EXPECT_EQ(c.norm, NormKind::RmsNormOnePlus);
  EXPECT_EQ(c.norm_placement, NormPlacement::Sandwich);
  EXPECT_EQ(c.activation, Activation::GeluTanh);
  EXPECT_TRUE(c.gated_ffn);
  EXPECT_TRUE(c.tie_word_embeddings);  // Gemma2Config's default
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.n_heads * c.head_dim, 4096);  // != hidden: projections are not square
  EXPECT_DOUBLE_EQ(c.embedding_scale, std::sqrt(3584.0));
  EXPECT_DOUBLE_EQ(c.attention_scale(), 1 / 16.0);
  EXPECT_EQ(c.attn_logit_softcap, 50.0);
  EXPECT_EQ(c.final_logit_softcap, 30.0);
  EXPECT_EQ(c.sliding_window, 4096);
  ASSERT_EQ(c.sliding_layers.size(), 42u);
  EXPECT_TRUE(c.layer_is_sliding(0));
  EXPECT_FALSE(c.layer_is_sliding(1));
  EXPECT_TRUE(c.layer_is_sliding(40));
  EXPECT_FALSE(c.layer_is_sliding(41));
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(engine_runs(c));  // soft-caps, window, sandwich norms: test_llm_arch_engines
  // Soft-caps written as null are none; absent ones take Gemma2Config's defaults.
  auto d = hf(R"({"model_type": "gemma2", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2,
    "num_hidden_layers": 2, "head_dim": 32, "vocab_size": 10, "attn_logit_softcapping": null})");
  EXPECT_EQ(d.attn_logit_softcap, 0);
  EXPECT_EQ(d.final_logit_softcap, 30.0);
  EXPECT_EQ(d.query_pre_attn_scalar, 256);
}

TEST(ArchConfigHf, Gemma3TextAndMultimodal) {
  auto one = hf(R"({"architectures": ["Gemma3ForCausalLM"], "attn_logit_softcapping": null, "bos_token_id": 2,
    "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 1152, "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
    "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
    "sliding_window": 512, "sliding_window_pattern": 6, "vocab_size": 262144})");
  EXPECT_EQ(one.architecture, Architecture::Gemma3);
  EXPECT_TRUE(one.qk_norm);
  EXPECT_EQ(one.attn_logit_softcap, 0);
  EXPECT_EQ(one.final_logit_softcap, 0);
  EXPECT_EQ(one.sliding_window, 512);
  for (int64_t l = 0; l < 26; ++l) EXPECT_EQ(one.layer_is_sliding(l), (l + 1) % 6 != 0) << l;
  EXPECT_EQ(one.layer_rope_theta(0), 10000);
  EXPECT_EQ(one.layer_rope_theta(5), 1000000);
  EXPECT_EQ(one.eos_token_ids, (std::vector<int32_t>{1, 106}));
  // The 12B's config: the language model's keys in text_config, Gemma3TextConfig's defaults for
  // the rest, linear scaling on the global layers only.
  auto big = hf(R"({"architectures": ["Gemma3ForConditionalGeneration"], "eos_token_id": [1, 106],
    "model_type": "gemma3", "text_config": {"hidden_size": 3840, "intermediate_size": 15360,
    "model_type": "gemma3_text", "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152}})");
  EXPECT_EQ(big.vocab_size, 262208);
  EXPECT_EQ(big.head_dim, 256);
  EXPECT_EQ(big.hidden_size, 3840);
  EXPECT_EQ(big.n_layers, 48);
  EXPECT_EQ(big.rope_theta, 1000000);
  EXPECT_EQ(big.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_EQ(big.layer_rope_scaling(5).type, RopeScalingType::Linear);
  EXPECT_EQ(big.layer_rope_scaling(0).type, RopeScalingType::None);
  EXPECT_EQ(big.layer_rope_theta(0), 10000);
  auto g = big.rope_inv_freq(5), s = big.rope_inv_freq(0);
  ASSERT_EQ(g.size(), 128u);
  EXPECT_DOUBLE_EQ(g[1], std::pow(1e6, -2.0 / 256) / 8);
  EXPECT_DOUBLE_EQ(s[1], std::pow(1e4, -2.0 / 256));
  EXPECT_EQ(big.eos_token_ids, (std::vector<int32_t>{1, 106}));
  // transformers 5 writes the rope per layer type.
  auto v5 = hf(R"({"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_hidden_layers": 3, "head_dim": 16, "vocab_size": 10, "sliding_window": 5,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})");
  EXPECT_EQ(v5.sliding_layers, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(v5.rope_theta, 1e6);
  EXPECT_EQ(v5.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_EQ(v5.sliding_rope_theta, 1e4);
  EXPECT_EQ(v5.layer_rope_scaling(0).type, RopeScalingType::None);
}

TEST(ArchConfigHf, Phi3LongRopeAndPartialRotary) {
  auto mini = hf(R"({"architectures": ["Phi3ForCausalLM"], "bos_token_id": 1, "eos_token_id": 32000,
    "hidden_act": "silu", "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072,
    "model_type": "phi3", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": )" +
                 factors(48, 1.0, 0.5) + R"(, "short_factor": )" + factors(48, 1.0, 0.01) +
                 R"(, "type": "longrope"}, "rope_theta": 10000.0, "sliding_window": 262144,
    "tie_word_embeddings": false, "vocab_size": 32064})");
  EXPECT_EQ(mini.architecture, Architecture::Phi3);
  EXPECT_TRUE(mini.fused_qkv);
  EXPECT_TRUE(mini.fused_gate_up);
  EXPECT_EQ(mini.rope_dim, 96);
  EXPECT_EQ(mini.rope_scaling.type, RopeScalingType::LongRope);
  EXPECT_EQ(mini.rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(mini.rope_scaling.factor, 32.0);
  EXPECT_NEAR(mini.rope_attention_factor(), std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-15);
  auto shrt = mini.rope_inv_freq(-1, 4096), lng = mini.rope_inv_freq(-1, 4097);
  EXPECT_DOUBLE_EQ(shrt[2], std::pow(10000.0, -4.0 / 96) / 1.02);
  EXPECT_DOUBLE_EQ(lng[2], std::pow(10000.0, -4.0 / 96) / 2.0);
  EXPECT_EQ(mini.sliding_window, 262144);
  // Phi-4-mini: partial rotary (0.75 of 128), tied, GQA.
  auto p4 = hf(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 24, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
    "rope_scaling": {"long_factor": )" +
               factors(48, 1.0, 1.0) + R"(, "short_factor": )" + factors(48, 1.0, 0.0) +
               R"(, "type": "longrope"}, "tie_word_embeddings": true, "vocab_size": 200064})");
  EXPECT_EQ(p4.head_dim, 128);
  EXPECT_EQ(p4.rope_dim, 96);
  EXPECT_TRUE(p4.tie_word_embeddings);
  // Wrong factor counts are named.
  std::string msg = error_of([] {
    hf(R"({"model_type": "phi3", "hidden_size": 64, "intermediate_size": 64, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "original_max_position_embeddings": 16, "max_position_embeddings": 64,
      "rope_scaling": {"type": "longrope", "short_factor": [1, 2], "long_factor": [1, 2]}})");
  });
  EXPECT_NE(msg.find("longrope needs rope_dim / 2 = 8"), std::string::npos) << msg;
}

TEST(ArchConfigHf, RopeScalingKinds) {
  auto base = [](std::string extra) {
    return hf(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "max_position_embeddings": 131072)" +
              extra + "}");
  };
  // Qwen2.5's YaRN, as its model card sets it (transformers 4 spelling).
  auto y = base(R"(, "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"})");
  EXPECT_EQ(y.rope_scaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(y.rope_scaling.beta_fast, 32);
  EXPECT_EQ(y.rope_scaling.beta_slow, 1);
  EXPECT_NEAR(y.rope_attention_factor(), 0.1 * std::log(4.0) + 1, 1e-15);
  // The engines' rope tables carry the attention factor and LongRoPE's factors
  // (test_llm_arch_engines: transformers' Phi-3 fixture).
  EXPECT_TRUE(engine_runs(base("")));
  EXPECT_TRUE(engine_runs(y));
  ModelConfig long_rope = y;
  long_rope.rope_scaling.type = RopeScalingType::LongRope;
  EXPECT_TRUE(engine_runs(long_rope));
  EXPECT_EQ(engine_refusal(long_rope), "");
  // The ramp by hand: the correction range at 32768 positions is dims floor(4.42) = 4 (32 rotations)
  // to ceil(7.43) = 8 (1 rotation); pair 7 is 3/4 of the way: 3/4 interpolated, 1/4 original.
  auto f = y.rope_inv_freq();
  ASSERT_EQ(f.size(), 8u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[3], std::pow(10000.0, -6.0 / 16));
  const double b7 = std::pow(10000.0, -14.0 / 16);
  EXPECT_NEAR(f[7], b7 / 4 * 0.75 + b7 * 0.25, 1e-15);
  // transformers 5 spelling, explicit attention factor and betas.
  auto y5 = base(R"(, "rope_parameters": {"rope_type": "yarn", "rope_theta": 5000, "factor": 2.0,
    "original_max_position_embeddings": 4096, "beta_fast": 16, "beta_slow": 2, "attention_factor": 1.5})");
  EXPECT_EQ(y5.rope_theta, 5000);
  EXPECT_EQ(y5.rope_scaling.beta_fast, 16);
  EXPECT_EQ(y5.rope_attention_factor(), 1.5);
  std::string msg = error_of([&] { base(R"(, "rope_scaling": {"type": "dynamic", "factor": 2.0})"); });
  EXPECT_NE(msg.find("rope type 'dynamic' is not supported"), std::string::npos) << msg;
  msg = error_of([&] { base(R"(, "rope_scaling": {"type": "yarn", "factor": 2.0})"); });
  EXPECT_NE(msg.find("needs original_max_position_embeddings"), std::string::npos) << msg;
}

TEST(ArchConfigHf, MixtureOfExperts) {
  auto mx = hf(R"({"architectures": ["MixtralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
    "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false,
    "vocab_size": 32000})");
  EXPECT_EQ(mx.architecture, Architecture::Mixtral);
  EXPECT_EQ(mx.n_experts, 8);
  EXPECT_EQ(mx.n_experts_used, 2);
  EXPECT_EQ(mx.expert_ffn_size, 14336);
  EXPECT_TRUE(mx.norm_topk_prob);
  EXPECT_FALSE(mx.sliding_window);
  EXPECT_TRUE(mx.layer_is_moe(31));
  auto q2 = hf(R"({"architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_size": 2048,
    "intermediate_size": 5632, "max_position_embeddings": 8192, "model_type": "qwen2_moe",
    "moe_intermediate_size": 1408, "norm_topk_prob": false, "num_attention_heads": 16, "num_experts": 60,
    "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
    "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936})");
  EXPECT_EQ(q2.architecture, Architecture::Qwen2Moe);
  EXPECT_EQ(q2.n_experts, 60);
  EXPECT_EQ(q2.expert_ffn_size, 1408);
  EXPECT_EQ(q2.shared_expert_ffn_size, 5632);
  EXPECT_EQ(q2.ffn_size, 5632);
  EXPECT_FALSE(q2.norm_topk_prob);
  EXPECT_TRUE(q2.attention_bias);
  EXPECT_FALSE(q2.sliding_window);
  EXPECT_TRUE(q2.dense_layers.empty());
  auto q3 = hf(R"({"architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "decoder_sparse_step": 2,
    "head_dim": 128, "hidden_size": 2048, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "mlp_only_layers": [0], "model_type": "qwen3_moe", "moe_intermediate_size": 768, "norm_topk_prob": true,
    "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 4,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "vocab_size": 151936})");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_TRUE(q3.norm_topk_prob);
  EXPECT_EQ(q3.n_experts_used, 8);
  // decoder_sparse_step 2: layers 1 and 3 are MoE; mlp_only_layers [0] is dense anyway.
  EXPECT_EQ(q3.dense_layers, (std::vector<bool>{true, false, true, false}));
  auto ol = hf(R"({"architectures": ["OlmoeForCausalLM"], "clip_qkv": null, "hidden_size": 2048,
    "intermediate_size": 1024, "max_position_embeddings": 4096, "model_type": "olmoe", "norm_topk_prob": false,
    "num_attention_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16,
    "num_key_value_heads": 16, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "vocab_size": 50304})");
  EXPECT_EQ(ol.architecture, Architecture::Olmoe);
  EXPECT_FALSE(ol.qk_norm);
  EXPECT_TRUE(ol.qk_norm_whole);
  EXPECT_EQ(ol.expert_ffn_size, 1024);
  std::string msg = error_of([] {
    hf(R"({"model_type": "olmoe", "hidden_size": 64, "intermediate_size": 32, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "num_experts": 4, "num_experts_per_tok": 5})");
  });
  EXPECT_NE(msg.find("5 experts used of 4"), std::string::npos) << msg;
}

TEST(ArchConfigHf, Encoders) {
  auto bge = hf(R"({"architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
    "hidden_size": 768, "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
    "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0,
    "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": 30522})");
  EXPECT_EQ(bge.architecture, Architecture::Bert);
  EXPECT_EQ(bge.norm, NormKind::LayerNorm);
  EXPECT_EQ(bge.norm_placement, NormPlacement::Post);
  EXPECT_EQ(bge.activation, Activation::Gelu);
  EXPECT_FALSE(bge.gated_ffn);
  EXPECT_FALSE(bge.causal);
  EXPECT_TRUE(bge.absolute_positions);
  EXPECT_EQ(bge.position_offset, 0);
  EXPECT_EQ(bge.type_vocab_size, 2);
  EXPECT_EQ(bge.rms_norm_eps, 1e-12);
  EXPECT_EQ(bge.rope_dim, 0);
  EXPECT_TRUE(bge.attention_bias && bge.attention_out_bias && bge.ffn_bias);
  EXPECT_TRUE(bge.embedding_model);
  EXPECT_EQ(bge.pooling, Pooling::Cls);
  auto e5 = hf(R"({"architectures": ["XLMRobertaModel"], "hidden_act": "gelu", "hidden_size": 768,
    "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 514, "model_type": "xlm-roberta",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 1, "position_embedding_type": "absolute",
    "type_vocab_size": 1, "vocab_size": 250002})");
  EXPECT_EQ(e5.position_offset, 2);
  EXPECT_EQ(e5.max_position_embeddings, 514);
  std::string msg = error_of([] {
    hf(R"({"model_type": "bert", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "position_embedding_type": "relative_key"})");
  });
  EXPECT_NE(msg.find("position_embedding_type 'relative_key' is not supported"), std::string::npos) << msg;
  // ModernBERT as the Hub writes it (answerdotai/ModernBERT-base's keys): global layers 0, 3, 6, ...
  auto mb = hf(R"({"architectures": ["ModernBertForMaskedLM"], "model_type": "modernbert", "hidden_size": 768,
    "intermediate_size": 1152, "num_attention_heads": 12, "num_hidden_layers": 7, "vocab_size": 50368,
    "global_attn_every_n_layers": 3, "local_attention": 128, "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0, "norm_eps": 1e-05, "hidden_activation": "gelu", "classifier_pooling": "mean",
    "max_position_embeddings": 8192})");
  EXPECT_EQ(mb.architecture, Architecture::ModernBert);
  EXPECT_EQ(mb.sliding_layers, (std::vector<bool>{false, true, true, false, true, true, false}));
  EXPECT_EQ(mb.sliding_window, 128);
  EXPECT_EQ(mb.rope_theta, 160000.0);
  EXPECT_EQ(mb.layer_rope_theta(1), 10000.0);
  EXPECT_EQ(mb.head_dim, 64);
  EXPECT_EQ(mb.pooling, Pooling::Mean);
  EXPECT_TRUE(mb.fused_qkv && mb.fused_gate_up && mb.embedding_model && !mb.causal);
  msg = error_of([] {
    hf(R"({"model_type": "modernbert", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
      "num_hidden_layers": 1, "vocab_size": 10, "mlp_bias": true})");
  });
  EXPECT_NE(msg.find("\"mlp_bias\" is true: ModernBERT's biases are not supported"), std::string::npos) << msg;
  // Qwen3-Embedding: a Qwen3 base model, last-token pooling.
  auto qe = hf(R"({"architectures": ["Qwen3Model"], "model_type": "qwen3", "hidden_size": 1024,
    "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
    "num_hidden_layers": 28, "vocab_size": 151669, "tie_word_embeddings": true})");
  EXPECT_TRUE(qe.embedding_model);
  EXPECT_EQ(qe.pooling, Pooling::Last);
  EXPECT_TRUE(engine_runs(qe));  // the decoder engines run it; its embedding is LlamaModel::last_hidden
  // nomic-embed-text-v1.5's config.json (NomicBertConfig, GPT-2's key names; its other keys left out).
  const std::string nomic = R"({"activation_function": "swiglu", "architectures": ["NomicBertModel"],
    "causal": false, "layer_norm_epsilon": 1e-12, "max_trained_positions": 2048, "mlp_fc1_bias": false,
    "mlp_fc2_bias": false, "model_type": "nomic_bert", "n_embd": 768, "n_head": 12, "n_inner": 3072,
    "n_layer": 12, "n_positions": 8192, "parallel_block": false, "prenorm": false, "qkv_proj_bias": false,
    "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": false,
    "rotary_scaling_factor": null, "type_vocab_size": 2, "use_rms_norm": false, "vocab_size": 30528)";
  auto nb = hf(nomic + "}");
  EXPECT_EQ(nb.architecture, Architecture::NomicBert);
  EXPECT_EQ(nb.hidden_size, 768);
  EXPECT_EQ(nb.head_dim, 64);
  EXPECT_EQ(nb.rope_dim, 64);
  EXPECT_EQ(nb.ffn_size, 3072);
  EXPECT_EQ(nb.rope_theta, 1000.0);
  EXPECT_EQ(nb.max_position_embeddings, 2048);  // the trained context, as llama.cpp's converter writes
  EXPECT_EQ(nb.pooling, Pooling::Mean);
  EXPECT_EQ(nb.activation, Activation::Silu);
  EXPECT_TRUE(nb.fused_qkv && nb.gated_ffn && nb.embedding_model && !nb.causal && !nb.absolute_positions);
  // The variants it does not run, refused by name.
  const std::pair<const char*, const char*> bad[] = {
      {R"("qkv_proj_bias": false)", R"("qkv_proj_bias": true)"},
      {R"("prenorm": false)", R"("prenorm": true)"},
      {R"("rotary_scaling_factor": null)", R"("rotary_scaling_factor": 2)"},
      {R"("activation_function": "swiglu")", R"("activation_function": "gelu")"}};
  for (const auto& [from, to] : bad) {
    std::string text = nomic + "}";
    text.replace(text.find(from), std::string(from).size(), to);
    msg = error_of([&] { hf(text); });
    EXPECT_NE(msg.find(std::string(to).substr(0, std::string(to).find(':'))), std::string::npos) << to << ": " << msg;
    EXPECT_NE(msg.find("nomic-bert"), std::string::npos) << to << ": " << msg;
  }
}

// --- GGUF metadata as llama.cpp's converter writes it --------------------------------------------------

namespace {

GgufFile parse(const GgufWriter& w, std::vector<std::byte>& keep, const std::string& name) {
  keep = w.to_bytes();
  return GgufFile::parse(keep, name);
}

void common(GgufWriter& w, const std::string& arch, int64_t layers, int64_t hidden = 64) {
  w.add_string("general.architecture", arch);
  w.add_u32(arch + ".block_count", uint32_t(layers));
  w.add_u32(arch + ".embedding_length", uint32_t(hidden));
  w.add_u32(arch + ".feed_forward_length", 128);
  w.add_u32(arch + ".attention.head_count", 4);
  w.add_u32(arch + ".attention.head_count_kv", 2);
  w.add_u32(arch + ".context_length", 256);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.add_f32(arch + ".rope.freq_base", 10000.f);
  std::vector<std::string> tokens(10, "t");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
}

}  // namespace

TEST(ArchConfigGguf, Gemma) {
  std::vector<std::byte> keep;
  GgufWriter w;
  common(w, "gemma2", 4);
  w.add_u32("gemma2.attention.key_length", 32);
  w.add_f32("gemma2.attn_logit_softcapping", 5.f);
  w.add_f32("gemma2.final_logit_softcapping", 2.5f);
  w.add_u32("gemma2.attention.sliding_window", 6);
  auto c = config_from_gguf(parse(w, keep, "g2.gguf"));
  EXPECT_EQ(c.architecture, Architecture::Gemma2);
  EXPECT_EQ(c.norm, NormKind::RmsNorm);  // the converter added the 1
  EXPECT_EQ(c.norm_placement, NormPlacement::Sandwich);
  EXPECT_EQ(c.attn_logit_softcap, 5.f);
  EXPECT_EQ(c.final_logit_softcap, 2.5f);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c.query_pre_attn_scalar, 32);
  EXPECT_DOUBLE_EQ(c.embedding_scale, 8.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  // Gemma 3: pattern 6 unless an array says otherwise; the sliding layers' own base.
  GgufWriter w3;
  common(w3, "gemma3", 3);
  w3.add_u32("gemma3.attention.key_length", 16);
  w3.add_u32("gemma3.attention.sliding_window", 5);
  w3.add("gemma3.attention.sliding_window_pattern", GgufMetaValue::bool_array({true, false, true}));
  w3.add_f32("gemma3.rope.freq_base_swa", 5000.f);
  w3.add_string("gemma3.rope.scaling.type", "linear");
  w3.add_f32("gemma3.rope.scaling.factor", 8.f);
  auto c3 = config_from_gguf(parse(w3, keep, "g3.gguf"));
  EXPECT_EQ(c3.sliding_layers, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(c3.layer_rope_theta(0), 5000);
  EXPECT_EQ(c3.layer_rope_theta(1), 10000);
  EXPECT_EQ(c3.layer_rope_scaling(1).type, RopeScalingType::Linear);
  EXPECT_EQ(c3.layer_rope_scaling(0).type, RopeScalingType::None);
  EXPECT_EQ(c3.attn_logit_softcap, 0);
}

TEST(ArchConfigGguf, MoeAndEncoders) {
  std::vector<std::byte> keep;
  GgufWriter w;
  common(w, "llama", 2);
  w.add_u32("llama.expert_count", 8);
  w.add_u32("llama.expert_used_count", 2);
  auto mx = config_from_gguf(parse(w, keep, "mixtral.gguf"));
  EXPECT_EQ(mx.architecture, Architecture::Mixtral);
  EXPECT_EQ(mx.expert_ffn_size, 128);
  EXPECT_TRUE(mx.norm_topk_prob);
  GgufWriter q;
  common(q, "qwen2moe", 2);
  q.add_u32("qwen2moe.expert_count", 6);
  q.add_u32("qwen2moe.expert_used_count", 2);
  q.add_u32("qwen2moe.expert_feed_forward_length", 32);
  q.add_u32("qwen2moe.expert_shared_feed_forward_length", 96);
  auto q2 = config_from_gguf(parse(q, keep, "q2.gguf"));
  EXPECT_EQ(q2.expert_ffn_size, 32);
  EXPECT_EQ(q2.shared_expert_ffn_size, 96);
  EXPECT_FALSE(q2.norm_topk_prob);
  GgufWriter b;
  common(b, "bert", 2);
  b.add_f32("bert.attention.layer_norm_epsilon", 1e-12f);
  b.add_bool("bert.attention.causal", false);
  b.add_u32("bert.pooling_type", 1);
  b.add_u32("tokenizer.ggml.token_type_count", 2);
  auto be = config_from_gguf(parse(b, keep, "bert.gguf"));
  EXPECT_EQ(be.architecture, Architecture::Bert);
  EXPECT_EQ(be.pooling, Pooling::Mean);
  EXPECT_FALSE(be.causal);
  EXPECT_EQ(be.type_vocab_size, 2);
  EXPECT_EQ(be.rms_norm_eps, 1e-12f);
  GgufWriter bad;
  common(bad, "bert", 2);
  bad.add_u32("bert.pooling_type", 9);
  std::string msg = error_of([&] { config_from_gguf(parse(bad, keep, "bad.gguf")); });
  EXPECT_NE(msg.find("bert.pooling_type"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
}

// --- the name table -----------------------------------------------------------------------------

TEST(TensorNames, BothDirectionsForEveryArchitecture) {
  const Architecture all[] = {Architecture::Llama,      Architecture::Mistral,  Architecture::Qwen2,
                              Architecture::Qwen3,      Architecture::Gemma2,   Architecture::Gemma3,
                              Architecture::Phi3,       Architecture::Mixtral,  Architecture::Qwen2Moe,
                              Architecture::Qwen3Moe,   Architecture::Olmoe,    Architecture::Bert,
                              Architecture::ModernBert, Architecture::NomicBert};
  for (Architecture a : all) {
    auto roles = layer_roles(a);
    ASSERT_FALSE(roles.empty()) << to_string(a);
    for (TensorRole r : roles) {
      TensorNames n = tensor_names(a, r, 7);
      EXPECT_FALSE(n.gguf.empty()) << to_string(a) << " " << to_string(r);
      EXPECT_NE(n.gguf.find("blk.7."), std::string::npos) << n.gguf;
      if (!n.hf.empty()) {
        EXPECT_EQ(hf_name_for_gguf(a, n.gguf), n.hf) << to_string(a) << " " << n.gguf;
      }
    }
    for (TensorRole r : model_roles(a)) {
      TensorNames n = tensor_names(a, r);
      EXPECT_EQ(hf_name_for_gguf(a, n.gguf), n.hf.empty() ? n.gguf : n.hf) << to_string(a) << " " << n.gguf;
    }
  }
  // Where the formats disagree on the word, the table decides per architecture.
  EXPECT_EQ(hf_name_for_gguf(Architecture::Gemma2, "blk.3.ffn_norm.weight"),
            "model.layers.3.pre_feedforward_layernorm.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::Llama, "blk.3.ffn_norm.weight"),
            "model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::Gemma2, "blk.3.post_attention_norm.weight"),
            "model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::Phi3, "blk.0.ffn_up.weight"), "model.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::Mixtral, "blk.2.ffn_down_exps.weight"),
            "model.layers.2.block_sparse_moe.experts.w2.weight");
  EXPECT_EQ(tensor_names(Architecture::Mixtral, TensorRole::ExpertsGate, 2, 5).hf,
            "model.layers.2.block_sparse_moe.experts.5.w1.weight");
  EXPECT_EQ(tensor_names(Architecture::Qwen3Moe, TensorRole::ExpertsUp, 1, 0).hf,
            "model.layers.1.mlp.experts.0.up_proj.weight");
  EXPECT_EQ(tensor_names(Architecture::Bert, TensorRole::LayerOutNorm, 1).gguf, "blk.1.layer_output_norm.weight");
  // nomic-bert: fc11 is llama.cpp's ffn_up, fc12 its ffn_gate (tensor_mapping.py).
  EXPECT_EQ(hf_name_for_gguf(Architecture::NomicBert, "blk.2.ffn_gate.weight"), "encoder.layers.2.mlp.fc12.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::NomicBert, "blk.2.ffn_up.weight"), "encoder.layers.2.mlp.fc11.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::NomicBert, "bert.emb_ln.weight"), "emb_ln.weight");
  EXPECT_EQ(hf_name_for_gguf(Architecture::Bert, "token_types.weight"), "embeddings.token_type_embeddings.weight");
  EXPECT_TRUE(tensor_names(Architecture::Llama, TensorRole::ExpertsGate, 0, 0).hf.empty());
  EXPECT_EQ(hf_name_for_gguf(Architecture::Llama, "blk.0.unknown.weight"), "blk.0.unknown.weight");
  // Checkpoint wrappers.
  EXPECT_EQ(canonical_hf_name(Architecture::Qwen3, "layers.4.mlp.up_proj.weight"), "model.layers.4.mlp.up_proj.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Qwen3, "embed_tokens.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Gemma3, "language_model.model.norm.weight"), "model.norm.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Gemma3, "model.language_model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Bert, "bert.embeddings.LayerNorm.gamma"), "embeddings.LayerNorm.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Mixtral, "model.layers.0.mlp.gate.weight"),
            "model.layers.0.block_sparse_moe.gate.weight");
  EXPECT_EQ(canonical_hf_name(Architecture::Mixtral, "model.layers.0.mlp.experts.gate_up_proj"),
            "model.layers.0.block_sparse_moe.experts.gate_up_proj");
  EXPECT_EQ(canonical_hf_name(Architecture::Bert, "roberta.encoder.layer.0.output.dense.bias"),
            "encoder.layer.0.output.dense.bias");
}

// --- the fixtures (tests/data/arch): transformers' config.json against llama.cpp's GGUF ----------------

TEST(ArchFixtures, HfAndGgufConfigsAgree) {
  const fs::path root = fs::path(WGC_SOURCE_DIR) / "tests/data/arch";
  int checked = 0;
  for (std::string name : {"gemma2", "gemma3", "phi3", "mistral", "llama3-rope", "llama-yarn", "mixtral", "qwen2moe",
                           "qwen3moe", "olmoe", "bert", "roberta", "qwen3-embedding", "xlmr", "modernbert"}) {
    fs::path dir = root / name, gguf = dir / (name + "-bf16.gguf");
    if (!fs::exists(dir / "config.json") || !fs::exists(gguf)) continue;
    SCOPED_TRACE(name);
    OpenOptions o;
    o.progress = false;
    o.any_architecture = true;
    ModelFile hfm = open_model(dir, o), gm = open_model(gguf, o);
    const ModelConfig &a = hfm.config(), &b = gm.config();
    // The hub-style config.json the model was built from reads the same as the one transformers saved.
    ModelConfig hub = config_from_hf(json::parse_file(dir / "hub_config.json"), "hub_config.json");
    for (const ModelConfig* c : std::initializer_list<const ModelConfig*>{&hub, &b}) {
      if (c == &b && name != "llama3-rope" && name != "llama-yarn" && name != "mistral") {
        EXPECT_EQ(c->architecture, a.architecture);
      }
      EXPECT_EQ(c->vocab_size, a.vocab_size);
      EXPECT_EQ(c->hidden_size, a.hidden_size);
      EXPECT_EQ(c->n_layers, a.n_layers);
      EXPECT_EQ(c->n_heads, a.n_heads);
      EXPECT_EQ(c->n_kv_heads, a.n_kv_heads);
      EXPECT_EQ(c->head_dim, a.head_dim);
      EXPECT_EQ(c->rope_dim, a.rope_dim);
      EXPECT_FLOAT_EQ(float(c->rope_theta), float(a.rope_theta));
      EXPECT_EQ(c->n_experts, a.n_experts);
      EXPECT_EQ(c->n_experts_used, a.n_experts_used);
      EXPECT_EQ(c->expert_ffn_size, a.expert_ffn_size);
      EXPECT_EQ(c->shared_expert_ffn_size, a.shared_expert_ffn_size);
      EXPECT_EQ(c->norm_topk_prob, a.norm_topk_prob);
      EXPECT_EQ(c->qk_norm, a.qk_norm);
      EXPECT_EQ(c->qk_norm_whole, a.qk_norm_whole);
      EXPECT_EQ(c->fused_qkv, a.fused_qkv);
      EXPECT_FLOAT_EQ(float(c->attn_logit_softcap), float(a.attn_logit_softcap));
      // The fixture script sets gemma2's final cap after writing hub_config.json (half the largest
      // raw logit, so that it binds): only the saved config and the GGUF carry it.
      if (!(c == &hub && name == "gemma2")) {
        EXPECT_FLOAT_EQ(float(c->final_logit_softcap), float(a.final_logit_softcap));
      }
      EXPECT_EQ(c->tie_word_embeddings || c->embedding_model, a.tie_word_embeddings || a.embedding_model);
      // hub_config.json alone has no sentence-transformers pooling files beside it (CLS by default).
      if (c == &b) {
        EXPECT_EQ(c->pooling, a.pooling);
      }
      EXPECT_EQ(c->rope_scaling.type, a.rope_scaling.type);
      EXPECT_EQ(c->sliding_layers, a.sliding_layers);
      // llama.cpp's converter drops Mistral's window (its llama architecture has none).
      if (!(c == &b && name == "mistral")) {
        EXPECT_EQ(c->sliding_window, a.sliding_window);
      }
      for (int64_t l = 0; l < a.n_layers; ++l) {
        auto fa = a.rope_inv_freq(l, 27), fc = c->rope_inv_freq(l, 27);
        ASSERT_EQ(fa.size(), fc.size());
        for (size_t i = 0; i < fa.size(); ++i)
          EXPECT_NEAR(fc[i], fa[i], 1e-6 * fa[i]) << "layer " << l << " pair " << i;
        EXPECT_NEAR(c->rope_attention_factor(l), a.rope_attention_factor(l), 1e-6);
      }
    }
    // Gemma's (1 + w): in the weights of the GGUF (the converter adds it), in the norm of the folder.
    if (name == "gemma2" || name == "gemma3") {
      EXPECT_EQ(a.norm, NormKind::RmsNormOnePlus);
      EXPECT_EQ(b.norm, NormKind::RmsNorm);
    }
    // RoBERTa: llama.cpp cuts the unused position rows, so its table starts at 0.
    if (name == "roberta") {
      EXPECT_EQ(a.position_offset, 2);
      EXPECT_EQ(b.position_offset, 0);
      EXPECT_EQ(a.max_position_embeddings, b.max_position_embeddings + 2);
    }
    // Every role of every layer resolves in both files to the same values.
    for (const ExpectedTensor& e : expected_tensors(a)) {
      const int64_t experts = is_expert_role(e.role) ? a.n_experts : 1;
      for (int64_t x = 0; x < experts; ++x) {
        auto ta = find_role(hfm, e.role, e.layer, is_expert_role(e.role) ? x : -1);
        auto tb = find_role(gm, e.role, e.layer, is_expert_role(e.role) ? x : -1);
        ASSERT_TRUE(ta && tb) << to_string(e.role) << " layer " << e.layer;
        auto va = to_f32(*ta), vb = to_f32(*tb);
        if (e.role == TensorRole::PositionEmbd) va.erase(va.begin(), va.begin() + a.position_offset * a.hidden_size);
        ASSERT_EQ(va.size(), vb.size()) << ta->name;
        const bool one_plus =
            a.norm == NormKind::RmsNormOnePlus && ta->shape.size() == 1 && ta->name.find("norm") != std::string::npos;
        float worst = 0;
        for (size_t i = 0; i < va.size(); ++i)
          worst = std::max(worst, std::abs(va[i] + (one_plus ? 1.f : 0.f) - vb[i]));
        EXPECT_LE(worst, one_plus ? 1e-2f : 0.f) << ta->name << " vs " << tb->name;
      }
    }
    ++checked;
  }
  if (!checked) GTEST_SKIP() << "no model fixtures in tests/data/arch (scripts/make_arch_fixtures.py makes them)";
}
