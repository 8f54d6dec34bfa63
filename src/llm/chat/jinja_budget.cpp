#include "llm/chat/jinja_budget.h"

namespace wgc::llm::jinja {

namespace {

thread_local Budget* t_active = nullptr;
const Limits kDefaultLimits{};

}  // namespace

Budget* Budget::active() { return t_active; }

Budget::Activate::Activate(Budget& b) : prev_(t_active) { t_active = &b; }
Budget::Activate::~Activate() { t_active = prev_; }

void Budget::exceeded_steps() const {
  throw ValueError("the render took more than " + std::to_string(limits_.steps) +
                   " steps (the work limit, jinja::kMaxSteps)");
}

void Budget::exceeded_depth() const {
  throw ValueError("nesting deeper than " + std::to_string(limits_.depth) + " (the depth limit, jinja::kMaxDepth)");
}

const Limits& active_limits() { return t_active ? t_active->limits() : kDefaultLimits; }

void charge_steps(uint64_t n) {
  if (t_active) t_active->steps(n);
}

void charge_bytes(size_t n) {
  if (t_active) t_active->bytes(n);
}

void check_string_size(size_t bytes, const char* what) {
  size_t max = active_limits().string_bytes;
  if (bytes > max)
    throw ValueError(std::string(what) + ": a string of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                     std::to_string(max) + " (jinja::kMaxStringBytes)");
}

void check_list_size(size_t items, const char* what) {
  size_t max = active_limits().list_items;
  if (items > max)
    throw ValueError(std::string(what) + ": " + std::to_string(items) + " items exceed the limit of " +
                     std::to_string(max) + " (jinja::kMaxListItems)");
}

void check_depth(size_t depth, const char* what) {
  size_t max = active_limits().depth;
  if (depth > max)
    throw ValueError(std::string(what) + ": nesting deeper than " + std::to_string(max) +
                     " (the depth limit, jinja::kMaxDepth)");
}

}  // namespace wgc::llm::jinja
