// The guide's recipes (tests/test_recipes.cpp), run on the GPU.
#define COOP_TEST_CUDA 1
#include "../test_recipes.cpp"
