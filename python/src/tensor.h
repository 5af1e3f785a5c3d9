// The device arrays the bindings accept, read without importing any framework: objects with
// PyTorch's tensor methods (data_ptr, dtype, shape, is_contiguous, is_cuda) read through them
// directly, because its __cuda_array_interface__ and __dlpack__ are Python code costing several
// microseconds per tensor; any other object through DLPack (__dlpack__, __dlpack_device__) or
// __cuda_array_interface__ (CuPy, Numba, JAX). Callers hold the GIL.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

namespace attune::py {

enum class ElementType { kBf16, kFp16, kOther };

// One CUDA array, C-contiguous, as the runtime's entry points take it.
struct DeviceArray {
  void* data = nullptr;
  ElementType type = ElementType::kOther;
  std::string type_name;  // what the producer called its element type, for messages
  int ndim = 0;
  std::int64_t shape[8] = {};
  // The stream the producer's __cuda_array_interface__ names (v3 "stream"); 0 when it names none.
  std::intptr_t stream = 0;
  bool has_stream = false;

  std::int64_t dim(int i) const { return shape[i < 0 ? ndim + i : i]; }
  // The product of every dimension but the last (1 for a vector).
  std::int64_t leading() const;
};

// Reads `obj` as a CUDA array named `what` in messages ("a", "out"). `consumer_stream` is handed
// to a DLPack producer (its __dlpack__(stream=...)), so it orders its pending work before ours.
// Raises TypeError or ValueError (pybind11's error_already_set) when obj is not a contiguous CUDA
// array of at most 8 dimensions.
DeviceArray read_array(PyObject* obj, const char* what, std::intptr_t consumer_stream);

// A stream argument: None -> fallback; an int (a cudaStream_t's value; 1 and 2 are CUDA's legacy
// and per-thread default streams); an object with __cuda_stream__() (the CUDA stream protocol),
// cuda_stream (torch.cuda.Stream) or ptr (cupy.cuda.Stream).
std::intptr_t read_stream(PyObject* obj, std::intptr_t fallback);

}  // namespace attune::py
