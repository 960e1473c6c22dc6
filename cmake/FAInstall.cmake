# `cmake --install <build> --prefix P`: FA as a C++ package.
#
#   P/include/fa/fa.h           the public API (no MLIR or LLVM types)
#   P/lib/libfa.so              MLIR/LLVM inside, exports fa:: symbols only
#   P/bin/fa-opt, P/bin/fa-jit  the drivers (MLIR/LLVM linked statically)
#   P/lib/cmake/FA/             FAConfig.cmake, FAConfigVersion.cmake and the
#                               imported target FA::fa
#
# Nothing else: the static libraries and internal headers stay in the build
# tree (LLVM_INSTALL_TOOLCHAIN_ONLY, set before lib/, keeps add_mlir_library
# from installing them).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS ${PROJECT_SOURCE_DIR}/include/fa/Version.h fa_version_line
  REGEX "^#define FA_VERSION \"[0-9.]+\"")
string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" FA_PACKAGE_VERSION
  "${fa_version_line}")

# The same name in the tree as installed, so examples/cpp builds either way.
add_library(FA::fa ALIAS fa)
target_include_directories(fa INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(fa INTERFACE cxx_std_17)

install(TARGETS fa EXPORT FATargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/fa/fa.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fa)
install(TARGETS fa-opt fa-jit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(fa_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/FA)
install(EXPORT FATargets NAMESPACE FA:: DESTINATION ${fa_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/FAConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/FAConfig.cmake
  INSTALL_DESTINATION ${fa_cmake_dir})
# 0.x: a minor release may break the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/FAConfigVersion.cmake
  VERSION ${FA_PACKAGE_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/FAConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/FAConfigVersion.cmake
  DESTINATION ${fa_cmake_dir})
