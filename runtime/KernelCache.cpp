//===- KernelCache.cpp - Compiled kernels, in memory and on disk ----------===//
//
// See include/fa/Runtime/KernelCache.h for the key and the file format.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/KernelCache.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace fa::runtime;

//===----------------------------------------------------------------------===//
// SHA-256 (FIPS 180-4)
//===----------------------------------------------------------------------===//

namespace {
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, unsigned n) {
  return (x >> n) | (x << (32 - n));
}
} // namespace

Sha256::Sha256()
    : state{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
            0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      buffer{} {}

void Sha256::compress(const uint8_t *block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
           uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4],
           f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + ch + kRoundConstants[i] + w[i];
    uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

void Sha256::update(const void *data, size_t size) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  totalBytes += size;
  if (bufferSize > 0) {
    size_t take = std::min(size, sizeof(buffer) - bufferSize);
    std::memcpy(buffer + bufferSize, bytes, take);
    bufferSize += take;
    bytes += take;
    size -= take;
    if (bufferSize < sizeof(buffer))
      return;
    compress(buffer);
    bufferSize = 0;
  }
  for (; size >= 64; bytes += 64, size -= 64)
    compress(bytes);
  std::memcpy(buffer, bytes, size);
  bufferSize = size;
}

std::string Sha256::digest() {
  uint64_t bits = totalBytes * 8;
  uint8_t pad[72] = {0x80};
  size_t padBytes = (bufferSize < 56 ? 56 : 120) - bufferSize;
  for (int i = 0; i < 8; ++i)
    pad[padBytes + i] = uint8_t(bits >> (56 - 8 * i));
  update(pad, padBytes + 8);
  std::string out(32, '\0');
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      out[4 * i + j] = char(state[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::hexDigest() {
  static const char kHex[] = "0123456789abcdef";
  std::string raw = digest();
  std::string hex;
  hex.reserve(64);
  for (unsigned char byte : raw) {
    hex += kHex[byte >> 4];
    hex += kHex[byte & 15];
  }
  return hex;
}

std::string fa::runtime::sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.update(data);
  return hash.hexDigest();
}

std::string fa::runtime::makeKey(std::string_view irText,
                                 std::string_view target,
                                 std::string_view compilerVersion) {
  Sha256 hash;
  hash.update("fa-kernel-key 1\n");
  for (std::string_view part : {irText, target, compilerVersion}) {
    hash.update(std::to_string(part.size()) + ":");
    hash.update(part);
    hash.update("\n");
  }
  return hash.hexDigest();
}

bool CachedKernel::operator==(const CachedKernel &other) const {
  return kernels == other.kernels && chip == other.chip &&
         format == other.format && image == other.image;
}

//===----------------------------------------------------------------------===//
// The file format
//===----------------------------------------------------------------------===//

namespace {
constexpr const char *kMagic = "FA-KERNEL";
/// 4: each kernel's launch is its typed ABI (KernelAbi.h's text); 3 had
/// string grid rules and parameter layouts. Since 3 the checksum covers the
/// header too (1 and 2 hashed the image only, so a flipped digit in a launch
/// line loaded silently). Files of other versions miss.
constexpr int kFormatVersion = 4;
/// At most this many kernels per image.
constexpr uint64_t kMaxKernels = 64;
constexpr const char *kSuffix = ".fakernel";
/// Files larger than this are not read (no kernel comes near).
constexpr off_t kMaxFileBytes = off_t(1) << 30;

bool isValidKey(const std::string &key) {
  if (key.size() != 64)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

Status checkField(const char *field, const std::string &value) {
  if (value.find_first_of("\r\n") != std::string::npos)
    return Status::error(std::string("kernel cache: the ") + field +
                         " holds a line break");
  return Status::success();
}

/// Reads lines of a header one by one.
class HeaderReader {
public:
  explicit HeaderReader(std::string_view content) : rest(content) {}

  /// The value of the next line, which must be "<field> <value>".
  Expected<std::string> field(const char *name) {
    size_t newline = rest.find('\n');
    if (newline == std::string_view::npos)
      return Status::error(std::string("truncated header before '") + name +
                           "'");
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    size_t nameSize = std::strlen(name);
    if (line.size() < nameSize || line.substr(0, nameSize) != name ||
        (line.size() > nameSize && line[nameSize] != ' '))
      return Status::error(std::string("expected '") + name + "', found '" +
                           std::string(line.substr(0, 40)) + "'");
    if (line.size() == nameSize)
      return std::string();
    return std::string(line.substr(nameSize + 1));
  }

  Expected<uint64_t> number(const char *name) {
    Expected<std::string> text = field(name);
    if (text.failed())
      return text.getStatus();
    return parseNumber(name, *text);
  }

  static Expected<uint64_t> parseNumber(const char *name,
                                        const std::string &text) {
    if (text.empty() || text.size() > 19 ||
        text.find_first_not_of("0123456789") != std::string::npos)
      return Status::error(std::string("bad ") + name + " '" + text + "'");
    return uint64_t(std::strtoull(text.c_str(), nullptr, 10));
  }

  std::string_view remaining() const { return rest; }

private:
  std::string_view rest;
};

std::string errnoMessage() { return std::strerror(errno); }

/// mkdir -p.
Status makeDirectories(const std::string &path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/')
      continue;
    std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::error("kernel cache: cannot create directory " + prefix +
                           ": " + errnoMessage());
  }
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return Status::error("kernel cache: " + path + " is not a directory");
  return Status::success();
}

Status writeAll(int fd, std::string_view data, const std::string &path) {
  while (!data.empty()) {
    ssize_t written = write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return Status::error("kernel cache: cannot write " + path + ": " +
                           errnoMessage());
    }
    data.remove_prefix(size_t(written));
  }
  return Status::success();
}

/// The whole content of `path`; an error when it cannot be read.
Expected<std::string> readFile(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot open " + path + ": " + errnoMessage());
  struct stat info;
  if (fstat(fd, &info) != 0 || info.st_size > kMaxFileBytes) {
    close(fd);
    return Status::error(path + " is too large or cannot be examined");
  }
  std::string content;
  content.reserve(size_t(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t got = read(fd, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      Status error =
          Status::error("cannot read " + path + ": " + errnoMessage());
      close(fd);
      return error;
    }
    if (got == 0)
      break;
    content.append(chunk, size_t(got));
    if (off_t(content.size()) > kMaxFileBytes) {
      close(fd);
      return Status::error(path + " is too large");
    }
  }
  close(fd);
  return content;
}

/// The checksum line's value: SHA-256 of the header lines before it and the
/// image, so that a changed launch line is caught like a changed image byte.
std::string contentChecksum(std::string_view header, std::string_view image) {
  Sha256 hash;
  hash.update(header);
  hash.update(image);
  return hash.hexDigest();
}

/// Why `name` cannot be a kernel's name in a file, or "".
std::string badKernelName(const std::string &name) {
  if (name.empty() || name.find_first_of(" \t\r\n") != std::string::npos)
    return "kernel cache: invalid kernel name '" + name + "'";
  return "";
}
} // namespace

std::string KernelCache::serialize(const std::string &key,
                                   const CachedKernel &kernel) {
  std::string out;
  out.reserve(kernel.image.size() + 2048);
  out += std::string(kMagic) + " " + std::to_string(kFormatVersion) + "\n";
  out += "key " + key + "\n";
  out += "chip " + kernel.chip + "\n";
  out += "kernels " + std::to_string(kernel.kernels.size()) + "\n";
  for (const KernelAbi &abi : kernel.kernels)
    out += "kernel " + abi.name + "\nabi " + printKernelAbi(abi) + "\n";
  out += std::string("format ") +
         (kernel.format == CachedKernel::Format::PTX ? "ptx" : "cubin") + "\n";
  out += "size " + std::to_string(kernel.image.size()) + "\n";
  out += "sha256 " + contentChecksum(out, kernel.image) + "\n";
  out += "end\n";
  out += kernel.image;
  return out;
}

Expected<CachedKernel> KernelCache::deserialize(const std::string &key,
                                                std::string_view content) {
  HeaderReader reader(content);
  Expected<std::string> version = reader.field(kMagic);
  if (version.failed())
    return Status::error("not an FA kernel file");
  if (*version != std::to_string(kFormatVersion))
    return Status::error("format version " + *version + ", expected " +
                         std::to_string(kFormatVersion));

  CachedKernel kernel;
  Expected<std::string> fileKey = reader.field("key");
  if (fileKey.failed())
    return fileKey.getStatus();
  if (*fileKey != key)
    return Status::error("the file holds key " + *fileKey);

  Expected<std::string> chip = reader.field("chip");
  if (chip.failed())
    return chip.getStatus();
  kernel.chip = chip.take();

  Expected<uint64_t> count = reader.number("kernels");
  if (count.failed())
    return count.getStatus();
  if (*count < 1 || *count > kMaxKernels)
    return Status::error("bad kernels count");
  for (uint64_t i = 0; i < *count; ++i) {
    Expected<std::string> name = reader.field("kernel");
    if (name.failed())
      return name.getStatus();
    std::string bad = badKernelName(*name);
    if (!bad.empty())
      return Status::error(bad);
    Expected<std::string> text = reader.field("abi");
    if (text.failed())
      return text.getStatus();
    Expected<KernelAbi> abi = parseKernelAbi(*text);
    if (abi.failed())
      return Status::error("kernel " + *name + ": " + abi.getMessage());
    abi->name = name.take();
    kernel.kernels.push_back(abi.take());
  }

  Expected<std::string> format = reader.field("format");
  if (format.failed())
    return format.getStatus();
  if (*format == "ptx")
    kernel.format = CachedKernel::Format::PTX;
  else if (*format == "cubin")
    kernel.format = CachedKernel::Format::Cubin;
  else
    return Status::error("unknown format '" + *format + "'");

  Expected<uint64_t> size = reader.number("size");
  if (size.failed())
    return size.getStatus();
  // The header lines the checksum covers: everything before its own line.
  std::string_view header =
      content.substr(0, content.size() - reader.remaining().size());
  Expected<std::string> checksum = reader.field("sha256");
  if (checksum.failed())
    return checksum.getStatus();
  Expected<std::string> end = reader.field("end");
  if (end.failed())
    return end.getStatus();

  std::string_view image = reader.remaining();
  if (image.size() != *size)
    return Status::error("the image has " + std::to_string(image.size()) +
                         " bytes, the header says " + std::to_string(*size));
  if (contentChecksum(header, image) != *checksum)
    return Status::error("the file does not match its checksum");
  kernel.image = std::string(image);
  return kernel;
}

//===----------------------------------------------------------------------===//
// KernelCache
//===----------------------------------------------------------------------===//

KernelCache::KernelCache(std::string dir) : directory(std::move(dir)) {
  while (directory.size() > 1 && directory.back() == '/')
    directory.pop_back();
}

std::string KernelCache::getDefaultDirectory() {
  if (const char *dir = std::getenv("FA_CACHE_DIR"); dir && *dir)
    return dir;
  // The XDG base directory spec: relative paths are invalid and ignored.
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/fa";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/fa";
  std::vector<char> scratch(16384);
  struct passwd entry;
  struct passwd *found = nullptr;
  if (getpwuid_r(getuid(), &entry, scratch.data(), scratch.size(), &found) ==
          0 &&
      found && found->pw_dir && *found->pw_dir)
    return std::string(found->pw_dir) + "/.cache/fa";
  return "";
}

KernelCache &KernelCache::global() {
  // Never destroyed: other static objects may use it while the process exits.
  static KernelCache *cache = new KernelCache(getDefaultDirectory());
  return *cache;
}

std::string KernelCache::getPath(const std::string &key) const {
  return directory + "/" + key + kSuffix;
}

std::shared_ptr<const CachedKernel>
KernelCache::lookup(const std::string &key) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memory.find(key);
    if (it != memory.end()) {
      ++memoryHits;
      return it->second;
    }
  }
  if (directory.empty() || !isValidKey(key)) {
    ++misses;
    return nullptr;
  }
  Expected<std::string> content = readFile(getPath(key));
  if (content.failed()) {
    ++misses;
    return nullptr;
  }
  Expected<CachedKernel> kernel = deserialize(key, *content);
  if (kernel.failed()) {
    ++misses;
    return nullptr;
  }
  auto shared = std::make_shared<const CachedKernel>(kernel.take());
  std::lock_guard<std::mutex> lock(mutex);
  ++diskHits;
  // Another thread may have filled the entry meanwhile: keep one.
  return memory.emplace(key, std::move(shared)).first->second;
}

Status KernelCache::store(const std::string &key, CachedKernel kernel) {
  if (!isValidKey(key))
    return Status::error("kernel cache: invalid key '" + key +
                         "' (expected 64 lowercase hex digits)");
  if (kernel.kernels.empty() || kernel.kernels.size() > kMaxKernels)
    return Status::error("kernel cache: an image holds 1 to " +
                         std::to_string(kMaxKernels) + " kernels, not " +
                         std::to_string(kernel.kernels.size()));
  for (const KernelAbi &abi : kernel.kernels) {
    std::string bad = badKernelName(abi.name);
    if (!bad.empty())
      return Status::error(bad);
    Status status = verifyKernelAbi(abi);
    if (status.failed())
      return Status::error("kernel cache: kernel " + abi.name + ": " +
                           status.getMessage());
  }
  if (Status status = checkField("chip", kernel.chip); status.failed())
    return status;

  auto shared = std::make_shared<const CachedKernel>(std::move(kernel));
  {
    std::lock_guard<std::mutex> lock(mutex);
    memory[key] = shared;
  }
  ++stores;
  Status status = writeFile(key, *shared);
  if (status.failed())
    ++writeErrors;
  return status;
}

Status KernelCache::writeFile(const std::string &key,
                              const CachedKernel &kernel) {
  if (directory.empty())
    return Status::success();
  Status status = makeDirectories(directory);
  if (status.failed())
    return status;

  std::string path = getPath(key);
  // Hidden, and in the same directory so that rename() is atomic.
  std::string temporary = directory + "/." + key + ".tmp.XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0)
    return Status::error("kernel cache: cannot create a temporary file in " +
                         directory + ": " + errnoMessage());
  // mkstemp makes the file private (0600); cache entries are plain files.
  (void)fchmod(fd, 0644);
  status = writeAll(fd, serialize(key, kernel), temporary);
  if (status.ok() && fsync(fd) != 0)
    status = Status::error("kernel cache: cannot fsync " + temporary + ": " +
                           errnoMessage());
  if (close(fd) != 0 && status.ok())
    status = Status::error("kernel cache: cannot close " + temporary + ": " +
                           errnoMessage());
  if (status.ok() && rename(temporary.c_str(), path.c_str()) != 0)
    status = Status::error("kernel cache: cannot rename " + temporary + " to " +
                           path + ": " + errnoMessage());
  if (status.failed()) {
    unlink(temporary.c_str());
    return status;
  }
  // Make the rename itself durable (best effort).
  int dirFd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    (void)fsync(dirFd);
    close(dirFd);
  }
  return Status::success();
}

Expected<std::shared_ptr<const CachedKernel>> KernelCache::getOrCompile(
    const std::string &key,
    const std::function<Expected<CachedKernel>()> &compile) {
  if (std::shared_ptr<const CachedKernel> hit = lookup(key))
    return hit;
  Expected<CachedKernel> kernel = compile();
  if (kernel.failed())
    return kernel.getStatus();
  // A file that cannot be written costs the next process a compilation, no
  // more; the kernel is in memory either way, unless store() refused it.
  Status status = store(key, kernel.take());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = memory.find(key);
  if (it == memory.end())
    return status.failed() ? status
                           : Status::error("kernel cache: lost entry " + key);
  return it->second;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex);
  memory.clear();
}

KernelCache::Stats KernelCache::getStats() const {
  Stats stats;
  stats.memoryHits = memoryHits;
  stats.diskHits = diskHits;
  stats.misses = misses;
  stats.stores = stores;
  stats.writeErrors = writeErrors;
  return stats;
}
