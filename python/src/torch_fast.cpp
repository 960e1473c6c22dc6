//===- torch_fast.cpp - fa.attention on torch tensors, in C++ -------------===//
//
// fa._torch_fast: the eager calls of a variant fa.attention has already
// run, taken without Python in between. It reads Q, K, V as at::Tensors,
// allocates O (and the lse) with at::empty, takes torch's current CUDA
// stream, and launches through fa::Kernel::forward, which checks every view.
// Under autograd the call is a C++ autograd Function, so that neither the
// forward nor the backward goes through Python.
//
// It is built against the torch it runs with (its ABI is torch's), and only
// answers what it knows: anything else (a variant not yet remembered, a
// tensor it does not read, a view the kernel rejects) returns None, and the
// caller takes the checked path, which gives the error messages. fa._core
// remembers a kernel after that path ran it on the same kind of inputs. A
// backward the node cannot run itself calls the checked one in fa._torch.
//
//===----------------------------------------------------------------------===//

#include "fa/fa.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <Python.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/python_variable.h>
#ifdef FA_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace {

/// What selects a kernel besides Q, K and V's sizes: the checked options
/// (a memoized object, kept alive here so that its address stays its own),
/// the dtype, the head dims, the device, the lse, the layout and, on a GPU,
/// the backward's dQ (deterministic algorithms or not).
struct Key {
  PyObject *options;
  int8_t dtype;
  int8_t deviceType;
  int16_t deviceIndex;
  int64_t headDim, headDimV;
  bool lse, bshd, deterministic;
  bool operator==(const Key &o) const {
    return options == o.options && dtype == o.dtype &&
           deviceType == o.deviceType && deviceIndex == o.deviceIndex &&
           headDim == o.headDim && headDimV == o.headDimV && lse == o.lse &&
           bshd == o.bshd && deterministic == o.deterministic;
  }
};

struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t h = std::hash<const void *>()(k.options);
    for (int64_t x :
         {int64_t(k.dtype), int64_t(k.deviceType), int64_t(k.deviceIndex),
          k.headDim, k.headDimV, int64_t(k.lse), int64_t(k.bshd),
          int64_t(k.deterministic)})
      h = h * 1000003u ^ std::hash<int64_t>()(x);
    return h;
  }
};

/// Holds the GIL in a scope, on any thread.
struct GilScope {
  PyGILState_STATE state = PyGILState_Ensure();
  ~GilScope() { PyGILState_Release(state); }
};

/// A remembered kernel (a copy shares the compiled kernel) and what the
/// backward of its autograd nodes needs: the checked options (a strong
/// reference, for the checked backward) and the layout. Shared by the map
/// and the nodes that ran it, so that fa.clear_cache() ends no node.
struct Entry : c10::intrusive_ptr_target {
  Entry(fa::Kernel kernel, bool deterministic, PyObject *options, bool bshd)
      : kernel(std::move(kernel)), deterministic(deterministic),
        options(Py_NewRef(options)), bshd(bshd) {}
  ~Entry() override {
    if (!Py_IsInitialized())
      return; // after the interpreter: nothing to release
    GilScope gil;
    Py_DECREF(options);
  }
  fa::Kernel kernel;
  bool deterministic; ///< Its backward's dQ (deterministic algorithms).
  PyObject *options;
  bool bshd;
};

// Guarded by the GIL. Never destroyed: at exit its kernels would be
// destroyed after what they use (libfa's and LLVM's statics).
using EntryRef = c10::intrusive_ptr<Entry>;
std::unordered_map<Key, EntryRef, KeyHash> &kernels =
    *new std::unordered_map<Key, EntryRef, KeyHash>();
constexpr size_t kMaxKernels = 64;
// Backwards run on autograd's threads, without the GIL.
std::atomic<int64_t> hits = 0, misses = 0, fallbacks = 0;

void clearKernels() {
  for (auto &[key, entry] : kernels)
    Py_DECREF(key.options);
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
/// the host or CUDA, with data. `deterministic`: the kernel's dQ (by
/// default, what torch's deterministic algorithms ask for now).
std::optional<Key> keyOf(PyObject *options, PyObject *qObj, PyObject *kObj,
                         PyObject *vObj, bool lse, bool bshd,
                         std::optional<bool> deterministic = std::nullopt) {
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
             bshd,
             device.is_cuda() &&
                 deterministic.value_or(
                     at::globalContext().deterministicAlgorithms())};
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

/// Runs `call` without the GIL where this thread holds it (a host kernel
/// computes, a GPU one may compile); autograd's threads do not.
template <typename Call> void callReleased(Call &&call) {
  if (!PyGILState_Check()) {
    call();
    return;
  }
  PyThreadState *state = PyEval_SaveThread();
  try {
    call();
  } catch (...) {
    PyEval_RestoreThread(state);
    throw;
  }
  PyEval_RestoreThread(state);
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

/// O (and the lse, f32 [B, Hq, Nq]) of `kernel` on q, k, v in the call's
/// layout; throws where the kernel refuses a view.
std::pair<at::Tensor, std::optional<at::Tensor>>
runForward(const fa::Kernel &kernel, const at::Tensor &q, const at::Tensor &k,
           const at::Tensor &v, bool lse, bool bshd) {
  std::optional<fa::TensorView> qv = viewOf(q, bshd), kv = viewOf(k, bshd),
                                vv = viewOf(v, bshd);
  if (!qv || !kv || !vv)
    throw std::invalid_argument("not a view fa._torch_fast reads");
  int64_t b = qv->shape[0], hq = qv->shape[1], nq = qv->shape[2];
  std::vector<int64_t> shape = {b, hq, nq, v.size(3)};
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
  callReleased([&] {
    kernel.forward(*qv, *kv, *vv, *ov, lv ? &*lv : nullptr, nullptr, nullptr, 0,
                   stream);
  });
  return {o, l};
}

/// dQ, dK, dV of `entry`'s forward (with the lse) in the layout of q, k, v;
/// none where it does not run this backward (the checked path says why).
std::optional<std::array<at::Tensor, 3>>
runBackward(const Entry &entry, const at::Tensor &q, const at::Tensor &k,
            const at::Tensor &v, const at::Tensor &out, at::Tensor dout,
            const at::Tensor &lse, bool bshd) {
  // A GPU kernel's dQ is deterministic under torch's deterministic
  // algorithms (another kernel: the checked path finds it).
  if (q.is_cuda() &&
      entry.deterministic != at::globalContext().deterministicAlgorithms())
    return std::nullopt;
  if (q.numel() == 0 || k.numel() == 0 || lse.dim() != 3 ||
      lse.scalar_type() != at::kFloat || !lse.has_storage())
    return std::nullopt;
  try {
    // Autograd hands a sum's gradient over expanded (stride 0).
    if (dout.dim() == 4 && dout.stride(3) != 1)
      dout = dout.contiguous();
    std::array<at::Tensor, 3> grads = {at::empty(q.sizes(), q.options()),
                                       at::empty(k.sizes(), k.options()),
                                       at::empty(v.sizes(), v.options())};
    std::optional<fa::TensorView> qv = viewOf(q, bshd), kv = viewOf(k, bshd),
                                  vv = viewOf(v, bshd), ov = viewOf(out, bshd),
                                  dov = viewOf(dout, bshd),
                                  dqv = viewOf(grads[0], bshd),
                                  dkv = viewOf(grads[1], bshd),
                                  dvv = viewOf(grads[2], bshd);
    if (!qv || !kv || !vv || !ov || !dov)
      return std::nullopt;
    fa::TensorView lv = lseView(lse, *qv);
    void *stream = currentStream(q);
    std::optional<at::Tensor> workspace;
    std::optional<fa::TensorView> wv;
    if (q.is_cuda()) {
      size_t bytes = 0;
      // Compiles the backward on its first call.
      callReleased([&] {
        bytes = entry.kernel.backwardWorkspaceBytes(q.size(0), qv->shape[1],
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
    callReleased([&] {
      entry.kernel.backward(*qv, *kv, *vv, *ov, *dov, lv, *dqv, *dkv, *dvv,
                            nullptr, nullptr, 0, stream, nullptr, {},
                            wv ? &*wv : nullptr);
    });
    return grads;
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

/// A tensor of no elements that holds a reference to `entry`: saved with
/// a node's tensors, it keeps the entry as long as they live (an int of
/// saved_data, unlike a capsule, is what compiled autograd can key on).
at::Tensor holderOf(const EntryRef &entry) {
  Entry *raw = entry.get();
  c10::raw::intrusive_ptr::incref(raw);
  return at::from_blob(
      raw, {0},
      [](void *p) { c10::raw::intrusive_ptr::decref(static_cast<Entry *>(p)); },
      at::TensorOptions().dtype(at::kByte));
}

/// fa::attention's autograd formula for the calls taken here: O, and the
/// lse (saved, and handed out through `lse` rather than as an output: it
/// has no gradient, and compiled autograd takes no non-differentiable
/// outputs); the backward's dQ, dK, dV from the kernel, or from
/// fa._torch's checked backward where the kernel does not run it (another
/// dQ kernel under deterministic algorithms, a view it refuses), which also
/// raises the checked path's errors.
struct Attention : torch::autograd::Function<Attention> {
  static torch::autograd::variable_list
  forward(torch::autograd::AutogradContext *ctx, const at::Tensor &q,
          const at::Tensor &k, const at::Tensor &v, const EntryRef &entry,
          at::Tensor *lse) {
    auto [o, l] = runForward(entry->kernel, q, k, v, true, entry->bshd);
    *lse = *l;
    ctx->save_for_backward({q, k, v, o, *l, holderOf(entry)});
    ctx->saved_data["entry"] = int64_t(reinterpret_cast<intptr_t>(entry.get()));
    // An unused O: no zeros made for its gradient.
    ctx->set_materialize_grads(false);
    return {o};
  }

  static torch::autograd::variable_list
  backward(torch::autograd::AutogradContext *ctx,
           torch::autograd::variable_list grads) {
    if (!grads[0].defined()) // O has no gradient
      return torch::autograd::variable_list(5);
    // The saved holder keeps the entry.
    torch::autograd::variable_list saved = ctx->get_saved_variables();
    const Entry &entry = *reinterpret_cast<const Entry *>(
        static_cast<intptr_t>(ctx->saved_data["entry"].toInt()));
    if (auto g = runBackward(entry, saved[0], saved[1], saved[2], saved[3],
                             grads[0], saved[4], entry.bshd)) {
      ++hits;
      return {(*g)[0], (*g)[1], (*g)[2], at::Tensor(), at::Tensor()};
    }
    ++fallbacks;
    return checkedBackward(entry, saved, grads[0]);
  }

  /// fa._torch._checked_backward(options, q, k, v, out, dout, lse, bshd).
  static torch::autograd::variable_list
  checkedBackward(const Entry &entry,
                  const torch::autograd::variable_list &saved,
                  const at::Tensor &dout) {
    GilScope gil;
    PyObject *function = nullptr, *result = nullptr;
    if (PyObject *module = PyImport_ImportModule("fa._torch")) {
      function = PyObject_GetAttrString(module, "_checked_backward");
      Py_DECREF(module);
    }
    if (function) {
      PyObject *args[8] = {Py_NewRef(entry.options),
                           THPVariable_Wrap(saved[0]),
                           THPVariable_Wrap(saved[1]),
                           THPVariable_Wrap(saved[2]),
                           THPVariable_Wrap(saved[3]),
                           THPVariable_Wrap(dout),
                           THPVariable_Wrap(saved[4]),
                           Py_NewRef(entry.bshd ? Py_True : Py_False)};
      if (std::all_of(std::begin(args), std::end(args),
                      [](PyObject *o) { return o != nullptr; }))
        result = PyObject_Vectorcall(function, args, 8, nullptr);
      for (PyObject *arg : args)
        Py_XDECREF(arg);
      Py_DECREF(function);
    }
    torch::autograd::variable_list grads;
    if (result && PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 3)
      for (Py_ssize_t i = 0; i < 3; ++i)
        if (THPVariable_Check(PyTuple_GET_ITEM(result, i)))
          grads.push_back(THPVariable_Unpack(PyTuple_GET_ITEM(result, i)));
    Py_XDECREF(result);
    if (grads.size() == 3) {
      grads.resize(5); // none for the entry and the lse's place
      return grads;
    }
    if (!PyErr_Occurred())
      PyErr_SetString(
          PyExc_RuntimeError,
          "fa._torch._checked_backward did not return (dQ, dK, dV)");
    python_error error;
    error.persist();
    throw error;
  }
};

/// forward(options, q, k, v, return_lse, bshd): O, or (O, lse); None where
/// the checked path must take the call. Where grad is on and Q, K or V
/// requires it, O comes from the autograd Function above.
PyObject *forward(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (!parseArgs(args, n, 6, "forward"))
    return nullptr;
  bool returnLse = PyObject_IsTrue(args[4]) == 1, bshd = args[5] == Py_True;
  bool grad = false;
  if (THPVariable_Check(args[1]) && THPVariable_Check(args[2]) &&
      THPVariable_Check(args[3]))
    grad = at::GradMode::is_enabled() &&
           (THPVariable_Unpack(args[1]).requires_grad() ||
            THPVariable_Unpack(args[2]).requires_grad() ||
            THPVariable_Unpack(args[3]).requires_grad());
  // Under autograd the kernel is the one that writes the lse (saved).
  std::optional<Key> key =
      keyOf(args[0], args[1], args[2], args[3], returnLse || grad, bshd);
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
  EntryRef entry = it->second; // alive while the GIL is released
  try {
    if (grad) {
      at::Tensor lse;
      torch::autograd::variable_list o = Attention::apply(q, k, v, entry, &lse);
      return returnLse ? wrap({o[0], lse}) : wrap({o[0]});
    }
    auto [o, lse] = runForward(entry->kernel, q, k, v, returnLse, bshd);
    return lse ? wrap({o, *lse}) : wrap({o});
  } catch (const std::exception &) {
    Py_RETURN_NONE;
  }
}

/// remember(options, q, k, v, return_lse, bshd, kernel, deterministic): the
/// kernel (the fa::Kernel at address `kernel`, its dQ deterministic or not)
/// that ran these inputs; this module keeps a copy.
PyObject *remember(PyObject *, PyObject *const *args, Py_ssize_t n) {
  if (!parseArgs(args, n, 8, "remember"))
    return nullptr;
  bool lse = PyObject_IsTrue(args[4]) == 1, bshd = args[5] == Py_True;
  bool deterministic = args[7] == Py_True;
  std::optional<Key> key =
      keyOf(args[0], args[1], args[2], args[3], lse, bshd, deterministic);
  void *address = PyLong_AsVoidPtr(args[6]);
  if (PyErr_Occurred())
    return nullptr;
  if (!key || !address || kernels.count(*key))
    Py_RETURN_NONE;
  if (kernels.size() >= kMaxKernels)
    clearKernels();
  Py_INCREF(key->options);
  kernels.emplace(*key, c10::make_intrusive<Entry>(
                            *static_cast<const fa::Kernel *>(address),
                            deterministic, args[0], bshd));
  Py_RETURN_NONE;
}

PyObject *clear(PyObject *, PyObject *) {
  clearKernels();
  Py_RETURN_NONE;
}

/// stats(): (calls taken, calls not found, kernels remembered, backwards
/// of its autograd nodes that the checked path ran).
PyObject *stats(PyObject *, PyObject *) {
  return Py_BuildValue("(LLnL)", static_cast<long long>(hits),
                       static_cast<long long>(misses),
                       static_cast<Py_ssize_t>(kernels.size()),
                       static_cast<long long>(fallbacks));
}

PyMethodDef methods[] = {
    {"forward",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(forward)),
     METH_FASTCALL,
     "forward(options, q, k, v, return_lse, bshd): O or (O, lse), or None "
     "where the checked path must take the call."},
    {"remember",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void *>(remember)),
     METH_FASTCALL,
     "remember(options, q, k, v, return_lse, bshd, kernel, deterministic): "
     "the kernel (its address) the checked path ran on such inputs."},
    {"clear", clear, METH_NOARGS, "Forgets the remembered kernels."},
    {"stats", stats, METH_NOARGS,
     "(calls taken, calls not found, kernels remembered, checked "
     "backwards of its autograd nodes)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_torch_fast",
                      "fa.attention's eager calls on torch tensors, in C++.",
                      -1, methods};

} // namespace

PyMODINIT_FUNC PyInit__torch_fast() { return PyModule_Create(&module); }
