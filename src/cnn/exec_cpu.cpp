// The CPU path of a plan: every step through its CPU reference (cpu/conv.h, cpu/matmul.h,
// cpu/tensor_ops.h).
#include "cnn/plan.h"
#include "cpu/matmul.h"

namespace wgc::cnn {

void run_step_cpu(const Step& s, std::span<const float* const> in, std::span<const uint64_t> n, float* out,
                  uint64_t out_n) {
  auto x = [&](size_t k) { return std::span<const float>(in[k], n[k]); };
  std::span<float> y(out, out_n);
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, ConvStep>) {
          auto pick = [&](const HostTensorPtr& c, int k) {
            return c ? std::span<const float>(c->f) : k >= 0 ? x(size_t(k)) : std::span<const float>();
          };
          cpu::conv2d(x(0), pick(op.weights, op.w_in), pick(op.bias, op.b_in), pick(nullptr, op.res_in),
                      y.first(op.dims.y_elements()), op.dims, op.ep);
        } else if constexpr (std::is_same_v<T, PoolStep>) {
          cpu::pool2d(x(0), y.first(op.dims.y_elements()), op.dims, op.kind);
        } else if constexpr (std::is_same_v<T, GlobalPoolStep>) {
          cpu::global_average_pool(x(0), y.first(uint64_t(op.n) * op.c), op.n, op.c, op.hw);
        } else if constexpr (std::is_same_v<T, MatmulStep>) {
          const MatmulDims& d = op.dims;
          cpu::matmul(x(0).first(uint64_t(d.m) * d.k), x(1).first(uint64_t(d.k) * d.n), y.first(uint64_t(d.m) * d.n),
                      d.m, d.n, d.k, d.trans_b);
        } else if constexpr (std::is_same_v<T, BatchedMatmulStep>) {
          cpu::batched_matmul(x(0), x(1), y, op.dims);
        } else if constexpr (std::is_same_v<T, BinaryStep>) {
          cpu::binary(op.op, x(0), x(1), y, op.dims);
        } else if constexpr (std::is_same_v<T, UnaryStep>) {
          cpu::unary(op.p, x(0).first(op.count), y);
        } else if constexpr (std::is_same_v<T, SoftmaxStep>) {
          cpu::softmax(x(0), y, op.dims, op.log);
        } else if constexpr (std::is_same_v<T, ReduceStep>) {
          cpu::axis_reduce(op.op, x(0), y, op.dims);
        } else if constexpr (std::is_same_v<T, CopyStep>) {
          cpu::strided_copy(x(0), y, op.dims);
        }
      },
      s.op);
}

void run_plan_cpu(const Plan& p, std::vector<std::vector<float>>& slots) {
  slots.resize(p.slot_elems.size());
  for (size_t k = 0; k < p.slot_elems.size(); ++k) slots[k].resize(p.slot_elems[k]);
  std::vector<const float*> ptrs;
  std::vector<uint64_t> elems;
  for (const auto& s : p.steps) {
    ptrs.clear();
    elems.clear();
    for (const auto& o : s.in) {
      ptrs.push_back(o.slot >= 0 ? slots[size_t(o.slot)].data() : o.constant->f.data());
      elems.push_back(o.elems);
    }
    run_step_cpu(s, ptrs, elems, slots[size_t(s.out.slot)].data(), s.out.elems);
  }
}

}  // namespace wgc::cnn
