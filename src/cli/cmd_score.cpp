// wgc score: the logits of every position of a token sequence, as a float32 NumPy array [n, vocab].
#include "cli/command.h"
#include "cli/llm_backend.h"
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

int score(Args& a) {
  auto g = gpu_flags(a);
  auto model = a.option("--model");
  auto items = a.list("--tokens");
  auto prompt = a.option("--prompt");
  auto out = a.option("--out");
  auto tokenizer = a.option_or("--tokenizer", "");
  bool force = a.flag("--force");
  bool no_special = a.flag("--no-special");
  a.done();
  if (!out) throw Error("wgc score: --out FILE.npy is required");
  if (items.empty() == !prompt.has_value()) throw Error("wgc score: give --tokens ID,ID,... or --prompt TEXT");
  std::error_code ec;
  if (!force && fs::exists(*out, ec)) throw Error("wgc score: " + *out + " exists; give --force to overwrite it");
  fs::path path = model ? fs::path(*model) : default_model_path();

  std::vector<int32_t> ids;
  for (const auto& s : items) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || v < 0 || v > 0x7fffffff)
      throw Error("wgc score: --tokens expects comma-separated token ids, got '" + s + "'");
    ids.push_back(int32_t(v));
  }

  ModelFile f = open_model(path);
  if (prompt) {
    auto tok = find_tokenizer(f, tokenizer);
    if (!tok) throw Error("wgc score: " + path.string() + " has no tokenizer: give --tokenizer PATH or --tokens");
    ids = tok->encode(*prompt, !no_special);
  }
  if (ids.empty()) throw Error("wgc score: no tokens");
  EngineOptions eo;
  eo.max_ctx = int(ids.size());
  LlmBackend be = llm_backend(g);
  eo.device = be.device;
  LlamaModel m(be.ctx, f, eo);
  say_engine_choice(m);
  auto logits = m.all_logits(ids);
  int64_t vocab = f.config().vocab_size;
  npy::write(*out, logits, {int64_t(ids.size()), vocab});
  std::fprintf(stderr, "wgc score: wrote %s: float32 [%zu, %lld]\n", out->c_str(), ids.size(), (long long)vocab);
  return 0;
}

Register reg{{"score",
              "[--model MODEL] (--tokens ID,... | --prompt TEXT) --out FILE.npy [--force] [--tokenizer PATH] "
              "[--backend B]",
              "the logits of every position, written as a float32 NumPy array [n, vocab]", score}};

}  // namespace
}  // namespace wgc::cli
