// The wasm module's C interface, for web/local/wgc-worker.js (one engine per module instance):
// open a model (read from the worker's download or File as the engine needs each tensor, through
// engine_api.js: never whole in wasm memory), generate or chat
// with streamed text, abort, tokenize; and the playground's ops (op_api.cpp). Calls that wait on
// the GPU are asynchronous in JavaScript (ccall with {async: true}: ASYNCIFY unwinds the stack at
// each wait). Errors: a non-zero return and wgc_last_error() (the wgc::Error's message).
#include "gpu/context.h"
#include "llm/chat/chat_template.h"
#include "llm/formats/model_file.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/model/llama.h"
#include "llm/tokenizer/loaders.h"
#include "llm/tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/version.h"

#include <emscripten/emscripten.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

// Streamed text, to the worker (Module.onText).
EM_JS(void, wgc_js_text, (const char* s, int n), {
  if (Module.onText) Module.onText(UTF8ToString(s, n));
});

// engine_api.js: the model's bytes from the worker (an ASYNCIFY sleep), and why a read failed.
extern "C" int wgc_source_read(double offset, void* out, double n);
extern "C" char* wgc_source_error();

namespace {

using namespace wgc;
using namespace wgc::llm;

struct Engine {
  std::filesystem::path path;
  std::optional<Context> ctx;
  std::optional<Tokenizer> tok;
  std::optional<ChatTemplate> chat;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<Generator> gen;
  json::Value info;
  double load_ms = 0;
};

std::unique_ptr<Engine> g_engine;
std::string g_error, g_result, g_info;
std::atomic<bool> g_cancel{false};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Runs f, turning an exception into 1 and wgc_last_error().
template <class F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "wgc: unknown error";
  }
  return 1;
}

// The model being opened, as the worker holds it (Module.wgcSource): each read waits for its bytes.
class JsSource final : public ByteSource {
 public:
  explicit JsSource(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, std::span<std::byte> out) const override {
    if (out.empty()) return;
    if (wgc_source_read(double(offset), out.data(), double(out.size())) == 0) return;
    std::unique_ptr<char, decltype(&std::free)> why(wgc_source_error(), &std::free);
    throw Error(why ? why.get() : "the model could not be read");
  }

 private:
  uint64_t size_;
};

Engine& engine() {
  if (!g_engine || !g_engine->gen) throw Error("wgc: no model is open");
  return *g_engine;
}

json::Value ids_json(const std::vector<int32_t>& ids) {
  auto a = json::Value::array();
  for (int32_t id : ids) a.push_back(int(id));
  return a;
}

// The request's options over the model's defaults (llm::default_sampling), checked as the server
// checks them. Fields: max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop,
// ignore_eos.
GenerateOptions options(const json::Value& r, const std::filesystem::path& model) {
  GenerateOptions o;
  o.sampling = default_sampling(model);
  o.max_tokens = int(r.get_int("max_tokens", 128));
  if (const auto* v = r.find("temperature")) o.sampling.temperature = float(v->as_double());
  if (const auto* v = r.find("top_k")) o.sampling.top_k = int(v->as_int());
  if (const auto* v = r.find("top_p")) o.sampling.top_p = float(v->as_double());
  if (const auto* v = r.find("min_p")) o.sampling.min_p = float(v->as_double());
  if (const auto* v = r.find("repeat_penalty")) o.sampling.repeat_penalty = float(v->as_double());
  if (const auto* v = r.find("seed")) o.sampling.seed = uint64_t(v->as_int());
  if (const auto* v = r.find("stop")) {
    if (v->is_string()) o.stop.push_back(v->as_string());
    if (v->is_array())
      for (const auto& s : v->items()) o.stop.push_back(s.as_string());
  }
  o.ignore_eos = r.get_bool("ignore_eos", false);
  validate(o);
  return o;
}

int run_generation(const std::vector<int32_t>& ids, const json::Value& r) {
  Engine& e = engine();
  GenerateOptions o = options(r, e.path);
  g_cancel = false;
  o.cancel = &g_cancel;
  GenerateResult res = e.gen->generate(std::span<const int32_t>(ids), o,
                                       [](std::string_view s) { wgc_js_text(s.data(), int(s.size())); });
  auto out = json::Value::object();
  out.set("prompt_ids", ids_json(res.prompt_ids));
  out.set("ids", ids_json(res.ids));
  out.set("text", res.text);
  out.set("stop", std::string(to_string(res.stop)));
  if (!res.message.empty()) out.set("message", res.message);
  out.set("seed", o.sampling.seed);
  out.set("sampling", o.sampling.describe());
  auto t = json::Value::object();
  t.set("prompt_tokens", res.timings.prompt_tokens);
  t.set("prompt_eval_tokens", res.timings.prompt_eval_tokens);
  t.set("prompt_ms", res.timings.prompt_ms);
  t.set("generated_tokens", res.timings.generated_tokens);
  t.set("decode_steps", res.timings.decode_steps);
  t.set("decode_ms", res.timings.decode_ms);
  t.set("prompt_tps", res.timings.prompt_tps());
  t.set("decode_tps", res.timings.decode_tps());
  out.set("timings", t);
  g_result = out.dump();
  return 0;
}

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* wgc_last_error() { return g_error.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* wgc_version() {
  static std::string v = std::string(version()) + " (" + std::string(git_revision()) + ")";
  return v.c_str();
}
// The JSON result of the last generation (wgc generate --json's fields).
EMSCRIPTEN_KEEPALIVE const char* wgc_result() { return g_result.c_str(); }
EMSCRIPTEN_KEEPALIVE const char* wgc_info() { return g_info.c_str(); }

// Opens the GGUF model the worker holds (Module.wgcSource, `size` bytes; `name` names it) on the
// browser's WebGPU adapter, in the GPU engine; max_ctx 0: the model's (at most 4096). Its header is
// read first, then each tensor's bytes as the upload reaches it (ModelFile::load), so wasm memory
// holds one tensor group at a time, not the file. Asynchronous.
EMSCRIPTEN_KEEPALIVE int wgc_open(const char* name, double size, int max_ctx) {
  return guarded([&] {
    auto t0 = std::chrono::steady_clock::now();
    g_engine.reset();
    auto e = std::make_unique<Engine>();
    e->path = std::filesystem::path("/models") / name;
    if (!(size >= 0 && size <= 9007199254740992.0))
      throw Error("wgc: " + std::string(name) + ": a size of " + std::to_string(size) + " bytes");
    OpenOptions oo;
    oo.progress = false;
    oo.prefault = false;
    ModelFile file = open_model(std::make_shared<JsSource>(uint64_t(size)), e->path.filename().string(), oo);
    e->tok = find_tokenizer(file);
    if (!e->tok) throw Error("wgc: " + e->path.filename().string() + " has no tokenizer (no vocabulary in the GGUF)");
    e->chat.emplace(ChatTemplate::for_tokenizer(*e->tok));
    e->ctx.emplace(ContextOptions{});
    EngineOptions eo;
    eo.max_ctx = max_ctx;
    eo.progress = false;
    eo.device = Device::Gpu;  // the browser's WebGPU, also on a fallback (CPU) adapter
    e->model = std::make_unique<LlamaModel>(e->ctx, file, eo);
    e->gen = std::make_unique<Generator>(*e->model, e->tok);
    e->load_ms = ms_since(t0);

    const ModelConfig& c = file.config();
    const AdapterInfo& a = e->ctx->adapter();
    auto info = json::Value::object();
    info.set("model", e->path.filename().string());
    info.set("architecture", std::string(to_string(c.architecture)));
    info.set("layers", int(c.n_layers));
    info.set("hidden", int(c.hidden_size));
    info.set("vocab", int(c.vocab_size));
    info.set("max_ctx", e->model->max_ctx());
    info.set("weight_bytes", e->model->weight_bytes());
    info.set("chat_template", !e->chat->is_fallback());
    info.set("load_ms", e->load_ms);
    auto ad = json::Value::object();
    ad.set("vendor", a.vendor);
    ad.set("architecture", a.architecture);
    ad.set("device", a.device);
    ad.set("description", a.description);
    ad.set("cpu", a.is_cpu());
    ad.set("subgroups", e->ctx->features().subgroups);
    ad.set("shader_f16", e->ctx->features().shader_f16);
    ad.set("max_storage_buffer_binding_size", e->ctx->limits().max_storage_buffer_binding_size);
    ad.set("max_buffer_size", e->ctx->limits().max_buffer_size);
    info.set("adapter", ad);
    g_info = info.dump();
    g_engine = std::move(e);
  });
}

// Continues `prompt` (BOS added where the tokenizer wants it). request: JSON options (options()).
EMSCRIPTEN_KEEPALIVE int wgc_generate(const char* prompt, const char* request) {
  return guarded([&] {
    json::Value r = json::parse(request && *request ? request : "{}");
    std::vector<int32_t> ids;
    if (const auto* t = r.find("tokens")) {
      for (const auto& v : t->items()) ids.push_back(int32_t(v.as_int()));
    } else {
      ids = engine().tok->encode(prompt ? prompt : "", r.get_bool("add_special", true));
    }
    run_generation(ids, r);
  });
}

// One chat turn: request.messages ([{role, content}], the whole conversation) rendered with the
// model's chat template (a plain role: content rendering when it has none), as `wgc serve` does.
// The KV cache keeps the common prefix with the previous call.
EMSCRIPTEN_KEEPALIVE int wgc_chat(const char* request) {
  return guarded([&] {
    json::Value r = json::parse(request && *request ? request : "{}");
    const json::Value* messages = r.find("messages");
    if (!messages || !messages->is_array() || messages->size() == 0)
      throw Error("wgc: a chat request needs 'messages', a non-empty array of {role, content}");
    Engine& e = engine();
    std::string text = e.chat->render_json(*messages);
    run_generation(e.tok->encode(text, false), r);  // the template writes BOS itself
  });
}

// Stops a running generation before its next token (safe to call while it waits on the GPU).
EMSCRIPTEN_KEEPALIVE void wgc_abort() { g_cancel = true; }

// Forgets the KV cache.
EMSCRIPTEN_KEEPALIVE void wgc_reset() {
  if (g_engine && g_engine->gen) g_engine->gen->reset();
}

EMSCRIPTEN_KEEPALIVE void wgc_close() { g_engine.reset(); }

// The tokenizer at `path` (a tokenizer.json, a folder or a GGUF) on a JSON array of texts, in the
// shape of tests/tokenizer_ref/ref.js's output: ids with and without the special tokens the
// post-processor adds, and the decoded text of the former (keeping and skipping special tokens).
EMSCRIPTEN_KEEPALIVE const char* wgc_tokenize_all(const char* path, const char* texts_json) {
  static std::map<std::string, Tokenizer> cache;
  int rc = guarded([&] {
    auto it = cache.find(path);
    if (it == cache.end()) it = cache.emplace(path, load_tokenizer(path)).first;
    const Tokenizer& tok = it->second;
    json::Value texts = json::parse(texts_json);
    auto with = json::Value::array(), without = json::Value::array(), decoded = json::Value::array(),
         skipped = json::Value::array();
    for (const auto& t : texts.items()) {
      std::vector<int32_t> a = tok.encode(t.as_string(), true);
      with.push_back(ids_json(a));
      without.push_back(ids_json(tok.encode(t.as_string(), false)));
      decoded.push_back(tok.decode(a, false));
      skipped.push_back(tok.decode(a, true));
    }
    auto out = json::Value::object();
    out.set("with_special", with);
    out.set("without_special", without);
    out.set("decoded", decoded);
    out.set("decoded_skip", skipped);
    g_result = out.dump();
  });
  return rc ? nullptr : g_result.c_str();
}

}  // extern "C"
