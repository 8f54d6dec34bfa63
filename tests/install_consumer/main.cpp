// Adds two vectors on whatever adapter the machine has, through an installed wgc.
#include <wgc.h>

#include <cstdio>

int main() {
  wgc::Context ctx;
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  auto ta = wgc::make_tensor(ctx, {3}, a), tb = wgc::make_tensor(ctx, {3}, b), tc = wgc::make_tensor(ctx, {3});
  wgc::run(ctx, wgc::compile(ctx, wgc::embedded_kernel("map/add.wgsl")), {ta, tb, tc}, wgc::Params(uint32_t(3)),
           {1, 1, 1});
  auto c = wgc::download<float>(ctx, tc);
  std::printf("%g %g %g\n", c[0], c[1], c[2]);
  return c[0] == 11 && c[1] == 22 && c[2] == 33 ? 0 : 1;
}
