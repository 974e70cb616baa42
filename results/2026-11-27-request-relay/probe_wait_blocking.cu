// Does a stream wait that stays pending (cuStreamWaitValue32 on a word in pinned host memory,
// enqueued on one stream) hold back work on other streams? Streams share the device's hardware
// queues (CUDA_DEVICE_MAX_CONNECTIONS), and a queue runs its commands in order. Creates the
// waiting stream, then `count` other streams (half low, half high priority; also the legacy
// default stream), launches one tiny kernel on each, and after 200 ms counts the kernels that
// ran; then releases the wait and counts again. Build: nvcc -O2 -arch=sm_90 -std=c++20
// probe_wait_blocking.cu -lcuda -o probe_wait_blocking
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__global__ void mark(volatile unsigned* flags, int i) { flags[i] = 1; __threadfence_system(); }

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 64;
  const bool before = argc > 2 && argv[2][0] == 'b';  // the other streams created first
  CK(cudaSetDevice(0));
  const char* env = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  unsigned* host = nullptr;  // [0]: the doorbell; [1..]: the kernels' flags
  CK(cudaHostAlloc(reinterpret_cast<void**>(&host), 4 * (count + 2), cudaHostAllocMapped));
  for (int i = 0; i < count + 2; ++i) host[i] = 0;
  unsigned* dev = nullptr;
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0));
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  std::vector<cudaStream_t> others(count);
  cudaStream_t relay;
  auto make_others = [&] {
    for (int i = 0; i < count; ++i)
      CK(cudaStreamCreateWithPriority(&others[i], cudaStreamNonBlocking, i % 2 ? hi : lo));
  };
  if (before) make_others();
  CK(cudaStreamCreateWithPriority(&relay, cudaStreamNonBlocking, hi));
  if (!before) make_others();
  mark<<<1, 1, 0, relay>>>(dev + 1, 0);  // the relay stream works before its wait
  CK(cudaStreamSynchronize(relay));
  if (cuStreamWaitValue32(relay, reinterpret_cast<CUdeviceptr>(dev), 1,
                          CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
    std::printf("wait refused\n");
    return 1;
  }
  for (int i = 0; i < count; ++i) mark<<<1, 1, 0, others[i]>>>(dev + 1, i + 1);
  CK(cudaGetLastError());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int ran = 0;
  std::vector<int> stuck;
  for (int i = 1; i <= count; ++i) {
    if (reinterpret_cast<volatile unsigned*>(host)[1 + i]) ++ran;
    else stuck.push_back(i - 1);
  }
  std::printf("CUDA_DEVICE_MAX_CONNECTIONS=%s, %d other streams created %s the waiting one: %d of %d "
              "kernels ran while the wait was pending",
              env ? env : "(unset)", count, before ? "before" : "after", ran, count);
  if (!stuck.empty()) {
    std::printf("; held back: streams");
    for (int s : stuck) std::printf(" %d", s);
  }
  std::printf("\n");
  reinterpret_cast<volatile unsigned*>(host)[0] = 1;
  CK(cudaDeviceSynchronize());
  int after = 0;
  for (int i = 1; i <= count; ++i) after += reinterpret_cast<volatile unsigned*>(host)[1 + i] != 0;
  std::printf("  after the release: %d of %d\n", after, count);
  return 0;
}
