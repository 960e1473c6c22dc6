#!/usr/bin/env bash
# Installs FA from a build tree into a temporary prefix and uses it the way a
# C++ user would: the prefix holds exactly the package's files, examples/cpp
# configures (find_package(FA CONFIG)) and builds out of tree against it, and
# the program, fa-jit and fa-opt run from there (host CPU).
set -euo pipefail
build=$(cd "${1:?usage: check-install.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fa-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() {
  echo "check-install: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }

# The package and nothing else: no static libraries, no internal headers.
# Directories as GNUInstallDirs chose them (lib, or lib/<multiarch> where the
# build's prefix is /usr).
dir() {
  sed -n "s|^CMAKE_INSTALL_$1:PATH=||p" "$build/CMakeCache.txt"
}
bin=$(dir BINDIR) libdir=$(dir LIBDIR) include=$(dir INCLUDEDIR)
if [ -z "$bin" ] || [ -z "$libdir" ] || [ -z "$include" ]; then
  fail "no CMAKE_INSTALL_BINDIR, LIBDIR or INCLUDEDIR in $build/CMakeCache.txt"
fi
# The exported targets' file per configuration, e.g. FATargets-release.cmake.
config=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt" |
  tr '[:upper:]' '[:lower:]')
expected=$(
  LC_ALL=C sort <<LIST
$bin/fa-jit
$bin/fa-opt
$include/fa/fa.h
$libdir/cmake/FA/FAConfig.cmake
$libdir/cmake/FA/FAConfigVersion.cmake
$libdir/cmake/FA/FATargets-${config:-noconfig}.cmake
$libdir/cmake/FA/FATargets.cmake
$libdir/libfa.so
LIST
)
files=$(cd "$prefix" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
[ "$files" = "$expected" ] ||
  fail "installed files differ from the package's:
$(diff <(echo "$expected") <(echo "$files") || true)"
# fa.h includes the standard library only.
others=$(grep -E '^#[[:space:]]*include' "$prefix/$include/fa/fa.h" |
  grep -vE '^#[[:space:]]*include <[a-z_]+>$' || true)
[ -z "$others" ] || fail "fa.h includes more than the standard library: $others"

# examples/cpp, out of tree, against the prefix only.
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$src/examples/cpp" -B "$tmp/example" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log" >&2; fail "configuring examples/cpp failed"; }
grep -q "$prefix/$include" "$tmp/example/compile_commands.json" ||
  fail "the example does not compile against $prefix/$include"
if grep -q -- "-I$src/include" "$tmp/example/compile_commands.json"; then
  fail "the example compiles against the source tree's headers"
fi
cmake --build "$tmp/example" >"$tmp/build.log" 2>&1 ||
  { cat "$tmp/build.log" >&2; fail "building examples/cpp failed"; }
lib=$(ldd "$tmp/example/fa-example-cpp" | awk '$1 == "libfa.so" {print $3}')
[ "$lib" = "$prefix/$libdir/libfa.so" ] ||
  fail "the example loads libfa.so from '$lib', not $prefix/$libdir"

version=$(sed -n 's/^#define FA_VERSION "\(.*\)"$/\1/p' "$src/include/fa/Version.h")
out=$("$tmp/example/fa-example-cpp") || fail "fa-example-cpp failed:
$out"
# Exact lines; the errors' digits aside (the program fails above 1e-5).
expected_out="compiled fa $version kernel for host
B=2 Hq=8 Hkv=2 N=100: last row rel_err=E
B=1 Hq=4 Hkv=4 N=333: last row rel_err=E
backward: dV column sums rel_err=E
rejected: fa::Kernel::forward: k must have dtype f32, got f16"
[ "$(echo "$out" | sed -E 's/rel_err=[0-9.e+-]+$/rel_err=E/')" = "$expected_out" ] ||
  fail "unexpected output of fa-example-cpp:
$out"

# The installed drivers run from the prefix.
"$prefix/$bin/fa-jit" --shape=1,2,1,20,24,16 --dtype=f32 --causal=bottom-right \
  --check >"$tmp/fa-jit.log" 2>&1 ||
  { cat "$tmp/fa-jit.log" >&2; fail "installed fa-jit failed"; }
"$prefix/$bin/fa-opt" "$src/examples/causal_gqa.mlir" -fa-decompose \
  >"$tmp/fa-opt.log" 2>&1 ||
  { cat "$tmp/fa-opt.log" >&2; fail "installed fa-opt failed"; }
grep -q 'fa.attention' "$tmp/fa-opt.log" &&
  fail "fa-opt -fa-decompose left an fa.attention"
echo "check-install: $prefix holds the package; examples/cpp built against" \
  "it out of tree and ran:"
echo "$out"
