//===- KernelCacheTest.cpp - SHA-256, keys and the kernel cache -----------===//

#include "Files.h"

#include "fa/Runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <ftw.h>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace fa::runtime;
using fa::testing::listDirectory;
using fa::testing::readFile;
using fa::testing::writeFile;

namespace {

/// A fresh directory under $TMPDIR (or /tmp), removed with its content.
class TempDir {
public:
  TempDir() {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/fa-cache-test-XXXXXX";
    path = mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    if (!path.empty())
      nftw(
          path.c_str(),
          [](const char *p, const struct stat *, int, struct FTW *) {
            return remove(p);
          },
          16, FTW_DEPTH | FTW_PHYS);
  }
  std::string path;
};

/// Sets (or with nullopt, unsets) an environment variable for a scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

/// A kernel's ABI: a pointer and strides of q, the sizes its grid needs.
KernelAbi sampleAbi(const std::string &name, uint32_t threads,
                    uint32_t sharedBytes) {
  KernelAbi abi;
  abi.name = name;
  abi.grid = {GridAxis::tilesNq(128), GridAxis::hq(), GridAxis::batch()};
  abi.threads = threads;
  abi.sharedBytes = sharedBytes;
  abi.params = {
      KernelParam::pointer(AbiTensor::Q), KernelParam::stride(AbiTensor::Q, 0),
      KernelParam::ofSize(AbiSize::Hq), KernelParam::ofSize(AbiSize::B),
      KernelParam::ofScalar(AbiScalar::ScaleLog2, MachineType::F32)};
  return abi;
}

CachedKernel sampleKernel(const std::string &image = "// PTX\n.entry k()\n") {
  CachedKernel kernel;
  kernel.kernels.push_back(sampleAbi("fa_attention_fwd", 384, 229376));
  kernel.chip = "sm_90a";
  kernel.format = CachedKernel::Format::PTX;
  kernel.image = image;
  return kernel;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i)
    data += char(i * 7 + 3);
  for (size_t chunk : {1, 3, 63, 64, 65, 127, 1000}) {
    Sha256 hash;
    for (size_t at = 0; at < data.size(); at += chunk)
      hash.update(std::string_view(data).substr(at, chunk));
    EXPECT_EQ(hash.hexDigest(), sha256Hex(data)) << "chunk " << chunk;
  }
}

TEST(MakeKey, ChangesWithEachInput) {
  std::string ir = "func.func @f() { fa.attention ... }";
  std::string key = makeKey(ir, "sm_90a", "fa 0.1.0 llvm 22");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(key, makeKey(ir, "sm_90a", "fa 0.1.0 llvm 22"));
  EXPECT_NE(key, makeKey(ir + " ", "sm_90a", "fa 0.1.0 llvm 22"));
  EXPECT_NE(key, makeKey(ir, "sm_80", "fa 0.1.0 llvm 22"));
  EXPECT_NE(key, makeKey(ir, "sm_90a", "fa 0.1.1 llvm 22"));
  // Lengths frame the parts: moving bytes between them changes the key.
  EXPECT_NE(makeKey("ab", "c", ""), makeKey("a", "bc", ""));
  EXPECT_NE(makeKey("", "", "x"), makeKey("", "x", ""));
}

TEST(KernelCache, DefaultDirectory) {
  {
    ScopedEnv cache("FA_CACHE_DIR", "/somewhere/fa-cache");
    EXPECT_EQ(KernelCache::getDefaultDirectory(), "/somewhere/fa-cache");
  }
  ScopedEnv cache("FA_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(KernelCache::getDefaultDirectory(), "/xdg/fa");
  }
  ScopedEnv home("HOME", "/home/user");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    EXPECT_EQ(KernelCache::getDefaultDirectory(), "/home/user/.cache/fa");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  EXPECT_EQ(KernelCache::getDefaultDirectory(), "/home/user/.cache/fa");
  ScopedEnv noHome("HOME", std::nullopt);
  // From the password database; ends like the others.
  std::string fromPasswd = KernelCache::getDefaultDirectory();
  if (!fromPasswd.empty()) {
    EXPECT_NE(fromPasswd.find("/.cache/fa"), std::string::npos);
  }
}

TEST(KernelCache, RoundTripThroughDisk) {
  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  // A directory that does not exist yet, named the way users name it.
  ScopedEnv env("FA_CACHE_DIR", dir.path + "/nested/fa");
  std::string key = makeKey("ir", "sm_90a", "test");
  CachedKernel kernel = sampleKernel();
  {
    KernelCache cache(KernelCache::getDefaultDirectory());
    EXPECT_EQ(cache.getDirectory(), dir.path + "/nested/fa");
    EXPECT_EQ(cache.lookup(key), nullptr);
    Status status = cache.store(key, kernel);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    std::shared_ptr<const CachedKernel> hit = cache.lookup(key);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(*hit, kernel);
    EXPECT_EQ(cache.getStats().memoryHits, 1u);
    EXPECT_EQ(cache.getStats().misses, 1u);
  }
  // A new process (a new cache object) finds it on disk, then in memory.
  KernelCache cache(KernelCache::getDefaultDirectory());
  std::shared_ptr<const CachedKernel> hit = cache.lookup(key);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, kernel);
  EXPECT_EQ(cache.lookup(key), hit);
  EXPECT_EQ(cache.getStats().diskHits, 1u);
  EXPECT_EQ(cache.getStats().memoryHits, 1u);

  // The header is the documented text.
  std::string content = readFile(cache.getPath(key));
  EXPECT_EQ(content.rfind("FA-KERNEL 4\nkey " + key +
                              "\nchip sm_90a\nkernels 1\n"
                              "kernel fa_attention_fwd\n"
                              "abi grid = [tiles(Nq, 128), Hq, B], threads = "
                              "384, shared = 229376, params = [q : ptr, "
                              "stride(q, 0) : i64, Hq : i32, B : i32, "
                              "scale_log2 : f32]\nformat ptx\n",
                          0),
            0u)
      << content;
  // The checksum covers the header before its line, then the image.
  size_t line = content.find("sha256 ");
  ASSERT_NE(line, std::string::npos);
  EXPECT_EQ(content.substr(line),
            "sha256 " + sha256Hex(content.substr(0, line) + kernel.image) +
                "\nend\n" + kernel.image);
}

TEST(KernelCache, BinaryImageRoundTrip) {
  TempDir dir;
  static const char kBytes[] = "\x7f"
                               "ELF\0\n\r\xff binary\nend\n";
  std::string image(kBytes, sizeof(kBytes) - 1);
  CachedKernel kernel = sampleKernel(image);
  kernel.format = CachedKernel::Format::Cubin;
  std::string key = makeKey("ir", "sm_90a", "cubin");
  ASSERT_TRUE(KernelCache(dir.path).store(key, kernel).ok());
  std::shared_ptr<const CachedKernel> hit = KernelCache(dir.path).lookup(key);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, kernel);
  EXPECT_EQ(hit->image.size(), sizeof(kBytes) - 1);
}

TEST(KernelCache, KernelsRoundTrip) {
  // An image with three kernels (the backward's), each with its ABI.
  TempDir dir;
  CachedKernel kernel = sampleKernel();
  KernelAbi second = sampleAbi("second", 128, 65536);
  second.grid = {GridAxis::tilesNk(64), GridAxis::hkv(), GridAxis::batch()};
  second.params.push_back(KernelParam::ofSize(AbiSize::Hkv));
  second.params.push_back(KernelParam::dqAccum(128));
  kernel.kernels.push_back(second);
  KernelAbi third = sampleAbi("third", 256, 0);
  third.grid = {GridAxis::one(), GridAxis::one(), GridAxis::one()};
  third.params.push_back(KernelParam::capturePointer(0));
  third.params.push_back(KernelParam::captureStride(0, 0));
  third.params.push_back(KernelParam::captureStride(0, 1));
  kernel.kernels.push_back(third);
  std::string key = makeKey("ir", "sm_90a", "kernels");
  ASSERT_TRUE(KernelCache(dir.path).store(key, kernel).ok());
  std::shared_ptr<const CachedKernel> hit = KernelCache(dir.path).lookup(key);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, kernel);

  std::string content = readFile(KernelCache(dir.path).getPath(key));
  EXPECT_EQ(content.rfind("FA-KERNEL 4\n", 0), 0u) << content;
  EXPECT_NE(content.find("\nkernels 3\nkernel fa_attention_fwd\n"),
            std::string::npos)
      << content;
  EXPECT_NE(content.find("\nkernel second\nabi grid = [tiles(Nk, 64), Hkv, "
                         "B], threads = 128, shared = 65536, params = [q : "
                         "ptr, stride(q, 0) : i64, Hq : i32, B : i32, "
                         "scale_log2 : f32, Hkv : i32, dq_accum(128) : ptr]\n"
                         "kernel third\nabi grid = [1, 1, 1], threads = 256"),
            std::string::npos)
      << content;
  // One kernel less than announced is a bad file.
  std::string truncated = content;
  truncated.replace(truncated.find("kernels 3"), 9, "kernels 4");
  EXPECT_TRUE(KernelCache::deserialize(key, truncated).failed());

  // Each kernel is checked: its name, and its ABI (verifyKernelAbi).
  KernelCache cache(dir.path);
  kernel.kernels[2].name = "has space";
  EXPECT_TRUE(cache.store(key, kernel).failed());
  kernel.kernels[2].name = "third";
  kernel.kernels[2].threads = 0;
  Status status = cache.store(key, kernel);
  ASSERT_TRUE(status.failed());
  EXPECT_NE(status.getMessage().find("threads must be 1 to 1024"),
            std::string::npos)
      << status.getMessage();
  kernel.kernels[2].threads = 256;
  kernel.kernels[2].params.pop_back(); // capture 0 loses dim 1 only: fine
  EXPECT_TRUE(cache.store(key, kernel).ok());
  kernel.kernels[2].params.erase(kernel.kernels[2].params.end() - 2);
  EXPECT_TRUE(cache.store(key, kernel).failed()); // a capture without strides
  kernel.kernels.clear();
  EXPECT_TRUE(cache.store(key, kernel).failed());
}

TEST(KernelCache, MemoryOnly) {
  KernelCache cache("");
  std::string key = makeKey("ir", "sm_80", "test");
  ASSERT_TRUE(cache.store(key, sampleKernel()).ok());
  ASSERT_NE(cache.lookup(key), nullptr);
  cache.clearMemory();
  EXPECT_EQ(cache.lookup(key), nullptr);
}

TEST(KernelCache, AtomicWriteLeavesNoTemporaryFiles) {
  TempDir dir;
  KernelCache cache(dir.path);
  std::vector<std::string> keys;
  for (int i = 0; i < 5; ++i) {
    keys.push_back(makeKey("ir" + std::to_string(i), "sm_90a", "test"));
    ASSERT_TRUE(cache.store(keys.back(), sampleKernel()).ok());
    // Overwriting goes through a temporary file too.
    ASSERT_TRUE(cache.store(keys.back(), sampleKernel("v2")).ok());
  }
  std::vector<std::string> names = listDirectory(dir.path);
  EXPECT_EQ(names.size(), keys.size());
  for (const std::string &name : names) {
    EXPECT_EQ(name.size(), 64 + std::string(".fakernel").size()) << name;
    EXPECT_NE(name[0], '.') << name;
  }
  struct stat info;
  ASSERT_EQ(stat(cache.getPath(keys[0]).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST(KernelCache, CorruptOrTruncatedFileIsAMiss) {
  TempDir dir;
  std::string key = makeKey("ir", "sm_90a", "corrupt");
  std::string other = makeKey("other", "sm_90a", "corrupt");
  CachedKernel kernel = sampleKernel(std::string(4096, 'x'));
  ASSERT_TRUE(KernelCache(dir.path).store(key, kernel).ok());
  ASSERT_TRUE(KernelCache(dir.path).store(other, kernel).ok());
  std::string path = KernelCache(dir.path).getPath(key);
  std::string good = readFile(path);
  ASSERT_FALSE(good.empty());

  std::string flipped = good;
  flipped[flipped.size() - 100] = 'y';
  std::string newerVersion = good;
  newerVersion.replace(0, 11, "FA-KERNEL 9");
  // Format version 3's files (string grid rules and parameter layouts).
  std::string version3 = good;
  version3.replace(0, 11, "FA-KERNEL 3");
  // A launch line changed along with a checksum of the image alone (format
  // versions 1 and 2) parses but must not load.
  std::string header = good.substr(0, good.find("sha256 "));
  std::string imageOnly = header;
  imageOnly.replace(imageOnly.find("shared = 229376"), 15, "shared = 229377");
  imageOnly += "sha256 " + sha256Hex(kernel.image) + "\nend\n" + kernel.image;
  std::string oldVersion = good;
  oldVersion.replace(0, 11, "FA-KERNEL 1");
  std::vector<std::pair<std::string, std::string>> corruptions = {
      {"empty", ""},
      {"garbage", "not a kernel file at all"},
      {"truncated image", good.substr(0, good.size() - 1)},
      {"truncated header", good.substr(0, 40)},
      {"extra bytes", good + "x"},
      {"flipped image byte", flipped},
      {"other format version", newerVersion},
      {"format version 1", oldVersion},
      {"format version 3", version3},
      {"header changed, image checksum kept", imageOnly},
      {"another key's file", readFile(KernelCache(dir.path).getPath(other))},
  };
  for (const auto &[what, content] : corruptions) {
    writeFile(path, content);
    KernelCache cache(dir.path);
    EXPECT_EQ(cache.lookup(key), nullptr) << what;
    EXPECT_EQ(cache.getStats().misses, 1u) << what;
    std::string why = KernelCache::deserialize(key, content).getMessage();
    EXPECT_FALSE(why.empty()) << what;
  }
  // The next store replaces the bad file.
  KernelCache cache(dir.path);
  ASSERT_TRUE(cache.store(key, kernel).ok());
  std::shared_ptr<const CachedKernel> hit = KernelCache(dir.path).lookup(key);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(*hit, kernel);
}

/// Every single flipped byte and every truncation of a file is caught, in
/// the header (a launch line, a name) as well as in the image.
TEST(KernelCache, EveryFlippedByteAndTruncationIsAMiss) {
  std::string key = makeKey("ir", "sm_90a", "every byte");
  CachedKernel kernel = sampleKernel();
  KernelAbi second = sampleAbi("second", 128, 0);
  second.grid = {GridAxis::tilesNk(64), GridAxis::hkv(), GridAxis::batch()};
  second.params.push_back(KernelParam::ofSize(AbiSize::Hkv));
  kernel.kernels.push_back(second);
  std::string good = KernelCache::serialize(key, kernel);
  Expected<CachedKernel> parsed = KernelCache::deserialize(key, good);
  ASSERT_TRUE(parsed.ok()) << parsed.getMessage();
  EXPECT_EQ(*parsed, kernel);
  int accepted = 0;
  for (size_t i = 0; i < good.size(); ++i)
    for (unsigned char mask : {0x01, 0x80}) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ mask);
      if (KernelCache::deserialize(key, bad).ok()) {
        ++accepted;
        ADD_FAILURE() << "byte " << i << " ^ " << int(mask) << " accepted";
      }
    }
  for (size_t size = 0; size < good.size(); ++size)
    if (KernelCache::deserialize(key, good.substr(0, size)).ok()) {
      ++accepted;
      ADD_FAILURE() << "truncation to " << size << " bytes accepted";
    }
  EXPECT_EQ(accepted, 0);
}

TEST(KernelCache, RejectsBadKeysAndFields) {
  TempDir dir;
  KernelCache cache(dir.path);
  EXPECT_TRUE(cache.store("../escape", sampleKernel()).failed());
  EXPECT_TRUE(cache.store(std::string(64, 'A'), sampleKernel()).failed());
  EXPECT_EQ(cache.lookup("../escape"), nullptr);
  std::string key = makeKey("ir", "sm_90a", "fields");
  CachedKernel kernel = sampleKernel();
  kernel.chip = "two\nlines";
  Status status = cache.store(key, kernel);
  ASSERT_TRUE(status.failed());
  EXPECT_NE(status.getMessage().find("chip"), std::string::npos);
  kernel = sampleKernel();
  kernel.kernels[0].name = "has space";
  EXPECT_TRUE(cache.store(key, kernel).failed());
  kernel = sampleKernel();
  // A grid whose y is Hq takes Hq.
  kernel.kernels[0].params.erase(kernel.kernels[0].params.begin() + 2);
  status = cache.store(key, kernel);
  ASSERT_TRUE(status.failed());
  EXPECT_NE(status.getMessage().find("grid y is Hq"), std::string::npos)
      << status.getMessage();
  EXPECT_TRUE(listDirectory(dir.path).empty());
}

TEST(KernelCache, UnwritableDirectoryKeepsMemory) {
  // A path below a regular file cannot be created, even by root.
  TempDir dir;
  writeFile(dir.path + "/file", "x");
  KernelCache cache(dir.path + "/file/cache");
  std::string key = makeKey("ir", "sm_90a", "unwritable");
  Status status = cache.store(key, sampleKernel());
  ASSERT_TRUE(status.failed());
  EXPECT_NE(status.getMessage().find("kernel cache"), std::string::npos)
      << status.getMessage();
  EXPECT_NE(cache.lookup(key), nullptr);
  EXPECT_EQ(cache.getStats().writeErrors, 1u);
}

TEST(KernelCache, GetOrCompile) {
  TempDir dir;
  KernelCache cache(dir.path);
  std::string key = makeKey("ir", "sm_90a", "compile");
  int compiles = 0;
  auto compile = [&]() -> Expected<CachedKernel> {
    ++compiles;
    return sampleKernel();
  };
  for (int i = 0; i < 3; ++i) {
    Expected<std::shared_ptr<const CachedKernel>> kernel =
        cache.getOrCompile(key, compile);
    ASSERT_TRUE(kernel.ok()) << kernel.getMessage();
    EXPECT_EQ((*kernel)->kernels[0].name, "fa_attention_fwd");
  }
  EXPECT_EQ(compiles, 1);
  // Another process compiles nothing either.
  KernelCache(dir.path).getOrCompile(key, compile).value();
  EXPECT_EQ(compiles, 1);

  Expected<std::shared_ptr<const CachedKernel>> failed = cache.getOrCompile(
      makeKey("bad", "sm_90a", "compile"), []() -> Expected<CachedKernel> {
        return Status::error("the compiler said no");
      });
  ASSERT_TRUE(failed.failed());
  EXPECT_EQ(failed.getMessage(), "the compiler said no");
}

/// Four writers (each its own cache object, as separate processes would be)
/// store the same keys over and over while readers look them up. Every file
/// a reader finds is whole and consistent, and no temporary file remains.
TEST(KernelCache, ConcurrentWritersDoNotCorrupt) {
  TempDir dir;
  constexpr int kThreads = 4, kRounds = 40, kKeys = 3;
  std::vector<std::string> keys;
  for (int k = 0; k < kKeys; ++k)
    keys.push_back(makeKey("shared" + std::to_string(k), "sm_90a", "race"));
  // Writer t stores a kernel named after itself whose image repeats its own
  // byte, so a mix of two writers' bytes would show.
  auto kernelOf = [](int t, int round) {
    CachedKernel kernel =
        sampleKernel(std::string(50000 + 1000 * t + round, char('A' + t)));
    kernel.kernels[0].name = "writer" + std::to_string(t);
    kernel.kernels[0].threads = 128 * (t + 1);
    return kernel;
  };
  std::atomic<int> errors{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        KernelCache writer(dir.path);
        if (writer.store(keys[round % kKeys], kernelOf(t, round)).failed())
          ++errors;
        KernelCache reader(dir.path);
        std::shared_ptr<const CachedKernel> hit =
            reader.lookup(keys[(round + t) % kKeys]);
        if (!hit)
          continue;
        ++hits;
        int writerId = hit->kernels[0].name.back() - '0';
        if (hit->kernels[0].threads != unsigned(128 * (writerId + 1)) ||
            hit->image.find_first_not_of(char('A' + writerId)) !=
                std::string::npos)
          ++errors;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(hits.load(), 0);
  std::vector<std::string> names = listDirectory(dir.path);
  EXPECT_EQ(names.size(), size_t(kKeys));
  for (const std::string &key : keys)
    EXPECT_NE(KernelCache(dir.path).lookup(key), nullptr);
}

/// One cache object shared by threads (the process-wide cache).
TEST(KernelCache, SharedObjectIsThreadSafe) {
  TempDir dir;
  KernelCache cache(dir.path);
  std::atomic<int> compiles{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        std::string key = makeKey(std::to_string(i % 10), "sm_90a", "shared");
        Expected<std::shared_ptr<const CachedKernel>> kernel =
            cache.getOrCompile(key, [&]() -> Expected<CachedKernel> {
              ++compiles;
              return sampleKernel();
            });
        if (kernel.failed() || (*kernel)->kernels[0].name != "fa_attention_fwd")
          ++errors;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(errors.load(), 0);
  // Racing misses may compile a key twice, but not more than once a thread.
  EXPECT_GE(compiles.load(), 10);
  EXPECT_LE(compiles.load(), 40);
}

} // namespace
