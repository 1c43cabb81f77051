# Settings shared by the top-level build and the standalone build of kernels/ (the GPU machine
# builds kernels/ alone: it lacks the tracker's libraries).
option(ABTRACK_ENABLE_TESTS "Build the test suite" ON)
# CUDA is on automatically when nvcc is found (CI has nvcc but no GPU; the kernels still compile).
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_abtrack_cuda_default ON)
else()
  set(_abtrack_cuda_default OFF)
endif()
option(ABTRACK_ENABLE_CUDA "Build the CUDA variants of kernels/" ${_abtrack_cuda_default})

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo)
endif()
