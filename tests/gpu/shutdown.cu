// Cancellation and shutdown tests, run on the GPU.
#define COOP_TEST_CUDA 1
#include "../test_shutdown.cpp"
