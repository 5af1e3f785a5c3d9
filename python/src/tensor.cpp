// Reading device arrays: the PyTorch methods, DLPack and __cuda_array_interface__ (tensor.h).
#include "tensor.h"

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

namespace attune::py {

namespace pyb = pybind11;

namespace {

// DLPack's ABI (dlpack.h, v0.6 to v1.x, unversioned capsule "dltensor"), the parts read here.
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr std::int32_t kDLCUDA = 2, kDLCUDAManaged = 13;
constexpr std::uint8_t kDLFloat = 2, kDLBfloat = 4;

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw pyb::error_already_set();
}

// A new reference, or an error_already_set carrying Python's exception.
PyObject* checked(PyObject* o) {
  if (!o) throw pyb::error_already_set();
  return o;
}

struct Ref {  // owns one reference
  PyObject* p;
  explicit Ref(PyObject* o) : p(checked(o)) {}
  ~Ref() { Py_DECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
};

PyObject* interned(const char* s) {
  PyObject* o = PyUnicode_InternFromString(s);
  if (!o) throw pyb::error_already_set();
  return o;  // kept for the life of the process
}

struct Names {
  PyObject* data_ptr = interned("data_ptr");
  PyObject* dtype = interned("dtype");
  PyObject* shape = interned("shape");
  PyObject* is_contiguous = interned("is_contiguous");
  PyObject* is_cuda = interned("is_cuda");
  PyObject* cai = interned("__cuda_array_interface__");
  PyObject* dlpack = interned("__dlpack__");
  PyObject* dlpack_device = interned("__dlpack_device__");
  PyObject* cuda_stream_protocol = interned("__cuda_stream__");
  PyObject* cuda_stream = interned("cuda_stream");
  PyObject* ptr = interned("ptr");
  // __cuda_array_interface__'s keys
  PyObject* key_shape = interned("shape");
  PyObject* key_typestr = interned("typestr");
  PyObject* key_data = interned("data");
  PyObject* key_strides = interned("strides");
  PyObject* key_stream = interned("stream");
};
const Names& names() {
  static const Names n;
  return n;
}

// Types with PyTorch's tensor methods, decided once per type (a strong reference keeps the
// type's address from being reused).
bool torch_like(PyTypeObject* type) {
  static std::vector<std::pair<PyTypeObject*, bool>> seen;
  for (const auto& [t, like] : seen)
    if (t == type) return like;
  const Names& n = names();
  PyObject* t = reinterpret_cast<PyObject*>(type);
  const bool like = PyObject_HasAttr(t, n.data_ptr) && PyObject_HasAttr(t, n.is_cuda) &&
                    PyObject_HasAttr(t, n.is_contiguous) && PyObject_HasAttr(t, n.dtype);
  Py_INCREF(t);
  seen.emplace_back(type, like);
  return like;
}

// torch.bfloat16 -> kBf16, decided once per dtype object (kept alive).
std::pair<ElementType, const std::string*> torch_dtype(PyObject* dtype) {
  struct Seen {
    PyObject* dtype;
    ElementType type;
    std::string name;
  };
  static std::vector<Seen> seen;
  for (const auto& s : seen)
    if (s.dtype == dtype) return {s.type, &s.name};
  Ref text(PyObject_Str(dtype));
  const char* c = PyUnicode_AsUTF8(text.p);
  if (!c) throw pyb::error_already_set();
  std::string name = c;
  const ElementType type = name == "torch.bfloat16"  ? ElementType::kBf16
                           : name == "torch.float16" ? ElementType::kFp16
                                                     : ElementType::kOther;
  Py_INCREF(dtype);
  seen.push_back({dtype, type, std::move(name)});
  return {seen.back().type, &seen.back().name};
}

void set_shape(DeviceArray& a, const char* what, Py_ssize_t ndim) {
  if (ndim < 1 || ndim > 8)
    raise(PyExc_ValueError,
          std::string(what) + ": expected 1 to 8 dimensions, got " + std::to_string(ndim));
  a.ndim = static_cast<int>(ndim);
}

std::int64_t as_int64(PyObject* o) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw pyb::error_already_set();
  return v;
}

DeviceArray read_torch(PyObject* obj, const char* what) {
  const Names& n = names();
  DeviceArray a;
  {
    Ref cuda(PyObject_GetAttr(obj, n.is_cuda));
    if (cuda.p != Py_True)
      raise(PyExc_ValueError, std::string(what) +
                                  ": a CUDA tensor is needed, this one is not on a "
                                  "CUDA device");
  }
  {
    Ref dtype(PyObject_GetAttr(obj, n.dtype));
    auto [type, name] = torch_dtype(dtype.p);
    a.type = type;
    a.type_name = *name;
  }
  {
    Ref shape(PyObject_GetAttr(obj, n.shape));
    if (!PyTuple_Check(shape.p)) raise(PyExc_TypeError, std::string(what) + ": shape is no tuple");
    set_shape(a, what, PyTuple_GET_SIZE(shape.p));
    for (int i = 0; i < a.ndim; ++i) a.shape[i] = as_int64(PyTuple_GET_ITEM(shape.p, i));
  }
  {
    Ref contiguous(PyObject_CallMethodNoArgs(obj, n.is_contiguous));
    if (contiguous.p != Py_True)
      raise(PyExc_ValueError,
            std::string(what) + ": the tensor must be contiguous (row-major); call .contiguous()");
  }
  Ref ptr(PyObject_CallMethodNoArgs(obj, n.data_ptr));
  a.data = PyLong_AsVoidPtr(ptr.p);
  if (!a.data && PyErr_Occurred()) throw pyb::error_already_set();
  return a;
}

// C-contiguous: each stride (in elements) is the product of the later dimensions; dimensions of
// size 1 may have any stride.
bool compact(const DeviceArray& a, const std::int64_t* strides, std::int64_t unit) {
  std::int64_t expect = unit;
  for (int i = a.ndim - 1; i >= 0; --i) {
    if (a.shape[i] != 1 && strides[i] != expect) return false;
    expect *= a.shape[i];
  }
  return true;
}

DeviceArray read_dlpack(PyObject* obj, const char* what, std::intptr_t consumer_stream) {
  const Names& n = names();
  {
    Ref dev(PyObject_CallMethodNoArgs(obj, n.dlpack_device));
    const std::int64_t type = PyTuple_Check(dev.p) && PyTuple_GET_SIZE(dev.p) == 2
                                  ? as_int64(PyTuple_GET_ITEM(dev.p, 0))
                                  : -1;
    if (type != kDLCUDA && type != kDLCUDAManaged)
      raise(PyExc_ValueError, std::string(what) +
                                  ": a CUDA array is needed; __dlpack_device__ "
                                  "names device type " +
                                  std::to_string(type) + " (CUDA is 2)");
  }
  // stream: the consumer's stream, on which the producer orders its pending writes (DLPack: 1
  // is the legacy default stream, which a null handle means here).
  Ref kwargs(PyDict_New());
  Ref stream(PyLong_FromSsize_t(consumer_stream == 0 ? 1 : consumer_stream));
  if (PyDict_SetItemString(kwargs.p, "stream", stream.p) != 0) throw pyb::error_already_set();
  Ref method(PyObject_GetAttr(obj, n.dlpack));
  Ref empty(PyTuple_New(0));
  Ref capsule(PyObject_Call(method.p, empty.p, kwargs.p));
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.p, "dltensor"));
  if (!managed) throw pyb::error_already_set();
  // The capsule keeps its name: dropping it calls the producer's deleter (the DLPack rule for an
  // unconsumed capsule); the caller's own reference keeps the memory alive through the call.
  const DLTensor& t = managed->dl_tensor;
  DeviceArray a;
  set_shape(a, what, t.ndim);
  for (int i = 0; i < a.ndim; ++i) a.shape[i] = t.shape[i];
  if (t.dtype.lanes == 1 && t.dtype.bits == 16 && t.dtype.code == kDLBfloat)
    a.type = ElementType::kBf16;
  else if (t.dtype.lanes == 1 && t.dtype.bits == 16 && t.dtype.code == kDLFloat)
    a.type = ElementType::kFp16;
  a.type_name =
      "DLPack code " + std::to_string(t.dtype.code) + " bits " + std::to_string(t.dtype.bits);
  if (t.strides && !compact(a, t.strides, 1))
    raise(PyExc_ValueError, std::string(what) + ": the array must be C-contiguous");
  a.data = static_cast<char*>(t.data) + t.byte_offset;
  return a;
}

DeviceArray read_interface(PyObject* cai, const char* what) {
  if (!PyDict_Check(cai))
    raise(PyExc_TypeError, std::string(what) + ": __cuda_array_interface__ is not a dict");
  // Borrowed; the keys are interned strings, whose hash is cached (PyDict_GetItemString made a
  // new string per key per call).
  auto item = [cai](PyObject* key) {
    PyObject* v = PyDict_GetItemWithError(cai, key);
    if (!v && PyErr_Occurred()) throw pyb::error_already_set();
    return v;
  };
  const Names& n = names();
  DeviceArray a;
  PyObject* shape = item(n.key_shape);
  PyObject* typestr = item(n.key_typestr);
  PyObject* data = item(n.key_data);
  if (!shape || !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr) || !data ||
      !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1)
    raise(PyExc_TypeError,
          std::string(what) + ": __cuda_array_interface__ lacks shape, typestr or data");
  set_shape(a, what, PyTuple_GET_SIZE(shape));
  for (int i = 0; i < a.ndim; ++i) a.shape[i] = as_int64(PyTuple_GET_ITEM(shape, i));
  const char* type_name = PyUnicode_AsUTF8(typestr);
  if (!type_name) throw pyb::error_already_set();
  a.type_name = type_name;
  // The interface has no bfloat16 type string; such arrays come through DLPack.
  if (a.type_name == "<f2") a.type = ElementType::kFp16;
  PyObject* strides = item(n.key_strides);
  if (strides && strides != Py_None) {
    if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != a.ndim)
      raise(PyExc_TypeError, std::string(what) + ": __cuda_array_interface__ strides malformed");
    std::int64_t s[8];
    for (int i = 0; i < a.ndim; ++i) s[i] = as_int64(PyTuple_GET_ITEM(strides, i));
    if (!compact(a, s, 2))
      raise(PyExc_ValueError, std::string(what) + ": the array must be C-contiguous");
  }
  a.data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  if (!a.data && PyErr_Occurred()) throw pyb::error_already_set();
  PyObject* stream = item(n.key_stream);
  if (stream && stream != Py_None) {
    a.stream = static_cast<std::intptr_t>(as_int64(stream));
    a.has_stream = true;
  }
  return a;
}

}  // namespace

std::int64_t DeviceArray::leading() const {
  std::int64_t p = 1;
  for (int i = 0; i + 1 < ndim; ++i) p *= shape[i];
  return p;
}

DeviceArray read_array(PyObject* obj, const char* what, std::intptr_t consumer_stream) {
  if (torch_like(Py_TYPE(obj))) return read_torch(obj, what);
  const Names& n = names();
  if (PyObject_HasAttr(obj, n.dlpack) && PyObject_HasAttr(obj, n.dlpack_device))
    return read_dlpack(obj, what, consumer_stream);
  if (PyObject* cai = PyObject_GetAttr(obj, n.cai)) {
    Ref owned(cai);
    return read_interface(cai, what);
  }
  PyErr_Clear();
  raise(PyExc_TypeError, std::string(what) +
                             ": expected a CUDA array (a PyTorch or CuPy "
                             "tensor, or any object with __dlpack__ or "
                             "__cuda_array_interface__), got " +
                             Py_TYPE(obj)->tp_name);
}

std::intptr_t read_stream(PyObject* obj, std::intptr_t fallback) {
  if (!obj || obj == Py_None) return fallback;
  if (PyLong_Check(obj)) return static_cast<std::intptr_t>(as_int64(obj));
  const Names& n = names();
  if (PyObject_HasAttr(obj, n.cuda_stream_protocol)) {
    Ref t(PyObject_CallMethodNoArgs(obj, n.cuda_stream_protocol));
    if (PyTuple_Check(t.p) && PyTuple_GET_SIZE(t.p) == 2)
      return static_cast<std::intptr_t>(as_int64(PyTuple_GET_ITEM(t.p, 1)));
    raise(PyExc_TypeError, "stream: __cuda_stream__() must return (version, handle)");
  }
  for (PyObject* name : {n.cuda_stream, n.ptr}) {
    if (PyObject_HasAttr(obj, name)) {
      Ref v(PyObject_GetAttr(obj, name));
      if (PyLong_Check(v.p)) return static_cast<std::intptr_t>(as_int64(v.p));
    }
  }
  raise(PyExc_TypeError, std::string("stream: expected None, an int (a cudaStream_t) or a stream "
                                     "object (torch.cuda.Stream, cupy.cuda.Stream), got ") +
                             Py_TYPE(obj)->tp_name);
}

}  // namespace attune::py
