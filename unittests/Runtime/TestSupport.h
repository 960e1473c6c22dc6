//===- TestSupport.h - PTX and paths for the runtime's tests ----*- C++ -*-===//
//
// fakeCudaPath(): where the stand-in driver (FakeCuda.cpp) is: the file
// named by $FA_FAKE_CUDA_PATH, else libfa-fake-cuda.so next to the test
// binary (the build puts it there, and scripts/gpu/pack.sh keeps them
// together).
//
// add_one(float *data, int n): data[i] += 1 for each thread i < n, with a 1-D
// grid. PTX 8.0 for sm_80, which the driver JIT-compiles for any newer GPU
// (ptxas -arch=sm_90 accepts it). kBadPtx is the same kernel with an
// undefined register, which the JIT rejects.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_RUNTIME_TESTSUPPORT_H
#define FA_UNITTESTS_RUNTIME_TESTSUPPORT_H

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace fa::runtime::test {

inline std::string fakeCudaPath() {
  if (const char *path = std::getenv("FA_FAKE_CUDA_PATH"); path && *path)
    return path;
  char self[4096];
  ssize_t size = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = size > 0 ? std::string(self, size_t(size)) : "";
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  return dir + "libfa-fake-cuda.so";
}

inline constexpr const char *kAddOnePtx = R"(
.version 8.0
.target sm_80
.address_size 64

.visible .entry add_one(
  .param .u64 add_one_data,
  .param .u32 add_one_n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;

  ld.param.u64 %rd1, [add_one_data];
  ld.param.u32 %r2, [add_one_n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

// "syntax error" in the comment is what the stand-in driver (FakeCuda.cpp)
// rejects; the real JIT rejects the undefined register.
inline constexpr const char *kBadPtx = R"(
.version 8.0
.target sm_80
.address_size 64

// A syntax error: %undefined_reg is not declared.
.visible .entry add_one(
  .param .u64 add_one_data,
  .param .u32 add_one_n
)
{
  .reg .f32 %f<3>;
  .reg .b64 %rd<2>;

  ld.param.u64 %rd1, [add_one_data];
  ld.global.f32 %f1, [%rd1];
  add.f32 %f2, %f1, %undefined_reg;
  st.global.f32 [%rd1], %f2;
  ret;
}
)";

} // namespace fa::runtime::test

#endif // FA_UNITTESTS_RUNTIME_TESTSUPPORT_H
