// The backend-neutral for_each tests, run on the GPU.
#define COOP_TEST_CUDA 1
#include "../test_for_each.cpp"
