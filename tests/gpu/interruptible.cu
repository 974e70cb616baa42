// The backend-neutral interruptible-kernel tests, run on the GPU.
#define COOP_TEST_CUDA 1
#include "../test_interruptible.cpp"
