// wgc synth-model: a GGUF with random weights in the exact shapes of a real model (for benchmarks).
#include "cli/command.h"
#include "llm/synth/synth_model.h"
#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace wgc::cli {
namespace {

int synth_model_cmd(Args& a) {
  if (a.flag("--list")) {
    a.done();
    std::printf("%-14s %7s %7s %6s %6s %5s %5s %7s %8s %6s\n", "shape", "params", "hidden", "layers", "heads", "kv",
                "hd", "ffn", "vocab", "tied");
    for (const auto& s : llm::synth::shapes()) {
      llm::synth::SynthModel m(s, llm::TensorType::F16);
      const double p = double(m.params());
      std::printf("%-14s %6.2f%s %7lld %6lld %6lld %5lld %5lld %7lld %8lld %6s\n", s.name.c_str(),
                  p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M", (long long)s.hidden, (long long)s.layers,
                  (long long)s.heads, (long long)s.kv_heads, (long long)s.head_dim, (long long)s.ffn,
                  (long long)s.vocab, s.tied ? "yes" : "no");
    }
    return 0;
  }
  auto shape_name = a.option("--shape");
  auto type_name = a.option_or("--type", "f16");
  auto out = a.option("--out");
  std::string seed_text = a.option_or("--seed", "0");
  int threads = static_cast<int>(a.number_or("--threads", 0));
  bool force = a.flag("--force");
  a.done();
  if (!shape_name) throw Error("wgc synth-model: --shape is required (wgc synth-model --list shows them)");
  if (!out) throw Error("wgc synth-model: --out FILE.gguf is required");
  char* end = nullptr;
  unsigned long long seed = std::strtoull(seed_text.c_str(), &end, 0);
  if (seed_text.empty() || *end)
    throw Error("wgc synth-model: --seed expects a non-negative integer, got '" + seed_text + "'");

  if (!force && std::filesystem::exists(*out))
    throw Error("wgc synth-model: " + *out + ": the file exists (pass --force to replace it)");
  const auto& shape = llm::synth::find_shape(*shape_name);
  llm::TensorType type = llm::synth::parse_synth_type(type_name);
  llm::synth::SynthOptions opt;
  opt.seed = seed;
  opt.force = force;
  opt.write.threads = threads;
  auto t0 = std::chrono::steady_clock::now();
  auto m = llm::synth::write_synth_model(*out, shape, type, opt);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double p = double(m.params()), b = double(m.file_bytes());
  std::printf("%s: %s %s, %.3g %s params, %.3g %s, seed %llu, written in %.1f s (%.2f GB/s)\n", out->c_str(),
              shape.display.c_str(), std::string(llm::to_string(type)).c_str(), p >= 1e9 ? p / 1e9 : p / 1e6,
              p >= 1e9 ? "B" : "M", b >= 1e9 ? b / 1e9 : b / 1e6, b >= 1e9 ? "GB" : "MB", seed, s,
              b / 1e9 / std::max(s, 1e-9));
  return 0;
}

Register reg{{"synth-model",
              "--shape llama-3.2-1b|llama-3.2-3b|llama-3.1-8b|qwen2.5-0.5b|tiny --type f16|q8_0|q4_0|f32 --out F.gguf "
              "[--seed S] [--threads T] [--force] | --list",
              "write a GGUF with random weights in a real model's shapes (for benchmarks)", synth_model_cmd}};

}  // namespace
}  // namespace wgc::cli
