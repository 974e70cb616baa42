# CMake before 3.26 knows nvcc's language-standard flags only up to C++17, although nvcc 12+
# takes -std=c++20: teach it the flag and the cuda_std_20 feature that coop::cuda requires.
# Runs in coop's own build and, from coopConfig.cmake, in a user's project that enables CUDA
# (the variables belong to the directory that calls find_package(coop)).
if(CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA" AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()
endif()
