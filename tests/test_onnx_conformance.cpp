// ONNX's own backend conformance data (Debian's libonnx-testdata: data/node, data/pytorch-converted,
// data/pytorch-operator; each case a model.onnx with test_data_set_*/input_*.pb and output_*.pb),
// run through the GPU path (SwiftShader in CI) and the CPU path. Prints per op: pass / fail / not
// supported (wgc::cnn::Unsupported: an op, attribute or data type wgc does not take), and fails on
// any wrong result or error of a case that wgc says it supports.
#include "cnn.h"
#include "test_util.h"

#include <map>
#include <set>

using namespace wgc;
using wgc::test::ctx;
namespace fs = std::filesystem;

namespace {

// Cases whose tensors are large are skipped to keep CI short on SwiftShader (listed in the output).
constexpr int64_t kMaxCaseElements = 1 << 20;

fs::path testdata_dir() { return test::env_dir("WGC_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data"); }

// |got - want| <= atol + rtol |want| (ONNX's backend test defaults are rtol 1e-3, atol 1e-7; f32
// kernels on another device need a little absolute slack near 0).
std::string compare(const cnn::HostTensor& got, const cnn::NamedTensor& want) {
  if (got.shape != want.value.shape)
    return "shape " + to_string(got.shape) + ", expected " + to_string(want.value.shape);
  if (want.value.integer) {
    if (!got.integer) return "float output, expected integers";
    return got.i == want.value.i ? "" : "integer values differ";
  }
  if (got.integer) return "integer output, expected floats";
  for (size_t i = 0; i < got.f.size(); ++i) {
    float g = got.f[i], w = want.value.f[i];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= 1e-5f + 1e-3f * std::fabs(w)))
      return "element " + std::to_string(i) + ": " + std::to_string(g) + ", expected " + std::to_string(w);
  }
  return "";
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> v;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    v.push_back(p);
  }
  return v;
}

struct Counts {
  int pass = 0, fail = 0, unsupported = 0;
};

}  // namespace

TEST(OnnxConformance, SupportedOpsPassTheBackendTests) {
  fs::path root = testdata_dir();
  if (!fs::exists(root / "node"))
    GTEST_SKIP() << "ONNX backend test data not found at " << root << " (libonnx-testdata)";
  std::map<std::string, Counts> per_op;
  Counts total;
  std::vector<std::string> failures, skipped;
  int cases = 0;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator"}) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root / suite))
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& dir : dirs) {
      std::string name = std::string(suite) + "/" + dir.filename().string();
      std::set<std::string> ops;
      enum { Pass, Fail, NotSupported } verdict = Pass;
      std::string why;
      try {
        cnn::Graph g = cnn::load_onnx(dir / "model.onnx");
        for (const auto& n : g.nodes)
          if (n.op != "Constant") ops.insert(n.op);
        for (const auto& in : g.inputs)  // sequences and optionals come as other protobuf messages
          if (in.elem_type < 0) throw cnn::Unsupported("input '" + in.name + "' is not a tensor");
        for (const auto& out : g.outputs)
          if (out.elem_type < 0) throw cnn::Unsupported("output '" + out.name + "' is not a tensor");
        std::vector<fs::path> sets;
        for (const auto& e : fs::directory_iterator(dir))
          if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
            sets.push_back(e.path());
        std::sort(sets.begin(), sets.end());
        bool big = false;
        std::vector<std::vector<cnn::HostTensor>> inputs;
        std::vector<std::vector<cnn::NamedTensor>> outputs;
        for (const auto& s : sets) {
          inputs.emplace_back();
          outputs.emplace_back();
          for (const auto& p : sorted_files(s, "input_")) {
            cnn::NamedTensor t = cnn::load_tensor_pb(p);
            big |= t.value.numel() > kMaxCaseElements;
            if (t.elem_type != 1 && !cnn::is_integer_type(t.elem_type))
              throw cnn::Unsupported("input of type " + std::string(cnn::onnx_type_name(t.elem_type)));
            inputs.back().push_back(std::move(t.value));
          }
          for (const auto& p : sorted_files(s, "output_")) {
            outputs.back().push_back(cnn::load_tensor_pb(p));
            big |= outputs.back().back().value.numel() > kMaxCaseElements;
          }
        }
        if (big) {
          skipped.push_back(name);
          continue;
        }
        ++cases;
        for (cnn::Device dev : {cnn::Device::Cpu, cnn::Device::Gpu}) {
          cnn::Model m(ctx(), g, {dev});
          for (size_t s = 0; s < inputs.size() && why.empty(); ++s) {
            auto got = m.run(inputs[s]);
            if (got.size() < outputs[s].size()) why = "fewer outputs than expected";
            for (size_t o = 0; o < outputs[s].size() && why.empty(); ++o) {
              std::string d = compare(got[o], outputs[s][o]);
              if (!d.empty()) why = std::string(to_string(dev)) + " output " + std::to_string(o) + ": " + d;
            }
          }
          if (!why.empty()) break;
        }
        if (!why.empty()) verdict = Fail;
      } catch (const cnn::Unsupported& e) {
        verdict = NotSupported;
        why = e.what();
      } catch (const std::exception& e) {
        verdict = Fail;
        why = e.what();
      }
      (verdict == Pass ? total.pass : verdict == Fail ? total.fail : total.unsupported)++;
      if (ops.empty()) ops.insert("(model did not load)");
      for (const auto& op : ops) {
        Counts& c = per_op[op];
        (verdict == Pass ? c.pass : verdict == Fail ? c.fail : c.unsupported)++;
      }
      if (verdict == Fail) failures.push_back(name + ": " + why);
      if (verdict == NotSupported && std::getenv("WGC_CONFORMANCE_VERBOSE"))
        std::printf("not supported: %s: %s\n", name.c_str(), why.c_str());
    }
  }
  std::printf("ONNX backend tests (%s): %d cases run, %zu skipped for size (> %lld elements):", root.c_str(), cases,
              skipped.size(), (long long)kMaxCaseElements);
  for (const auto& s : skipped) std::printf(" %s", s.c_str());
  std::printf("\n%-28s %6s %6s %14s\n", "op", "pass", "fail", "not supported");
  for (const auto& [op, c] : per_op) std::printf("%-28s %6d %6d %14d\n", op.c_str(), c.pass, c.fail, c.unsupported);
  std::printf("%-28s %6d %6d %14d\n", "(cases)", total.pass, total.fail, total.unsupported);
  for (const auto& f : failures) ADD_FAILURE() << f;
}
