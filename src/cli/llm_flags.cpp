#include "cli/llm_flags.h"

#include "llm/generate/default_model.h"

#include <random>

namespace wgc::cli {

std::vector<int32_t> token_ids(const std::vector<int64_t>& values, std::string_view flag) {
  std::vector<int32_t> ids;
  for (int64_t v : values) {
    if (v < 0 || v > INT32_MAX)
      throw UsageError(std::string(flag) + " expects token ids from 0 to 2147483647, got " + std::to_string(v));
    ids.push_back(int32_t(v));
  }
  return ids;
}

namespace {

// The library's option names (what llm::validate says) and the flags that set them.
constexpr std::pair<const char*, const char*> kFlagOfOption[] = {
    {"temperature", "--temp"},
    {"top_k", "--top-k"},
    {"top_p", "--top-p"},
    {"min_p", "--min-p"},
    {"repeat_penalty", "--repeat-penalty"},
    {"penalty_last_n", "--repeat-last-n"},
    {"presence_penalty", "--presence-penalty"},
    {"frequency_penalty", "--frequency-penalty"},
    {"seed", "--seed"},
    {"max_tokens", "-n"},
    {"stop", "--stop"},
};

// Runs `check`, saying an llm::OptionError in the flags' names.
template <class F>
void in_flag_names(F&& check) {
  try {
    check();
  } catch (const OptionError& e) {
    for (auto [field, flag] : kFlagOfOption)
      if (e.option == field) throw UsageError(std::string(flag) + " " + e.problem);
    throw;
  }
}

}  // namespace

void add_sampling_flags(CLI::App& app, SamplingFlags& s) {
  const char* g = "Sampling (defaults: the model's; wgc-tiny-dict: temp 0.8, top-p 0.95; others: llama.cpp's)";
  add_number(app, "--temp", s.temperature, "temperature; 0: greedy (default 0.8)")->group(g);
  add_number(app, "--top-k", s.top_k, "keep the k most likely tokens; 0: off (default 40)")->group(g);
  add_number(app, "--top-p", s.top_p, "keep the smallest set with this probability mass, in (0, 1] (default 0.95)")
      ->group(g);
  add_number(app, "--min-p", s.min_p,
             "keep tokens at least this times the best one's probability, in [0, 1] (default 0.05)")
      ->group(g);
  add_number(app, "--repeat-penalty", s.repeat_penalty,
             "divide the logits of recent tokens by this; 1: off (default 1)")
      ->group(g);
  add_number(app, "--repeat-last-n", s.repeat_last_n,
             "tokens the penalties look back over; -1: all, 0: off (default 64)")
      ->group(g);
  add_number(app, "--presence-penalty", s.presence_penalty, "subtracted from the logit of any recent token (default 0)")
      ->group(g);
  add_number(app, "--frequency-penalty", s.frequency_penalty,
             "subtracted per occurrence among recent tokens (default 0)")
      ->group(g);
  add_number(app, "--seed", s.seed, "random seed, 0 to 2^64-1 (default: a random one, printed with --json)")->group(g);
}

llm::SamplingParams sampling_params(const SamplingFlags& s, const std::filesystem::path& model) {
  llm::SamplingParams p = llm::default_sampling(model);
  if (s.temperature) p.temperature = *s.temperature;
  if (s.top_k) p.top_k = *s.top_k;
  if (s.top_p) p.top_p = *s.top_p;
  if (s.min_p) p.min_p = *s.min_p;
  if (s.repeat_penalty) p.repeat_penalty = *s.repeat_penalty;
  if (s.repeat_last_n) p.penalty_last_n = *s.repeat_last_n;
  if (s.presence_penalty) p.presence_penalty = *s.presence_penalty;
  if (s.frequency_penalty) p.frequency_penalty = *s.frequency_penalty;
  if (s.seed) {
    p.seed = *s.seed;
  } else {
    std::random_device rd;
    p.seed = (uint64_t(rd()) << 32) ^ rd();
  }
  in_flag_names([&] { llm::validate(p); });
  return p;
}

void check_generate_options(const llm::GenerateOptions& o) {
  in_flag_names([&] { llm::validate(o); });
}

}  // namespace wgc::cli
