#include "gpu/batch.h"

#include "gpu/context_state.h"
#include "util/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <variant>

namespace wgc {

Groups groups_1d(const Context& ctx, uint64_t n) {
  uint64_t max = ctx.limits().max_compute_workgroups_per_dimension;
  if (n <= max) return {static_cast<uint32_t>(std::max<uint64_t>(n, 1)), 1, 1};
  uint64_t y = (n + max - 1) / max;
  if (y > max) throw LimitError("wgc: " + std::to_string(n) + " workgroups exceed the device's grid limit");
  return {static_cast<uint32_t>((n + y - 1) / y), static_cast<uint32_t>(y), 1};
}

namespace {
struct DispatchCmd {
  Kernel kernel;
  std::vector<Arg> args;
  uint64_t params_offset = 0, params_size = 0;
  Groups groups;
};
struct CopyCmd {
  Tensor src, dst;
  uint64_t src_offset, dst_offset, bytes;
};
struct ReadCmd {
  Tensor src;
  uint64_t offset;
  std::shared_ptr<Readback::State> to;
};
struct ReplayCmd {
  std::shared_ptr<const Recording::Impl> rec;
};
}  // namespace

// A dispatch with its bind group made, or a copy.
struct Recording::Impl {
  struct Dispatch {
    WGPUComputePipeline pipeline = nullptr;
    WGPUBindGroup group = nullptr;
    Groups groups;
    std::string label;
  };
  Context ctx;
  std::vector<std::variant<Dispatch, CopyCmd>> cmds;
  std::vector<Tensor> tensors;  // keeps the bound buffers
  std::shared_ptr<detail::BufferHandle> uniforms;
  size_t n_dispatch = 0;

  explicit Impl(Context c) : ctx(std::move(c)) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    for (auto& c : cmds)
      if (auto* d = std::get_if<Dispatch>(&c)) wgpuBindGroupRelease(d->group);
  }
};

size_t Recording::dispatches() const { return impl_ ? impl_->n_dispatch : 0; }

struct Readback::State {
  Context ctx;
  std::shared_ptr<detail::BufferHandle> staging;
  uint64_t bytes = 0, mapped = 0;  // asked for; mapped (a multiple of 4)
  detail::BufferMap mapping;
  bool requested = false, done = false;
  std::vector<std::byte> data;

  explicit State(Context c) : ctx(std::move(c)) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  // The map callback writes into this object: it must not go before the callback has run.
  ~State() {
    if (requested && !done) try {
        finish();
      } catch (...) {
      }
  }

  void request() {
    mapping.start(staging->buffer, WGPUMapMode_Read, mapped);
    requested = true;
  }

  // Waits for the mapping and copies the bytes into `out` (or into data when out is empty).
  void finish(std::span<std::byte> out = {}) {
    done = true;
    detail::lost_checked(ctx.state(), [&] {
      mapping.wait(ctx.instance(), "a readback");
      ctx.check();
      mapping.check("reading back " + std::to_string(bytes) + " bytes failed");
    });
    const auto* src = static_cast<const std::byte*>(wgpuBufferGetConstMappedRange(staging->buffer, 0, mapped));
    if (out.empty())
      data.assign(src, src + bytes);
    else
      std::memcpy(out.data(), src, std::min<uint64_t>(out.size(), bytes));
    wgpuBufferUnmap(staging->buffer);
    staging.reset();
  }
};

Readback::State& Readback::submitted() const {
  if (!state_) throw Error("wgc: waiting on an empty readback");
  if (!state_->requested) throw Error("wgc: a readback's batch was not submitted");
  return *state_;
}

std::span<const std::byte> Readback::wait() const {
  State& st = submitted();
  if (!st.done) st.finish();
  return st.data;
}

void Readback::wait(std::span<std::byte> out) const {
  State& st = submitted();
  if (out.size() > st.bytes) throw Error("wgc: a readback asked for more bytes than it read");
  if (!st.done) return st.finish(out);
  if (st.data.size() < out.size()) throw Error("wgc: this readback's bytes were already copied out");
  std::memcpy(out.data(), st.data.data(), out.size());
}

struct Batch::Impl {
  // WGC_PROFILE=1 times every batch and prints its dispatches to stderr. Declared first: the
  // constructor's initializer of `timed` reads it.
  bool profile = std::getenv("WGC_PROFILE") && std::string_view(std::getenv("WGC_PROFILE")) != "0";
  Context ctx;
  bool timed = false;
  std::vector<std::variant<DispatchCmd, CopyCmd, ReadCmd, ReplayCmd>> cmds;
  std::vector<std::shared_ptr<const Recording::Impl>> replayed;  // kept until the work is done
  std::vector<std::shared_ptr<Readback::State>> reads;
  std::vector<std::byte> params;  // all parameter blocks, each at an aligned offset
  std::vector<std::shared_ptr<detail::BufferHandle>> in_flight;
  WGPUQuerySet queries = nullptr;
  std::shared_ptr<detail::BufferHandle> readback;
  std::vector<DispatchTiming> timings;
  uint32_t timed_count = 0;
  bool span = false;                    // time_span()
  WGPUCommandBuffer encoded = nullptr;  // encode()'s, until submit()
  std::string labels;                   // the first dispatches' labels, for errors
  bool submitted = false;

  explicit Impl(Context c, bool t) : ctx(std::move(c)), timed((t || profile) && ctx.features().timestamp_query) {}
  void check_recording() const {
    if (encoded || submitted) throw Error("wgc: recording into a batch already encoded or submitted");
  }
  ~Impl() {
    if (encoded) wgpuCommandBufferRelease(encoded);
    if (queries) wgpuQuerySetRelease(queries);
  }
};

Batch::Batch(Context ctx, bool timed) : impl_(std::make_unique<Impl>(std::move(ctx), timed)) {}
Batch::~Batch() {
  // WGC_PROFILE=1: a batch submitted but never waited for (greedy decoding's steps, whose tokens
  // come back through readbacks) waits here, so that its timings print too.
  if (impl_ && impl_->profile && impl_->submitted && impl_->readback) try {
      wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[wgc profile] %s\n", e.what());
    }
}
Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;
const Context& Batch::context() const { return impl_->ctx; }
size_t Batch::size() const { return impl_->cmds.size(); }
bool Batch::timed() const { return impl_->timed; }

void Batch::time_span() {
  impl_->check_recording();
  impl_->span = true;
}
const std::vector<DispatchTiming>& Batch::timings() const { return impl_->timings; }

double Batch::total_ms() const {
  double t = 0;
  for (auto& d : impl_->timings) t += d.ms;
  return t;
}

void Batch::dispatch(const Kernel& k, std::vector<Arg> args, const Params& params, Groups g) {
  auto& im = *impl_;
  impl_->check_recording();
  if (!k) throw Error("wgc: dispatch of an empty kernel");
  const auto& lim = im.ctx.limits();
  if (g.x > lim.max_compute_workgroups_per_dimension || g.y > lim.max_compute_workgroups_per_dimension ||
      g.z > lim.max_compute_workgroups_per_dimension)
    throw LimitError("wgc: " + k.label() + ": workgroup grid " + std::to_string(g.x) + "x" + std::to_string(g.y) + "x" +
                     std::to_string(g.z) + " exceeds the device's limit of " +
                     std::to_string(lim.max_compute_workgroups_per_dimension) + " per dimension");
  if (args.size() > lim.max_storage_buffers_per_shader_stage)
    throw LimitError("wgc: " + k.label() + ": " + std::to_string(args.size()) +
                     " storage buffers exceed the device's limit of " +
                     std::to_string(lim.max_storage_buffers_per_shader_stage));
  for (auto& a : args) {
    if (!a.tensor) throw Error("wgc: " + k.label() + ": an argument is an empty tensor");
    if (a.size == 0) a.size = detail::round_up(std::max<uint64_t>(a.tensor.bytes(), 4), 4);
    if (a.offset + a.size > a.tensor.capacity())
      throw Error("wgc: " + k.label() + ": binding range past the end of its buffer");
    if (a.size > lim.max_storage_buffer_binding_size)
      throw LimitError("wgc: " + k.label() + ": a binding of " + std::to_string(a.size) +
                       " bytes exceeds the device's maxStorageBufferBindingSize (" +
                       std::to_string(lim.max_storage_buffer_binding_size) + ")");
  }
  DispatchCmd d{k, std::move(args), 0, 0, g};
  if (!params.empty()) {
    uint64_t align = std::max<uint64_t>(lim.min_uniform_buffer_offset_alignment, 16);
    d.params_offset = detail::round_up(im.params.size(), align);
    d.params_size = detail::round_up(params.bytes().size(), 16);
    im.params.resize(d.params_offset + d.params_size);
    std::memcpy(im.params.data() + d.params_offset, params.bytes().data(), params.bytes().size());
  }
  im.cmds.emplace_back(std::move(d));
}

void Batch::copy(const Tensor& src, uint64_t src_offset, const Tensor& dst, uint64_t dst_offset, uint64_t bytes) {
  impl_->check_recording();
  if (src_offset + bytes > src.capacity() || dst_offset + bytes > dst.capacity())
    throw Error("wgc: copy of " + std::to_string(bytes) + " bytes past the end of a buffer");
  if (bytes % 4 || src_offset % 4 || dst_offset % 4)
    throw Error("wgc: buffer copies need sizes and offsets in multiples of 4 bytes");
  impl_->cmds.emplace_back(CopyCmd{src, dst, src_offset, dst_offset, bytes});
}

Readback Batch::read(const Tensor& src, uint64_t offset, uint64_t bytes) {
  impl_->check_recording();
  if (offset + bytes > src.capacity())
    throw Error("wgc: read of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " past the end of a " + std::to_string(src.capacity()) + "-byte buffer");
  if (offset % 4) throw Error("wgc: reads start at a multiple of 4 bytes");
  auto st = std::make_shared<Readback::State>(impl_->ctx);
  st->bytes = bytes;
  st->mapped = detail::round_up(std::max<uint64_t>(bytes, 4), 4);
  if (offset + st->mapped > src.capacity()) throw Error("wgc: a read's 4-byte rounding runs past its buffer");
  st->staging = detail::acquire_buffer(impl_->ctx.shared_state(), st->mapped,
                                       WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "readback");
  impl_->cmds.emplace_back(ReadCmd{src, offset, st});
  Readback r;
  r.state_ = std::move(st);
  return r;
}

namespace {
// Group 0's layout of a pipeline (cached per context); the caller holds s.mu.
WGPUBindGroupLayout group0_layout(detail::ContextState& s, WGPUComputePipeline pipeline) {
  WGPUBindGroupLayout& layout = s.layouts[pipeline];
  if (!layout) layout = wgpuComputePipelineGetBindGroupLayout(pipeline, 0);
  return layout;
}

// The bind group entries of a dispatch: its tensors, then its parameter block in `uniforms`.
void dispatch_entries(const DispatchCmd& d, WGPUBuffer uniforms, std::vector<WGPUBindGroupEntry>& entries) {
  entries.clear();
  for (uint32_t i = 0; i < d.args.size(); ++i) {
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = i;
    e.buffer = d.args[i].tensor.buffer();
    e.offset = d.args[i].offset;
    e.size = d.args[i].size;
    entries.push_back(e);
  }
  if (d.params_size) {
    WGPUBindGroupEntry e = WGPU_BIND_GROUP_ENTRY_INIT;
    e.binding = static_cast<uint32_t>(d.args.size());
    e.buffer = uniforms;
    e.offset = d.params_offset;
    e.size = d.params_size;
    entries.push_back(e);
  }
}

// The bind group for a pipeline's group 0 with these entries, from the context's cache.
WGPUBindGroup bind_group(detail::ContextState& s, WGPUComputePipeline pipeline,
                         const std::vector<WGPUBindGroupEntry>& entries) {
  std::lock_guard lock(s.mu);
  WGPUBindGroupLayout layout = group0_layout(s, pipeline);
  std::string key(sizeof(layout) + entries.size() * 4 * sizeof(uint64_t), '\0');
  char* at = key.data();
  auto put = [&](uint64_t v) {
    std::memcpy(at, &v, sizeof v);
    at += sizeof v;
  };
  put(reinterpret_cast<uintptr_t>(layout));
  for (auto& e : entries) {
    put(e.binding);
    put(reinterpret_cast<uintptr_t>(e.buffer));
    put(e.offset);
    put(e.size);
  }
  if (auto it = s.bind_groups.find(key); it != s.bind_groups.end()) return it->second.group;
  if (s.bind_groups.size() >= detail::ContextState::kMaxBindGroups) s.clear_bind_groups();
  WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
  bd.layout = layout;
  bd.entryCount = entries.size();
  bd.entries = entries.data();
  detail::ContextState::CachedBindGroup c{wgpuDeviceCreateBindGroup(s.device, &bd), {}};
  for (auto& e : entries) c.buffers.push_back(e.buffer);
  s.bind_groups.emplace(std::move(key), c);
  return c.group;
}
}  // namespace

Recording Batch::freeze() {
  auto& im = *impl_;
  if (im.submitted) throw Error("wgc: freeze after submit");
  if (im.timed) throw Error("wgc: a timed batch cannot be frozen");
  auto rec = std::make_shared<Recording::Impl>(im.ctx);
  auto& s = im.ctx.state();
  auto st = im.ctx.shared_state();
  for (auto& c : im.cmds)
    if (std::holds_alternative<ReadCmd>(c)) throw Error("wgc: a batch with reads cannot be frozen");
  detail::with_error_scope(s, "freezing a batch", [&] {
    if (!im.params.empty()) {
      rec->uniforms = detail::acquire_buffer(st, im.params.size(), WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst,
                                             "kernel parameters");
      wgpuQueueWriteBuffer(s.queue, rec->uniforms->buffer, 0, im.params.data(), im.params.size());
    }
    std::vector<WGPUBindGroupEntry> entries;
    for (auto& c : im.cmds) {
      if (auto* cp = std::get_if<CopyCmd>(&c)) {
        rec->cmds.emplace_back(*cp);
      } else if (auto* rp = std::get_if<ReplayCmd>(&c)) {
        // A nested recording: its commands (the bind groups are its own: take new references).
        for (auto& rc : rp->rec->cmds) {
          if (auto* d = std::get_if<Recording::Impl::Dispatch>(&rc)) wgpuBindGroupAddRef(d->group);
          rec->cmds.push_back(rc);
        }
        rec->tensors.insert(rec->tensors.end(), rp->rec->tensors.begin(), rp->rec->tensors.end());
        rec->n_dispatch += rp->rec->n_dispatch;
      } else {
        auto& d = std::get<DispatchCmd>(c);
        dispatch_entries(d, rec->uniforms ? rec->uniforms->buffer : nullptr, entries);
        WGPUBindGroupDescriptor bd = WGPU_BIND_GROUP_DESCRIPTOR_INIT;
        {
          std::lock_guard lock(s.mu);
          bd.layout = group0_layout(s, d.kernel.pipeline());
        }
        bd.entryCount = entries.size();
        bd.entries = entries.data();
        rec->cmds.emplace_back(Recording::Impl::Dispatch{d.kernel.pipeline(), wgpuDeviceCreateBindGroup(s.device, &bd),
                                                         d.groups, d.kernel.label()});
        for (auto& a : d.args) rec->tensors.push_back(a.tensor);
        ++rec->n_dispatch;
      }
    }
  });
  im.cmds.clear();
  im.params.clear();
  Recording r;
  r.impl_ = std::move(rec);
  return r;
}

void Batch::replay(const Recording& r) {
  impl_->check_recording();
  if (!r) throw Error("wgc: replay of an empty recording");
  if (r.impl_->ctx.shared_state() != impl_->ctx.shared_state())
    throw Error("wgc: replay of a recording made on another context");
  impl_->cmds.emplace_back(ReplayCmd{r.impl_});
}

void Batch::encode() {
  auto& im = *impl_;
  if (im.submitted) throw Error("wgc: encode after submit");
  if (im.encoded) throw Error("wgc: a batch is encoded once");
  auto& s = im.ctx.state();
  auto st = im.ctx.shared_state();

  std::shared_ptr<detail::BufferHandle> uniforms;
  if (!im.params.empty()) {
    uniforms = detail::acquire_buffer(st, im.params.size(), WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst,
                                      "kernel parameters");
    wgpuQueueWriteBuffer(s.queue, uniforms->buffer, 0, im.params.data(), im.params.size());
    im.in_flight.push_back(uniforms);
  }
  uint32_t n_dispatch = 0;
  for (auto& c : im.cmds) {
    n_dispatch += std::holds_alternative<DispatchCmd>(c);
    if (auto* r = std::get_if<ReplayCmd>(&c)) n_dispatch += static_cast<uint32_t>(r->rec->n_dispatch);
  }
  bool span = im.span && !im.timed && im.ctx.features().timestamp_query;
  if ((im.timed && n_dispatch) || span) {
    WGPUQuerySetDescriptor qd = WGPU_QUERY_SET_DESCRIPTOR_INIT;
    qd.type = WGPUQueryType_Timestamp;
    im.timed_count = span ? 1 : n_dispatch;
    qd.count = 2 * im.timed_count;
    im.queries = wgpuDeviceCreateQuerySet(s.device, &qd);
    if (span) im.timings.push_back({"the whole batch", 0});
  }

  std::string labels;
  detail::push_error_scopes(s);
  WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(s.device, nullptr);
  WGPUComputePassEncoder pass = nullptr;
  auto end_pass = [&] {
    if (!pass) return;
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
    pass = nullptr;
  };
  // time_span(): a timestamp in an empty pass before everything and one in an empty pass after.
  auto span_mark = [&](bool begin) {
    WGPUComputePassDescriptor pd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
    WGPUPassTimestampWrites tw = WGPU_PASS_TIMESTAMP_WRITES_INIT;
    tw.querySet = im.queries;
    tw.beginningOfPassWriteIndex = begin ? 0 : WGPU_QUERY_SET_INDEX_UNDEFINED;
    tw.endOfPassWriteIndex = begin ? WGPU_QUERY_SET_INDEX_UNDEFINED : 1;
    pd.timestampWrites = &tw;
    WGPUComputePassEncoder p = wgpuCommandEncoderBeginComputePass(enc, &pd);
    wgpuComputePassEncoderEnd(p);
    wgpuComputePassEncoderRelease(p);
  };
  if (span) span_mark(true);
  uint32_t qi = 0;
  auto encode_copy = [&](const CopyCmd& cp) {
    end_pass();
    wgpuCommandEncoderCopyBufferToBuffer(enc, cp.src.buffer(), cp.src_offset, cp.dst.buffer(), cp.dst_offset, cp.bytes);
  };
  auto encode_dispatch = [&](WGPUComputePipeline pipeline, WGPUBindGroup bg, const Groups& g,
                             const std::string& label) {
    if (labels.size() < 200) labels += (labels.empty() ? "" : ", ") + label;
    if (im.timed || !pass) {
      end_pass();
      WGPUComputePassDescriptor pd = WGPU_COMPUTE_PASS_DESCRIPTOR_INIT;
      WGPUPassTimestampWrites tw = WGPU_PASS_TIMESTAMP_WRITES_INIT;
      if (im.timed && im.queries) {
        tw.querySet = im.queries;
        tw.beginningOfPassWriteIndex = 2 * qi;
        tw.endOfPassWriteIndex = 2 * qi + 1;
        pd.timestampWrites = &tw;
        im.timings.push_back({label, 0});
        ++qi;
      }
      pass = wgpuCommandEncoderBeginComputePass(enc, &pd);
    }
    wgpuComputePassEncoderSetPipeline(pass, pipeline);
    wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, nullptr);
    wgpuComputePassEncoderDispatchWorkgroups(pass, g.x, g.y, g.z);
  };
  std::vector<WGPUBindGroupEntry> entries;
  for (auto& c : im.cmds) {
    if (auto* rd = std::get_if<ReadCmd>(&c)) {
      end_pass();
      wgpuCommandEncoderCopyBufferToBuffer(enc, rd->src.buffer(), rd->offset, rd->to->staging->buffer, 0,
                                           rd->to->mapped);
      im.reads.push_back(rd->to);
      continue;
    }
    if (auto* cp = std::get_if<CopyCmd>(&c)) {
      encode_copy(*cp);
      continue;
    }
    if (auto* rp = std::get_if<ReplayCmd>(&c)) {
      for (auto& rc : rp->rec->cmds) {
        if (auto* d = std::get_if<Recording::Impl::Dispatch>(&rc))
          encode_dispatch(d->pipeline, d->group, d->groups, d->label);
        else
          encode_copy(std::get<CopyCmd>(rc));
      }
      im.replayed.push_back(rp->rec);
      continue;
    }
    auto& d = std::get<DispatchCmd>(c);
    dispatch_entries(d, uniforms ? uniforms->buffer : nullptr, entries);
    encode_dispatch(d.kernel.pipeline(), bind_group(s, d.kernel.pipeline(), entries), d.groups, d.kernel.label());
  }
  end_pass();
  if (span) span_mark(false);
  if (im.queries) {
    uint64_t bytes = 16ull * im.timed_count;
    auto resolve =
        detail::acquire_buffer(st, bytes, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, "timestamps");
    im.readback =
        detail::acquire_buffer(st, bytes, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "timestamp readback");
    wgpuCommandEncoderResolveQuerySet(enc, im.queries, 0, 2 * im.timed_count, resolve->buffer, 0);
    wgpuCommandEncoderCopyBufferToBuffer(enc, resolve->buffer, 0, im.readback->buffer, 0, bytes);
    im.in_flight.push_back(resolve);
  }
  im.encoded = wgpuCommandEncoderFinish(enc, nullptr);
  wgpuCommandEncoderRelease(enc);
  im.labels = labels.empty() ? std::string("copies") : labels;
  detail::pop_error_scopes(s, "encoding " + im.labels);
}

void Batch::submit() {
  auto& im = *impl_;
  if (im.submitted) throw Error("wgc: a batch is submitted once");
  if (!im.encoded) encode();
  im.submitted = true;
  detail::throw_if_lost(im.ctx.state());
  // No error scope here (each costs a wait): a submit's errors (a buffer still mapped) reach the
  // context's uncaptured-error callback, which the waits report (Context::check).
  wgpuQueueSubmit(im.ctx.state().queue, 1, &im.encoded);
  detail::note_submit(im.ctx.state());
  wgpuCommandBufferRelease(im.encoded);
  im.encoded = nullptr;
  im.cmds.clear();  // drops the batch's references; the queue keeps what it needs
  for (auto& r : im.reads) r->request();
  im.reads.clear();
}

void Batch::wait() {
  auto& im = *impl_;
  if (!im.submitted) submit();
  im.ctx.wait_idle();
  im.in_flight.clear();
  im.replayed.clear();
  if (!im.readback) return;
  uint64_t bytes = 16ull * im.timed_count;
  detail::BufferMap mapping;
  mapping.start(im.readback->buffer, WGPUMapMode_Read, bytes);
  detail::lost_checked(im.ctx.state(), [&] {
    mapping.wait(im.ctx.instance(), "timestamps");
    mapping.check("reading timestamps failed");
  });
  const auto* ts = static_cast<const uint64_t*>(wgpuBufferGetConstMappedRange(im.readback->buffer, 0, bytes));
  for (uint32_t i = 0; i < im.timed_count; ++i)
    im.timings[i].ms = ts[2 * i + 1] >= ts[2 * i] ? static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * 1e-6 : 0.0;
  wgpuBufferUnmap(im.readback->buffer);
  im.readback.reset();
  if (im.profile) {
    std::fprintf(stderr, "[wgc profile] batch of %zu dispatches, %.3f ms\n", im.timings.size(), total_ms());
    for (auto& t : im.timings) std::fprintf(stderr, "  %9.3f ms  %s\n", t.ms, t.label.c_str());
  }
}

void run(const Context& ctx, const Kernel& k, std::vector<Arg> args, const Params& params, Groups groups) {
  Batch b(ctx);
  b.dispatch(k, std::move(args), params, groups);
  b.run();
}

}  // namespace wgc
