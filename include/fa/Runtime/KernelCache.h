//===- KernelCache.h - Compiled kernels, in memory and on disk --*- C++ -*-===//
//
// A two-level cache of compiled kernels: a process-wide map in memory and one
// file per kernel on disk, so a kernel compiled once (PTX, or a cubin) with
// its launch metadata is reused by later calls and later processes.
//
// Key: makeKey(irText, target, compilerVersion) is the SHA-256 (FIPS 180-4,
// implemented here, no dependency) of the three inputs, each prefixed with its
// length so that no two different triples hash the same bytes. As 64
// lowercase hex digits it is also the file's name. SHA-256 rather than a fast
// non-cryptographic hash (FNV-1a-128): the key names files that outlive the
// process and may be shared between users, so collisions must be out of
// reach, and hashing costs microseconds next to compiling.
//
// Disk: $FA_CACHE_DIR, else $XDG_CACHE_HOME/fa, else $HOME/.cache/fa. One
// file per key, <dir>/<key>.fakernel: a text header, then the image bytes.
//
//   FA-KERNEL 4                      magic and format version
//   key <64 hex digits>              must match the file name
//   chip <chip>                      e.g. sm_90a
//   kernels <n>                      1 <= n <= 64 kernels of the image (the
//                                    backward's live in one module), each:
//     kernel <name>                  its .entry
//     abi <text>                     how to launch it: KernelAbi.h's text
//                                    (grid rule, threads, shared memory,
//                                    parameters), parsed and verified
//   format <ptx|cubin>
//   size <bytes>                     of the image
//   sha256 <64 hex digits>           of every header byte before this line,
//                                    then the image
//   end
//   <image: exactly `size` bytes>
//
// The checksum covers the header as well as the image: a flipped digit in a
// launch line would otherwise load and launch wrongly. Files of other
// versions (1 and 2 hashed the image only; 3 had string grid rules and
// parameter layouts) miss and are rewritten.
//
// Files are written atomically: to a temporary file in the same directory,
// fsync'ed, then renamed over <key>.fakernel, so readers see a whole old file
// or a whole new one and concurrent writers (threads or processes) never mix
// their bytes. A file that does not parse, whose version, key, size or
// checksum do not match, or that is truncated is a miss; the next store for
// its key replaces it.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELCACHE_H
#define FA_RUNTIME_KERNELCACHE_H

#include "fa/Runtime/KernelAbi.h"
#include "fa/Runtime/Status.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fa::runtime {

/// Incremental SHA-256.
class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  /// The 32-byte digest; the object must not be updated afterwards.
  std::string digest();
  /// The digest as 64 lowercase hex digits.
  std::string hexDigest();

private:
  void compress(const uint8_t *block);

  uint32_t state[8];
  uint8_t buffer[64];
  size_t bufferSize = 0;
  uint64_t totalBytes = 0;
};

/// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256Hex(std::string_view data);

/// A compiled image and what launching its kernels takes.
struct CachedKernel {
  enum class Format { PTX, Cubin };

  /// The image's kernels, each with its ABI (name, grid rule, threads,
  /// shared memory, parameters), in launch order: a forward's one; a
  /// backward's dsum, dkdv, dq or dq_convert, and dbias.
  std::vector<KernelAbi> kernels;
  /// The chip it was compiled for, e.g. "sm_90a".
  std::string chip;
  Format format = Format::PTX;
  /// PTX text or cubin bytes.
  std::string image;

  bool operator==(const CachedKernel &other) const;
  bool operator!=(const CachedKernel &other) const { return !(*this == other); }
};

/// The cache key: SHA-256 of the three inputs, length-prefixed, as 64 hex
/// digits.
std::string makeKey(std::string_view irText, std::string_view target,
                    std::string_view compilerVersion);

/// Kernels in memory (thread-safe) and, when the cache has a directory, on
/// disk.
class KernelCache {
public:
  /// A cache with its files in `directory` (created on the first store); an
  /// empty `directory` keeps kernels in memory only.
  explicit KernelCache(std::string directory);

  /// $FA_CACHE_DIR, else $XDG_CACHE_HOME/fa, else $HOME/.cache/fa (the home
  /// directory from the password database when HOME is unset); empty if none
  /// of these is known.
  static std::string getDefaultDirectory();

  /// The process's cache, in getDefaultDirectory() as it was on first use.
  static KernelCache &global();

  const std::string &getDirectory() const { return directory; }
  /// <directory>/<key>.fakernel.
  std::string getPath(const std::string &key) const;

  /// The kernel stored under `key`: from memory, else from its file (which
  /// then fills memory); null on a miss. Invalid keys (not 64 hex digits)
  /// miss.
  std::shared_ptr<const CachedKernel> lookup(const std::string &key);

  /// Stores `kernel` under `key` in memory and writes its file. The kernel
  /// stays in memory even when the file cannot be written; the error says
  /// why it could not.
  Status store(const std::string &key, CachedKernel kernel);

  /// lookup(key), or on a miss `compile()` then store(). A failure to write
  /// the file is not an error of this call (the kernel is returned).
  Expected<std::shared_ptr<const CachedKernel>>
  getOrCompile(const std::string &key,
               const std::function<Expected<CachedKernel>()> &compile);

  /// Forgets the kernels in memory (the files stay).
  void clearMemory();

  /// Counts since construction.
  struct Stats {
    uint64_t memoryHits = 0, diskHits = 0, misses = 0, stores = 0,
             writeErrors = 0;
  };
  Stats getStats() const;

  /// The whole file content for `kernel` under `key` (the format above).
  static std::string serialize(const std::string &key,
                               const CachedKernel &kernel);
  /// Parses a file's content; an error says what does not match.
  static Expected<CachedKernel> deserialize(const std::string &key,
                                            std::string_view content);

private:
  Status writeFile(const std::string &key, const CachedKernel &kernel);

  std::string directory;
  mutable std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CachedKernel>> memory;
  std::atomic<uint64_t> memoryHits{0}, diskHits{0}, misses{0}, stores{0},
      writeErrors{0};
};

} // namespace fa::runtime

#endif // FA_RUNTIME_KERNELCACHE_H
