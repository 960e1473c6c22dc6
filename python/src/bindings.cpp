//===- bindings.cpp - fa._C: FA's C++ API for Python ----------------------===//
//
// A thin pybind11 layer over include/fa/fa.h. Tensors come in two forms:
//   - numpy arrays (ml_dtypes.bfloat16 ones included) and other objects with
//     the array interface (__array_interface__), or with the buffer protocol;
//     strides in bytes are converted to elements. The array interface is read
//     at the Python level, so any numpy (1.x or 2.x) works with any pybind11;
//   - a raw tuple (data_ptr, dtype, shape, strides, device[, device_index]),
//     strides in elements, device "cpu", "cuda" (cuda:0), "cuda:N" or an
//     fa._C.Device (with device_index, default 0), so that the Python layer
//     can pass torch tensors without this module depending on torch.
// fa::Error becomes fa.FAError (a RuntimeError); malformed arguments raise
// TypeError / ValueError.
//
//===----------------------------------------------------------------------===//

#include "fa/fa.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

/// Parses a dtype given as fa._C.DType or as a name ("f16", "float16", ...).
fa::DType parseDType(const py::handle &obj, const std::string &what) {
  if (py::isinstance<fa::DType>(obj))
    return obj.cast<fa::DType>();
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (name == "f16" || name == "float16")
      return fa::DType::F16;
    if (name == "bf16" || name == "bfloat16")
      return fa::DType::BF16;
    if (name == "f32" || name == "float32")
      return fa::DType::F32;
    // Captures may also be f64 or integers.
    if (name == "f64" || name == "float64")
      return fa::DType::F64;
    if (name == "i8" || name == "int8")
      return fa::DType::I8;
    if (name == "i16" || name == "int16")
      return fa::DType::I16;
    if (name == "i32" || name == "int32")
      return fa::DType::I32;
    if (name == "i64" || name == "int64")
      return fa::DType::I64;
    throw py::value_error(what + ": unsupported dtype '" + name +
                          "' (expected f16, bf16 or f32)");
  }
  throw py::type_error(what + ": dtype must be an fa._C.DType or a string");
}

/// The index N of "cuda:N" ("cuda": 0), or -1 when `name` is not one.
int cudaIndex(const std::string &name) {
  if (name == "cuda")
    return 0;
  if (name.rfind("cuda:", 0) != 0 || name.size() == 5 || name.size() > 14 ||
      name.find_first_not_of("0123456789", 5) != std::string::npos)
    return -1;
  return std::stoi(name.substr(5));
}

/// Sets the device of `view` from "cpu", "cuda", "cuda:N" or an
/// fa._C.Device.
void parseDevice(const py::handle &obj, const std::string &what,
                 fa::TensorView &view) {
  if (py::isinstance<fa::Device>(obj)) {
    view.device = obj.cast<fa::Device>();
    return;
  }
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (name == "cpu") {
      view.device = fa::Device::CPU;
      return;
    }
    int index = cudaIndex(name);
    if (index < 0)
      throw py::value_error(what + ": unsupported device '" + name + "'");
    view.device = fa::Device::CUDA;
    view.deviceIndex = index;
    return;
  }
  throw py::type_error(what + ": device must be an fa._C.Device or a string");
}

/// The fa dtype of an array-interface type string ("<f4", "<f2"), or of a
/// dtype named "bfloat16" (ml_dtypes' bfloat16 has the type string "<V2").
std::optional<fa::DType> dtypeOf(const std::string &typestr,
                                 const py::handle &array) {
  if (typestr == "<f4" || typestr == "=f4")
    return fa::DType::F32;
  if (typestr == "<f2" || typestr == "=f2")
    return fa::DType::F16;
  if (typestr.size() >= 2 && typestr.substr(1) == "V2" &&
      py::hasattr(array, "dtype") &&
      py::str(array.attr("dtype")).cast<std::string>() == "bfloat16")
    return fa::DType::BF16;
  return std::nullopt;
}

/// How an array names its dtype in messages.
std::string dtypeName(const py::handle &array, const std::string &typestr) {
  if (py::hasattr(array, "dtype"))
    return py::str(array.attr("dtype")).cast<std::string>();
  return typestr;
}

/// Element strides from byte strides; throws when they do not divide.
std::vector<int64_t> elementStrides(const std::vector<py::ssize_t> &bytes,
                                    py::ssize_t itemsize,
                                    const std::string &name) {
  std::vector<int64_t> strides;
  for (py::ssize_t s : bytes) {
    if (s % itemsize != 0)
      throw py::value_error(name + " has a stride of " + std::to_string(s) +
                            " bytes, not a multiple of its element size (" +
                            std::to_string(itemsize) + ")");
    strides.push_back(static_cast<int64_t>(s / itemsize));
  }
  return strides;
}

/// A raw (data_ptr, dtype, shape, strides, device[, device_index]) tuple.
fa::TensorView viewFromTuple(const py::tuple &t, const std::string &name) {
  if (t.size() != 5 && t.size() != 6)
    throw py::value_error(name +
                          ": a raw tensor is a tuple (data_ptr, dtype, "
                          "shape, strides, device[, device_index]), got " +
                          std::to_string(t.size()) + " items");
  fa::TensorView view;
  view.data = reinterpret_cast<void *>(t[0].cast<uintptr_t>());
  view.dtype = parseDType(t[1], name);
  view.shape = t[2].cast<std::vector<int64_t>>();
  if (!t[3].is_none())
    view.strides = t[3].cast<std::vector<int64_t>>();
  parseDevice(t[4], name, view);
  if (t.size() == 6)
    view.deviceIndex = t[5].cast<int>();
  return view;
}

/// Turns `obj` into a view; `output` requires it to be writable.
fa::TensorView toView(const py::handle &obj, const std::string &name,
                      bool output) {
  if (py::isinstance<py::tuple>(obj))
    return viewFromTuple(obj.cast<py::tuple>(), name);

  if (py::hasattr(obj, "__array_interface__")) {
    py::dict iface = obj.attr("__array_interface__");
    std::string typestr = iface["typestr"].cast<std::string>();
    std::optional<fa::DType> dtype = dtypeOf(typestr, obj);
    if (!dtype)
      throw py::type_error(name +
                           " must have dtype float16, bfloat16 or float32, "
                           "got " +
                           dtypeName(obj, typestr));
    py::tuple data = iface["data"];
    if (output && data[1].cast<bool>())
      throw py::value_error(name + " is an output but is read-only");
    fa::TensorView view;
    view.data = reinterpret_cast<void *>(data[0].cast<uintptr_t>());
    view.dtype = *dtype;
    view.shape = iface["shape"].cast<std::vector<int64_t>>();
    // No strides: C-contiguous (left to fa, which takes empty as row-major).
    if (iface.contains("strides") && !iface["strides"].is_none())
      view.strides =
          elementStrides(iface["strides"].cast<std::vector<py::ssize_t>>(),
                         dtype == fa::DType::F32 ? 4 : 2, name);
    return view;
  }

  if (PyObject_CheckBuffer(obj.ptr())) {
    auto buffer = py::reinterpret_borrow<py::buffer>(obj);
    py::buffer_info info = buffer.request(output);
    fa::TensorView view;
    if (info.format == py::format_descriptor<float>::format())
      view.dtype = fa::DType::F32;
    else if (info.format == "e")
      view.dtype = fa::DType::F16;
    else
      throw py::type_error(name +
                           " must hold float16 or float32 elements, "
                           "got buffer format '" +
                           info.format + "'");
    view.data = info.ptr;
    view.shape.assign(info.shape.begin(), info.shape.end());
    view.strides = elementStrides(info.strides, info.itemsize, name);
    return view;
  }

  throw py::type_error(
      name +
      " must be a numpy array, an object with the buffer protocol or "
      "a (data_ptr, dtype, shape, strides, device) tuple, got " +
      py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
}

/// An optional tensor argument: None or a view.
std::optional<fa::TensorView>
toOptionalView(const py::object &obj, const std::string &name, bool output) {
  if (obj.is_none())
    return std::nullopt;
  return toView(obj, name, output);
}

/// One view per capture (a sequence of tensors).
std::vector<fa::TensorView> toCaptureViews(const py::object &captures) {
  std::vector<fa::TensorView> views;
  size_t i = 0;
  for (const py::handle &c : captures)
    views.push_back(toView(c, "capture " + std::to_string(i++), false));
  return views;
}

/// A workspace: None, a raw tuple, or a (torch) tensor of bytes
/// (uint8 / int8; any other dtype FA knows counts its elements' bytes).
std::optional<fa::TensorView> toWorkspace(const py::object &obj);

void forward(const fa::Kernel &kernel, const py::object &q, const py::object &k,
             const py::object &v, const py::object &out, const py::object &lse,
             const py::object &bias, const py::object &alibiSlopes,
             int64_t dropoutSeed, uintptr_t stream, const py::object &captures,
             const py::object &workspace) {
  fa::TensorView qView = toView(q, "q", false);
  fa::TensorView kView = toView(k, "k", false);
  fa::TensorView vView = toView(v, "v", false);
  fa::TensorView outView = toView(out, "out", true);
  std::optional<fa::TensorView> lseView = toOptionalView(lse, "lse", true);
  std::optional<fa::TensorView> biasView = toOptionalView(bias, "bias", false);
  std::optional<fa::TensorView> slopesView =
      toOptionalView(alibiSlopes, "alibi_slopes", false);
  std::vector<fa::TensorView> captureViews = toCaptureViews(captures);
  std::optional<fa::TensorView> workspaceView = toWorkspace(workspace);
  // The caller keeps every tensor alive for the duration of the call.
  py::gil_scoped_release release;
  kernel.forward(qView, kView, vView, outView, lseView ? &*lseView : nullptr,
                 biasView ? &*biasView : nullptr,
                 slopesView ? &*slopesView : nullptr, dropoutSeed,
                 reinterpret_cast<void *>(stream), captureViews,
                 workspaceView ? &*workspaceView : nullptr);
}

void backward(const fa::Kernel &kernel, const py::object &q,
              const py::object &k, const py::object &v, const py::object &out,
              const py::object &dout, const py::object &lse,
              const py::object &dq, const py::object &dk, const py::object &dv,
              const py::object &bias, const py::object &alibiSlopes,
              int64_t dropoutSeed, uintptr_t stream, const py::object &dbias,
              const py::object &captures, const py::object &workspace) {
  fa::TensorView qView = toView(q, "q", false);
  fa::TensorView kView = toView(k, "k", false);
  fa::TensorView vView = toView(v, "v", false);
  fa::TensorView outView = toView(out, "out", false);
  fa::TensorView doutView = toView(dout, "dout", false);
  fa::TensorView lseView = toView(lse, "lse", false);
  fa::TensorView dqView = toView(dq, "dq", true);
  fa::TensorView dkView = toView(dk, "dk", true);
  fa::TensorView dvView = toView(dv, "dv", true);
  std::optional<fa::TensorView> biasView = toOptionalView(bias, "bias", false);
  std::optional<fa::TensorView> slopesView =
      toOptionalView(alibiSlopes, "alibi_slopes", false);
  std::optional<fa::TensorView> dbiasView =
      toOptionalView(dbias, "dbias", true);
  std::vector<fa::TensorView> captureViews = toCaptureViews(captures);
  std::optional<fa::TensorView> workspaceView = toWorkspace(workspace);
  py::gil_scoped_release release;
  kernel.backward(qView, kView, vView, outView, doutView, lseView, dqView,
                  dkView, dvView, biasView ? &*biasView : nullptr,
                  slopesView ? &*slopesView : nullptr, dropoutSeed,
                  reinterpret_cast<void *>(stream),
                  dbiasView ? &*dbiasView : nullptr, captureViews,
                  workspaceView ? &*workspaceView : nullptr);
}

//===----------------------------------------------------------------------===//
// The per-call path of the `fa` package: numpy arrays and torch tensors read
// and checked here, once per call (fa.attention's checks and their messages).
//===----------------------------------------------------------------------===//

/// `fa.<api>: <message>` as `Error` (TypeError or ValueError).
template <typename Error>
[[noreturn]] void raise(const std::string &api, const std::string &message) {
  throw Error(api + ": " + message);
}

/// Python's repr of a tuple of ints: "(2, 4)", "(4,)", "()".
std::string tupleText(const std::vector<int64_t> &v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

/// Python's repr of a list of ints: "[2, 4]".
std::string listText(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// What a dtype object is to FA: its code (none: unsupported) and the name
/// messages use ("float16", "int64"; torch's without "torch.").
struct DTypeInfo {
  std::optional<fa::DType> dtype;
  std::string name;
};

DTypeInfo dtypeInfoOf(const std::string &name) {
  DTypeInfo info{std::nullopt, name};
  if (name == "float16")
    info.dtype = fa::DType::F16;
  else if (name == "bfloat16")
    info.dtype = fa::DType::BF16;
  else if (name == "float32")
    info.dtype = fa::DType::F32;
  return info;
}

/// DTypeInfo by the dtype object's identity: numpy's and torch's dtype
/// objects are mostly singletons. The cache holds a reference to each key, so
/// an address is never reused; it stops growing at 64 entries.
const DTypeInfo &lookupDType(const py::handle &dtype, bool torch) {
  // Never destroyed: its references outlive the interpreter.
  static auto &cache = *new std::vector<std::pair<py::object, DTypeInfo>>();
  for (const auto &[key, info] : cache)
    if (key.ptr() == dtype.ptr())
      return info;
  std::string name =
      py::str(torch || !py::hasattr(dtype, "name") ? dtype : dtype.attr("name"))
          .cast<std::string>();
  if (torch && name.rfind("torch.", 0) == 0)
    name = name.substr(6);
  DTypeInfo info = dtypeInfoOf(name);
  // A numpy dtype of the other byte order has the same name but is not FA's.
  if (!torch && info.dtype && py::hasattr(dtype, "byteorder") &&
      py::str(dtype.attr("byteorder")).cast<std::string>() == ">")
    info.dtype = std::nullopt;
  if (cache.size() < 64) {
    cache.emplace_back(py::reinterpret_borrow<py::object>(dtype),
                       std::move(info));
    return cache.back().second;
  }
  static thread_local DTypeInfo last;
  last = std::move(info);
  return last;
}

/// One numpy array or torch tensor (or a look-alike: data_ptr(), stride(),
/// dtype, device, shape) as read once per call.
struct Arg {
  py::object obj; ///< Keeps the memory alive (a copy of a numpy array with
                  ///< negative strides).
  bool torch = false;
  std::optional<fa::DType> dtype;
  std::string dtypeName;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; ///< In elements.
  std::string device;           ///< "cpu", "cuda:0", ...
  int deviceIndex = 0;          ///< N of "cuda:N".
  uintptr_t data = 0;

  bool isCpu() const { return device == "cpu"; }

  fa::TensorView view() const {
    fa::TensorView v;
    v.data = reinterpret_cast<void *>(data);
    v.dtype = dtype.value_or(fa::DType::F32);
    v.shape = shape;
    v.strides = strides;
    v.device = isCpu() ? fa::Device::CPU : fa::Device::CUDA;
    v.deviceIndex = deviceIndex;
    return v;
  }

  /// The same memory with leading size-1 dims up to `rank`.
  void broadcastToRank(size_t rank) {
    size_t extra = rank > shape.size() ? rank - shape.size() : 0;
    shape.insert(shape.begin(), extra, 1);
    strides.insert(strides.begin(), extra, 0);
  }
};

std::vector<int64_t> intsOf(const py::handle &sequence) {
  std::vector<int64_t> v;
  PyObject *seq = PySequence_Fast(sequence.ptr(), "expected a sequence");
  if (!seq)
    throw py::error_already_set();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  v.reserve(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (x == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      throw py::error_already_set();
    }
    v.push_back(x);
  }
  Py_DECREF(seq);
  return v;
}

const py::handle &numpyArrayType() {
  static py::handle type =
      py::object(py::module_::import("numpy").attr("ndarray")).release();
  return type;
}

bool isNumpyArray(const py::handle &x) {
  return PyObject_TypeCheck(
      x.ptr(), reinterpret_cast<PyTypeObject *>(numpyArrayType().ptr()));
}

/// Attribute names read on every call, as interned Python strings (made
/// once, never freed).
struct Names {
  py::handle dtype = PyUnicode_InternFromString("dtype");
  py::handle shape = PyUnicode_InternFromString("shape");
  py::handle stride = PyUnicode_InternFromString("stride");
  py::handle dataPtr = PyUnicode_InternFromString("data_ptr");
  py::handle isCpu = PyUnicode_InternFromString("is_cpu");
  py::handle isCuda = PyUnicode_InternFromString("is_cuda");
  py::handle getDevice = PyUnicode_InternFromString("get_device");
  py::handle device = PyUnicode_InternFromString("device");
};

const Names &names() {
  static const Names *n = new Names();
  return *n;
}

/// `x.name()`, without making a bound method.
py::object callMethod(const py::handle &x, const py::handle &name) {
  PyObject *result = PyObject_CallMethodNoArgs(x.ptr(), name.ptr());
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

/// torch.Tensor, once torch is imported (never imported here); null before.
PyObject *torchTensorType() {
  static PyObject *type = nullptr;
  if (!type) {
    PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
    if (!torch)
      return nullptr;
    PyObject *tensor = PyObject_GetAttrString(torch, "Tensor");
    if (tensor && PyType_Check(tensor))
      type = tensor; // kept: types live as long as their module
    else
      Py_XDECREF(tensor);
    PyErr_Clear();
  }
  return type;
}

/// Whether `x` is a torch.Tensor (of the torch in sys.modules).
bool isRealTorchTensor(const py::handle &x) {
  PyObject *type = torchTensorType();
  return type &&
         PyObject_TypeCheck(x.ptr(), reinterpret_cast<PyTypeObject *>(type));
}

/// fa._tensor.is_torch_tensor's duck typing.
bool isTorchLike(const py::handle &x) {
  if (isNumpyArray(x))
    return false;
  for (const char *method : {"data_ptr", "stride"}) {
    py::object m = py::getattr(x, method, py::none());
    if (m.is_none() || !PyCallable_Check(m.ptr()))
      return false;
  }
  return py::hasattr(x, "dtype") && py::hasattr(x, "device") &&
         py::hasattr(x, "shape");
}

/// Reads a numpy array (any strides; those FA cannot take are copied first).
bool readNumpy(Arg &arg, py::object x) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Py_buffer buffer;
    // No PyBUF_FORMAT: numpy then exports any dtype (ml_dtypes' bfloat16).
    if (PyObject_GetBuffer(x.ptr(), &buffer, PyBUF_STRIDES) != 0) {
      PyErr_Clear();
      return false;
    }
    bool copy = false;
    arg.shape.assign(buffer.shape, buffer.shape + buffer.ndim);
    arg.strides.resize(buffer.ndim);
    for (int i = 0; i < buffer.ndim; ++i) {
      Py_ssize_t s = buffer.strides[i];
      copy |= s < 0 || s % buffer.itemsize != 0;
      arg.strides[i] = s / buffer.itemsize;
    }
    arg.data = reinterpret_cast<uintptr_t>(buffer.buf);
    PyBuffer_Release(&buffer);
    if (!copy || attempt == 1) {
      arg.obj = std::move(x);
      break;
    }
    // FA reads any layout but negative strides (and misaligned ones).
    static py::handle ascontiguous =
        py::object(py::module_::import("numpy").attr("ascontiguousarray"))
            .release();
    x = ascontiguous(x);
  }
  const DTypeInfo &info = lookupDType(arg.obj.attr(names().dtype), false);
  arg.dtype = info.dtype;
  arg.dtypeName = info.name;
  arg.device = "cpu";
  return true;
}

void readTorch(Arg &arg, const py::handle &x, bool real) {
  const Names &n = names();
  arg.torch = true;
  arg.obj = py::reinterpret_borrow<py::object>(x);
  const DTypeInfo &info = lookupDType(x.attr(n.dtype), true);
  arg.dtype = info.dtype;
  arg.dtypeName = info.name;
  arg.shape = intsOf(x.attr(n.shape));
  arg.strides = intsOf(callMethod(x, n.stride));
  arg.data = callMethod(x, n.dataPtr).cast<uintptr_t>();
  if (real) {
    // A torch.Tensor: is_cpu / is_cuda are cheaper than device objects.
    if (PyObject_IsTrue(x.attr(n.isCpu).ptr()) == 1) {
      arg.device = "cpu";
      return;
    }
    if (PyObject_IsTrue(x.attr(n.isCuda).ptr()) == 1) {
      arg.deviceIndex = callMethod(x, n.getDevice).cast<int>();
      arg.device = "cuda:" + std::to_string(arg.deviceIndex);
      return;
    }
  }
  py::object device = x.attr(n.device);
  py::object type = py::getattr(device, "type", py::none());
  if (!type.is_none() && py::isinstance<py::str>(type) &&
      PyUnicode_CompareWithASCIIString(type.ptr(), "cpu") == 0)
    arg.device = "cpu";
  else if (type.is_none() && py::isinstance<py::str>(device) &&
           PyUnicode_CompareWithASCIIString(device.ptr(), "cpu") == 0)
    arg.device = "cpu";
  else
    arg.device = py::str(device).cast<std::string>();
  // CUDA devices as "cuda:N" always ("cuda" is cuda:0).
  if (int index = cudaIndex(arg.device); index >= 0) {
    arg.deviceIndex = index;
    arg.device = "cuda:" + std::to_string(index);
  }
}

/// `x` read as a tensor, or nullopt when it is not an array / tensor.
std::optional<Arg> readTensor(const py::handle &x) {
  Arg arg;
  if (isNumpyArray(x)) {
    if (readNumpy(arg, py::reinterpret_borrow<py::object>(x)))
      return arg;
    return std::nullopt;
  }
  bool real = isRealTorchTensor(x);
  if (!real && !isTorchLike(x))
    return std::nullopt;
  readTorch(arg, x, real);
  return arg;
}

/// fa.attention's reading of one argument: an array or tensor on the CPU or
/// a CUDA device.
Arg tensorArg(const std::string &api, const char *name, const py::handle &x) {
  std::optional<Arg> arg = readTensor(x);
  if (!arg)
    raise<py::type_error>(
        api, std::string(name) +
                 " must be a numpy array or a torch tensor, got " +
                 py::str(py::type::of(x).attr("__name__")).cast<std::string>());
  if (!arg->isCpu() && arg->device.rfind("cuda", 0) != 0)
    raise<py::value_error>(api, std::string(name) +
                                    " must be on the CPU or a CUDA device, "
                                    "got " +
                                    arg->device);
  return std::move(*arg);
}

/// One call's tensors are on q's device ("k is on cuda:1 but q is on
/// cuda:0").
void checkDevice(const std::string &api, const char *name, const Arg &t,
                 const Arg &q) {
  if (t.device != q.device)
    raise<py::value_error>(api, std::string(name) + " is on " + t.device +
                                    " but q is on " + q.device);
}

void checkFloatDType(const std::string &api, const char *name, const Arg &arg) {
  if (!arg.dtype)
    raise<py::type_error>(api, std::string(name) +
                                   " must have dtype float16, bfloat16 or "
                                   "float32, got " +
                                   arg.dtypeName);
}

const char *codeOf(fa::DType dtype) { return fa::toString(dtype); }

/// Q, K, V (and bias, ALiBi slopes) of one call, checked against each other.
/// Q, K, V, O and dO are in the call's layout: [B, H, N, D] (bhsd) or
/// [B, N, H, D] (bshd); the kernels get them as [B, H, N, D] views (the same
/// memory, heads and rows swapped).
struct Inputs {
  Arg q, k, v;
  std::optional<Arg> bias;           ///< Rank 4 (leading size-1 dims added).
  std::optional<Arg> slopes;         ///< [Hq] or [B, Hq].
  std::optional<Arg> out, dout, lse; ///< The backward's (checkGrads).
  py::object userBias;               ///< The caller's bias object.
  bool bshd = false;                 ///< Q, K, V, O, dO are [B, N, H, D].

  /// The dims of heads and of the sequence in Q, K, V, O, dO.
  int headDim() const { return bshd ? 2 : 1; }
  int seqDim() const { return bshd ? 1 : 2; }
  int64_t b() const { return q.shape[0]; }
  int64_t hq() const { return q.shape[headDim()]; }
  int64_t nq() const { return q.shape[seqDim()]; }
  int64_t nk() const { return k.shape[seqDim()]; }

  /// O's shape in the call's layout.
  std::vector<int64_t> outShape() const {
    if (bshd)
      return {b(), nq(), hq(), v.shape[3]};
    return {b(), hq(), nq(), v.shape[3]};
  }
  /// How the call's layout names the dims of Q (O) and K, V.
  const char *qDims(const char *d) const {
    bool dv = std::string(d) == "Dv";
    if (bshd)
      return dv ? "[B, Nq, Hq, Dv]" : "[B, Nq, Hq, D]";
    return dv ? "[B, Hq, Nq, Dv]" : "[B, Hq, Nq, D]";
  }
  const char *kvDims(const char *d) const {
    bool dv = std::string(d) == "Dv";
    if (bshd)
      return dv ? "[B, Nk, Hkv, Dv]" : "[B, Nk, Hkv, D]";
    return dv ? "[B, Hkv, Nk, Dv]" : "[B, Hkv, Nk, D]";
  }

  /// A tensor of the call's layout (Q, K, V, O, dO, dQ, ...) as the kernel
  /// reads it: [B, H, N, D].
  fa::TensorView kernelView(fa::TensorView view) const {
    if (bshd && view.shape.size() == 4) {
      std::swap(view.shape[1], view.shape[2]);
      std::swap(view.strides[1], view.strides[2]);
    }
    return view;
  }

  /// What the kernel is compiled for, of these inputs: (dtype, D, Dv,
  /// bias layout or None, ALiBi layout or None, device: "cpu" or "cuda:N").
  py::tuple key() const {
    py::object biasLayout = py::none();
    if (bias)
      biasLayout = py::make_tuple(
          codeOf(*bias->dtype),
          py::make_tuple(bias->shape[0] == 1, bias->shape[1] == 1,
                         bias->shape[2] == 1, bias->shape[3] == 1));
    py::object alibi = py::none();
    if (slopes)
      alibi = py::str(slopes->shape.size() == 2 ? "per_batch" : "heads");
    return py::make_tuple(codeOf(*q.dtype), q.shape[3], v.shape[3], biasLayout,
                          alibi, q.device);
  }
};

/// "q.shape[2]".
std::string dimName(const char *name, int dim) {
  return std::string(name) + ".shape[" + std::to_string(dim) + "]";
}

void expectEqual(const std::string &api, const std::string &what,
                 const std::string &wantName, int64_t want, const char *name,
                 int dim, const Arg &t) {
  if (t.shape[dim] != want)
    raise<py::value_error>(api, what + " (" + wantName + " = " +
                                    std::to_string(want) + "), got " + name +
                                    ".shape[" + std::to_string(dim) +
                                    "] = " + std::to_string(t.shape[dim]));
}

std::unique_ptr<Inputs> checkInputs(const std::string &api, const py::handle &q,
                                    const py::handle &k, const py::handle &v,
                                    const py::handle &bias,
                                    const py::handle &alibiSlopes, bool bshd) {
  auto in = std::make_unique<Inputs>();
  in->bshd = bshd;
  in->q = tensorArg(api, "q", q);
  in->k = tensorArg(api, "k", k);
  in->v = tensorArg(api, "v", v);
  const Arg &tq = in->q, &tk = in->k, &tv = in->v;
  checkFloatDType(api, "q", tq);
  for (auto [name, t] : {std::pair{"k", &tk}, std::pair{"v", &tv}})
    checkDevice(api, name, *t, tq);
  for (auto [name, t] : {std::pair{"k", &tk}, std::pair{"v", &tv}})
    if (t->dtype != tq.dtype)
      raise<py::type_error>(api, std::string(name) +
                                     " must have the dtype of q (" +
                                     tq.dtypeName + "), got " + t->dtypeName);
  // The dims' text only for the error (this runs on every call).
  for (auto [name, t] :
       {std::pair{"q", &tq}, std::pair{"k", &tk}, std::pair{"v", &tv}})
    if (t->shape.size() != 4) {
      std::string dims = t == &tq   ? in->qDims("D")
                         : t == &tk ? in->kvDims("D")
                                    : in->kvDims("Dv");
      raise<py::value_error>(api, std::string(name) + " must have rank 4 " +
                                      dims + ", got shape " +
                                      tupleText(t->shape));
    }
  const int h = in->headDim(), n = in->seqDim();
  int64_t b = tq.shape[0], hq = tq.shape[h], nq = tq.shape[n], d = tq.shape[3];
  int64_t hkv = tk.shape[h], nk = tk.shape[n];
  expectEqual(api, "k must have the batch size of q", "q.shape[0]", b, "k", 0,
              tk);
  expectEqual(api, "v must have the batch size of q", "q.shape[0]", b, "v", 0,
              tv);
  expectEqual(api, "k must have the head dim of q", "q.shape[3]", d, "k", 3,
              tk);
  expectEqual(api, "v must have the heads of k", dimName("k", h), hkv, "v", h,
              tv);
  expectEqual(api, "v must have the sequence length of k", dimName("k", n), nk,
              "v", n, tv);
  if (d == 0 || tv.shape[3] == 0)
    raise<py::value_error>(
        api, "head dims must be > 0, got q.shape[3] = " + std::to_string(d) +
                 ", v.shape[3] = " + std::to_string(tv.shape[3]));
  if (hkv == 0 || hq % hkv != 0)
    raise<py::value_error>(
        api, "q heads (" + dimName("q", h) + " = " + std::to_string(hq) +
                 ") must be a multiple of k/v heads (" + dimName("k", h) +
                 " = " + std::to_string(hkv) + ")");

  if (!bias.is_none()) {
    Arg t = tensorArg(api, "bias", bias);
    checkDevice(api, "bias", t, tq);
    checkFloatDType(api, "bias", t);
    const std::vector<int64_t> full = {b, hq, nq, nk};
    bool broadcasts = t.shape.size() <= 4;
    for (size_t i = 0; broadcasts && i < t.shape.size(); ++i) {
      int64_t got = t.shape[t.shape.size() - 1 - i], want = full[3 - i];
      broadcasts = got == 1 || got == want;
    }
    if (!broadcasts)
      raise<py::value_error>(api, "bias of shape " + tupleText(t.shape) +
                                      " does not broadcast to [B, Hq, Nq, "
                                      "Nk] = " +
                                      listText(full));
    in->userBias = py::reinterpret_borrow<py::object>(bias);
    t.broadcastToRank(4);
    in->bias = std::move(t);
  }

  if (!alibiSlopes.is_none()) {
    py::object slopes = py::reinterpret_borrow<py::object>(alibiSlopes);
    if (py::isinstance<py::list>(slopes) || py::isinstance<py::tuple>(slopes))
      slopes = py::module_::import("numpy").attr("asarray")(
          slopes, py::arg("dtype") = "float32");
    Arg t = tensorArg(api, "alibi_slopes", slopes);
    checkDevice(api, "alibi_slopes", t, tq);
    if (t.dtype != fa::DType::F32)
      raise<py::type_error>(api, "alibi_slopes must have dtype float32, got " +
                                     t.dtypeName);
    bool heads = t.shape.size() == 1 && t.shape[0] == hq;
    bool perBatch = t.shape.size() == 2 && t.shape[0] == b && t.shape[1] == hq;
    if (!heads && !perBatch)
      raise<py::value_error>(
          api, "alibi_slopes must have shape [Hq] = [" + std::to_string(hq) +
                   "] or [B, Hq] = [" + std::to_string(b) + ", " +
                   std::to_string(hq) + "], got " + tupleText(t.shape));
    in->slopes = std::move(t);
  }
  return in;
}

/// The backward's O, dO and lse, checked against Q, K, V.
/// O, dO or the lse of a call, read and checked against Q: device, dtype
/// (q's, or float32 for the lse) and shape.
Arg checkLikeO(const Inputs &in, const std::string &api, const char *name,
               const py::handle &x, const std::vector<int64_t> &shape,
               const char *dims) {
  Arg t = tensorArg(api, name, x);
  std::string what = name;
  checkDevice(api, name, t, in.q);
  bool isLse = what == "lse";
  std::optional<fa::DType> want = isLse ? fa::DType::F32 : *in.q.dtype;
  if (t.dtype != want)
    raise<py::type_error>(
        api, what + " must have " +
                 (isLse ? std::string("float32")
                        : "the dtype of q (" + in.q.dtypeName + ")") +
                 ", got " + t.dtypeName);
  if (t.shape != shape)
    raise<py::value_error>(api, what + " must have shape " + dims + " = " +
                                    listText(shape) + ", got " +
                                    tupleText(t.shape));
  return t;
}

void checkGrads(Inputs &in, const std::string &api, const py::handle &out,
                const py::handle &dout, const py::handle &lse) {
  std::vector<int64_t> wantO = in.outShape();
  std::vector<int64_t> wantLse = {in.b(), in.hq(), in.nq()};
  in.out = checkLikeO(in, api, "out", out, wantO, in.qDims("Dv"));
  in.dout = checkLikeO(in, api, "dout", dout, wantO, in.qDims("Dv"));
  in.lse = checkLikeO(in, api, "lse", lse, wantLse, "[B, Hq, Nq]");
}

std::string typeName(const py::handle &x) {
  return py::str(py::type::of(x).attr("__name__")).cast<std::string>();
}

/// The forward's O given by the caller (out=): an array / tensor of q's kind,
/// device and dtype, of O's shape in the call's layout, writable, with rows
/// of unit stride and no element at two places (no stride <= 0 in a dim of
/// size > 1).
void checkOut(const Inputs &in, const std::string &api, const py::handle &out) {
  Arg t = tensorArg(api, "out", out);
  if (t.torch != in.q.torch)
    raise<py::type_error>(api,
                          std::string("out must be a ") +
                              (in.q.torch ? "torch tensor" : "numpy array") +
                              " like q, got " + typeName(out));
  t = checkLikeO(in, api, "out", out, in.outShape(), in.qDims("Dv"));
  std::vector<int64_t> strides = t.strides;
  if (!t.torch) {
    if (!py::bool_(out.attr("flags").attr("writeable")))
      raise<py::value_error>(api,
                             "out must be writable, got a read-only array");
    if (t.obj.ptr() != out.ptr()) {
      // Read as a copy (negative strides): the caller's strides.
      strides.clear();
      int64_t itemsize = out.attr("itemsize").cast<int64_t>();
      for (int64_t s : intsOf(out.attr("strides")))
        strides.push_back(s / itemsize);
    }
  }
  bool empty = false;
  for (int64_t n : t.shape)
    empty |= n == 0;
  if (empty)
    return;
  if (strides[3] != 1)
    raise<py::value_error>(
        api, "out must have stride 1 in its last dim, got strides " +
                 tupleText(strides));
  for (size_t i = 0; i < strides.size(); ++i)
    if (t.shape[i] > 1 && strides[i] <= 0)
      raise<py::value_error>(
          api, "out must have strides > 0 in its dims of size > 1 (no "
               "broadcast or reversed view), got strides " +
                   tupleText(strides));
}

std::optional<fa::TensorView> toWorkspace(const py::object &obj) {
  if (obj.is_none())
    return std::nullopt;
  if (py::isinstance<py::tuple>(obj))
    return viewFromTuple(obj.cast<py::tuple>(), "workspace");
  std::optional<Arg> arg = readTensor(obj);
  if (!arg)
    throw py::type_error("workspace must be a tensor or a raw tuple, got " +
                         typeName(obj));
  fa::TensorView view = arg->view();
  if (!arg->dtype) {
    if (arg->dtypeName != "uint8" && arg->dtypeName != "int8")
      throw py::type_error("workspace must hold bytes (uint8), got " +
                           arg->dtypeName);
    view.dtype = fa::DType::I8;
  }
  return view;
}

/// A freshly made output (O, lse, dQ, ...): numpy array or tensor.
fa::TensorView outputView(const py::handle &x, const char *name) {
  std::optional<Arg> arg = readTensor(x);
  if (!arg || !arg->dtype)
    throw py::type_error(std::string(name) +
                         " must be a float16, bfloat16 or float32 array");
  return arg->view();
}

/// The bias as the kernel reads it: size-1 dims it does not broadcast are
/// expanded (stride 0) to [B, Hq, Nq, Nk].
fa::TensorView biasView(const Inputs &in, const fa::AttentionSpec &spec) {
  fa::TensorView view = in.bias->view();
  const int64_t full[4] = {in.b(), in.hq(), in.nq(), in.nk()};
  for (int i = 0; i < 4; ++i)
    if (!spec.biasBroadcast[i] && view.shape[i] == 1)
      view.shape[i] = full[i], view.strides[i] = 0;
  return view;
}

void run(const fa::Kernel &kernel, const Inputs &in, const py::handle &out,
         const py::handle &lse, int64_t dropoutSeed, uintptr_t stream,
         const py::object &captures, const py::object &workspace) {
  const fa::AttentionSpec &spec = kernel.spec();
  fa::TensorView q = in.kernelView(in.q.view()), k = in.kernelView(in.k.view()),
                 v = in.kernelView(in.v.view());
  fa::TensorView o = in.kernelView(outputView(out, "out"));
  std::optional<fa::TensorView> l, bias, slopes;
  if (!lse.is_none())
    l = outputView(lse, "lse");
  if (in.bias && spec.bias)
    bias = biasView(in, spec);
  if (in.slopes)
    slopes = in.slopes->view();
  std::vector<fa::TensorView> captureViews = toCaptureViews(captures);
  std::optional<fa::TensorView> work = toWorkspace(workspace);
  py::gil_scoped_release release;
  kernel.forward(q, k, v, o, l ? &*l : nullptr, bias ? &*bias : nullptr,
                 slopes ? &*slopes : nullptr, dropoutSeed,
                 reinterpret_cast<void *>(stream), captureViews,
                 work ? &*work : nullptr);
}

void runBackward(const fa::Kernel &kernel, const Inputs &in,
                 const py::handle &dq, const py::handle &dk,
                 const py::handle &dv, const py::handle &dbias,
                 int64_t dropoutSeed, uintptr_t stream,
                 const py::object &captures, const py::object &workspace) {
  if (!in.out || !in.dout || !in.lse)
    throw py::value_error("Inputs.check_grads was not called");
  const fa::AttentionSpec &spec = kernel.spec();
  fa::TensorView q = in.kernelView(in.q.view()), k = in.kernelView(in.k.view()),
                 v = in.kernelView(in.v.view());
  fa::TensorView o = in.kernelView(in.out->view()),
                 dO = in.kernelView(in.dout->view()), lse = in.lse->view();
  fa::TensorView dQ = in.kernelView(outputView(dq, "dq")),
                 dK = in.kernelView(outputView(dk, "dk")),
                 dV = in.kernelView(outputView(dv, "dv"));
  std::optional<fa::TensorView> bias, slopes, dBias;
  if (in.bias && spec.bias)
    bias = biasView(in, spec);
  if (in.slopes)
    slopes = in.slopes->view();
  if (!dbias.is_none())
    dBias = outputView(dbias, "dbias");
  std::vector<fa::TensorView> captureViews = toCaptureViews(captures);
  std::optional<fa::TensorView> work = toWorkspace(workspace);
  py::gil_scoped_release release;
  kernel.backward(q, k, v, o, dO, lse, dQ, dK, dV, bias ? &*bias : nullptr,
                  slopes ? &*slopes : nullptr, dropoutSeed,
                  reinterpret_cast<void *>(stream), dBias ? &*dBias : nullptr,
                  captureViews, work ? &*work : nullptr);
}

py::object optionalArg(const std::optional<Arg> &arg) {
  return arg ? py::cast(*arg) : py::none();
}

std::string causalName(fa::Causal causal) {
  switch (causal) {
  case fa::Causal::None:
    return "none";
  case fa::Causal::TopLeft:
    return "top_left";
  case fa::Causal::BottomRight:
    return "bottom_right";
  }
  return "?";
}

std::string specRepr(const fa::AttentionSpec &spec) {
  std::string s =
      "AttentionSpec(dtype=" + std::string(fa::toString(spec.dtype)) +
      ", head_dim=" + std::to_string(spec.headDim);
  if (spec.headDimV)
    s += ", head_dim_v=" + std::to_string(spec.headDimV);
  if (spec.numHeadsQ)
    s += ", num_heads_q=" + std::to_string(spec.numHeadsQ);
  if (spec.numHeadsKV)
    s += ", num_heads_kv=" + std::to_string(spec.numHeadsKV);
  if (spec.scale)
    s += ", scale=" + py::repr(py::float_(*spec.scale)).cast<std::string>();
  if (spec.causal != fa::Causal::None)
    s += ", causal=" + causalName(spec.causal);
  if (spec.window)
    s += ", window=(" + std::to_string(spec.window->first) + ", " +
         std::to_string(spec.window->second) + ")";
  if (spec.softcap)
    s += ", softcap=" + py::repr(py::float_(*spec.softcap)).cast<std::string>();
  if (spec.alibi)
    s += spec.alibiPerBatch ? ", alibi=per_batch" : ", alibi=True";
  if (spec.bias) {
    s += ", bias=" + std::string(fa::toString(spec.biasDType)) + "[";
    for (int i = 0; i < 4; ++i)
      s += std::string(i ? "," : "") + (spec.biasBroadcast[i] ? "1" : "?");
    s += "]";
  }
  if (spec.dropoutP != 0.0)
    s += ", dropout_p=" +
         py::repr(py::float_(spec.dropoutP)).cast<std::string>();
  if (!spec.scoreMod.empty())
    s += ", score_mod=...";
  if (!spec.maskMod.empty())
    s += ", mask_mod=...";
  if (spec.returnLse)
    s += ", return_lse=True";
  if (spec.atomicDQ)
    s += ", atomic_dq=True";
  if (spec.deterministic)
    s += ", deterministic=True";
  return s + ")";
}

} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "FA's C++ API (include/fa/fa.h); use the `fa` package instead.";

  auto &faError =
      py::register_exception<fa::Error>(m, "FAError", PyExc_RuntimeError);
  faError.attr("__module__") = "fa";
  faError.doc() = "Raised when FA cannot compile or run an attention variant "
                  "(its message holds the compiler's diagnostics).";

  py::enum_<fa::DType>(m, "DType", "Element type of Q, K, V and O.")
      .value("f16", fa::DType::F16)
      .value("bf16", fa::DType::BF16)
      .value("f32", fa::DType::F32)
      .value("f64", fa::DType::F64)
      .value("i8", fa::DType::I8)
      .value("i16", fa::DType::I16)
      .value("i32", fa::DType::I32)
      .value("i64", fa::DType::I64);
  py::enum_<fa::Device>(m, "Device", "Where a tensor lives.")
      .value("cpu", fa::Device::CPU)
      .value("cuda", fa::Device::CUDA);
  py::enum_<fa::Causal>(m, "Causal", "Causal mask alignment.")
      .value("none", fa::Causal::None)
      .value("top_left", fa::Causal::TopLeft)
      .value("bottom_right", fa::Causal::BottomRight);

  py::class_<fa::AttentionSpec>(m, "AttentionSpec",
                                "Everything a kernel is compiled for.")
      .def(py::init<>())
      .def_readwrite("dtype", &fa::AttentionSpec::dtype)
      .def_readwrite("head_dim", &fa::AttentionSpec::headDim)
      .def_readwrite("head_dim_v", &fa::AttentionSpec::headDimV,
                     "Head dim of V and O (0: same as head_dim).")
      .def_readwrite("num_heads_q", &fa::AttentionSpec::numHeadsQ,
                     "Query heads (0: any).")
      .def_readwrite("num_heads_kv", &fa::AttentionSpec::numHeadsKV,
                     "Key/value heads (0: any).")
      .def_readwrite("scale", &fa::AttentionSpec::scale,
                     "Softmax scale (None: 1/sqrt(head_dim)).")
      .def_readwrite("causal", &fa::AttentionSpec::causal)
      .def_readwrite("window", &fa::AttentionSpec::window,
                     "(left, right) around the bottom-right diagonal, or "
                     "None.")
      .def_readwrite("softcap", &fa::AttentionSpec::softcap)
      .def_readwrite("alibi", &fa::AttentionSpec::alibi)
      .def_readwrite("alibi_per_batch", &fa::AttentionSpec::alibiPerBatch)
      .def_readwrite("bias", &fa::AttentionSpec::bias)
      .def_readwrite("bias_dtype", &fa::AttentionSpec::biasDType)
      .def_readwrite("bias_broadcast", &fa::AttentionSpec::biasBroadcast,
                     "Which of the bias dims [B, Hq, Nq, Nk] have size 1.")
      .def_readwrite("dropout_p", &fa::AttentionSpec::dropoutP)
      .def_readwrite("score_mod", &fa::AttentionSpec::scoreMod,
                     "Body of the score_mod region (MLIR text).")
      .def_readwrite("mask_mod", &fa::AttentionSpec::maskMod,
                     "Body of the mask_mod region (MLIR text).")
      .def_readwrite("return_lse", &fa::AttentionSpec::returnLse)
      .def_readwrite("atomic_dq", &fa::AttentionSpec::atomicDQ,
                     "GPU backward: dQ added by the dK/dV kernel (atomics); "
                     "its bits then vary run to run.")
      .def_readwrite("deterministic", &fa::AttentionSpec::deterministic,
                     "GPU backward: dQ by its own kernel, bitwise "
                     "reproducible (neither flag: atomic where that is "
                     "fastest, sm_90a's plain D = 64 and 128).")
      .def_property(
          "captures",
          [](const fa::AttentionSpec &spec) {
            py::list list;
            for (const fa::CaptureSpec &c : spec.captures)
              list.append(py::make_tuple(c.dtype, c.rank));
            return list;
          },
          [](fa::AttentionSpec &spec, const py::iterable &captures) {
            spec.captures.clear();
            for (const py::handle &c : captures) {
              auto pair = c.cast<py::tuple>();
              spec.captures.push_back(
                  {parseDType(pair[0], "captures"), pair[1].cast<int64_t>()});
            }
          },
          "(dtype, rank) of each tensor score_mod / mask_mod read (%cap0, "
          "%cap1, ...).")
      .def("__repr__", &specRepr);

  py::class_<fa::Kernel>(m, "Kernel", "A compiled attention variant.")
      .def_property_readonly(
          "address",
          [](const fa::Kernel &kernel) {
            return reinterpret_cast<uintptr_t>(&kernel);
          },
          "The fa::Kernel's address, for fa._torch_fast (which runs it "
          "while this object lives).")
      .def("forward", &forward, py::arg("q"), py::arg("k"), py::arg("v"),
           py::arg("out"), py::arg("lse") = py::none(),
           py::arg("bias") = py::none(), py::arg("alibi_slopes") = py::none(),
           py::arg("dropout_seed") = 0, py::arg("stream") = 0,
           py::arg("captures") = py::tuple(), py::arg("workspace") = py::none(),
           "Runs the kernel: O (and lse) are written into `out` (and `lse`); "
           "a GPU kernel runs on `stream` (a CUstream as an int). A "
           "`workspace` of forward_workspace_bytes() bytes on q's device "
           "holds a mask_mod's key ranges (None: stream-ordered memory of "
           "the driver's).")
      .def("backward", &backward, py::arg("q"), py::arg("k"), py::arg("v"),
           py::arg("out"), py::arg("dout"), py::arg("lse"), py::arg("dq"),
           py::arg("dk"), py::arg("dv"), py::arg("bias") = py::none(),
           py::arg("alibi_slopes") = py::none(), py::arg("dropout_seed") = 0,
           py::arg("stream") = 0, py::arg("dbias") = py::none(),
           py::arg("captures") = py::tuple(), py::arg("workspace") = py::none(),
           "Gradients: dQ, dK, dV (and dBias) are written into `dq`, `dk`, "
           "`dv` (and `dbias`) from forward's inputs, its `out` and `lse`, "
           "and `dout` = dLoss/dO. The backward kernel is compiled on the "
           "first call. A GPU kernel's `workspace` is at least "
           "backward_workspace_bytes() bytes on q's device (None: "
           "stream-ordered memory of the driver's).")
      .def("run", &run, py::arg("inputs"), py::arg("out"),
           py::arg("lse") = py::none(), py::arg("dropout_seed") = 0,
           py::arg("stream") = 0, py::arg("captures") = py::tuple(),
           py::arg("workspace") = py::none(),
           "forward() on checked inputs (fa.check_inputs) into new `out` "
           "(and `lse`).")
      .def("run_backward", &runBackward, py::arg("inputs"), py::arg("dq"),
           py::arg("dk"), py::arg("dv"), py::arg("dbias") = py::none(),
           py::arg("dropout_seed") = 0, py::arg("stream") = 0,
           py::arg("captures") = py::tuple(), py::arg("workspace") = py::none(),
           "backward() on checked inputs (Inputs.check_grads done) into new "
           "`dq`, `dk`, `dv` (and `dbias`).")
      .def(
          "forward_workspace_bytes",
          [](const fa::Kernel &kernel, int64_t batch, int64_t headsQ,
             int64_t seqQ) {
            return kernel.forwardWorkspaceBytes(batch, headsQ, seqQ);
          },
          py::arg("batch"), py::arg("heads_q"), py::arg("seq_q"),
          "Bytes of the workspace forward() takes: 0 unless a GPU kernel's "
          "mask_mod has key ranges.")
      .def(
          "backward_workspace_bytes",
          [](const fa::Kernel &kernel, int64_t batch, int64_t headsQ,
             int64_t seqQ, bool dbias) {
            py::gil_scoped_release release;
            return kernel.backwardWorkspaceBytes(batch, headsQ, seqQ, dbias);
          },
          py::arg("batch"), py::arg("heads_q"), py::arg("seq_q"),
          py::arg("dbias") = false,
          "Bytes of the workspace backward() takes (0 for a host kernel); "
          "compiles the backward on the first call.")
      .def_property_readonly("mlir", &fa::Kernel::mlir,
                             "The fa.attention the kernel was compiled from.")
      .def_property_readonly("target", &fa::Kernel::target)
      .def_property_readonly("ptx", &fa::Kernel::ptx,
                             "The PTX of a GPU kernel (FAError for a host "
                             "kernel).")
      .def_property_readonly("spec", &fa::Kernel::spec);

  py::class_<Arg>(m, "Tensor",
                  "A numpy array or torch tensor as fa.attention read it.")
      .def_property_readonly(
          "obj", [](const Arg &a) { return a.obj; },
          "The array / tensor (a copy where its strides were negative).")
      .def_property_readonly(
          "framework", [](const Arg &a) { return a.torch ? "torch" : "numpy"; })
      .def_property_readonly("code",
                             [](const Arg &a) -> py::object {
                               if (!a.dtype)
                                 return py::none();
                               return py::str(codeOf(*a.dtype));
                             })
      .def_readonly("dtype_name", &Arg::dtypeName)
      .def_property_readonly(
          "shape", [](const Arg &a) { return py::tuple(py::cast(a.shape)); })
      .def_property_readonly(
          "strides",
          [](const Arg &a) { return py::tuple(py::cast(a.strides)); })
      .def_readonly("device", &Arg::device)
      .def_readonly("data_ptr", &Arg::data)
      .def_property_readonly("is_cpu", &Arg::isCpu);

  auto ref = py::return_value_policy::reference_internal;
  py::class_<Inputs>(m, "Inputs",
                     "Q, K, V, bias and ALiBi slopes of one call, checked.")
      .def_property_readonly(
          "q", [](Inputs &in) -> Arg & { return in.q; }, ref)
      .def_property_readonly(
          "k", [](Inputs &in) -> Arg & { return in.k; }, ref)
      .def_property_readonly(
          "v", [](Inputs &in) -> Arg & { return in.v; }, ref)
      .def_property_readonly(
          "bias", [](Inputs &in) { return optionalArg(in.bias); },
          "The bias with leading size-1 dims up to rank 4, or None.")
      .def_property_readonly("slopes",
                             [](Inputs &in) { return optionalArg(in.slopes); })
      .def_readonly("user_bias", &Inputs::userBias,
                    "The bias as the caller passed it.")
      .def_property_readonly("key", &Inputs::key,
                             "(dtype, D, Dv, bias layout, ALiBi layout, "
                             "on the CPU): what a kernel is compiled for.")
      .def_property_readonly("torch",
                             [](const Inputs &in) { return in.q.torch; })
      .def_property_readonly("is_cpu",
                             [](const Inputs &in) { return in.q.isCpu(); })
      .def_property_readonly(
          "out_shape",
          [](const Inputs &in) { return py::tuple(py::cast(in.outShape())); },
          "O's shape in the call's layout.")
      .def_readonly("bshd", &Inputs::bshd,
                    "Whether Q, K, V, O and dO are [B, N, H, D] (else [B, "
                    "H, N, D]).")
      .def_property_readonly("nk", &Inputs::nk)
      .def_property_readonly("lse_shape",
                             [](const Inputs &in) {
                               return py::make_tuple(in.b(), in.hq(), in.nq());
                             })
      .def_property_readonly(
          "empty",
          [](const Inputs &in) { return in.b() * in.hq() * in.nq() == 0; },
          "Whether O is empty (nothing to compute).")
      .def("check_grads", &checkGrads, py::arg("api"), py::arg("out"),
           py::arg("dout"), py::arg("lse"),
           "Checks the backward's O, dO and lse against Q, K, V.")
      .def("check_out", &checkOut, py::arg("api"), py::arg("out"),
           "Checks the forward's O given by the caller (out=) against Q, K, "
           "V.");

  m.def("check_inputs", &checkInputs, py::arg("api"), py::arg("q"),
        py::arg("k"), py::arg("v"), py::arg("bias") = py::none(),
        py::arg("alibi_slopes") = py::none(), py::arg("bshd") = false,
        "fa.attention's checks of Q, K, V, bias and ALiBi slopes (Q, K, V "
        "[B, N, H, D] with bshd, else [B, H, N, D]); raises TypeError / "
        "ValueError naming `api` and the argument.");
  m.def(
      "tensor",
      [](const std::string &api, const std::string &name, const py::handle &x) {
        return tensorArg(api, name.c_str(), x);
      },
      py::arg("api"), py::arg("name"), py::arg("x"),
      "One array / tensor argument as check_inputs reads it.");
  m.def(
      "as_tensor",
      [](const py::handle &x) -> py::object {
        std::optional<Arg> arg = readTensor(x);
        return arg ? py::cast(std::move(*arg)) : py::none();
      },
      py::arg("x"), "`x` as an fa._C.Tensor, or None.");

  m.def(
      "compile",
      [](const fa::AttentionSpec &spec, const std::string &target) {
        py::gil_scoped_release release;
        return fa::compile(spec, target);
      },
      py::arg("spec"), py::arg("target") = "host",
      "Compiles `spec` for `target` (\"host\").");
  m.def("version", &fa::version);
  m.def(
      "run_pipeline",
      [](const std::string &mlir, const std::string &pipeline) {
        py::gil_scoped_release release;
        return fa::runPipeline(mlir, pipeline);
      },
      py::arg("mlir"), py::arg("pipeline"),
      "Runs a textual pass pipeline on MLIR text and returns the result.");
}
