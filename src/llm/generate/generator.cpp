#include "llm/generate/generator.h"

#include "llm/generate/constrained.h"
#include "llm/tokenizer/loaders.h"
#include "util/error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace wgc::llm {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void validate(const GenerateOptions& o) {
  validate(o.sampling);
  if (o.max_tokens < -1)
    throw OptionError("max_tokens", "must be -1 (until a stop or the end of the context) or a token count, got " +
                                        std::to_string(o.max_tokens));
  validate_stop(o.stop);
}

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::Eos: return "eos";
    case StopReason::StopString: return "stop";
    case StopReason::MaxTokens: return "length";
    case StopReason::ContextFull: return "context";
    case StopReason::Cancelled: return "cancelled";
  }
  return "?";
}

std::string Timings::summary() const {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "load time   = %10.2f ms\n"
      "prompt eval = %10.2f ms / %5d tokens (%8.2f ms per token, %9.2f tokens per second)%s\n"
      "generation  = %10.2f ms / %5d runs   (%8.2f ms per token, %9.2f tokens per second), %d tokens\n",
      load_ms, prompt_ms, prompt_eval_tokens, prompt_eval_tokens ? prompt_ms / prompt_eval_tokens : 0.0, prompt_tps(),
      prompt_eval_tokens < prompt_tokens
          ? (", " + std::to_string(prompt_tokens - prompt_eval_tokens) + " cached").c_str()
          : "",
      decode_ms, decode_steps, decode_tokens ? decode_ms / decode_tokens : 0.0, decode_tps(), generated_tokens);
  std::string out = buf;
  if (speculative) {
    std::snprintf(buf, sizeof buf,
                  "speculative = %5d of %5d drafted tokens accepted (%.1f%%), %.2f tokens per target pass, draft "
                  "%.2f ms\n",
                  draft_accepted, draft_proposed, 100 * acceptance(),
                  decode_steps ? double(decode_tokens) / decode_steps : 0.0, draft_ms);
    out += buf;
  }
  return out;
}

std::optional<Tokenizer> find_tokenizer(const ModelFile& model, const std::filesystem::path& explicit_path) {
  if (!explicit_path.empty()) return load_tokenizer(explicit_path);
  if (model.gguf()) return Tokenizer(spec_from_gguf(*model.gguf()));
  std::filesystem::path dir = model.path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) return load_tokenizer(dir / "tokenizer.json");
  return std::nullopt;
}

// ---- Generator ---------------------------------------------------------------------------------

std::vector<int32_t> end_of_turn_ids(const Tokenizer* tokenizer, const ModelConfig& config) {
  std::vector<int32_t> ids;
  if (tokenizer) ids = tokenizer->stop_ids();
  for (int32_t id : config.eos_token_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

Generator::Generator(LlamaModel& model, std::optional<Tokenizer> tokenizer)
    : model_(model), tok_(std::move(tokenizer)), stop_ids_(end_of_turn_ids(tok_ ? &*tok_ : nullptr, model_.config())) {}

bool Generator::is_stop(int32_t id) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
}

std::vector<int32_t> Generator::encode(std::string_view text, bool add_special) const {
  if (!tok_) throw Error("wgc: this model has no tokenizer: give token ids, or a tokenizer");
  return tok_->encode(text, add_special);
}

void Generator::set_draft(LlamaModel* draft, const SpeculativeOptions& o, const Tokenizer* draft_tok,
                          const std::string& name) {
  if (!draft) {
    spec_.reset();
    return;
  }
  if (draft == &model_) throw Error("wgc: the draft model must be another LlamaModel than the target (its own cache)");
  check_draft(model_.config(), tok_ ? &*tok_ : nullptr, draft->config(), draft_tok, name);
  spec_ = std::make_unique<SpeculativeDecoder>(*draft, o);
}

void Generator::reset() {
  model_.rewind(0);
  cached_.clear();
}

int32_t Generator::step(std::span<const int32_t> tokens, Sampler& s, const Constraint* c) {
  if (c) {  // the full logits, masked to what the grammar allows
    auto logits = model_.logits(tokens);
    c->mask(logits);
    cached_.insert(cached_.end(), tokens.begin(), tokens.end());
    return s.sample(logits);
  }
  SamplePlan plan = s.plan();
  if (plan.kind == SamplePlan::TopK && plan.k > model_.config().vocab_size) plan = {SamplePlan::Full, 0};
  int32_t id = 0;
  switch (plan.kind) {
    case SamplePlan::Greedy: id = model_.greedy(tokens); break;
    case SamplePlan::TopK: id = s.sample(model_.top_k(tokens, plan.k)); break;
    case SamplePlan::Full: {
      auto logits = model_.logits(tokens);
      id = s.sample(logits);
      break;
    }
  }
  cached_.insert(cached_.end(), tokens.begin(), tokens.end());
  return id;
}

GenerateResult Generator::generate(std::string_view prompt, const GenerateOptions& o, const TextCallback& on_text) {
  auto ids = encode(prompt, o.add_special);
  return generate(std::span<const int32_t>(ids), o, on_text);
}

GenerateResult Generator::generate(std::span<const int32_t> prompt_ids, const GenerateOptions& o,
                                   const TextCallback& on_text) {
  validate(o);
  GenerateResult r;
  r.prompt_ids.assign(prompt_ids.begin(), prompt_ids.end());
  const int max_ctx = model_.max_ctx();
  if (prompt_ids.empty()) throw Error("wgc: the prompt is empty (no tokens)");
  if (int64_t(prompt_ids.size()) > max_ctx)
    throw Error("wgc: the prompt has " + std::to_string(prompt_ids.size()) + " tokens but the context holds " +
                std::to_string(max_ctx) +
                " (shorten the prompt or raise the engine's max_ctx, up to the model's own context)");

  // Reuse the cached prefix; at least one token must run to give logits.
  if (size_t(model_.n_past()) != cached_.size()) cached_.clear(), model_.rewind(0);
  size_t common = 0;
  while (common < cached_.size() && common < prompt_ids.size() && cached_[common] == prompt_ids[common]) ++common;
  if (common == prompt_ids.size()) --common;
  if (!model_.can_rewind(int(common))) common = 0;  // a sliding-window ring no longer holds that prefix
  model_.rewind(int(common));
  cached_.resize(common);

  Sampler sampler(o.sampling);
  sampler.accept(prompt_ids);
  if (spec_) {  // greedy, or sampling by the speculative rule (whose distributions the penalties would change)
    if (o.sampling.has_penalties())
      throw OptionError("repeat_penalty",
                        "speculative decoding (a draft model) takes no repeat, presence or frequency penalties, got " +
                            o.sampling.describe());
    if (o.grammar) throw OptionError("grammar", "speculative decoding (a draft model) takes no grammar");
    spec_->reset_stats();
  }
  std::optional<Constraint> constraint;
  if (o.grammar) {
    if (!tok_) throw Error("wgc: constrained generation needs the model's tokenizer");
    if (!texts_) texts_ = TokenTexts::of(*tok_);
    constraint.emplace(o.grammar, texts_);
  }
  const Constraint* con = constraint ? &*constraint : nullptr;
  std::optional<StreamDecoder> decoder;
  if (tok_) decoder.emplace(*tok_, /*skip_special=*/true);
  StopStrings stops(o.stop);
  auto emit = [&](const std::string& s) {
    if (!s.empty() && on_text) on_text(s);
  };

  auto t0 = std::chrono::steady_clock::now();
  std::span<const int32_t> todo = prompt_ids.subspan(common);
  const int batch = model_.max_batch();
  const bool chunked = o.on_prefill && int64_t(todo.size()) > batch;
  if (chunked) {
    // The same chunks the engine would run (all but the last, of max_batch tokens), with progress.
    const size_t head = (todo.size() - 1) / size_t(batch) * size_t(batch);
    const int total = int(todo.size());
    model_.prefill(todo.first(head), [&](int done, int) { o.on_prefill(done, total); });
    cached_.insert(cached_.end(), todo.begin(), todo.begin() + std::ptrdiff_t(head));
    todo = todo.subspan(head);
  }
  int32_t next = step(todo, sampler, con);
  if (chunked) o.on_prefill(int(prompt_ids.size() - common), int(prompt_ids.size() - common));
  r.timings.prompt_tokens = int(prompt_ids.size());
  r.timings.prompt_eval_tokens = int(prompt_ids.size() - common);
  r.timings.prompt_ms = ms_since(t0);

  auto t1 = std::chrono::steady_clock::now();
  bool stopped_by_string = false;
  // Takes a generated token; false when generation ends with it (r.stop says why).
  // n_past: the target's cache length once the tokens before id are in it.
  auto accept = [&](int32_t id, int n_past) {
    if (o.cancel && o.cancel->load(std::memory_order_relaxed)) {
      r.stop = StopReason::Cancelled;
      return false;
    }
    if (!o.ignore_eos && is_stop(id)) {
      r.stop = StopReason::Eos;
      r.stop_id = id;
      return false;
    }
    if (constraint) constraint->accept(id);
    r.ids.push_back(id);
    sampler.accept(id);
    if (decoder) {
      emit(stops.push(decoder->push(id)));
      if (stops.stopped()) {
        r.stop = StopReason::StopString;
        stopped_by_string = true;
        return false;
      }
    }
    if (constraint && constraint->must_stop()) {  // the grammar's sentence is whole: nothing may follow
      r.stop = StopReason::Eos;
      return false;
    }
    if (o.max_tokens > 0 && int(r.ids.size()) >= o.max_tokens) {
      r.stop = StopReason::MaxTokens;
      return false;
    }
    if (n_past >= max_ctx) {
      r.stop = StopReason::ContextFull;
      r.message = "context full: the " + std::to_string(max_ctx) + "-token context holds the prompt (" +
                  std::to_string(prompt_ids.size()) + " tokens) and " + std::to_string(r.ids.size() - 1) +
                  " generated tokens; generation stopped (raise the engine's max_ctx, up to the model's own context)";
      return false;
    }
    return true;
  };
  if (o.max_tokens != 0 && accept(next, model_.n_past())) {  // r.stop starts as MaxTokens
    if (spec_) {
      // Rounds of draft proposals verified in one target pass; each token handed out goes through
      // accept, which may stop in the middle of a round: the cache then keeps the tokens before it.
      for (bool go = true; go;) {
        const int past = model_.n_past();
        const int32_t pending = r.ids.back();
        int k = spec_->options().draft_tokens;
        if (o.max_tokens > 0) k = std::min(k, o.max_tokens - int(r.ids.size()) - 1);  // no proposal past the end
        const std::vector<int32_t> got = o.sampling.greedy()
                                             ? spec_->step(model_, cached_, pending, std::max(k, 0))
                                             : spec_->step_sampled(model_, cached_, pending, std::max(k, 0), sampler);
        ++r.timings.decode_steps;
        for (size_t i = 0; i < got.size() && go; ++i) {
          cached_.push_back(i == 0 ? pending : got[i - 1]);
          ++r.timings.decode_tokens;
          if (!accept(got[i], past + int(i) + 1)) {
            model_.rewind(past + int(i) + 1);
            go = false;
          }
        }
      }
      const SpeculativeStats& st = spec_->stats();
      r.timings.speculative = true;
      r.timings.draft_proposed = st.proposed;
      r.timings.draft_accepted = st.accepted;
      r.timings.draft_ms = st.draft_ms;
    } else if (sampler.plan().kind == SamplePlan::Greedy && !constraint) {
      // The GPU passes each argmax to the next step; the host records ahead (LlamaModel).
      int budget = o.max_tokens > 0 ? o.max_tokens - int(r.ids.size()) : max_ctx;
      model_.decode_greedy(r.ids.back(), budget, [&](int32_t id) {
        cached_.push_back(r.ids.back());
        ++r.timings.decode_steps;
        ++r.timings.decode_tokens;
        return accept(id, model_.n_past());
      });
    } else {
      do {
        next = step(std::span(&r.ids.back(), 1), sampler, con);
        ++r.timings.decode_steps;
        ++r.timings.decode_tokens;
      } while (accept(next, model_.n_past()));
    }
  }
  if (decoder && !stopped_by_string) {
    emit(stops.push(decoder->flush()));
    if (stops.stopped())
      r.stop = StopReason::StopString;
    else
      emit(stops.finish());
  }
  r.text = stops.text();
  r.timings.decode_ms = ms_since(t1);
  r.timings.generated_tokens = int(r.ids.size());
  return r;
}

}  // namespace wgc::llm
