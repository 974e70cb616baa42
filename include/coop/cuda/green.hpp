// Green contexts: static partitions of a device's SMs made by the driver (CUDA 12.4+), for a
// runtime that must stay inside one (RuntimeOptions::green_context) and for the requests beside
// it. The driver's calls are found at run time: a program links only the CUDA runtime, and
// where the driver lacks them green_contexts_available says why.
#pragma once

#include <string>

struct CUgreenCtx_st;  // CUgreenCtx is CUgreenCtx_st*
struct CUstream_st;    // cudaStream_t is CUstream_st*

namespace coop::cuda {

/// Whether the driver offers green contexts; `why` receives the reason when not.
bool green_contexts_available(std::string* why = nullptr);

/// The SMs a green context's kernels may run on. Throws std::runtime_error when the driver
/// cannot say.
int green_context_sms(CUgreenCtx_st* green);

/// A non-blocking stream whose kernels run on `green`'s SMs, at `priority` (a CUDA stream
/// priority). Destroy it with cudaStreamDestroy.
CUstream_st* green_stream(CUgreenCtx_st* green, int priority, const char* what);

/// One device split in two green contexts: at least `part_sms` SMs (the driver rounds up to
/// its granularity, 8 SMs on Hopper) and the rest, disjoint. Throws std::runtime_error when
/// the driver refuses (no green contexts, a part as large as the device).
class GreenSplit {
 public:
  GreenSplit(int device, unsigned part_sms);
  ~GreenSplit();
  GreenSplit(const GreenSplit&) = delete;
  GreenSplit& operator=(const GreenSplit&) = delete;

  CUgreenCtx_st* part() const { return part_; }
  CUgreenCtx_st* rest() const { return rest_; }
  unsigned part_sms() const { return part_sms_; }
  unsigned rest_sms() const { return rest_sms_; }

 private:
  CUgreenCtx_st* part_ = nullptr;
  CUgreenCtx_st* rest_ = nullptr;
  unsigned part_sms_ = 0, rest_sms_ = 0;
};

}  // namespace coop::cuda
