// wgc perplexity: a model's perplexity on a text file by llama-perplexity's method and with its
// output (llm/generate/perplexity.h), to compare quantizations of a model with each other and with
// llama.cpp's numbers.
#include "cli/command.h"
#include "cli/llm_flags.h"
#include "gpu/context.h"
#include "llm/generate/perplexity.h"
#include "util/error.h"
#include "util/json.h"
#include "util/signals.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, file, prompt;
  std::string tokenizer;
  int ctx = 512, chunks = -1, threads = 0;
  bool json = false, no_q8 = false;
};

std::atomic<bool> g_stop{false};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int perplexity_cmd(const Flags& f) {
  if (f.file.has_value() == f.prompt.has_value())
    throw UsageError(f.file ? "-f and --prompt were both given: give one" : "give the text: -f FILE ('-': stdin)");
  if (f.ctx < 2 || f.ctx > (1 << 20)) throw UsageError("-c expects a context of 2 to 1048576 tokens");
  if (f.chunks < -1 || f.chunks == 0) throw UsageError("--chunks expects a positive count (-1: all)");
  const bool quiet = verbosity() == Verbosity::Quiet;
  fs::path path = model_path(f.model);
  const std::string text = f.file ? read_prompt_file(*f.file) : *f.prompt;
  LoadedModel m = open_model_files(path, f.tokenizer);
  if (!m.tok) throw Error("wgc perplexity: " + path.string() + " has no tokenizer: give --tokenizer PATH");

  if (!quiet) std::fprintf(stderr, "perplexity: tokenizing the input ..\n");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> ids = m.tok->encode(text, true);
  if (!quiet) std::fprintf(stderr, "perplexity: tokenization took %g ms\n", ms_since(t0));
  if (ids.size() < size_t(f.ctx))
    throw Error("wgc perplexity: the text has " + std::to_string(ids.size()) + " tokens, fewer than one chunk of " +
                std::to_string(f.ctx) + " (-c): give a longer text or a smaller -c");

  PerplexityOptions o;
  o.n_ctx = f.ctx;
  o.max_chunks = f.chunks;
  // llama-perplexity puts BOS at the start of every chunk when the tokenizer adds one.
  const auto bos = m.tok->bos_id();
  if (bos && !ids.empty() && ids[0] == *bos && m.tok->encode("a", false) != m.tok->encode("a", true)) o.bos = bos;
  o.cancel = &g_stop;
  LlamaModel& model = start_engine(m, llm_backend(f.gpu), f.ctx, !f.no_q8, f.threads);
  const int chunks = perplexity_chunks(ids.size(), o);
  if (!quiet)
    std::fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=1\n",
                 chunks, f.ctx, std::min(f.ctx, model.max_batch()));

  // Ctrl-C: the chunks done so far give the estimate (a second Ctrl-C ends the process).
  InterruptFlag interrupt(g_stop);
  auto on_chunk = [&](const PerplexityResult& r) {
    if (r.chunks == 1 && !quiet) {
      const double per = r.seconds;
      int total = int(per * chunks);
      std::fprintf(stderr, "perplexity: %.2f seconds per pass - ETA ", per);
      if (total >= 3600) std::fprintf(stderr, "%d hours ", total / 3600);
      std::fprintf(stderr, "%.2f minutes\n", (total % 3600) / 60.0);
    }
    if (!f.json) {
      std::printf("[%d]%.4f,", r.chunks, r.running_ppl.back());
      std::fflush(stdout);
    }
  };
  PerplexityResult r = perplexity(model, ids, o, on_chunk);

  if (f.json) {
    json::Value out = json::Value::object();
    out.set("model", path.string());
    out.set("n_ctx", f.ctx);
    out.set("tokens", uint64_t(ids.size()));
    out.set("chunks", r.chunks);
    out.set("scored", r.scored);
    out.set("ppl", r.ppl());
    out.set("ppl_error", r.ppl_error());
    json::Value running = json::Value::array();
    for (double v : r.running_ppl) running.push_back(v);
    out.set("running_ppl", running);
    out.set("seconds", r.seconds);
    out.set("cancelled", r.cancelled);
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("\n");
    if (r.cancelled && !quiet)
      std::fprintf(stderr, "perplexity: interrupted after %d of %d chunks\n", r.chunks, chunks);
    if (r.scored > 1)
      std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl(), r.ppl_error());
    else if (r.scored == 1)
      std::printf("Final estimate: PPL = %.4f (one token scored: no error estimate)\n", r.ppl());
  }
  return r.cancelled ? 130 : 0;
}

Register reg{
    {"perplexity", "perplexity of a model on a text, by llama-perplexity's method (chunks of -c, second halves scored)",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--model,-m", f->model, kModelHelp)->type_name("MODEL");
       add_text(app, "-f,--file", f->file, "the text file ('-': stdin), e.g. wikitext-2's wiki.test.raw")
           ->type_name("FILE");
       add_text(app, "--prompt,-p", f->prompt, "the text itself instead of -f");
       add_ctx_flag(app, f->ctx, "tokens per chunk (llama-perplexity's n_ctx; the usual comparisons use 512)");
       add_number(app, "--chunks", f->chunks, "chunks to run at most; -1: every whole chunk of the text");
       app.add_option("--tokenizer", f->tokenizer, "a tokenizer.json, folder or .gguf (default: the model's own)")
           ->type_name("PATH");
       add_threads_flag(app, f->threads);
       app.add_flag("--no-q8", f->no_q8, "f32 activations for quantized weights (default: 8-bit, as llama.cpp)");
       app.add_flag("--json", f->json, "print the result as JSON (ppl, ppl_error, running_ppl, chunks, tokens)");
       add_gpu_flags(app, f->gpu);
       app.footer(
           "Output as llama-perplexity's: the estimate after each chunk ([1]8.1234,[2]...), then\n"
           "\"Final estimate: PPL = X +/- E\" (E: the standard error). Ctrl-C ends early with the chunks done.");
       return [f] { return perplexity_cmd(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
