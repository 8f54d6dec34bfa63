// wgc.LLM: a Llama-family model with its tokenizer and chat template (src/llm), generating on a
// worker thread so that the calling thread can stream the text, and stop the generation when
// Python has a pending signal (Ctrl-C) without holding the GIL while the GPU works.
#include "common.h"

#include "llm/chat/chat_template.h"
#include "llm/generate/default_model.h"
#include "llm/generate/generator.h"
#include "llm/model/llama.h"
#include "util/error.h"
#include "util/json.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <random>
#include <thread>
#include <variant>

namespace wgc::python {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// What lives on the device (destroyed under the device lock: PyContext::dispose).
struct LlmState {
  explicit LlmState(llm::ModelFile f) : file(std::move(f)) {}
  llm::ModelFile file;
  std::optional<llm::Tokenizer> tok;
  std::optional<llm::LlamaModel> model;
  std::optional<llm::Generator> gen;  // refers to model: declared after it, destroyed before it
  std::optional<llm::ChatTemplate> chat;
};

class PyLLM {
 public:
  // gpus: a layer split's other devices (EngineOptions::split_gpus), tensor_split their shares.
  PyLLM(ContextPtr ctx, const std::optional<std::string>& path, const std::optional<std::string>& tokenizer,
        int max_ctx, std::vector<ContextPtr> gpus = {}, std::vector<double> tensor_split = {},
        const std::string& cache_type = "f32");
  ~PyLLM() {
    if (st_) ctx_->dispose(std::move(st_));
  }
  PyLLM(const PyLLM&) = delete;
  PyLLM& operator=(const PyLLM&) = delete;

  const ContextPtr& ctx() const { return ctx_; }
  LlmState& state() { return *st_; }
  const fs::path& path() const { return path_; }
  const llm::SamplingParams& defaults() const { return defaults_; }
  double load_ms() const { return load_ms_; }
  const llm::Tokenizer& tokenizer() const {
    if (!st_->tok)
      throw py::value_error("wgc.LLM: " + path_.string() + " has no tokenizer (give tokenizer=PATH when loading it)");
    return *st_->tok;
  }

  // The last finished generation (touched only with the GIL held).
  std::optional<llm::GenerateResult> last;

 private:
  ContextPtr ctx_;
  std::vector<ContextPtr> gpus_;  // kept while the model runs on them
  std::shared_ptr<LlmState> st_;
  fs::path path_;
  llm::SamplingParams defaults_;
  double load_ms_ = 0;
};

PyLLM::PyLLM(ContextPtr ctx, const std::optional<std::string>& path, const std::optional<std::string>& tokenizer,
             int max_ctx, std::vector<ContextPtr> gpus, std::vector<double> tensor_split, const std::string& cache_type)
    : ctx_(std::move(ctx)), gpus_(std::move(gpus)) {
  if (max_ctx < 0) throw py::value_error("wgc.LLM: max_ctx must be >= 0 (0: the model's context, at most 4096)");
  py::gil_scoped_release nogil;
  auto t0 = std::chrono::steady_clock::now();
  path_ = path ? fs::path(*path) : llm::default_model_path();
  st_ = std::make_shared<LlmState>(llm::open_model(path_));
  st_->tok = llm::find_tokenizer(st_->file, tokenizer ? fs::path(*tokenizer) : fs::path());
  defaults_ = llm::default_sampling(path_);
  llm::EngineOptions eo;
  eo.max_ctx = max_ctx;
  for (const ContextPtr& g : gpus_) eo.split_gpus.push_back(g->ctx());
  eo.tensor_split = std::move(tensor_split);
  eo.cache_type = llm::parse_kv_type(cache_type);
  PyContext::Busy busy(*ctx_);
  st_->model.emplace(ctx_->ctx(), st_->file, eo);
  st_->gen.emplace(*st_->model, st_->tok);
  load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

using LlmPtr = std::shared_ptr<PyLLM>;
using Prompt = std::variant<std::string, std::vector<int32_t>>;

// Thrown from the text callback to end a generation that was cancelled.
struct Cancelled {};

// One generation on a worker thread: the pieces of text as they are decoded, then the result.
struct Job {
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::string> pieces;
  bool done = false;
  std::exception_ptr error;
  llm::GenerateResult result;
  std::atomic<bool> cancel{false};
};

class TextStream {
 public:
  TextStream(LlmPtr llm, Prompt prompt, llm::GenerateOptions o)
      : llm_(std::move(llm)), prompt_(std::move(prompt)), opts_(std::move(o)), job_(std::make_shared<Job>()) {}
  // Joins with the GIL held: the worker never needs it, and stops at its next piece of text.
  ~TextStream() {
    job_->cancel = true;
    if (worker_.joinable()) worker_.join();
  }
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  // The next piece of text, or nullopt at the end (GIL held on entry). A pending signal (Ctrl-C)
  // stops the generation and raises its exception.
  std::optional<std::string> next();
  // Runs to the end; the whole text.
  std::string run_to_end();
  // Stops the generation (the model keeps what it produced in its cache) and waits for it.
  void close();

 private:
  void start();
  void join();
  void interrupt_and_raise();

  LlmPtr llm_;
  Prompt prompt_;
  llm::GenerateOptions opts_;
  std::shared_ptr<Job> job_;
  std::thread worker_;
  bool started_ = false, finished_ = false;
};

void TextStream::start() {
  started_ = true;
  worker_ = std::thread([llm = llm_, job = job_, prompt = prompt_, o = opts_] {
    try {
      PyContext::Busy busy(*llm->ctx());
      llm::Generator& gen = *llm->state().gen;
      auto on_text = [&](std::string_view s) {
        if (job->cancel.load()) throw Cancelled{};
        {
          std::lock_guard l(job->m);
          job->pieces.emplace_back(s);
        }
        job->cv.notify_one();
      };
      llm::GenerateResult r = std::holds_alternative<std::string>(prompt)
                                  ? gen.generate(std::get<std::string>(prompt), o, on_text)
                                  : gen.generate(std::span<const int32_t>(std::get<1>(prompt)), o, on_text);
      std::lock_guard l(job->m);
      job->result = std::move(r);
    } catch (const Cancelled&) {
      std::lock_guard l(job->m);
      job->result.stop = llm::StopReason::Cancelled;
    } catch (...) {
      std::lock_guard l(job->m);
      job->error = std::current_exception();
    }
    {
      std::lock_guard l(job->m);
      job->done = true;
    }
    job->cv.notify_all();
  });
}

void TextStream::join() {
  if (!worker_.joinable()) return;
  py::gil_scoped_release nogil;
  worker_.join();
}

void TextStream::interrupt_and_raise() {
  job_->cancel = true;
  join();
  finished_ = true;
  job_->result.timings.load_ms = llm_->load_ms();
  llm_->last = job_->result;
  throw py::error_already_set();
}

std::optional<std::string> TextStream::next() {
  if (finished_) return std::nullopt;
  if (!started_) start();
  for (;;) {
    std::optional<std::string> piece;
    bool done = false;
    {
      py::gil_scoped_release nogil;
      std::unique_lock l(job_->m);
      job_->cv.wait_for(l, 50ms, [&] { return !job_->pieces.empty() || job_->done; });
      if (!job_->pieces.empty()) {
        piece = std::move(job_->pieces.front());
        job_->pieces.pop_front();
      } else {
        done = job_->done;
      }
    }
    if (PyErr_CheckSignals() != 0) interrupt_and_raise();
    if (piece) return piece;
    if (done) {
      join();
      finished_ = true;
      if (job_->error) std::rethrow_exception(job_->error);
      job_->result.timings.load_ms = llm_->load_ms();
      llm_->last = job_->result;
      return std::nullopt;
    }
  }
}

std::string TextStream::run_to_end() {
  while (next()) {
  }
  return job_->result.text;
}

void TextStream::close() {
  if (finished_) return;
  job_->cancel = true;
  join();
  finished_ = true;
}

// ---- options ------------------------------------------------------------------------------------

// The model's default sampling with what the caller set (keys of `sampling`), checked by the
// library's validate(): ValueError naming the argument.
llm::GenerateOptions make_options(const PyLLM& l, int max_tokens, const std::vector<std::string>& stop, bool ignore_eos,
                                  bool add_special, const py::dict& sampling) {
  llm::GenerateOptions o;
  o.sampling = l.defaults();
  o.max_tokens = max_tokens;
  o.stop = stop;
  o.ignore_eos = ignore_eos;
  o.add_special = add_special;
  llm::SamplingParams& p = o.sampling;
  bool seeded = false;
  for (auto [k, v] : sampling) {
    std::string key = py::str(k);
    if (key == "temperature")
      p.temperature = v.cast<float>();
    else if (key == "top_p")
      p.top_p = v.cast<float>();
    else if (key == "top_k")
      p.top_k = v.cast<int>();
    else if (key == "min_p")
      p.min_p = v.cast<float>();
    else if (key == "repeat_penalty")
      p.repeat_penalty = v.cast<float>();
    else if (key == "presence_penalty")
      p.presence_penalty = v.cast<float>();
    else if (key == "frequency_penalty")
      p.frequency_penalty = v.cast<float>();
    else if (key == "repeat_last_n")
      p.penalty_last_n = v.cast<int>();
    else if (key == "seed")
      p.seed = v.cast<uint64_t>(), seeded = true;
    else
      throw py::type_error("wgc.LLM: unknown sampling argument '" + key + "'");
  }
  if (!seeded) {
    std::random_device rd;
    p.seed = (uint64_t(rd()) << 32) ^ rd();
  }
  try {
    llm::validate(o);  // the sampling, max_tokens and the stop strings, within the library's limits
  } catch (const OptionError& e) {
    throw py::value_error("wgc.LLM: " + std::string(e.what()));
  }
  return o;
}

std::vector<int32_t> checked_ids(PyLLM& l, const py::handle& obj, const char* fn) {
  std::vector<int32_t> ids;
  const int64_t vocab = l.state().model->config().vocab_size;
  for (auto item : obj) {
    if (!PyIndex_Check(item.ptr()) || py::isinstance<py::bool_>(item))
      throw py::type_error(std::string(fn) + ": token ids are ints, got " +
                           py::str(py::type::of(item).attr("__name__")).cast<std::string>());
    auto index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow || v < 0 || v >= vocab)
      throw py::value_error(std::string(fn) + ": token id " + py::str(item).cast<std::string>() +
                            " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")");
    ids.push_back(int32_t(v));
  }
  return ids;
}

py::object result_dict(const llm::GenerateResult& r) {
  py::dict t;
  t["load_ms"] = r.timings.load_ms;
  t["prompt_tokens"] = r.timings.prompt_tokens;
  t["prompt_eval_tokens"] = r.timings.prompt_eval_tokens;
  t["prompt_ms"] = r.timings.prompt_ms;
  t["prompt_tokens_per_s"] = r.timings.prompt_tps();
  t["generated_tokens"] = r.timings.generated_tokens;
  t["decode_steps"] = r.timings.decode_steps;
  t["decode_ms"] = r.timings.decode_ms;
  t["decode_tokens_per_s"] = r.timings.decode_tps();
  py::dict d;
  d["text"] = r.text;
  d["ids"] = r.ids;
  d["prompt_ids"] = r.prompt_ids;
  d["stop"] = std::string(to_string(r.stop));
  d["message"] = r.message;
  d["timings"] = t;
  return d;
}

std::shared_ptr<TextStream> start(const LlmPtr& l, const py::object& prompt, int max_tokens,
                                  const std::vector<std::string>& stop, bool ignore_eos, bool add_special,
                                  const py::dict& sampling) {
  Prompt p;
  if (py::isinstance<py::str>(prompt)) {
    l->tokenizer();  // a text prompt needs one: ValueError now, not on the worker
    p = prompt.cast<std::string>();
  } else {
    auto ids = checked_ids(*l, prompt, "wgc.LLM.generate: prompt");
    if (ids.empty()) throw py::value_error("wgc.LLM.generate: the prompt has no tokens");
    p = std::move(ids);
  }
  return std::make_shared<TextStream>(l, std::move(p),
                                      make_options(*l, max_tokens, stop, ignore_eos, add_special, sampling));
}

py::array logits(const LlmPtr& l, const py::object& ids_obj) {
  constexpr const char* fn = "wgc.LLM.logits";
  auto ids = checked_ids(*l, ids_obj, fn);
  if (ids.empty()) throw py::value_error(std::string(fn) + ": no token ids");
  auto& st = l->state();
  if (int64_t(ids.size()) > st.model->max_ctx())
    throw py::value_error(std::string(fn) + ": " + std::to_string(ids.size()) + " tokens are more than the context (" +
                          std::to_string(st.model->max_ctx()) + ")");
  const auto vocab = py::ssize_t(st.model->config().vocab_size);
  std::vector<float> all;
  {
    DeviceLock lock(*l->ctx());
    st.gen->reset();  // the Generator's cached prefix would no longer match the cache
    all = st.model->all_logits(ids);
    st.gen->reset();
  }
  return to_numpy(std::move(all), {py::ssize_t(ids.size()), vocab});
}

std::string render_chat(const LlmPtr& l, const std::string& messages_json, bool add_generation_prompt) {
  auto& st = l->state();
  const llm::Tokenizer& tok = l->tokenizer();
  json::Value messages;
  try {
    messages = json::parse(messages_json, "messages");
  } catch (const Error& e) {
    throw py::value_error(std::string("wgc.LLM.chat: messages: ") + e.what());
  }
  py::gil_scoped_release nogil;
  if (!st.chat) st.chat.emplace(llm::ChatTemplate::for_tokenizer(tok));
  llm::ChatOptions o;
  o.add_generation_prompt = add_generation_prompt;
  return st.chat->render_json(messages, o);
}

}  // namespace

void bind_llm(py::module_& m) {
  py::class_<TextStream, std::shared_ptr<TextStream>>(m, "TextStream",
                                                      "Pieces of generated text as they are decoded (an iterator).")
      .def("__iter__", [](const std::shared_ptr<TextStream>& s) { return s; })
      .def("__next__",
           [](TextStream& s) {
             auto piece = s.next();
             if (!piece) throw py::stop_iteration();
             return *piece;
           })
      .def("run_to_end", &TextStream::run_to_end)
      .def("close", &TextStream::close, "Stops the generation early (what was generated stays in the model's cache).");

  py::class_<PyLLM, LlmPtr>(m, "LLM")
      .def(py::init<ContextPtr, std::optional<std::string>, std::optional<std::string>, int, std::vector<ContextPtr>,
                    std::vector<double>, std::string>(),
           py::arg("ctx"), py::arg("path"), py::arg("tokenizer"), py::arg("max_ctx"),
           py::arg("gpus") = std::vector<ContextPtr>{}, py::arg("tensor_split") = std::vector<double>{},
           py::arg("cache_type") = std::string("f32"))
      .def("start", &start, py::arg("prompt"), py::arg("max_tokens"), py::arg("stop"), py::arg("ignore_eos"),
           py::arg("add_special"), py::arg("sampling"))
      .def(
          "tokenize",
          [](const PyLLM& l, const std::string& text, bool add_special) {
            const llm::Tokenizer& tok = l.tokenizer();
            py::gil_scoped_release nogil;
            return tok.encode(text, add_special);
          },
          py::arg("text"), py::arg("add_special"))
      .def(
          "detokenize",
          [](const LlmPtr& l, const py::object& ids, bool skip_special) {
            const llm::Tokenizer& tok = l->tokenizer();
            auto v = checked_ids(*l, ids, "wgc.LLM.detokenize");
            py::gil_scoped_release nogil;
            return tok.decode(v, skip_special);
          },
          py::arg("ids"), py::arg("skip_special"))
      .def("logits", &logits, py::arg("ids"))
      .def("render_chat", &render_chat, py::arg("messages_json"), py::arg("add_generation_prompt"))
      .def("reset",
           [](const LlmPtr& l) {
             DeviceLock lock(*l->ctx());
             l->state().gen->reset();
           })
      .def_property_readonly("last_result",
                             [](const PyLLM& l) { return l.last ? result_dict(*l.last) : py::object(py::none()); })
      .def_property_readonly("path", [](const PyLLM& l) { return l.path().string(); })
      .def_property_readonly("context", [](const PyLLM& l) { return l.ctx(); })
      .def_property_readonly("vocab_size", [](PyLLM& l) { return l.state().model->config().vocab_size; })
      .def_property_readonly("max_ctx", [](PyLLM& l) { return l.state().model->max_ctx(); })
      .def_property_readonly("architecture",
                             [](PyLLM& l) { return std::string(to_string(l.state().model->config().architecture)); })
      .def_property_readonly("has_tokenizer", [](PyLLM& l) { return l.state().tok.has_value(); })
      .def_property_readonly("chat_template",
                             [](PyLLM& l) {
                               return l.state().tok ? py::object(py::str(l.state().tok->chat_template()))
                                                    : py::object(py::none());
                             })
      .def_property_readonly("load_ms", &PyLLM::load_ms)
      .def_property_readonly("default_sampling", [](const PyLLM& l) {
        const auto& p = l.defaults();
        py::dict d;
        d["temperature"] = p.temperature;
        d["top_k"] = p.top_k;
        d["top_p"] = p.top_p;
        d["min_p"] = p.min_p;
        d["repeat_penalty"] = p.repeat_penalty;
        d["presence_penalty"] = p.presence_penalty;
        d["frequency_penalty"] = p.frequency_penalty;
        d["repeat_last_n"] = p.penalty_last_n;
        return d;
      });
}

}  // namespace wgc::python
