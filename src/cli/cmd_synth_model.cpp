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

struct Flags {
  bool list = false;
  std::optional<std::string> shape, out;
  std::string type = "f16";
  uint64_t seed = 0;
  int threads = 0;
  bool force = false;
};

int synth_model_cmd(const Flags& f) {
  if (f.list) {
    std::printf("%-21s %7s %7s %6s %6s %5s %5s %7s %8s %6s\n", "shape", "params", "hidden", "layers", "heads", "kv",
                "hd", "ffn", "vocab", "tied");
    for (const auto& s : llm::synth::shapes()) {
      llm::synth::SynthModel m(s, llm::TensorType::F16);
      const double p = double(m.params());
      std::printf("%-21s %6.2f%s %7lld %6lld %6lld %5lld %5lld %7lld %8lld %6s\n", s.name.c_str(),
                  p >= 1e9 ? p / 1e9 : p / 1e6, p >= 1e9 ? "B" : "M", (long long)s.hidden, (long long)s.layers,
                  (long long)s.heads, (long long)s.kv_heads, (long long)s.head_dim, (long long)s.ffn,
                  (long long)s.vocab, s.tied ? "yes" : "no");
    }
    return 0;
  }
  if (!f.shape) throw UsageError("--shape is required (wgc synth-model --list shows them)");
  if (!f.out) throw UsageError("--out FILE.gguf is required");
  if (f.threads < 0) throw UsageError("--threads must be >= 0");

  const auto& shape = llm::synth::find_shape(*f.shape);
  llm::TensorType type = llm::synth::parse_synth_type(f.type);
  llm::synth::SynthOptions opt;
  opt.seed = f.seed;
  opt.overwrite = overwrite_rule(f.force);
  opt.write.threads = f.threads;
  auto t0 = std::chrono::steady_clock::now();
  auto m = llm::synth::write_synth_model(*f.out, shape, type, opt);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double p = double(m.params()), b = double(m.file_bytes());
  std::printf("%s: %s %s, %.3g %s params, %.3g %s, seed %llu, written in %.1f s (%.2f GB/s)\n", f.out->c_str(),
              shape.display.c_str(), std::string(llm::to_string(type)).c_str(), p >= 1e9 ? p / 1e9 : p / 1e6,
              p >= 1e9 ? "B" : "M", b >= 1e9 ? b / 1e9 : b / 1e6, b >= 1e9 ? "GB" : "MB", (unsigned long long)f.seed, s,
              b / 1e9 / std::max(s, 1e-9));
  return 0;
}

Register reg{
    {"synth-model", "write a GGUF with random weights in a real model's shapes (for benchmarks)", [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       app.add_flag("--list", f->list, "list the shapes and exit");
       add_text(
           app, "--shape", f->shape,
           "the model's shape: llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, llama-3.1-70b, qwen2.5-0.5b, gemma-2-9b, "
           "gemma-3-12b, phi-3-mini, phi-4, mistral-7b, mixtral-8x7b, qwen3-30b-a3b, bge-base, nomic-embed-text-v1.5, "
           "tiny, nomic-bert-tiny");
       app.add_option("--type", f->type,
                      "the weights' type: f16, bf16, q8_0, q4_0, q4_k (llama.cpp's Q4_K_M mix), q6_k, f32");
       add_text(app, "--out", f->out, "the .gguf file to write (required)")->type_name("FILE");
       add_number(app, "--seed", f->seed, "random seed of the weights");
       add_number(app, "--threads", f->threads, "threads writing the weights; 0: all cores");
       add_force(app, f->force);
       return [f] { return synth_model_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
