// Probe: when one block of a full-occupancy persistent grid returns, which kernels can use the
// slot it frees while the rest of the grid keeps running? A task or a forked workgroup that
// cannot become resident there waits for the whole grid: a hang under a cooperative job.
//
// For each persistent configuration (threads per block, dynamic shared memory, carveout) the
// probe fills the GPU with `spin` blocks, lets the highest one return, launches one candidate
// block on another stream and waits up to 300 ms for it. Candidates: the same kernel, a copy of
// it (another function with the same resources, like the runtime's joining-workgroup kernel),
// and small kernels with and without matching shared memory and carveout.
//
// usage: coop_probe_residency [--json FILE]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.hpp"
#include "micro_common.hpp"

namespace {

struct Control {
  int started;
  int exited;
  int stop;
  int exit_id;
};

__device__ int load_volatile(const int* p) { return *static_cast<const volatile int*>(p); }

// The dynamic shared memory is only reserved (it shapes residency); `smem` is a static byte.
template <int Copy>
__global__ void spin(Control* c) {
  __shared__ unsigned char smem[1];
  if (threadIdx.x == 0) {
    atomicAdd(&c->started, 1);
    smem[0] = 1;
  }
  for (;;) {
    const int stop = load_volatile(&c->stop);
    const int exit_id = load_volatile(&c->exit_id);
    if (stop || exit_id == int(blockIdx.x)) break;
    __nanosleep(500);
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&c->exited, smem[0]);
}

__global__ void tiny(int* ran) {
  __shared__ unsigned char smem[1];
  if (threadIdx.x == 0) {
    smem[0] = 1;
    atomicAdd(ran, int(smem[0]));
  }
}

struct Config {
  int threads;
  int shared;    // dynamic shared bytes per block of the persistent grid
  int carveout;  // -1: the driver's default; else percent of the unified L1/shared to shared
  int per_sm;    // blocks per SM in the grid; 0: as many as fit
};

enum class Candidate {
  same_kernel,
  copy_of_kernel,
  tiny_32,
  tiny_matching,
  tiny_matching_carveout
};
const char* name(Candidate c) {
  switch (c) {
    case Candidate::same_kernel:
      return "the same kernel, 1 block";
    case Candidate::copy_of_kernel:
      return "a copy of the kernel, 1 block";
    case Candidate::tiny_32:
      return "small kernel, 32 threads, no shared";
    case Candidate::tiny_matching:
      return "small kernel, same threads and shared";
    case Candidate::tiny_matching_carveout:
      return "small kernel, same threads/shared/carveout";
  }
  return "?";
}

template <class T>
T read(const T* dev, cudaStream_t s) {
  T v{};
  CK(cudaMemcpyAsync(&v, dev, sizeof(T), cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  return v;
}
void write(int* dev, int v, cudaStream_t s) {
  CK(cudaMemcpyAsync(dev, &v, sizeof v, cudaMemcpyHostToDevice, s));
  CK(cudaStreamSynchronize(s));
}

// Polls until pred() or the limit; returns the milliseconds it took, or -1.
template <class P>
double wait_for(P pred, double limit_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (pred()) return ms;
    if (ms > limit_ms) return -1;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void set_carveout(const void* fn, int carveout) {
  if (carveout >= 0)
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
}

struct Outcome {
  int n = 0;
  double ran_ms = -1;  // while the grid ran; -1: not within the limit
  bool ran_after = false;
};

Outcome probe(const Config& cfg, Candidate cand, int sms) {
  Outcome out;
  cudaStream_t grid_stream, cand_stream, ctl;
  CK(cudaStreamCreateWithFlags(&grid_stream, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cand_stream, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ctl, cudaStreamNonBlocking));
  Control *c, *c2;
  int* ran;
  CK(cudaMalloc(&c, sizeof(Control)));
  CK(cudaMalloc(&c2, sizeof(Control)));
  CK(cudaMalloc(&ran, sizeof(int)));
  CK(cudaMemset(c, 0, sizeof(Control)));
  CK(cudaMemset(c2, 0, sizeof(Control)));
  CK(cudaMemset(ran, 0, sizeof(int)));
  const int none = -1;
  CK(cudaMemcpy(&c->exit_id, &none, sizeof none, cudaMemcpyHostToDevice));
  const int zero_id = 0;  // the candidate copy exits at once
  CK(cudaMemcpy(&c2->exit_id, &zero_id, sizeof zero_id, cudaMemcpyHostToDevice));

  set_carveout(reinterpret_cast<const void*>(spin<0>), cfg.carveout);
  set_carveout(reinterpret_cast<const void*>(spin<1>), cfg.carveout);
  set_carveout(reinterpret_cast<const void*>(tiny),
               cand == Candidate::tiny_matching_carveout ? cfg.carveout : -1);
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spin<0>, cfg.threads, cfg.shared));
  if (cfg.per_sm > per_sm)
    throw std::runtime_error(std::to_string(cfg.per_sm) + " blocks per SM do not fit (" +
                             std::to_string(per_sm) + " do)");
  out.n = (cfg.per_sm ? cfg.per_sm : per_sm) * sms;
  void* args[] = {&c};
  CK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(spin<0>), dim3(out.n),
                                 dim3(cfg.threads), args, std::size_t(cfg.shared), grid_stream));
  if (wait_for([&] { return read(&c->started, ctl) == out.n; }, 2000) < 0)
    throw std::runtime_error("the persistent grid did not start");
  write(&c->exit_id, out.n - 1, ctl);
  if (wait_for([&] { return read(&c->exited, ctl) == 1; }, 2000) < 0)
    throw std::runtime_error("the top block did not return");
  switch (cand) {
    case Candidate::same_kernel:
      spin<0><<<1, cfg.threads, cfg.shared, cand_stream>>>(c2);
      break;
    case Candidate::copy_of_kernel:
      spin<1><<<1, cfg.threads, cfg.shared, cand_stream>>>(c2);
      break;
    case Candidate::tiny_32:
      tiny<<<1, 32, 0, cand_stream>>>(ran);
      break;
    case Candidate::tiny_matching:
    case Candidate::tiny_matching_carveout:
      tiny<<<1, cfg.threads, cfg.shared, cand_stream>>>(ran);
      break;
  }
  CK(cudaGetLastError());
  out.ran_ms = wait_for([&] { return cudaStreamQuery(cand_stream) == cudaSuccess; }, 300);
  write(&c->stop, 1, ctl);
  CK(cudaStreamSynchronize(grid_stream));
  CK(cudaStreamSynchronize(cand_stream));
  out.ran_after = cand == Candidate::same_kernel || cand == Candidate::copy_of_kernel
                      ? read(&c2->exited, ctl) == 1
                      : read(ran, ctl) == 1;
  CK(cudaFree(c));
  CK(cudaFree(c2));
  CK(cudaFree(ran));
  CK(cudaStreamDestroy(grid_stream));
  CK(cudaStreamDestroy(cand_stream));
  CK(cudaStreamDestroy(ctl));
  return out;
}

int run(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  // Every kernel loaded before the persistent grid spins (lazy loading would wait for it).
  cudaFuncAttributes attr;
  CK(cudaFuncGetAttributes(&attr, spin<0>));
  CK(cudaFuncGetAttributes(&attr, spin<1>));
  CK(cudaFuncGetAttributes(&attr, tiny));
  std::printf("%s, %d SMs; one block of a full persistent grid returns, then one block of:\n",
              prop.name, prop.multiProcessorCount);
  const Config configs[] = {
      {64, 0, -1, 0},   {64, 0, 100, 0},     {64, 2048, -1, 0}, {64, 0, -1, 31},  {64, 0, -1, 30},
      {64, 0, -1, 16},  {32, 0, -1, 0},      {32, 0, -1, 31},   {128, 0, -1, 0},  {256, 0, -1, 0},
      {256, 0, 100, 0}, {128, 16384, -1, 0}, {1024, 0, -1, 0},  {64, 4096, 50, 0}};
  std::printf("max resident blocks per SM: %d, threads per SM: %d\n",
              prop.maxBlocksPerMultiProcessor, prop.maxThreadsPerMultiProcessor);
  const Candidate cands[] = {Candidate::same_kernel, Candidate::copy_of_kernel, Candidate::tiny_32,
                             Candidate::tiny_matching, Candidate::tiny_matching_carveout};
  std::FILE* js = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
  if (js) std::fprintf(js, "{\"device\": \"%s\", \"rows\": [\n", prop.name);
  bool first = true;
  for (const Config& cfg : configs) {
    for (Candidate cand : cands) {
      const Outcome o = probe(cfg, cand, prop.multiProcessorCount);
      std::printf("  grid %4d threads, %5d B shared, carveout %4d, %2d/SM, N %5d | %-42s %s\n",
                  cfg.threads, cfg.shared, cfg.carveout, o.n / prop.multiProcessorCount, o.n,
                  name(cand),
                  o.ran_ms >= 0 ? ("ran after " + std::to_string(o.ran_ms) + " ms").c_str()
                                : (o.ran_after ? "WAITED for the grid" : "never ran"));
      std::fflush(stdout);
      if (js)
        std::fprintf(js,
                     "%s {\"threads\": %d, \"shared\": %d, \"carveout\": %d, \"per_sm\": %d, "
                     "\"n\": %d, \"candidate\": \"%s\", \"ran_ms\": %.3f, \"ran_after\": %s}",
                     first ? "" : ",\n", cfg.threads, cfg.shared, cfg.carveout,
                     o.n / prop.multiProcessorCount, o.n, name(cand), o.ran_ms,
                     o.ran_after ? "true" : "false");
      first = false;
    }
  }
  if (js) {
    std::fprintf(js, "\n]}\n");
    std::fclose(js);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return coop::micro::run_main([&] { return run(argc, argv); });
}
