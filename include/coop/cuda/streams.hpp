// The CUDA streams the runtime keeps (its service streams and the jobs' launch streams),
// created and destroyed through here so that a leak shows in a count (coop stress checks it).
#pragma once

struct CUstream_st;
struct CUgreenCtx_st;

namespace coop::cuda {

/// A non-blocking stream at the device's highest priority (`high`) or its lowest, on the SMs of
/// `green` when given (coop/cuda/green.hpp); throws std::runtime_error naming `what` when CUDA
/// refuses.
CUstream_st* create_stream(bool high, const char* what, CUgreenCtx_st* green = nullptr);
void destroy_stream(CUstream_st* s);
/// Streams created by create_stream and not yet destroyed, in this process.
int live_streams();

}  // namespace coop::cuda
