// Turning a CUDA error code into an exception: for coop's CUDA backend and for programs that
// use it. Includes no CUDA header: a cudaError_t converts to int.
//
//   COOP_CUDA_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
//   coop::cuda::check(cudaStreamSynchronize(s), "running the task");
#pragma once

namespace coop::cuda {

/// Throws std::runtime_error naming `what` and the CUDA error if `rc` (a cudaError_t) is not
/// cudaSuccess.
void check(int rc, const char* what);

/// COOP_CUDA_CHECK's work: throws std::runtime_error naming the call, the file and line, and the
/// CUDA error if `rc` is not cudaSuccess.
void check_call(int rc, const char* call, const char* file, int line);

}  // namespace coop::cuda

/// Evaluates `call` (a CUDA runtime call returning cudaError_t) once and throws
/// std::runtime_error naming the call, where it is and the CUDA error when it fails. Needs the
/// CUDA backend (coop::cuda).
#define COOP_CUDA_CHECK(call) ::coop::cuda::check_call(int(call), #call, __FILE__, __LINE__)
