//===- torch_fast.cpp - fa.attention's forward on torch tensors, in C++
//----===//
//
// fa._torch_fast: the eager forward of a variant fa.attention has already
// run, taken without Python in between. It reads Q, K, V as at::Tensors,
// allocates O (and the lse) with at::empty, takes torch's current CUDA
// stream, and launches through fa::Kernel::forward, which checks every view.
//
// It is built against the torch it runs with (its ABI is torch's), and only
// answers what it knows: anything else (a variant not yet remembered, a
// tensor it does not read, a view the kernel rejects) returns None, and the
// caller takes the checked path, which gives the error messages. fa._core
// remembers a kernel after that path ran it on the same kind of inputs.
//
//===----------------------------------------------------------------------===//

#include "fa/fa.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>
#ifdef FA_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace {

/// What selects a kernel besides Q, K and V's sizes: the checked options
/// (a memoized object, kept alive here so that its address stays its own),
/// the dtype, the head dims, the device, the lse and the layout.
struct Key {
  PyObject *options;
  int8_t dtype;
  int8_t deviceType;
  int16_t deviceIndex;
  int64_t headDim, headDimV;
  bool lse, bshd;
  bool operator==(const Key &o) const {
    return options == o.options && dtype == o.dtype &&
           deviceType == o.deviceType && deviceIndex == o.deviceIndex &&
           headDim == o.headDim && headDimV == o.headDimV && lse == o.lse &&
           bshd == o.bshd;
  }
};

struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t h = std::hash<const void *>()(k.options);
    for (int64_t x :
         {int64_t(k.dtype), int64_t(k.deviceType), int64_t(k.deviceIndex),
          k.headDim, k.headDimV, int64_t(k.lse), int64_t(k.bshd)})
      h = h * 1000003u ^ std::hash<int64_t>()(x);
    return h;
  }
};

/// A remembered kernel: the Python object that owns it (a strong reference)
/// and the fa::Kernel inside.
struct Entry {
  PyObject *owner;
  const fa::Kernel *kernel;
  bool deterministic; ///< Its backward's dQ (deterministic algorithms).
};

// Guarded by the GIL.
std::unordered_map<Key, Entry, KeyHash> kernels;
constexpr size_t kMaxKernels = 64;
int64_t hits = 0, misses = 0;

void clearKernels() {
  for (auto &[key, entry] : kernels) {
    Py_DECREF(key.options);
    Py_DECREF(entry.owner);
  }
  kernels.clear();
}

std::optional<fa::DType> toDType(c10::ScalarType t) {
  switch (t) {
  case c10::ScalarType::Half:
    return fa::DType::F16;
  case c10::ScalarType::BFloat16:
    return fa::DType::BF16;
  case c10::ScalarType::Float:
    return fa::DType::F32;
  default:
    return std::nullopt;
  }
}

/// The key of (q, k, v) with the options, or none where this module does
/// not take the call: not three rank-4 tensors of one dtype it knows, on
/// the host or CUDA, with data.
std::optional<Key> keyOf(PyObject *options, PyObject *qObj, PyObject *kObj,
                         PyObject *vObj, bool lse, bool bshd) {
  if (!THPVariable_Check(qObj) || !THPVariable_Check(kObj) ||
      !THPVariable_Check(vObj))
    return std::nullopt;
  const at::Tensor &q = THPVariable_Unpack(qObj);
  const at::Tensor &v = THPVariable_Unpack(vObj);
  if (q.dim() != 4 || v.dim() != 4 || !toDType(q.scalar_type()))
    return std::nullopt;
  c10::Device device = q.device();
#ifdef FA_TORCH_CUDA
  if (!device.is_cpu() && !device.is_cuda())
    return std::nullopt;
#else
  if (!device.is_cpu()) // no current stream to run on
    return std::nullopt;
#endif
  return Key{options,
             int8_t(q.scalar_type()),
             int8_t(device.type()),
             int16_t(device.index()),
             q.size(3),
             v.size(3),
             lse,
             bshd};
}

/// A tensor of the call's layout as the kernel reads it, [B, H, N, D];
/// none for a dtype or device other than Q's kinds.
std::optional<fa::TensorView> viewOf(const at::Tensor &t, bool bshd) {
  std::optional<fa::DType> dtype = toDType(t.scalar_type());
  if (!dtype || t.dim() != 4 || !t.has_storage())
    return std::nullopt;
  fa::TensorView view;
  view.data = t.data_ptr();
  view.dtype = *dtype;
  view.shape.assign(t.sizes().begin(), t.sizes().end());
  view.strides.assign(t.strides().begin(), t.strides().end());
  if (t.is_cuda()) {
    view.device = fa::Device::CUDA;
    view.deviceIndex = t.get_device();
  } else if (!t.is_cpu()) {
    return std::nullopt;
  }
  if (bshd) {
    std::swap(view.shape[1], view.shape[2]);
    std::swap(view.strides[1], view.strides[2]);
  }
  return view;
}

bool parseArgs(PyObject *const *args, Py_ssize_t n, Py_ssize_t want,
               const char *name) {
  if (n == want)
    return true;
  PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, got %zd", name, want,
               n);
  return false;
}

/// The lse [B, Hq, Nq] (f32) as the kernel reads it, on the device of `like`.
fa::TensorView lseView(const at::Tensor &lse, const fa::TensorView &like) {
  fa::TensorView view = like;
  view.data = lse.data_ptr();
  view.dtype = fa::DType::F32;
  view.shape.assign(lse.sizes().begin(), lse.sizes().end());
  view.strides.assign(lse.strides().begin(), lse.strides().end());
  return view;
}

/// torch's current stream on q's device (null on the host).
void *currentStream(const at::Tensor &q) {
#ifdef FA_TORCH_CUDA
  if (q.is_cuda())
    return c10::cuda::getCurrentCUDAStream(q.get_device()).stream();
#endif
  return nullptr;
}

/// Runs `call` without the GIL (a host kernel computes, a GPU one may
/// compile); false where it threw, for the checked path to say why.
template <typename Call> bool callReleased(Call &&call) {
  bool ok = true;
  Py_BEGIN_ALLOW_THREADS;
  try {
    call();
  } catch (const std::exception &) {
    ok = false;
  }
  Py_END_ALLOW_THREADS;
  return ok;
}

/// The tensors as one Python object (a tuple of several), counting a call
/// taken; null with a Python error set where wrapping failed.
PyObject *wrap(std::initializer_list<at::Tensor> tensors) {
  ++hits;
  std::vector<PyObject *> objects;
  for (const at::Tensor &t : tensors)
    objects.push_back(THPVariable_Wrap(t));
  PyObject *result = nullptr;
  if (std::all_of(objects.begin(), objects.end(),
                  [](PyObject *o) { return o != nullptr; }))
    result = objects.size() == 1 ? Py_NewRef(objects[0])
                                 : PyTuple_New(objects.size());
  if (result && objects.size() > 1)
    for (size_t i = 0; i < objects.size(); ++i)
      PyTuple_SET_ITEM(result, i, Py_NewRef(objects[i]));
  for (PyObject *object : objects)
    Py_XDECREF(object);
  return result;
}

/// forward(options, q, k, v, return_lse, bshd): O, or (O, lse); None where
/// the checked path must take the call.
PyObject *forward(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (!parseArgs(args, n, 6, "forward"))
    return nullptr;
  bool lse = PyObject_IsTrue(args[4]) == 1, bshd = args[5] == Py_True;
  std::optional<Key> key = keyOf(args[0], args[1], args[2], args[3], lse, bshd);
  auto it = key ? kernels.find(*key) : kernels.end();
  if (it == kernels.end()) {
    ++misses;
    Py_RETURN_NONE;
  }
  const at::Tensor &q = THPVariable_Unpack(args[1]);
  const at::Tensor &k = THPVariable_Unpack(args[2]);
  const at::Tensor &v = THPVariable_Unpack(args[3]);
  int64_t b = q.size(0), hq = q.size(bshd ? 2 : 1), nq = q.size(bshd ? 1 : 2);
  // Empty outputs, and any kind of view the kernel would refuse, take the
  // checked path (its messages name the argument and the layout).
  if (b * hq * nq == 0 || k.dim() != 4 || k.numel() == 0)
    Py_RETURN_NONE;
  std::optional<fa::TensorView> qv = viewOf(q, bshd), kv = viewOf(k, bshd),
                                vv = viewOf(v, bshd);
  if (!qv || !kv || !vv)
    Py_RETURN_NONE;
  Entry entry = it->second;
  Py_INCREF(entry.owner); // alive while the GIL is released
  PyObject *result = nullptr;
  try {
    int64_t dv = v.size(3);
    std::vector<int64_t> shape = {b, hq, nq, dv};
    if (bshd)
      std::swap(shape[1], shape[2]);
    at::Tensor o = at::empty(shape, q.options());
    std::optional<fa::TensorView> ov = viewOf(o, bshd), lv;
    std::optional<at::Tensor> l;
    if (lse) {
      l = at::empty({b, hq, nq}, q.options().dtype(at::kFloat));
      lv = lseView(*l, *ov);
    }
    void *stream = currentStream(q);
    bool ran = callReleased([&] {
      entry.kernel->forward(*qv, *kv, *vv, *ov, lv ? &*lv : nullptr, nullptr,
                            nullptr, 0, stream);
    });
    if (!ran)
      result = Py_NewRef(Py_None);
    else
      result = l ? wrap({o, *l}) : wrap({o});
  } catch (const std::exception &) {
    result = Py_NewRef(Py_None);
  }
  Py_DECREF(entry.owner);
  return result;
}

/// backward(options, q, k, v, out, dout, lse, bshd): (dQ, dK, dV) of a
/// forward this module ran under autograd (the kernel with the lse), in the
/// layout of q, k, v; None where the checked path must take the call.
PyObject *backward(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (!parseArgs(args, n, 8, "backward"))
    return nullptr;
  bool bshd = args[7] == Py_True;
  std::optional<Key> key =
      keyOf(args[0], args[1], args[2], args[3], true, bshd);
  auto it = key ? kernels.find(*key) : kernels.end();
  if (it == kernels.end())
    Py_RETURN_NONE;
  for (int i = 4; i < 7; ++i)
    if (!THPVariable_Check(args[i]))
      Py_RETURN_NONE;
  const at::Tensor &q = THPVariable_Unpack(args[1]);
  // A GPU kernel's dQ is deterministic under torch's deterministic
  // algorithms (another kernel: the checked path finds it).
  if (q.is_cuda() &&
      it->second.deterministic != at::globalContext().deterministicAlgorithms())
    Py_RETURN_NONE;
  const at::Tensor &k = THPVariable_Unpack(args[2]);
  const at::Tensor &v = THPVariable_Unpack(args[3]);
  const at::Tensor &out = THPVariable_Unpack(args[4]);
  const at::Tensor &lse = THPVariable_Unpack(args[6]);
  at::Tensor dout = THPVariable_Unpack(args[5]);
  if (q.numel() == 0 || k.numel() == 0 || lse.dim() != 3)
    Py_RETURN_NONE;
  Entry entry = it->second;
  Py_INCREF(entry.owner);
  PyObject *result = nullptr;
  try {
    // Autograd hands a sum's gradient over expanded (stride 0).
    if (dout.dim() == 4 && dout.stride(3) != 1)
      dout = dout.contiguous();
    at::Tensor dq = at::empty(q.sizes(), q.options());
    at::Tensor dk = at::empty(k.sizes(), k.options());
    at::Tensor dv = at::empty(v.sizes(), v.options());
    std::optional<fa::TensorView> qv = viewOf(q, bshd), kv = viewOf(k, bshd),
                                  vv = viewOf(v, bshd), ov = viewOf(out, bshd),
                                  dov = viewOf(dout, bshd),
                                  dqv = viewOf(dq, bshd),
                                  dkv = viewOf(dk, bshd),
                                  dvv = viewOf(dv, bshd);
    bool ran = false;
    if (qv && kv && vv && ov && dov && lse.scalar_type() == at::kFloat &&
        lse.has_storage()) {
      fa::TensorView lv = lseView(lse, *qv);
      void *stream = currentStream(q);
      std::optional<at::Tensor> workspace;
      std::optional<fa::TensorView> wv;
      if (q.is_cuda()) {
        size_t bytes = 0;
        // Compiles the backward on its first call.
        callReleased([&] {
          bytes = entry.kernel->backwardWorkspaceBytes(q.size(0), qv->shape[1],
                                                       qv->shape[2]);
        });
        if (bytes) {
          // From torch's caching allocator, on the stream: no cuMemAlloc.
          workspace = at::empty({int64_t(bytes)}, q.options().dtype(at::kByte));
          wv = fa::TensorView{workspace->data_ptr(), fa::DType::I8,
                              {int64_t(bytes)},      {1},
                              fa::Device::CUDA,      q.get_device()};
        }
      }
      ran = callReleased([&] {
        entry.kernel->backward(*qv, *kv, *vv, *ov, *dov, lv, *dqv, *dkv, *dvv,
                               nullptr, nullptr, 0, stream, nullptr, {},
                               wv ? &*wv : nullptr);
      });
    }
    result = ran ? wrap({dq, dk, dv}) : Py_NewRef(Py_None);
  } catch (const std::exception &) {
    result = Py_NewRef(Py_None);
  }
  Py_DECREF(entry.owner);
  return result;
}

/// remember(options, q, k, v, return_lse, bshd, owner, address,
/// deterministic): the kernel (an fa::Kernel at `address`, owned by `owner`,
/// its dQ deterministic or not) that ran these inputs.
PyObject *remember(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (!parseArgs(args, n, 9, "remember"))
    return nullptr;
  bool lse = PyObject_IsTrue(args[4]) == 1, bshd = args[5] == Py_True;
  std::optional<Key> key = keyOf(args[0], args[1], args[2], args[3], lse, bshd);
  void *address = PyLong_AsVoidPtr(args[7]);
  if (PyErr_Occurred())
    return nullptr;
  if (!key || !address || kernels.count(*key))
    Py_RETURN_NONE;
  if (kernels.size() >= kMaxKernels)
    clearKernels();
  Py_INCREF(key->options);
  Py_INCREF(args[6]);
  kernels.emplace(*key, Entry{args[6], static_cast<const fa::Kernel *>(address),
                              args[8] == Py_True});
  Py_RETURN_NONE;
}

PyObject *clear(PyObject *, PyObject *) {
  clearKernels();
  Py_RETURN_NONE;
}

/// stats(): (calls taken, calls not found, kernels remembered).
PyObject *stats(PyObject *, PyObject *) {
  return Py_BuildValue("(LLn)", static_cast<long long>(hits),
                       static_cast<long long>(misses),
                       static_cast<Py_ssize_t>(kernels.size()));
}

PyMethodDef methods[] = {
    {"forward",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(forward)),
     METH_FASTCALL,
     "forward(options, q, k, v, return_lse, bshd): O or (O, lse), or None "
     "where the checked path must take the call."},
    {"backward",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(backward)),
     METH_FASTCALL,
     "backward(options, q, k, v, out, dout, lse, bshd): (dQ, dK, dV), or None "
     "where the checked path must take the call."},
    {"remember",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(remember)),
     METH_FASTCALL,
     "remember(options, q, k, v, return_lse, bshd, owner, address, "
     "deterministic): the kernel the checked path ran on such inputs."},
    {"clear", clear, METH_NOARGS, "Forgets the remembered kernels."},
    {"stats", stats, METH_NOARGS,
     "(calls taken, calls not found, kernels remembered)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_torch_fast",
                      "fa.attention's eager forward on torch tensors, in C++.",
                      -1, methods};

} // namespace

PyMODINIT_FUNC PyInit__torch_fast() { return PyModule_Create(&module); }
