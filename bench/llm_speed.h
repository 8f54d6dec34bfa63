// llama-bench's pp/tg tests for LlamaModel (behind `wgc bench-llm`): prefill of p random tokens and
// n greedy decode steps from an empty cache, timed per repeat; decode also as weight bytes read per
// second and as a fraction of the memory bandwidth.
#pragma once

#include "gpu/context.h"
#include "llm/generate/speculative.h"
#include "llm/model/llama.h"
#include "ops/llm/llm_ops.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wgc::bench {

struct LlmSpeedPlan {
  std::string model;                     // a GGUF file or Hugging Face folder
  std::vector<int> prompt_sizes{512};    // pp tests (0s are dropped)
  std::vector<int> generate_sizes{128};  // tg tests
  int repeats = 5;
  int batch = 512;     // EngineOptions::max_batch
  uint32_t seed = 1;   // of the random tokens
  bool warmup = true;  // one untimed run per test
  int decode_ahead = llm::EngineOptions{}.decode_ahead;
  bool profile = false;  // GPU time per kernel of one decode step (under the last tuning set)
  llm::LlmTuning tuning;
  // Tuning sets (llm::apply_tuning's "knob=v/knob=v" on top of `tuning`): every test runs once per
  // set, in one process (LlamaModel::set_tuning); empty: `tuning` alone.
  std::vector<std::string> tuning_sets;
  // llama-bench's -d: tokens already in the cache before each test (every test runs at each depth).
  std::vector<int> depths{0};
  bool q8_activations = llm::EngineOptions{}.q8_activations;  // EngineOptions::q8_activations
  double bandwidth_gbs = -1;                                  // < 0: measure (on the GPU engine); 0: none; > 0: given
  llm::Device device = llm::Device::Auto;                     // the engine (EngineOptions::device)
  int threads = 0;                                            // the CPU engine's threads (0: every processor)
  // A layer split (EngineOptions::split_gpus, tensor_split): the GPUs after ctx's, their shares.
  std::vector<Context> split_gpus;
  std::vector<double> tensor_split;
  llm::KvType cache_type = llm::KvType::F32;  // EngineOptions::cache_type
  bool swa_full = false;                      // EngineOptions::swa_full
  // Speculative decoding (llm/generate/speculative.h): every tg test runs again with this draft
  // model (same tokenizer, loaded like the target), once per count of proposals per round and per
  // acceptance rate: with rates in [0, 1] each proposal is kept with that probability instead of
  // by the target's argmax, so random-weight models measure chosen acceptance rates (none: the
  // argmax decides).
  std::string draft_model;
  std::vector<int> draft_tokens{llm::SpeculativeOptions{}.draft_tokens};
  std::vector<double> draft_acceptance;
};

struct Stats {
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
};
Stats stats(std::vector<double> v);  // stddev: the sample standard deviation, as llama-bench

struct LlmSpeedTest {
  std::string name;  // "pp512", "tg128"
  int n_prompt = 0, n_gen = 0;
  std::vector<double> seconds, tps;  // per repeat
  Stats t;                           // of tps
  double gbs = -1;                   // tg: weight bytes read per second / 1e9
  double bw_frac = -1;               // tg: gbs / bandwidth
  std::vector<double> host_ms;       // tg: host time recording a step, per token, per repeat
  std::vector<double> wait_ms;       // tg: host time waiting for each token's readback, per repeat
  int depth = 0;                     // tokens in the cache before the test
  std::string tuning;                // the tuning set it ran with ("" : the plan's tuning)
  // Speculative tg tests: proposals per round (0: plain decode), the fraction kept, tokens per
  // target pass, and the draft's share of the time (over every timed run).
  int draft_tokens = 0;
  double forced_acceptance = -1;  // the rate asked for (< 0: the target's argmax decided)
  double acceptance = -1, tokens_per_pass = -1, draft_share = -1;
};

struct KernelTime {
  std::string kernel;
  int dispatches = 0;
  double ms = 0;
};

struct LlmSpeedResult {
  llm::Device engine = llm::Device::Gpu;
  AdapterInfo adapter;             // the GPU engine's
  std::string device;              // the adapter's name, or the CPU engine's processor line
  int threads = 0;                 // the CPU engine's
  std::string engine_reason;       // why Auto chose the CPU engine ("" otherwise)
  double bandwidth = -1;           // bytes/s; <= 0: none
  std::string bandwidth_source;    // "given", "measured", "none"
  std::string name;                // "llama 8B Q4_0"
  std::string architecture, type;  // "llama", "Q4_0" (the type most weight bytes are in)
  uint64_t file_bytes = 0;
  int64_t params = 0;
  uint64_t weight_bytes = 0;     // on the GPU
  uint64_t bytes_per_token = 0;  // read per decoded token
  int max_ctx = 0;
  uint64_t kv_bytes = 0;  // the engine's KV cache (LlamaModel::kv_bytes) for max_ctx positions
  // kv_bytes = kv_fixed + kv_per_token * max_ctx (LlamaModel::kv_footprint: the sliding-window
  // layers' rings are the fixed part)
  uint64_t kv_fixed = 0;
  double kv_per_token = 0;
  std::vector<LlmSpeedTest> tests;
  std::vector<KernelTime> profile;  // by total time, largest first
  double profile_ms = 0;
  std::string draft_name;  // the draft model's, as `name` ("" : none)
};

// Runs the plan's tests on ctx's GPU or the CPU engine (none: the CPU engine; plan.device and
// llm::choose_device decide); `status` hears what runs now ("pp512 run 2/5").
LlmSpeedResult run_llm_speed(const std::optional<Context>& ctx, const LlmSpeedPlan& plan,
                             const std::function<void(const std::string&)>& status = {});

}  // namespace wgc::bench
