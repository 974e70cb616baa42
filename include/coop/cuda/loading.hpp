// CUDA lazy module loading (the default since CUDA 12.2) loads a kernel at its first launch,
// and that load waits for running kernels: the first launch of any kernel while a cooperative
// job spins would wait for the job to end, a hang (docs/cuda-backend.md). A program that starts
// jobs of several kernel types, or tasks whose kernels it does not load first, asks for eager
// loading here before CUDA starts (the GPU tests and `coop stress` do).
#pragma once

namespace coop::cuda {

/// Sets CUDA_MODULE_LOADING=EAGER unless it is set already. Effective only before the process's
/// first CUDA call (the Runtime does not call it: eager loading of every module, cuBLAS's
/// included, costs start-up time that a program loading its kernels itself need not pay).
void prefer_eager_module_loading();

}  // namespace coop::cuda
