//===- Files.h - File helpers shared by FA's unit tests ---------*- C++ -*-===//
//
// Whole-file reads and writes and directory listings, for the tests that
// inspect and damage kernel-cache entries.
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_FILES_H
#define FA_UNITTESTS_FILES_H

#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fa::testing {

/// The names in directory `path` but "." and "..", in readdir's order.
inline std::vector<std::string> listDirectory(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (struct dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    closedir(dir);
  }
  return names;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void writeFile(const std::string &path, const std::string &content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

} // namespace fa::testing

#endif // FA_UNITTESTS_FILES_H
