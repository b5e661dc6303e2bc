// Runs elementwise CUDA C kernels on the CPU, so the generated source is tested without a GPU.
//
// The kernel source compiles unchanged with a host C++20 compiler after this header: the CUDA
// qualifiers are defined away, blockIdx/threadIdx/blockDim/gridDim are thread-local variables, and
// cuda_cpu_launch(kernel, grid, block, args...) runs every thread of every block one after another
// in a plain loop. That is exact for kernels whose threads are independent (no __shared__ memory,
// no __syncthreads, no warp intrinsics or atomics): those do not compile here, rather than run
// wrongly. The device math functions are the host's <cmath> ones.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, sizeof f); return f; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, sizeof d); return d; }
inline float __expf(float x) { return expf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }

// kernel<<<grid, block>>>(args...), one thread after another
template <class... P, class... A>
void cuda_cpu_launch(void (*kernel)(P...), dim3 grid, dim3 block, A... args) {
    gridDim = grid;
    blockDim = block;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = {bx, by, bz};
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            threadIdx = {tx, ty, tz};
                            kernel(args...);
                        }
            }
}
