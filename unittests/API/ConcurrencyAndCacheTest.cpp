//===- ConcurrencyAndCacheTest.cpp - Threads, and a damaged disk cache ----===//
//
// Built like a user's program (fa.h and libfa.so). Sixteen threads start
// together, each compiling its own attention variant and running it (and
// some the backward) on its own tensors; every result is checked against
// the float64 reference. On the host always, on the GPU where there is one.
// Then damaged kernel cache files: truncated or with a flipped byte, an
// entry is recompiled (the same PTX, the same file again), never loaded.
//
// The process's cache is a fresh $FA_CACHE_DIR (set before the first test),
// so these tests neither read nor damage the user's cache.
//
//===----------------------------------------------------------------------===//

#include "Accuracy.h"
#include "Files.h"
#include "GpuTest.h"
#include "TestTensors.h"

#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "fa/Support/Reference.h"
#include "fa/fa.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <ftw.h>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace {

namespace rt = fa::runtime;
using fa::testing::backwardIsAccurate;
using fa::testing::forwardIsAccurate;
using fa::testing::HostTensor;
using fa::testing::precisionOf;
using fa::testing::readFile;
using fa::testing::writeFile;

constexpr int kThreads = 16;

/// Points the process's kernel cache at a fresh directory before any test
/// runs (KernelCache::global() reads $FA_CACHE_DIR on first use) and removes
/// it afterwards.
class CacheEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/fa-api-cache-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory() = pattern;
    setenv("FA_CACHE_DIR", pattern.c_str(), 1);
  }
  void TearDown() override {
    nftw(
        directory().c_str(),
        [](const char *p, const struct stat *, int, struct FTW *) {
          return remove(p);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }
  static std::string &directory() {
    static std::string path;
    return path;
  }
};
::testing::Environment *const cacheEnvironment =
    ::testing::AddGlobalTestEnvironment(new CacheEnvironment);

/// The kernel files (<key>.fakernel) in the cache directory, as paths.
std::vector<std::string> listKernelFiles() {
  std::vector<std::string> paths;
  const std::string &dir = CacheEnvironment::directory();
  for (const std::string &name : fa::testing::listDirectory(dir))
    if (name.size() > 9 && name.compare(name.size() - 9, 9, ".fakernel") == 0)
      paths.push_back(dir + "/" + name);
  return paths;
}

/// Variant `t` of 16, all different (each has its own scale), mixing dtype,
/// head dim, GQA, masks, softcap, ALiBi and lse; every fourth also runs the
/// backward. GPU variants use f16/bf16 (the GPU kernels' types).
struct Variant {
  fa::AttentionSpec spec;
  fa::support::AttentionOptions options;
  int64_t b, hq, hkv, nq, nk;
  bool backward;
  std::string name;
};

Variant variantFor(int t, bool gpu) {
  Variant v;
  fa::AttentionSpec &spec = v.spec;
  static const fa::DType kHostTypes[] = {fa::DType::F32, fa::DType::BF16,
                                         fa::DType::F16};
  spec.dtype =
      gpu ? (t % 2 ? fa::DType::F16 : fa::DType::BF16) : kHostTypes[t % 3];
  spec.headDim = t % 4 == 3 ? 64 : 32;
  spec.scale = 0.1 + 0.01 * t;
  v.options.scale = spec.scale;
  static const fa::Causal kCausal[] = {fa::Causal::None, fa::Causal::TopLeft,
                                       fa::Causal::BottomRight};
  static const fa::support::CausalMask kMask[] = {
      fa::support::CausalMask::None, fa::support::CausalMask::TopLeft,
      fa::support::CausalMask::BottomRight};
  spec.causal = kCausal[t % 3];
  v.options.causal = kMask[t % 3];
  if (t % 5 == 1) {
    spec.window = {{9, 3}};
    v.options.window = fa::support::SlidingWindow{9, 3};
  }
  if (t % 4 == 2) {
    spec.softcap = 15.0 + t;
    v.options.softcap = spec.softcap;
  }
  spec.alibi = t % 7 == 4;
  v.backward = t % 4 == 0;
  spec.returnLse = v.backward || t % 3 == 1;
  v.b = 1 + t % 2;
  v.hq = 4;
  v.hkv = t % 3 == 0 ? 1 : (t % 3 == 1 ? 2 : 4);
  v.nq = 31 + 3 * t;
  v.nk = 40 + 5 * t;
  std::ostringstream name;
  name << "variant " << t << " (" << fa::toString(spec.dtype)
       << " D=" << spec.headDim << " causal=" << t % 3
       << (spec.window ? " window" : "") << (spec.softcap ? " softcap" : "")
       << (spec.alibi ? " alibi" : "") << (v.backward ? " backward" : "")
       << ")";
  v.name = name.str();
  return v;
}

/// Tensors where the kernel reads them: host memory, or device copies.
class Placement {
public:
  explicit Placement(std::optional<rt::Device> device)
      : device(std::move(device)) {}

  fa::TensorView view(HostTensor &t) {
    if (!device)
      return t.view();
    rt::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(*device, t.bytes.size());
    if (buffer.failed())
      throw fa::Error("allocate: " + buffer.getMessage());
    rt::Status status = buffer->copyFromHost(t.bytes.data(), t.bytes.size());
    if (status.failed())
      throw fa::Error("copyFromHost: " + status.getMessage());
    buffers.push_back({&t, buffer.take()});
    return {reinterpret_cast<void *>(buffers.back().second.getPointer()),
            t.dtype,
            t.shape,
            {},
            fa::Device::CUDA};
  }

  /// Brings the device copies back into their host tensors.
  void download() {
    if (!device)
      return;
    rt::Status status = device->synchronize();
    if (status.failed())
      throw fa::Error("synchronize: " + status.getMessage());
    for (auto &[tensor, buffer] : buffers) {
      status = buffer.copyToHost(tensor->bytes.data(), tensor->bytes.size());
      if (status.failed())
        throw fa::Error("copyToHost: " + status.getMessage());
    }
  }

private:
  std::optional<rt::Device> device;
  std::vector<std::pair<HostTensor *, rt::DeviceBuffer>> buffers;
};

/// Compiles and runs `v` for `target`; empty when every result passes the
/// accuracy criterion, else what failed.
std::string compileRunAndCheck(const Variant &v, const std::string &target,
                               std::optional<rt::Device> device, int seed,
                               std::string *mlir = nullptr) {
  const fa::AttentionSpec &spec = v.spec;
  fa::Kernel kernel = fa::compile(spec, target);
  if (mlir)
    *mlir = kernel.mlir();
  if ((kernel.target() == "host") != (target == "host"))
    return "compiled for " + kernel.target() + ", asked for " + target;

  std::mt19937 rng(seed);
  const int64_t d = spec.headDim;
  HostTensor q(spec.dtype, {v.b, v.hq, v.nq, d}),
      k(spec.dtype, {v.b, v.hkv, v.nk, d}),
      val(spec.dtype, {v.b, v.hkv, v.nk, d}),
      o(spec.dtype, {v.b, v.hq, v.nq, d}), dout(spec.dtype, o.shape),
      lse(fa::DType::F32, {v.b, v.hq, v.nq}), slopes(fa::DType::F32, {v.hq}),
      dq(spec.dtype, q.shape), dk(spec.dtype, k.shape),
      dv(spec.dtype, val.shape);
  q.randomize(rng);
  k.randomize(rng);
  val.randomize(rng);
  dout.randomize(rng);
  for (int64_t h = 0; h < v.hq; ++h)
    slopes.set(h, 0.03 * double(h + 1));
  fa::support::AttentionOptions options = v.options;
  if (spec.alibi)
    options.alibiSlopes = slopes.ref();

  Placement place(std::move(device));
  fa::TensorView qv = place.view(q), kv = place.view(k), vv = place.view(val),
                 ov = place.view(o), lsev = place.view(lse),
                 slopesv = place.view(slopes);
  const fa::TensorView *slopesArg = spec.alibi ? &slopesv : nullptr;
  kernel.forward(qv, kv, vv, ov, spec.returnLse ? &lsev : nullptr, nullptr,
                 slopesArg);
  fa::TensorView doutv, dqv, dkv, dvv;
  if (v.backward) {
    doutv = place.view(dout);
    dqv = place.view(dq);
    dkv = place.view(dk);
    dvv = place.view(dv);
    kernel.backward(qv, kv, vv, ov, doutv, lsev, dqv, dkv, dvv, nullptr,
                    slopesArg);
  }
  place.download();

  std::vector<double> gotO = o.read(), gotLse = lse.read();
  ::testing::AssertionResult result = forwardIsAccurate(
      q.ref(), k.ref(), val.ref(), options, precisionOf(spec.dtype), gotO,
      spec.returnLse ? &gotLse : nullptr);
  if (result && v.backward)
    result = backwardIsAccurate(q.ref(), k.ref(), val.ref(), dout.ref(),
                                options, precisionOf(spec.dtype), dq.read(),
                                dk.read(), dv.read());
  return result ? "" : result.message();
}

/// Starts 16 threads at once, each running variant t; returns their
/// failures (empty strings where they passed) and kernels' IR.
std::vector<std::string> runAtOnce(bool gpu, const std::string &target,
                                   std::optional<rt::Device> device,
                                   std::set<std::string> &kernels) {
  std::vector<std::string> failures(kThreads), mlir(kThreads);
  std::atomic<int> waiting{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // All threads compile at the same moment, not one after the other.
      --waiting;
      while (waiting.load() > 0)
        std::this_thread::yield();
      try {
        failures[t] = compileRunAndCheck(variantFor(t, gpu), target, device,
                                         1000 + t, &mlir[t]);
      } catch (const std::exception &e) {
        failures[t] = std::string("threw: ") + e.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  kernels.insert(mlir.begin(), mlir.end());
  return failures;
}

TEST(ConcurrencyTest, SixteenThreadsOnTheHost) {
  std::set<std::string> kernels;
  std::vector<std::string> failures =
      runAtOnce(false, "host", std::nullopt, kernels);
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << variantFor(t, false).name;
  // Sixteen different kernels, not one compiled sixteen times.
  EXPECT_EQ(kernels.size(), size_t(kThreads));
}

TEST(ConcurrencyTest, SixteenThreadsOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  rt::KernelCache &cache = rt::KernelCache::global();
  ASSERT_EQ(cache.getDirectory(), CacheEnvironment::directory());
  size_t filesBefore = listKernelFiles().size();
  std::set<std::string> kernels;
  std::vector<std::string> failures =
      runAtOnce(true, device->getChip(), device.value(), kernels);
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << variantFor(t, true).name;
  EXPECT_EQ(kernels.size(), size_t(kThreads));
  // Each forward kernel and each of the 4 backwards went to its own file.
  rt::KernelCache::Stats stats = cache.getStats();
  EXPECT_EQ(stats.writeErrors, 0u);
  EXPECT_EQ(listKernelFiles().size() - filesBefore, size_t(kThreads + 4));
  cache.clearMemory();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(compileRunAndCheck(variantFor(t, true), device->getChip(),
                                 device.value(), 2000 + t),
              "")
        << variantFor(t, true).name << " from the disk cache";
  EXPECT_EQ(cache.getStats().diskHits - stats.diskHits, size_t(kThreads + 4));
}

/// One kernel shared by 16 threads: the first backward call compiles the
/// backward once while the others wait for it.
TEST(ConcurrencyTest, SixteenThreadsShareOneKernel) {
  Variant v = variantFor(0, false);
  fa::Kernel kernel = fa::compile(v.spec);
  std::vector<std::string> failures(kThreads);
  std::atomic<int> waiting{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      --waiting;
      while (waiting.load() > 0)
        std::this_thread::yield();
      try {
        std::mt19937 rng(3000 + t);
        const int64_t d = v.spec.headDim, nq = 17 + t, nk = 19 + 2 * t;
        HostTensor q(v.spec.dtype, {1, 4, nq, d}),
            k(v.spec.dtype, {1, 1, nk, d}), val(v.spec.dtype, {1, 1, nk, d}),
            o(v.spec.dtype, q.shape), dout(v.spec.dtype, q.shape),
            lse(fa::DType::F32, {1, 4, nq}), dq(v.spec.dtype, q.shape),
            dk(v.spec.dtype, k.shape), dv(v.spec.dtype, val.shape);
        for (HostTensor *x : {&q, &k, &val, &dout})
          x->randomize(rng);
        fa::TensorView lsev = lse.view();
        kernel.forward(q.view(), k.view(), val.view(), o.view(), &lsev);
        kernel.backward(q.view(), k.view(), val.view(), o.view(), dout.view(),
                        lsev, dq.view(), dk.view(), dv.view());
        std::vector<double> gotLse = lse.read();
        ::testing::AssertionResult result =
            forwardIsAccurate(q.ref(), k.ref(), val.ref(), v.options,
                              precisionOf(v.spec.dtype), o.read(), &gotLse);
        if (result)
          result = backwardIsAccurate(q.ref(), k.ref(), val.ref(), dout.ref(),
                                      v.options, precisionOf(v.spec.dtype),
                                      dq.read(), dk.read(), dv.read());
        failures[t] = result ? "" : result.message();
      } catch (const std::exception &e) {
        failures[t] = std::string("threw: ") + e.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

/// Ways a kernel file gets damaged (a crash mid-write on a file system
/// without atomic rename, a bad disk, a stray edit), each applied to the
/// whole file `good`: every one must be recompiled.
std::vector<std::pair<std::string, std::string>>
damagedCopies(const std::string &good) {
  auto flip = [&](size_t at) {
    std::string bad = good;
    bad[at] = char(bad[at] ^ 0x01);
    return bad;
  };
  size_t end = good.find("\nend\n");
  size_t shared = good.find(", shared = ");
  size_t threads = good.find(", threads = ");
  size_t sha = good.find("\nsha256 ");
  if (end == std::string::npos || shared == std::string::npos ||
      threads == std::string::npos || sha == std::string::npos)
    return {};
  return {
      {"empty", ""},
      {"truncated to half", good.substr(0, good.size() / 2)},
      {"truncated by one byte", good.substr(0, good.size() - 1)},
      {"header only", good.substr(0, end + 5)},
      {"flipped image byte", flip(end + 5 + (good.size() - end - 5) / 2)},
      {"flipped last byte", flip(good.size() - 1)},
      // The ABI line: loaded, these would launch the kernel wrongly.
      {"flipped shared-memory digit", flip(shared + 11)},
      {"flipped threads digit", flip(threads + 12)},
      {"flipped checksum digit", flip(sha + 8)},
  };
}

/// The cache file holding `ptx` as its image.
std::string fileHolding(const std::string &ptx) {
  std::string found;
  for (const std::string &path : listKernelFiles()) {
    std::string content = readFile(path);
    if (content.size() >= ptx.size() &&
        content.compare(content.size() - ptx.size(), ptx.size(), ptx) == 0) {
      EXPECT_EQ(found, "") << "two files hold the kernel";
      found = path;
    }
  }
  return found;
}

/// A damaged entry is a miss: the next fa::compile recompiles the kernel
/// (the same PTX) and rewrites the file (the same bytes). No GPU needed.
TEST(CacheTest, DamagedEntryIsRecompiled) {
  rt::KernelCache &cache = rt::KernelCache::global();
  ASSERT_EQ(cache.getDirectory(), CacheEnvironment::directory());
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = 64;
  spec.causal = fa::Causal::BottomRight;
  spec.softcap = 11.0; // a kernel only this test compiles
  const std::string ptx = fa::compile(spec, "sm_80").ptx();
  const std::string path = fileHolding(ptx);
  ASSERT_NE(path, "");
  const std::string good = readFile(path);

  // Undamaged, the next process's first call loads the file.
  cache.clearMemory();
  rt::KernelCache::Stats before = cache.getStats();
  EXPECT_EQ(fa::compile(spec, "sm_80").ptx(), ptx);
  rt::KernelCache::Stats after = cache.getStats();
  EXPECT_EQ(after.diskHits - before.diskHits, 1u);
  EXPECT_EQ(after.misses - before.misses, 0u);
  EXPECT_EQ(after.stores - before.stores, 0u);

  std::vector<std::pair<std::string, std::string>> damaged =
      damagedCopies(good);
  ASSERT_EQ(damaged.size(), 9u);
  for (const auto &[what, content] : damaged) {
    ASSERT_NE(content, good) << what;
    writeFile(path, content);
    cache.clearMemory();
    before = cache.getStats();
    EXPECT_EQ(fa::compile(spec, "sm_80").ptx(), ptx) << what;
    after = cache.getStats();
    EXPECT_EQ(after.diskHits - before.diskHits, 0u) << what;
    EXPECT_EQ(after.misses - before.misses, 1u) << what;
    EXPECT_EQ(after.stores - before.stores, 1u) << what;
    EXPECT_EQ(after.writeErrors - before.writeErrors, 0u) << what;
    EXPECT_EQ(readFile(path), good) << what << ": the file was not rewritten";
  }
}

/// The same on the GPU, where a damaged entry that loaded would launch: each
/// recompiled kernel runs and is checked against the float64 reference.
TEST(CacheTest, DamagedEntryIsRecompiledAndRunsOnTheGpu) {
  rt::Expected<rt::Device> device = rt::Device::get(0);
  if (device.failed())
    FA_GPU_UNAVAILABLE(device.getMessage());
  rt::KernelCache &cache = rt::KernelCache::global();
  ASSERT_EQ(cache.getDirectory(), CacheEnvironment::directory());
  Variant v = variantFor(3, /*gpu=*/true);
  v.spec.softcap = 13.0; // a kernel only this test compiles
  v.options.softcap = 13.0;
  const std::string chip = device->getChip();
  const std::string ptx = fa::compile(v.spec, chip).ptx();
  const std::string path = fileHolding(ptx);
  ASSERT_NE(path, "");
  const std::string good = readFile(path);
  int seed = 4000;
  for (const auto &[what, content] : damagedCopies(good)) {
    writeFile(path, content);
    cache.clearMemory();
    rt::KernelCache::Stats before = cache.getStats();
    EXPECT_EQ(compileRunAndCheck(v, chip, device.value(), ++seed), "") << what;
    EXPECT_EQ(cache.getStats().misses - before.misses, 1u) << what;
    EXPECT_EQ(readFile(path), good) << what;
  }
}

} // namespace
