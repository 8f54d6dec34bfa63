#include "cli/embedding_model.h"

#include "llm/encoder/embedding_model.h"
#include "llm/formats/model_file.h"
#include "llm/generate/generator.h"
#include "util/error.h"

namespace wgc::cli {

namespace {

struct Loaded {
  llm::ModelFile file;
  llm::Tokenizer tok;
  llm::EmbeddingModel enc;
};

}  // namespace

std::shared_ptr<server::Embedder> load_embedder(const std::filesystem::path& path, const std::string& id,
                                                const LlmBackend& backend, int threads) {
  llm::OpenOptions oo;
  oo.any_architecture = true;
  llm::ModelFile file = llm::open_model(path, oo);
  if (std::string why = llm::embedding_refusal(file.config()); !why.empty())
    throw Error("wgc serve: --embedding-model " + path.string() + ": " + why);
  auto tok = llm::find_tokenizer(file);
  if (!tok) throw Error("wgc serve: --embedding-model " + path.string() + " has no tokenizer");
  llm::EmbeddingOptions eo;
  eo.threads = threads;
  const bool gpu = backend.ctx && backend.device != llm::Device::Cpu;
  llm::EmbeddingModel enc(file, gpu ? backend.ctx : std::nullopt, eo);
  auto held = std::make_shared<Loaded>(Loaded{std::move(file), std::move(*tok), std::move(enc)});
  auto e = std::make_shared<server::Embedder>();
  e->model_id = id;
  e->tokenizer = &held->tok;
  e->dim = held->enc.dim();
  e->max_tokens = held->enc.max_tokens();
  e->vocab = held->file.config().vocab_size;
  e->encode = [held](const std::string& s) { return llm::embedding_tokens(held->tok, held->file.config(), s); };
  e->run = [held](std::span<const std::vector<int32_t>> seqs) { return held->enc.embed(seqs, true); };
  return e;
}

}  // namespace wgc::cli
