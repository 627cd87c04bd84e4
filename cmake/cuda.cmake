# CUDA compute (DESIGN.md sections 3 and 10), included at the end of the top-level
# CMakeLists.txt once the `wb` object library and the test targets exist.
#
#   WORKBENCH_CUDA=AUTO  (default) build the CUDA targets when a CUDA compiler (nvcc) is found
#   WORKBENCH_CUDA=ON    require them: configuring fails when nvcc is missing
#   WORKBENCH_CUDA=OFF   skip them
#   CMAKE_CUDA_ARCHITECTURES  default "80;90" (A100, H100/H200); e.g. -DCMAKE_CUDA_ARCHITECTURES=native
#
# Targets (only when enabled):
#   wb_cuda     OBJECT library of cuda/*.cu (kernels, nvcc) and cuda/*.cpp (host code: error
#               checks, device selection, the DeviceNet driver, the "cuda" compute device).
#               Linked into `workbench` (which then accepts "device": "cuda"), cuda_tests and
#               bench_gpu; its users also link `wb`.
#   cuda_tests  doctest GPU tests (tests/cuda); CTest test `cuda`, label `cuda`. Without a GPU
#               the binary exits 77 and CTest reports the test as skipped, not passed.
#   bench_gpu   bench/bench_gpu.cu on the benchmark driver (bench/driver.cpp, with
#               WORKBENCH_BENCH); exits 77 without a GPU. CTest test `bench_gpu_smoke`
#               (labels bench, cuda) runs it with --smoke; skipped without a GPU.
#
# Sanitizer and fuzzing builds leave CUDA out (AUTO) or refuse it (ON): nvcc's host pass and
# the CUDA runtime are not instrumented.
set(WORKBENCH_CUDA AUTO CACHE STRING "Build the CUDA kernels and GPU tests: AUTO, ON or OFF")
set_property(CACHE WORKBENCH_CUDA PROPERTY STRINGS AUTO ON OFF)

string(TOUPPER "${WORKBENCH_CUDA}" _wb_cuda_mode)
if(NOT _wb_cuda_mode STREQUAL "AUTO")
  if(WORKBENCH_CUDA)  # ON, TRUE, YES, 1, ...
    set(_wb_cuda_mode ON)
  else()
    set(_wb_cuda_mode OFF)
  endif()
endif()

set(WB_CUDA_ENABLED OFF)
if(NOT _wb_cuda_mode STREQUAL "OFF")
  if(WORKBENCH_FUZZ OR NOT WORKBENCH_SANITIZE STREQUAL "")
    if(_wb_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "WORKBENCH_CUDA=ON cannot be combined with WORKBENCH_SANITIZE or "
                          "WORKBENCH_FUZZ: configure the sanitizer build with WORKBENCH_CUDA=OFF")
    endif()
    message(STATUS "CUDA: off in sanitizer/fuzzing builds (WORKBENCH_CUDA=AUTO)")
  else()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      set(WB_CUDA_ENABLED ON)
    elseif(_wb_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "WORKBENCH_CUDA=ON but no CUDA compiler was found: put nvcc on PATH "
                          "(e.g. /usr/local/cuda/bin) or pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc, "
                          "or configure with -DWORKBENCH_CUDA=OFF")
    else()
      message(STATUS "CUDA: no CUDA compiler found, CUDA targets skipped (WORKBENCH_CUDA=AUTO)")
    endif()
  endif()
endif()

if(NOT WB_CUDA_ENABLED)
  return()
endif()

# Before enable_language: otherwise CMake caches the compiler's default architecture.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures (default: sm_80 and sm_90)")
endif()
# nvcc's host pass uses the project's C++ compiler (same ABI and standard library).
# (check_language leaves an empty normal variable behind, hence both sets.)
if(NOT CMAKE_CUDA_HOST_COMPILER AND NOT DEFINED ENV{CUDAHOSTCXX}
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}" CACHE FILEPATH "nvcc host compiler" FORCE)
  set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
if(WB_CCACHE AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${WB_CCACHE_LAUNCHER})
endif()
message(STATUS "CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
# C++20 in .cu files too (the shared headers use std::span). CMake < 3.26 does not know nvcc's
# C++20 flag (CUDA_STANDARD 20 is then a configure error; the C++20 project even asks for it
# implicitly); nvcc >= 12 has it, so teach CMake the flag.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()

# The top-level add_compile_options (-Wall -Wextra -O3 ...) are host-compiler flags that nvcc
# rejects ("Unknown option '-Wall'"): for CUDA sources they are handed to the host pass with
# -Xcompiler; C++ sources keep them as they are.
function(wb_cuda_target_options tgt)
  get_target_property(_opts ${tgt} COMPILE_OPTIONS)
  set(_fixed "")
  if(_opts)
    foreach(o IN LISTS _opts)
      if(o MATCHES "^\\$<")  # already a language-guarded generator expression (-march=native)
        list(APPEND _fixed "${o}")
      else()
        list(APPEND _fixed "$<$<COMPILE_LANGUAGE:CXX>:${o}>" "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${o}>")
      endif()
    endforeach()
  endif()
  set_property(TARGET ${tgt} PROPERTY COMPILE_OPTIONS "${_fixed}")
  set_target_properties(${tgt} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON
                                          CUDA_EXTENSIONS OFF)
endfunction()

file(GLOB WB_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cuda/*.cu
     ${CMAKE_SOURCE_DIR}/cuda/*.cpp)
add_library(wb_cuda OBJECT ${WB_CUDA_SOURCES})
# `wb` for its include directories and usage requirements (MPI, the project root); the
# executables link `wb` themselves, which brings its objects.
target_link_libraries(wb_cuda PUBLIC wb CUDA::cudart_static)
wb_cuda_target_options(wb_cuda)

# The workbench gets the "cuda" compute device (cuda/backend_cuda.cpp registers it). The
# target was made before CUDA was enabled, so it did not inherit the architectures (a fresh
# configure fails with "CUDA_ARCHITECTURES is empty for target workbench").
target_link_libraries(workbench PRIVATE wb_cuda)
set_target_properties(workbench PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")

if(WORKBENCH_TESTS)
  file(GLOB WB_CUDA_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cuda/*.cpp
       ${CMAKE_SOURCE_DIR}/tests/cuda/*.cu)
  add_executable(cuda_tests ${WB_CUDA_TESTS})
  target_link_libraries(cuda_tests PRIVATE wb_cuda wb doctest::doctest)
  wb_cuda_target_options(cuda_tests)
  add_test(NAME cuda COMMAND cuda_tests)
  set_tests_properties(cuda PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
endif()

if(WORKBENCH_BENCH)
  add_executable(bench_gpu ${CMAKE_SOURCE_DIR}/bench/bench_gpu.cu)
  target_link_libraries(bench_gpu PRIVATE wb_cuda wb wb_bench_driver)
  wb_cuda_target_options(bench_gpu)
  if(WORKBENCH_TESTS)  # as the CPU benches' smoke tests; skipped (77) without a GPU
    add_test(NAME bench_gpu_smoke COMMAND bash ${CMAKE_SOURCE_DIR}/bench/smoke_test.sh
                                          $<TARGET_FILE:bench_gpu> --smoke)
    set_tests_properties(bench_gpu_smoke PROPERTIES LABELS "bench;cuda" SKIP_RETURN_CODE 77)
  endif()
endif()
