// wgc embed: sentence embeddings of texts with an embedding model (BERT family: bge, gte, e5,
// all-MiniLM, RoBERTa-based ones, ModernBERT, nomic-embed-text; decoders: Qwen3-Embedding): printed one line per text,
// or written as .npy / JSON.
#include "cli/command.h"
#include "cli/llm_backend.h"
#include "cli/llm_flags.h"
#include "io/npy.h"
#include "llm/encoder/embedding_model.h"
#include "llm/formats/model_file.h"
#include "llm/generate/generator.h"
#include "util/error.h"
#include "util/json.h"
#include "util/output_file.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace wgc::cli {
namespace {

using namespace wgc::llm;
namespace fs = std::filesystem;

struct Flags {
  GpuFlags gpu;
  std::optional<std::string> model, file, out, pooling;
  std::vector<std::string> texts;
  std::string tokenizer;
  bool force = false, json = false, no_normalize = false;
  int threads = 0;
  int bench = 0, repeat = 3;      // --bench: sequences of this many tokens, timed
  std::vector<int64_t> batch{1};  // --batch: sequences per call
};

// --bench: random token sequences of f.bench tokens (the model's limit at most), each batch size
// run once to warm up, then f.repeat times: sequences per second.
int bench(const Flags& f, EmbeddingModel& em, const std::string& model) {
  const int64_t len = std::min<int64_t>(f.bench, em.max_tokens()), vocab = em.config().vocab_size;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return int32_t((state >> 33) % uint64_t(vocab));
  };
  json::Value rows = json::Value::array();
  std::FILE* table = f.json ? stderr : stdout;  // --json: the JSON alone on stdout
  std::fprintf(table, "%-8s %8s %10s %12s %12s\n", "batch", "tokens", "ms/call", "seq/s", "tokens/s");
  for (int64_t b : f.batch) {
    if (b < 1 || b > 4096) throw UsageError("--batch takes 1..4096 sequences, got " + std::to_string(b));
    std::vector<std::vector<int32_t>> seqs(static_cast<size_t>(b), std::vector<int32_t>(static_cast<size_t>(len)));
    for (auto& q : seqs)
      for (auto& id : q) id = next();
    em.embed(seqs);  // warm-up: pipelines compiled, buffers allocated
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < f.repeat; ++r) em.embed(seqs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / f.repeat;
    std::fprintf(table, "%-8lld %8lld %10.2f %12.1f %12.0f\n", (long long)b, (long long)len, s * 1e3, double(b) / s,
                 double(b * len) / s);
    json::Value row = json::Value::object();
    row.set("batch", b);
    row.set("tokens", len);
    row.set("ms_per_call", s * 1e3);
    row.set("sequences_per_s", double(b) / s);
    rows.push_back(std::move(row));
  }
  if (f.json) {
    json::Value o = json::Value::object();
    o.set("model", model);
    o.set("engine", em.on_gpu() ? "gpu" : "cpu");
    o.set("results", std::move(rows));
    std::fputs((o.dump() + "\n").c_str(), stdout);
  }
  return 0;
}

Pooling parse_pooling(const std::string& s) {
  if (s == "cls") return Pooling::Cls;
  if (s == "mean") return Pooling::Mean;
  if (s == "last") return Pooling::Last;
  throw UsageError("--pooling '" + s + "': expected cls, mean or last");
}

int embed(const Flags& f) {
  std::vector<std::string> texts = f.texts;
  if (f.file) {
    std::ifstream in(*f.file);
    if (!in) throw Error("wgc embed: cannot read " + *f.file);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) texts.push_back(line);
  }
  if (texts.empty() && f.bench <= 0) throw UsageError("give the texts as arguments or -f FILE (one text per line)");
  if (f.repeat < 1) throw UsageError("--repeat must be >= 1");
  std::optional<Pooling> pooling;
  if (f.pooling) pooling = parse_pooling(*f.pooling);
  const bool to_npy = f.out && fs::path(*f.out).extension() == ".npy";
  if (f.out) {
    if (!to_npy && fs::path(*f.out).extension() != ".json")
      throw UsageError("--out " + *f.out + ": the name must end in .npy or .json");
    check_output(*f.out, overwrite_rule(f.force));
  }
  fs::path path = model_path(f.model);
  OpenOptions oo;
  oo.any_architecture = true;
  ModelFile file = open_model(path, oo);
  if (std::string why = embedding_refusal(file.config()); !why.empty())
    throw Error("wgc embed: " + path.string() + ": " + why +
                " (wgc embed runs BERT-family encoders and decoder embedding models such as Qwen3-Embedding)");
  if (f.bench > 0) {
    LlmBackend be = llm_backend(f.gpu);
    EmbeddingOptions eo;
    eo.threads = checked_threads(f.threads);
    EmbeddingModel em(file, be.ctx && be.device != Device::Cpu ? be.ctx : std::nullopt, eo);
    return bench(f, em, path.string());
  }
  auto tok = find_tokenizer(file, f.tokenizer);
  if (!tok) throw Error("wgc embed: " + path.string() + " has no tokenizer: give --tokenizer PATH");
  std::vector<std::vector<int32_t>> seqs;
  for (const auto& t : texts) seqs.push_back(embedding_tokens(*tok, file.config(), t));
  LlmBackend be = llm_backend(f.gpu);
  EmbeddingOptions eo;
  eo.threads = checked_threads(f.threads);
  const bool gpu = be.ctx && be.device != Device::Cpu;
  EmbeddingModel enc(file, gpu ? be.ctx : std::nullopt, eo);
  std::vector<float> e = enc.embed(seqs, !f.no_normalize, pooling);
  const int64_t n = int64_t(texts.size()), dim = enc.dim();
  auto as_json = [&] {
    json::Value arr = json::Value::array();
    for (int64_t i = 0; i < n; ++i) {
      json::Value v = json::Value::array();
      for (int64_t k = 0; k < dim; ++k) v.push_back(double(e[size_t(i * dim + k)]));
      arr.push_back(std::move(v));
    }
    json::Value o = json::Value::object();
    o.set("model", path.string());
    o.set("dim", dim);
    json::Value tokens = json::Value::array();
    for (const auto& s : seqs) tokens.push_back(int64_t(s.size()));
    o.set("tokens", std::move(tokens));
    o.set("embeddings", std::move(arr));
    return o.dump() + "\n";
  };
  if (f.out && to_npy) {
    npy::write(*f.out, e, {n, dim}, overwrite_rule(f.force));
  } else if (f.out) {
    std::string s = as_json();
    write_file(*f.out, std::as_bytes(std::span<const char>(s.data(), s.size())), overwrite_rule(f.force));
  } else if (f.json) {
    std::fputs(as_json().c_str(), stdout);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      std::string line;
      char buf[32];
      for (int64_t k = 0; k < dim; ++k) {
        std::snprintf(buf, sizeof buf, "%s%.7g", k ? " " : "", double(e[size_t(i * dim + k)]));
        line += buf;
      }
      std::puts(line.c_str());
    }
  }
  if (f.out)
    std::fprintf(stderr, "wgc embed: wrote %s: float32 [%lld, %lld] (%s engine)\n", f.out->c_str(), (long long)n,
                 (long long)dim, enc.on_gpu() ? "GPU" : "CPU");
  return 0;
}

Register reg{
    {"embed",
     "sentence embeddings of texts with an embedding model (BERT family, Qwen3-Embedding): printed, .npy or JSON",
     [](CLI::App& app) {
       auto f = std::make_shared<Flags>();
       add_text(app, "--model,-m", f->model, kModelHelp)->type_name("MODEL");
       add_text(app, "--file,-f", f->file, "texts to embed, one per line (besides the arguments)")->type_name("FILE");
       add_text(app, "--out", f->out, "write the vectors to FILE.npy (float32 [n, dim]) or FILE.json")
           ->type_name("FILE");
       add_force(app, f->force);
       app.add_flag("--json", f->json, "print JSON ({model, dim, tokens, embeddings}) instead of lines");
       add_text(app, "--pooling", f->pooling, "cls, mean or last (default: as the model's files say)")
           ->type_name("MODE");
       app.add_flag("--no-normalize", f->no_normalize, "the pooled vectors as they are, not L2-normalised");
       app.add_option("--tokenizer", f->tokenizer, "a tokenizer.json, folder or .gguf (default: the model's own)");
       add_number(app, "--bench", f->bench,
                  "time random sequences of this many tokens instead of embedding texts (0: off)");
       add_numbers(app, "--batch", f->batch, "--bench: sequences per call (comma-separated)");
       add_number(app, "--repeat", f->repeat, "--bench: timed calls per batch size");
       add_threads_flag(app, f->threads);
       add_gpu_flags(app, f->gpu);
       add_rest(app, f->texts, "TEXT ...", "the texts, one embedding each");
       return [f] { return embed(*f); };
     }}};

}  // namespace
}  // namespace wgc::cli
