// CUDA lazy module loading (the default since CUDA 12.2) loads a kernel at its first launch,
// and that load waits for running kernels: the first launch of any kernel while a cooperative
// job spins would wait for the job to end, a hang (docs/cuda-backend.md). coop therefore asks
// for eager loading before CUDA starts, unless the user chose a mode.
#pragma once

namespace coop::cuda {

/// Sets CUDA_MODULE_LOADING=EAGER unless it is set already. Effective only before the process's
/// first CUDA call: coop::Runtime calls it, and so should a program that calls CUDA earlier.
void prefer_eager_module_loading();

}  // namespace coop::cuda
