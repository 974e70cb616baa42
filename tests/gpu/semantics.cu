// The backend-neutral semantics tests, run on the GPU.
#define COOP_TEST_CUDA 1
#include "../test_semantics.cpp"
