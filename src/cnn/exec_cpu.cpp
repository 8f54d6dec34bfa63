// The CPU path of a plan: every step through its CPU reference (cpu/conv.h, cpu/matmul.h,
// cpu/tensor_ops.h, cpu/elementwise.h, cpu/norm.h, cpu/resize.h, cpu/index_ops.h).
#include "cnn/plan.h"
#include "cpu/fused_attention.h"
#include "cpu/matmul.h"

namespace wgc::cnn {

namespace {

using cpu::ConstWords;
using cpu::Words;
using cpu::WordType;

std::span<const float> floats(const ConstWords& w) { return {static_cast<const float*>(w.p), size_t(w.n)}; }
std::span<float> floats(const Words& w) { return {static_cast<float*>(w.p), size_t(w.n)}; }

// A strided copy of any element type (the float one is cpu::strided_copy's).
void copy_words(const ConstWords& src, const Words& dst, const CopyDims& d) {
  uint64_t total = d.count();
  std::array<uint32_t, kMaxRank> idx{};
  int64_t s = d.src_offset, t = d.dst_offset;
  for (uint64_t n = 0; n < total; ++n) {
    if (s < 0 || uint64_t(s) >= src.n || t < 0 || uint64_t(t) >= dst.n)
      throw Error("wgc: strided copy " + d.str() + " reaches outside its buffers");
    dst.copy(uint64_t(t), src, uint64_t(s));
    for (int k = int(d.rank) - 1; k >= 0; --k) {
      if (++idx[size_t(k)] < d.shape[size_t(k)]) {
        s += d.src_strides[size_t(k)];
        t += d.dst_strides[size_t(k)];
        break;
      }
      s -= d.src_strides[size_t(k)] * int64_t(d.shape[size_t(k)] - 1);
      t -= d.dst_strides[size_t(k)] * int64_t(d.shape[size_t(k)] - 1);
      idx[size_t(k)] = 0;
    }
  }
}

}  // namespace

void run_step_cpu(const Step& s, std::span<const ConstWords> in, const Words& out) {
  bool all_float = out.is_float();
  for (const auto& w : in) all_float &= w.is_float();
  auto x = [&](size_t k) { return floats(in[k]); };
  auto float_only = [&]() {
    if (!all_float) throw Unsupported("this op on integer tensors is not supported (float32 only)");
  };
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, ConvStep>) {
          float_only();
          auto pick = [&](const HostTensorPtr& c, int k) {
            return c ? std::span<const float>(c->f) : k >= 0 ? x(size_t(k)) : std::span<const float>();
          };
          cpu::conv2d(x(0), pick(op.weights, op.w_in), pick(op.bias, op.b_in), pick(nullptr, op.res_in),
                      floats(out).first(op.dims.y_elements()), op.dims, op.ep);
        } else if constexpr (std::is_same_v<T, PoolStep>) {
          float_only();
          cpu::pool2d(x(0), floats(out).first(op.dims.y_elements()), op.dims, op.kind);
        } else if constexpr (std::is_same_v<T, GlobalPoolStep>) {
          float_only();
          cpu::global_average_pool(x(0), floats(out).first(uint64_t(op.n) * op.c), op.n, op.c, op.hw);
        } else if constexpr (std::is_same_v<T, MatmulStep>) {
          float_only();
          const MatmulDims& d = op.dims;
          cpu::matmul(x(0).first(uint64_t(d.m) * d.k), x(1).first(uint64_t(d.k) * d.n),
                      floats(out).first(uint64_t(d.m) * d.n), d.m, d.n, d.k, d.trans_b);
        } else if constexpr (std::is_same_v<T, BatchedMatmulStep>) {
          float_only();
          cpu::batched_matmul(x(0), x(1), floats(out), op.dims);
        } else if constexpr (std::is_same_v<T, BinaryStep>) {
          if (all_float) {
            cpu::binary(op.op, x(0), x(1), floats(out), op.dims);
          } else if (out.type == WordType::I64 && in[0].type == WordType::I64 && in[1].type == WordType::I64) {
            auto i64 = [](const ConstWords& w) {
              return std::span<const int64_t>(static_cast<const int64_t*>(w.p), size_t(w.n));
            };
            cpu::binary(op.op, i64(in[0]), i64(in[1]), std::span<int64_t>(static_cast<int64_t*>(out.p), size_t(out.n)),
                        op.dims);
          } else {
            throw Unsupported("mixes integer and float tensors");
          }
        } else if constexpr (std::is_same_v<T, UnaryStep>) {
          float_only();
          cpu::unary(op.p, x(0).first(op.count), floats(out));
        } else if constexpr (std::is_same_v<T, SoftmaxStep>) {
          float_only();
          cpu::softmax(x(0), floats(out), op.dims, op.log);
        } else if constexpr (std::is_same_v<T, ReduceStep>) {
          if (in[0].is_float()) {
            float_only();
            cpu::axis_reduce(op.op, x(0), floats(out), op.dims);
          } else {
            cpu::axis_reduce_ints(op.op, in[0], out, op.dims);
          }
        } else if constexpr (std::is_same_v<T, CopyStep>) {
          if (all_float)
            cpu::strided_copy(x(0), floats(out), op.dims);
          else
            copy_words(in[0], out, op.dims);
        } else if constexpr (std::is_same_v<T, EwStep>) {
          cpu::elementwise(op.p, op.dims, in, out);
        } else if constexpr (std::is_same_v<T, NormStep>) {
          float_only();
          if (op.stats)
            cpu::norm_stats(x(0), floats(out), op.dims);
          else
            cpu::norm(x(0), x(1), x(2), floats(out), op.dims);
        } else if constexpr (std::is_same_v<T, ResizeStep>) {
          float_only();
          cpu::resize(x(0), x(1), floats(out), op.dims);
        } else if constexpr (std::is_same_v<T, PadStep>) {
          cpu::pad(in[0], out, op.dims);
        } else if constexpr (std::is_same_v<T, GatherStep>) {
          cpu::gather(in[0], in[1], out, op.dims);
        } else if constexpr (std::is_same_v<T, GatherElementsStep>) {
          cpu::gather_elements(in[0], in[1], out, op.dims);
        } else if constexpr (std::is_same_v<T, ArgReduceStep>) {
          if (!in[0].is_float()) throw Unsupported("ArgMax / ArgMin of an integer tensor (float32 only)");
          cpu::arg_reduce(x(0), out, op.dims);
        } else if constexpr (std::is_same_v<T, TopKStep>) {
          if (!in[0].is_float()) throw Unsupported("TopK of an integer tensor (float32 only)");
          uint64_t n = uint64_t(op.dims.axis.outer) * op.dims.k * op.dims.axis.inner;
          std::vector<float> values(n);
          std::vector<int64_t> idx(n);
          cpu::topk(x(0), values, {idx.data(), WordType::I64, n}, op.dims);
          for (uint64_t k = 0; k < n; ++k) op.indices ? out.set_i(k, idx[k]) : out.set_f(k, values[k]);
        } else if constexpr (std::is_same_v<T, CumSumStep>) {
          cpu::cumsum(in[0], out, op.dims);
        } else if constexpr (std::is_same_v<T, ScatterElementsStep>) {
          cpu::scatter_elements(in[0], in[1], in[2], out, op.dims);
        } else if constexpr (std::is_same_v<T, RoiAlignStep>) {
          if (!in[0].is_float() || !in[1].is_float() || !out.is_float())
            throw Unsupported("RoiAlign of integer tensors");
          cpu::roi_align(x(0), x(1), in[2], floats(out), op.dims);
        } else if constexpr (std::is_same_v<T, AttentionStep>) {
          float_only();
          cpu::fused_attention(x(0), x(1), x(2), op.dims.mask ? x(3) : std::span<const float>(), floats(out), op.dims);
        }
      },
      s.op);
}

void run_plan_cpu(const Plan& p, std::vector<std::vector<float>>& slots) {
  slots.resize(p.slot_elems.size());
  for (size_t k = 0; k < p.slot_elems.size(); ++k) slots[k].resize(p.slot_elems[k]);
  std::vector<ConstWords> in;
  for (const auto& s : p.steps) {
    in.clear();
    for (const auto& o : s.in) {
      if (o.slot >= 0)
        in.push_back({slots[size_t(o.slot)].data(), o.integer ? WordType::I32 : WordType::F32, o.elems});
      else if (o.constant->integer)
        in.push_back({o.constant->i.data(), WordType::I64, o.elems});
      else
        in.push_back({o.constant->f.data(), WordType::F32, o.elems});
    }
    run_step_cpu(s, in, {slots[size_t(s.out.slot)].data(), s.out.integer ? WordType::I32 : WordType::F32, s.out.elems});
  }
}

}  // namespace wgc::cnn
