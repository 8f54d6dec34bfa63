// The runtime: device creation, ABI facts, buffers, kernels, errors, timing.
#include "gpu/context_state.h"
#include "gpu/staging.h"
#include "gpu/webgpu_abi.h"
#include "test_util.h"

#include <optional>

using namespace wgc;
using wgc::test::ctx;

TEST(Abi, PaddedLimitsLeaveRoomForTheLibrarysLongerStruct) {
  static_assert(sizeof(wgc::abi::PaddedLimits) >= sizeof(WGPULimits) + 16);
  // GetLimits writes the library's four extra words: poison them and see them change or stay sane.
  wgc::abi::PaddedLimits l;
  for (auto& w : l.library_extra) w = 0xdeadbeef;
  for (auto& w : l.slack) w = 0xdeadbeef;
  ASSERT_EQ(wgpuAdapterGetLimits(ctx().state().adapter, &l.limits), WGPUStatus_Success);
  EXPECT_GT(l.limits.maxStorageBufferBindingSize, 0u);
  EXPECT_GT(l.limits.maxComputeInvocationsPerWorkgroup, 0u);
  for (auto w : l.slack) EXPECT_EQ(w, 0xdeadbeefu) << "the library wrote past 16 extra bytes";
}

TEST(Abi, SubgroupsFeatureNumberEnablesTheWgslExtension) {
  if (!ctx().features().subgroups) GTEST_SKIP() << "adapter has no subgroups";
  auto k = compile(ctx(), {"enable subgroups;\n@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
                           "@compute @workgroup_size(32) fn main(@builtin(local_invocation_index) i: u32,\n"
                           "  @builtin(subgroup_size) sg: u32) { o[i] = subgroupAdd(1u) * 1000u + sg; }",
                           "main",
                           {},
                           "subgroup-probe"});
  auto out = make_tensor(ctx(), {32}, DType::U32);
  fill_u32(ctx(), out, kPoisonNaN);
  run(ctx(), k, {out}, {}, {1, 1, 1});
  auto v = download<uint32_t>(ctx(), out);
  uint32_t sg = ctx().adapter().subgroup_min_size;
  for (auto x : v) EXPECT_EQ(x, sg * 1000 + sg);
}

TEST(Abi, TimestampFeatureGivesTimings) {
  if (!ctx().features().timestamp_query) GTEST_SKIP() << "adapter has no timestamp queries";
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 1 << 16;
  auto a = make_tensor(ctx(), {n}), c = make_tensor(ctx(), {n});
  Batch b(ctx(), true);
  b.dispatch(k, {a, a, c}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
  b.dispatch(k, {c, a, c}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
  b.run();
  ASSERT_EQ(b.timings().size(), 2u);
  EXPECT_GT(b.total_ms(), 0.0);
  EXPECT_EQ(b.timings()[0].label, "map/add.wgsl");
}

TEST(Context, IsARealVulkanDeviceNotNull) {
  EXPECT_EQ(ctx().adapter().backend, "vulkan");
  EXPECT_GE(ctx().adapter().subgroup_min_size, 1u);
}

TEST(Context, NullBackendIsRefused) {
  try {
    Context c({Backend::Null});
    FAIL() << "the Null backend was accepted";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("Null"), std::string::npos) << e.what();
  }
}

// cpu-vulkan finds SwiftShader whatever the auto backend is (on a CPU-only machine the auto one is
// SwiftShader too: Dawn's own fallback-adapter request found nothing there), runs a kernel, and
// leaves the process's driver environment as it was.
TEST(Context, CpuVulkanPicksTheCpuAdapter) {
  const char* before = std::getenv("VK_DRIVER_FILES");
  std::optional<Context> made;
  try {
    made.emplace(ContextOptions{Backend::CpuVulkan});
  } catch (const DeviceError& e) {
    // A GPU machine given only its GPU's driver (scripts/device_run.sh sets VK_DRIVER_FILES, and
    // its bundle has no SwiftShader) has no CPU adapter to find; a CPU-only machine always has one.
    if (!ctx().adapter().is_cpu()) GTEST_SKIP() << "no SwiftShader on this GPU machine: " << e.what();
    throw;
  }
  Context& c = *made;
  EXPECT_TRUE(c.adapter().is_cpu()) << c.adapter().device << " (" << c.adapter().adapter_type << ")";
  EXPECT_EQ(std::getenv("VK_DRIVER_FILES") == nullptr, before == nullptr);
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  auto ta = make_tensor(c, {3}, a), tb = make_tensor(c, {3}, b);
  Tensor tc = add(c, ta, tb);
  EXPECT_EQ(download<float>(c, tc), (std::vector<float>{11, 22, 33}));
}

// list_adapters and ContextOptions::adapter_index go through Dawn's C++ EnumerateAdapters
// (declared in webgpu_abi.h): this pins that declaration to the library.
TEST(Context, AdaptersListedAndPickedByIndex) {
  Backend b = ctx().options().backend;
  auto all = list_adapters(b);
  ASSERT_FALSE(all.empty());
  bool listed = false;
  for (const auto& a : all) {
    EXPECT_EQ(a.backend, "vulkan");
    listed |= a.device == ctx().adapter().device;
  }
  EXPECT_TRUE(listed) << "the default adapter '" << ctx().adapter().device << "' is not in the list";
  for (size_t i = 0; i < all.size(); ++i) {
    ContextOptions o;
    o.backend = b;
    o.adapter_index = int(i);
    Context c(o);
    EXPECT_EQ(c.adapter().device, all[i].device);
    EXPECT_EQ(c.adapter().adapter_type, all[i].adapter_type);
    // The device works: a buffer round trip.
    auto t = make_tensor(c, {3}, std::vector<float>{1.5f, -2, 7});
    EXPECT_EQ(download<float>(c, t), (std::vector<float>{1.5f, -2, 7}));
  }
}

TEST(Context, AdapterIndexPastTheListIsAClearError) {
  Backend b = ctx().options().backend;
  auto all = list_adapters(b);
  ContextOptions o;
  o.backend = b;
  o.adapter_index = int(all.size());
  try {
    Context c(o);
    FAIL() << "adapter index " << all.size() << " was accepted";
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("adapter index " + std::to_string(all.size())), std::string::npos) << msg;
    EXPECT_NE(msg.find(all[0].device), std::string::npos) << "the message should list the adapters: " << msg;
  }
}

TEST(Context, BackendNamesParse) {
  EXPECT_EQ(parse_backend("cpu-vulkan"), Backend::CpuVulkan);
  EXPECT_EQ(parse_backend("gpu"), Backend::Gpu);
  EXPECT_THROW(parse_backend("metal"), Error);
}

TEST(Tensor, UploadDownloadRoundTripsOddSizes) {
  for (size_t n : {1, 3, 17, 1000}) {
    auto v = test::random_floats(n, static_cast<uint32_t>(n));
    auto t = make_tensor(ctx(), {static_cast<int64_t>(n)}, v);
    EXPECT_EQ(download<float>(ctx(), t), v);
  }
  std::vector<std::byte> bytes(7);
  for (size_t i = 0; i < 7; ++i) bytes[i] = std::byte(i + 1);
  auto t = make_tensor(ctx(), {7}, DType::Raw, bytes);
  std::vector<std::byte> back(7);
  download(ctx(), t, back);
  EXPECT_EQ(back, bytes);
}

TEST(Tensor, PoolReusesReleasedBuffers) {
  WGPUBuffer first;
  {
    auto t = make_tensor(ctx(), {4096});
    first = t.buffer();
  }
  EXPECT_GE(pooled_bytes(ctx()), 4096u * 4);
  auto t2 = make_tensor(ctx(), {4000});
  EXPECT_EQ(t2.buffer(), first);
}

TEST(Tensor, AllocatedCountsBuffersThatExistIncludingPooled) {
  const int64_t n = 5'000'003;  // 20 MB: larger than what the other tests leave in the pool
  uint64_t buffers0 = allocated_buffers(ctx()), bytes0 = allocated_buffer_bytes(ctx());
  {
    auto t = make_tensor(ctx(), {n});
    EXPECT_EQ(allocated_buffers(ctx()), buffers0 + 1);
    EXPECT_EQ(allocated_buffer_bytes(ctx()), bytes0 + t.capacity());
  }
  // Released into the pool: still allocated; taken again: nothing new.
  EXPECT_EQ(allocated_buffers(ctx()), buffers0 + 1);
  auto again = make_tensor(ctx(), {n});
  EXPECT_EQ(allocated_buffers(ctx()), buffers0 + 1);
  EXPECT_EQ(allocated_buffer_bytes(ctx()), bytes0 + again.capacity());
}

TEST(Tensor, TooLargeBufferIsAClearError) {
  uint64_t too_big = ctx().limits().max_buffer_size / 4 + 16;
  try {
    make_tensor(ctx(), {static_cast<int64_t>(too_big)});
    FAIL() << "no error";
  } catch (const LimitError& e) {
    EXPECT_NE(std::string(e.what()).find("maxBufferSize"), std::string::npos) << e.what();
  }
}

TEST(Tensor, ViewMustFit) {
  auto t = make_tensor(ctx(), {10});
  EXPECT_NO_THROW(t.view({2, 5}));
  EXPECT_THROW(t.view({100}), Error);
}

TEST(Kernel, BadWgslThrowsWithLineNumber) {
  try {
    compile(ctx(),
            {"@compute @workgroup_size(1)\nfn main() {\n  let x: f32 = undefined_thing;\n}\n", "main", {}, "bad.wgsl"});
    FAIL() << "no error";
  } catch (const ShaderError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.wgsl:3:"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  }
}

TEST(Kernel, MissingEmbeddedFileIsAnError) { EXPECT_THROW(embedded_kernel("nope/none.wgsl"), Error); }

TEST(Kernel, CacheReturnsTheSamePipeline) {
  auto a = compile(ctx(), embedded_kernel("map/add.wgsl"));
  auto b = compile(ctx(), embedded_kernel("map/add.wgsl"));
  EXPECT_EQ(a.pipeline(), b.pipeline());
  auto c = compile(ctx(), embedded_kernel("map/add.wgsl", {{"WG", 64}}));
  EXPECT_NE(a.pipeline(), c.pipeline());
}

TEST(Kernel, AsyncCompileOfMany) {
  std::vector<KernelCode> codes;
  for (int wg : {32, 64, 128}) codes.push_back(embedded_kernel("map/add.wgsl", {{"WG", wg}}));
  auto ks = compile_all(ctx(), codes);
  ASSERT_EQ(ks.size(), 3u);
  for (auto& k : ks) EXPECT_TRUE(k);
}

TEST(Batch, TooManyWorkgroupsIsALimitError) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  auto t = make_tensor(ctx(), {4});
  Batch b(ctx());
  EXPECT_THROW(b.dispatch(k, {t, t, t}, Params(4u), {ctx().limits().max_compute_workgroups_per_dimension + 1}),
               LimitError);
}

TEST(Batch, ManyDispatchesOneSubmitKeepOrder) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 1001;
  std::vector<float> ones(n, 1.f);
  auto one = make_tensor(ctx(), {n}, ones), acc = make_tensor(ctx(), {n}, std::vector<float>(n, 0.f));
  Batch b(ctx());
  for (int i = 0; i < 50; ++i) b.dispatch(k, {acc, one, acc}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
  b.run();
  for (float x : download<float>(ctx(), acc)) ASSERT_EQ(x, 50.f);
}

TEST(Batch, GroupsSpillIntoYPastTheLimit) {
  auto g = groups_1d(ctx(), 70000);
  EXPECT_LE(g.x, ctx().limits().max_compute_workgroups_per_dimension);
  EXPECT_GE(uint64_t(g.x) * g.y, 70000u);
}

// A frozen batch replays its dispatches and copies, in order, in later batches (among other
// work, timed or not), reading the data its tensors hold at each run; reads cannot be frozen.
TEST(Batch, FrozenRecordingsReplay) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 300;
  auto one = make_tensor(ctx(), {n}, std::vector<float>(n, 1.f));
  auto acc = make_tensor(ctx(), {n}, std::vector<float>(n, 0.f));
  auto copy = make_tensor(ctx(), {n});
  Recording rec;
  {
    Batch b(ctx());
    b.dispatch(k, {acc, one, acc}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
    b.dispatch(k, {acc, one, acc}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
    b.copy(acc, 0, copy, 0, 4 * n);
    rec = b.freeze();
    EXPECT_EQ(b.size(), 0u);
  }
  EXPECT_EQ(rec.dispatches(), 2u);
  for (int i = 1; i <= 3; ++i) {
    Batch b(ctx(), /*timed=*/i == 3);
    b.replay(rec);
    b.dispatch(k, {copy, one, copy}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
    b.run();
    for (float x : download<float>(ctx(), acc)) ASSERT_EQ(x, float(2 * i));
    for (float x : download<float>(ctx(), copy)) ASSERT_EQ(x, float(2 * i + 1));
    if (i == 3 && ctx().features().timestamp_query) {
      EXPECT_EQ(b.timings().size(), 3u);
    }
  }
  {  // a recording replayed inside another frozen batch
    Batch b(ctx());
    b.replay(rec);
    Recording twice;
    b.replay(rec);
    twice = b.freeze();
    EXPECT_EQ(twice.dispatches(), 4u);
    Batch c(ctx());
    c.replay(twice);
    c.run();
    for (float x : download<float>(ctx(), acc)) ASSERT_EQ(x, 10.f);
  }
  Batch b(ctx());
  (void)b.read(acc, 0, 4);
  EXPECT_THROW(b.freeze(), Error);
  Batch e(ctx());
  EXPECT_THROW(e.replay(Recording{}), Error);
}

// A readback recorded in one batch sees that batch's results even when later batches (submitted
// before the host waits) change the tensor again.
TEST(Batch, ReadbacksInFlightSeeTheirOwnBatch) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 77;
  auto one = make_tensor(ctx(), {n}, std::vector<float>(n, 1.f));
  auto acc = make_tensor(ctx(), {n}, std::vector<float>(n, 0.f));
  std::vector<Readback> reads;
  for (int i = 0; i < 3; ++i) {
    Batch b(ctx());
    b.dispatch(k, {acc, one, acc}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
    reads.push_back(b.read(acc, 4 * 5, 4 * 3));  // elements 5..7
    b.submit();
  }
  for (int i = 0; i < 3; ++i) {
    auto bytes = reads[size_t(i)].wait();
    ASSERT_EQ(bytes.size(), 12u);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(reads[size_t(i)].value<float>(size_t(j)), float(i + 1));
  }
  float out[2];
  Batch b(ctx());
  auto r = b.read(acc, 0, 8);
  EXPECT_THROW(r.wait(), Error);  // not submitted yet
  b.submit();
  r.wait(std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out[1], 3.f);
  Batch c(ctx());
  EXPECT_THROW(c.read(acc, acc.capacity() - 4, 8), Error);  // past the end
}

// A batch encoded ahead (Batch::encode) with a staged upload's copy recorded while its buffer is
// mapped, filled afterwards, submitted later: the copy carries the data filled last; waits that
// poll (WaitMode::Spin, and Auto's first kAutoSpinUs on a GPU) see the same results; nothing records
// into an encoded batch.
TEST(Batch, EncodedAheadWithAStagedUploadFilledLater) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 45;
  auto one = make_tensor(ctx(), {n}, std::vector<float>(n, 1.f));
  auto x = make_tensor(ctx(), {n}), y = make_tensor(ctx(), {n});
  StagedUpload up(ctx(), 4 * n);
  for (WaitMode mode : {WaitMode::Auto, WaitMode::Block, WaitMode::Spin}) {
    set_wait_mode(mode);
    for (int run = 0; run < 2; ++run) {
      fill_u32(ctx(), y, kPoisonNaN);
      Batch b(ctx());
      up.record_copy(b, 4 * n, x);
      b.dispatch(k, {x, one, y}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
      Readback r = b.read(y, 0, 4 * n);
      b.encode();
      EXPECT_THROW(b.dispatch(k, {x, one, y}, Params(n), groups_1d(ctx(), 1)), Error);
      std::vector<float> data(n);
      for (uint32_t i = 0; i < n; ++i) data[i] = float(i * 3 + run);
      up.fill(std::as_bytes(std::span(data)));
      b.submit();
      up.remap();
      std::vector<float> got(n);
      r.wait(std::as_writable_bytes(std::span(got)));
      for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(got[i], data[i] + 1.f) << i << " run " << run;
    }
  }
  set_wait_mode(WaitMode::Auto);
  Batch more(ctx());
  EXPECT_THROW(up.record_copy(more, up.bytes() + 4, x), Error);  // more than it holds
}

// time_span(): one timing for the whole batch, its work done as untimed.
TEST(Batch, TimeSpanTimesTheWholeBatch) {
  if (!ctx().features().timestamp_query) GTEST_SKIP() << "adapter has no timestamp queries";
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 1000;
  auto one = make_tensor(ctx(), {n}, std::vector<float>(n, 1.f));
  auto acc = make_tensor(ctx(), {n}, std::vector<float>(n, 0.f));
  auto copy = make_tensor(ctx(), {n});
  Batch b(ctx());
  b.time_span();
  for (int i = 0; i < 5; ++i) b.dispatch(k, {acc, one, acc}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
  b.copy(acc, 0, copy, 0, 4 * n);
  b.run();
  ASSERT_EQ(b.timings().size(), 1u);
  EXPECT_GT(b.total_ms(), 0.0);
  for (float x : download<float>(ctx(), copy)) ASSERT_EQ(x, 5.f);
}

// Bind groups are cached by their buffers and ranges: the same dispatch in many batches, and a
// pooled buffer reused by a new tensor, still compute with the data bound now.
TEST(Batch, CachedBindGroupsBindTheCurrentData) {
  auto k = compile(ctx(), embedded_kernel("map/add.wgsl"));
  const uint32_t n = 300;
  auto out = make_tensor(ctx(), {n});
  for (int i = 0; i < 4; ++i) {
    auto a = make_tensor(ctx(), {n}, std::vector<float>(n, float(i)));
    auto b = make_tensor(ctx(), {n}, std::vector<float>(n, 0.5f));
    run(ctx(), k, {a, b, out}, Params(n), groups_1d(ctx(), ceil_div(n, 256)));
    for (float x : download<float>(ctx(), out)) ASSERT_EQ(x, float(i) + 0.5f);
  }
}
