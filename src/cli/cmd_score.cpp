// wgc score: the logits of every position of a token sequence, as a float32 NumPy array [n, vocab].
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "io/npy.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "util/error.h"

#include <cstdio>
#include <filesystem>
#include <string>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, prompt, out;
  std::vector<int64_t> tokens;
  std::string tokenizer;
  bool force = false, no_special = false;
  int threads = 0;
};

int score(const Flags& f) {
  if (!f.out) throw UsageError("--out FILE.npy is required");
  if (f.tokens.empty() == !f.prompt.has_value())
    throw UsageError(f.prompt ? "--prompt and --tokens were both given: give one"
                              : "give --tokens ID,ID,... or --prompt TEXT");
  check_output(*f.out, overwrite_rule(f.force));
  fs::path path = model_path(f.model);
  std::vector<int32_t> ids = token_ids(f.tokens, "--tokens");

  ModelFile file = open_model(path);
  if (f.prompt) {
    auto tok = find_tokenizer(file, f.tokenizer);
    if (!tok) throw Error("wgc score: " + path.string() + " has no tokenizer: give --tokenizer PATH or --tokens");
    ids = tok->encode(*f.prompt, !f.no_special);
  }
  if (ids.empty()) throw Error("wgc score: no tokens");
  EngineOptions eo;
  eo.max_ctx = int(ids.size());
  eo.threads = checked_threads(f.threads);
  LlmBackend be = llm_backend(f.gpu);
  eo.device = be.device;
  LlamaModel m(be.ctx, file, eo);
  say_engine_choice(m);
  auto logits = m.all_logits(ids);
  int64_t vocab = file.config().vocab_size;
  npy::write(*f.out, logits, {int64_t(ids.size()), vocab}, overwrite_rule(f.force));
  std::fprintf(stderr, "wgc score: wrote %s: float32 [%zu, %lld]\n", f.out->c_str(), ids.size(), (long long)vocab);
  return 0;
}

Register reg{{"score", "the logits of every position, written as a float32 NumPy array [n, vocab]", [](CLI::App& app) {
                auto f = std::make_shared<Flags>();
                add_text(app, "--model,-m", f->model, kModelHelp)->type_name("MODEL");
                add_numbers(app, "--tokens", f->tokens, "the token ids to score (comma-separated)");
                add_text(app, "--prompt,-p", f->prompt, "text to tokenize and score instead of --tokens");
                add_text(app, "--out", f->out, "the .npy file to write (required)")->type_name("FILE");
                add_force(app, f->force);
                app.add_option("--tokenizer", f->tokenizer,
                               "a tokenizer.json, folder or .gguf (default: the model's own)");
                app.add_flag("--no-special", f->no_special, "--prompt: no BOS or other special tokens added");
                add_threads_flag(app, f->threads);
                add_gpu_flags(app, f->gpu);
                return [f] { return score(*f); };
              }}};

}  // namespace
}  // namespace wgc::cli
