//===- bindings.cpp - fa._C: FA's C++ API for Python ----------------------===//
//
// A thin pybind11 layer over include/fa/fa.h. Tensors come in two forms:
//   - numpy arrays (ml_dtypes.bfloat16 ones included) and other objects with
//     the array interface (__array_interface__), or with the buffer protocol;
//     strides in bytes are converted to elements. The array interface is read
//     at the Python level, so any numpy (1.x or 2.x) works with any pybind11;
//   - a raw tuple (data_ptr, dtype, shape, strides, device), strides in
//     elements, so that the Python layer can pass torch tensors without this
//     module depending on torch.
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

fa::Device parseDevice(const py::handle &obj, const std::string &what) {
  if (py::isinstance<fa::Device>(obj))
    return obj.cast<fa::Device>();
  if (py::isinstance<py::str>(obj)) {
    std::string name = obj.cast<std::string>();
    if (name == "cpu")
      return fa::Device::CPU;
    if (name == "cuda" || name.rfind("cuda:", 0) == 0)
      return fa::Device::CUDA;
    throw py::value_error(what + ": unsupported device '" + name + "'");
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

/// A raw (data_ptr, dtype, shape, strides, device) tuple.
fa::TensorView viewFromTuple(const py::tuple &t, const std::string &name) {
  if (t.size() != 5)
    throw py::value_error(name +
                          ": a raw tensor is a tuple (data_ptr, dtype, "
                          "shape, strides, device), got " +
                          std::to_string(t.size()) + " items");
  fa::TensorView view;
  view.data = reinterpret_cast<void *>(t[0].cast<uintptr_t>());
  view.dtype = parseDType(t[1], name);
  view.shape = t[2].cast<std::vector<int64_t>>();
  if (!t[3].is_none())
    view.strides = t[3].cast<std::vector<int64_t>>();
  view.device = parseDevice(t[4], name);
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

void forward(const fa::Kernel &kernel, const py::object &q, const py::object &k,
             const py::object &v, const py::object &out, const py::object &lse,
             const py::object &bias, const py::object &alibiSlopes,
             int64_t dropoutSeed, uintptr_t stream,
             const py::object &captures) {
  fa::TensorView qView = toView(q, "q", false);
  fa::TensorView kView = toView(k, "k", false);
  fa::TensorView vView = toView(v, "v", false);
  fa::TensorView outView = toView(out, "out", true);
  std::optional<fa::TensorView> lseView = toOptionalView(lse, "lse", true);
  std::optional<fa::TensorView> biasView = toOptionalView(bias, "bias", false);
  std::optional<fa::TensorView> slopesView =
      toOptionalView(alibiSlopes, "alibi_slopes", false);
  std::vector<fa::TensorView> captureViews = toCaptureViews(captures);
  // The caller keeps every tensor alive for the duration of the call.
  py::gil_scoped_release release;
  kernel.forward(qView, kView, vView, outView, lseView ? &*lseView : nullptr,
                 biasView ? &*biasView : nullptr,
                 slopesView ? &*slopesView : nullptr, dropoutSeed,
                 reinterpret_cast<void *>(stream), captureViews);
}

void backward(const fa::Kernel &kernel, const py::object &q,
              const py::object &k, const py::object &v, const py::object &out,
              const py::object &dout, const py::object &lse,
              const py::object &dq, const py::object &dk, const py::object &dv,
              const py::object &bias, const py::object &alibiSlopes,
              int64_t dropoutSeed, uintptr_t stream, const py::object &dbias,
              const py::object &captures) {
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
  py::gil_scoped_release release;
  kernel.backward(qView, kView, vView, outView, doutView, lseView, dqView,
                  dkView, dvView, biasView ? &*biasView : nullptr,
                  slopesView ? &*slopesView : nullptr, dropoutSeed,
                  reinterpret_cast<void *>(stream),
                  dbiasView ? &*dbiasView : nullptr, captureViews);
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
      .def("forward", &forward, py::arg("q"), py::arg("k"), py::arg("v"),
           py::arg("out"), py::arg("lse") = py::none(),
           py::arg("bias") = py::none(), py::arg("alibi_slopes") = py::none(),
           py::arg("dropout_seed") = 0, py::arg("stream") = 0,
           py::arg("captures") = py::tuple(),
           "Runs the kernel: O (and lse) are written into `out` (and `lse`); "
           "a GPU kernel runs on `stream` (a CUstream as an int).")
      .def("backward", &backward, py::arg("q"), py::arg("k"), py::arg("v"),
           py::arg("out"), py::arg("dout"), py::arg("lse"), py::arg("dq"),
           py::arg("dk"), py::arg("dv"), py::arg("bias") = py::none(),
           py::arg("alibi_slopes") = py::none(), py::arg("dropout_seed") = 0,
           py::arg("stream") = 0, py::arg("dbias") = py::none(),
           py::arg("captures") = py::tuple(),
           "Gradients: dQ, dK, dV (and dBias) are written into `dq`, `dk`, "
           "`dv` (and `dbias`) from forward's inputs, its `out` and `lse`, "
           "and `dout` = dLoss/dO. The backward kernel is compiled on the "
           "first call.")
      .def_property_readonly("mlir", &fa::Kernel::mlir,
                             "The fa.attention the kernel was compiled from.")
      .def_property_readonly("target", &fa::Kernel::target)
      .def_property_readonly("ptx", &fa::Kernel::ptx,
                             "The PTX of a GPU kernel (FAError for a host "
                             "kernel).")
      .def_property_readonly("spec", &fa::Kernel::spec);

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
