// The second translation unit of test_launch_odr, compiled by nvcc.
#include "launch_odr/second_tu.cpp"
