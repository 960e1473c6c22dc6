//===- Version.h - FA's version ---------------------------------*- C++ -*-===//
//
// One place for the version: fa::version() returns it, the kernel cache keys
// on it, pyproject.toml reads it.
//
//===----------------------------------------------------------------------===//

#ifndef FA_VERSION_H
#define FA_VERSION_H

#define FA_VERSION "0.1.0"

#endif // FA_VERSION_H
