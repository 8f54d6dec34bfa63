#include "llm/model/llama_engine.h"

#include <chrono>
#include <deque>

namespace wgc::llm {

DecodeStats LlamaEngine::decode_loop(int32_t first, int max_steps, int ahead,
                                     const std::function<Readback(int32_t)>& step,
                                     const std::function<bool(int32_t)>& on_token) {
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  DecodeStats st;
  check_tokens(std::span(&first, 1));
  const int base = n_past_;
  const int steps = std::min(max_steps, max_ctx_ - base);
  ahead = std::max(1, ahead);
  std::deque<Readback> in_flight;  // the argmax of each recorded step, oldest first
  int32_t last = first;
  bool go = true;
  while (go && st.tokens < steps) {
    const auto t0 = clock::now();
    while (st.recorded < steps && int(in_flight.size()) < ahead) {
      n_past_ = base + st.recorded;
      in_flight.push_back(step(last));
      ++st.recorded;
      written_ = std::max(written_, base + st.recorded);  // kept or dropped, its K/V went in
    }
    const auto t1 = clock::now();
    last = argmax_token(in_flight.front());
    in_flight.pop_front();
    st.record_ms += ms(t0, t1);
    st.wait_ms += ms(t1, clock::now());
    ++st.tokens;
    n_past_ = base + st.tokens;
    go = on_token(last);
  }
  n_past_ = base + st.tokens;
  return st;  // readbacks of dropped steps wait for their copies as they go
}

int32_t LlamaEngine::argmax_token(const Readback& r, size_t i) const {
  const uint32_t id = r.value<uint32_t>(i);
  if (id >= uint64_t(config().vocab_size))
    throw Error("wgc: the GPU's argmax gave token id " + std::to_string(id) + ", past the vocabulary of " +
                std::to_string(config().vocab_size));
  return int32_t(id);
}

}  // namespace wgc::llm
