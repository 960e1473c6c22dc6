#!/usr/bin/env bash
# Builds FA (scripts/build.sh) and packs what the GPU machine needs into one
# archive, .pack/fa-gpu.tar.xz (.pack/ is git-ignored), for scripts/gpu/run.sh
# to unpack and run there. See docs/runtime.md.
#
#   scripts/gpu/pack.sh              build, then pack
#   scripts/gpu/pack.sh --no-build   pack the build tree as it is
#
# Environment:
#   FA_BUILD_DIR         build tree (default build; scripts/build.sh uses it)
#   FA_PACK_OUT          archive path (default .pack/fa-gpu.tar.xz)
#   FA_PACK_LIMIT_MB     fail when the archive is larger (default 50)
#   FA_PACK_LIT_TOOLS=0  leave out lit, FileCheck, not, count, split-file,
#                        without which the lit step on the GPU machine skips
#   LLVM_TOOLS_DIR       where FileCheck & co. are (default
#                        /usr/lib/llvm-22/bin)
#
# The archive holds one folder, fa/:
#   bin/fa-opt, bin/fa-jit, lib/libfa.so   stripped
#   tests/                                 the GoogleTest binaries below
#   test/                                  lit sources, and lit.site.cfg.py.pack
#                                          (@FA_ROOT@ for run.sh to fill in)
#   tools/                                 lit, FileCheck, not, count,
#                                          split-file (and their libraries)
#   include/, python/, bench/, examples/,  sources, where present
#   pyproject.toml, README.md
#   MANIFEST.txt                           commit, build, every file's sha256
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

build_first=1
for arg in "$@"; do
  case $arg in
  --no-build) build_first=0 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "pack.sh: unknown argument '$arg' (try --help)" >&2
    exit 2
    ;;
  esac
done

build=${FA_BUILD_DIR:-build}
out=${FA_PACK_OUT:-.pack/fa-gpu.tar.xz}
limit_mb=${FA_PACK_LIMIT_MB:-50}
llvm_tools=${LLVM_TOOLS_DIR:-/usr/lib/llvm-22/bin}

# The GoogleTest binaries that matter on the GPU machine, as paths in the build
# tree. Each goes to fa/tests/; run.sh runs each one it finds (add a step
# there for a new one).
gtests=(
  unittests/Runtime/FARuntimeTests          # the CUDA runtime on the real driver
  unittests/API/FAAPITests                  # the public C++ API through libfa.so
  unittests/Compiler/FACudaBackwardTests    # the GPU backward against the reference
  unittests/API/FAConcurrencyTests          # 16 threads at once; damaged cache files
)
# Files the tests need beside them.
gtest_files=(
  unittests/Runtime/libfa-fake-cuda.so # FARuntimeTests' stand-in driver
)
# What to build: the tools, libfa.so and the tests above.
targets=(fa-opt fa-jit fa FARuntimeTests FAFakeCuda FAAPITests FACudaBackwardTests
  FAConcurrencyTests)

say() { echo "pack.sh: $*"; }
die() {
  echo "pack.sh: error: $*" >&2
  exit 1
}

for tool in strip tar xz sha256sum; do
  command -v "$tool" >/dev/null || die "'$tool' is not installed"
done

if [ "$build_first" = 1 ]; then
  say "building ${targets[*]} in $build (scripts/build.sh)"
  FA_BUILD_DIR=$build scripts/build.sh "${targets[@]}"
fi
[ -d "$build" ] || die "no build tree at $build (run without --no-build)"
build_abs=$(cd "$build" && pwd)

stage_root=$(mktemp -d "${TMPDIR:-/tmp}/fa-pack.XXXXXX")
trap 'rm -rf "$stage_root"' EXIT
stage=$stage_root/fa
mkdir -p "$stage"/{bin,lib,tests}

need() { [ -f "$build/$1" ] || die "$build/$1 is missing (build it: scripts/build.sh ${2:-})"; }

# Binaries, stripped.
need bin/fa-opt fa-opt
need bin/fa-jit fa-jit
need lib/libfa.so fa
strip --strip-all -o "$stage/bin/fa-opt" "$build/bin/fa-opt"
strip --strip-all -o "$stage/bin/fa-jit" "$build/bin/fa-jit"
strip --strip-unneeded -o "$stage/lib/libfa.so" "$build/lib/libfa.so"
packed_tests=()
for t in "${gtests[@]}" "${gtest_files[@]}"; do
  if [ -f "$build/$t" ]; then
    strip --strip-unneeded -o "$stage/tests/$(basename "$t")" "$build/$t"
    if [[ " ${gtests[*]} " == *" $t "* ]]; then
      packed_tests+=("$(basename "$t")")
    fi
  else
    say "warning: $build/$t not built; left out"
  fi
done
[ -f "$stage/tests/FARuntimeTests" ] ||
  die "FARuntimeTests is missing from $build (build it: scripts/build.sh FARuntimeTests FAFakeCuda)"

# Sources the GPU machine needs: lit tests, headers (the Python extension is
# compiled there against libfa.so), Python, benchmarks, examples.
for dir in test include python bench examples; do
  if [ -d "$dir" ]; then
    tar -cf - --exclude=__pycache__ --exclude='*.pyc' --exclude=.pytest_cache \
      "$dir" | tar -xf - -C "$stage"
  fi
done
# README.md: python/tests/test_readme.py runs its example.
for file in pyproject.toml README.md; do
  if [ -f "$file" ]; then cp "$file" "$stage/"; fi
done

# lit's site configuration, relocated: paths into the build tree, the source
# tree and LLVM's tools become @FA_ROOT@/..., which run.sh fills in.
if [ -f "$build/test/lit.site.cfg.py" ]; then
  sed -e "s|$build_abs/bin|@FA_ROOT@/bin|g" \
    -e "s|$build_abs|@FA_ROOT@/build|g" \
    -e "s|$root|@FA_ROOT@|g" \
    -e "s|$llvm_tools|@FA_ROOT@/tools/bin|g" \
    "$build/test/lit.site.cfg.py" >"$stage/test/lit.site.cfg.py.pack"
else
  say "warning: $build/test/lit.site.cfg.py not found; the lit step will skip"
fi

# lit and the LLVM tools lit tests use (no LLVM on the GPU machine), with the
# shared libraries they need beyond what Ubuntu has.
if [ "${FA_PACK_LIT_TOOLS:-1}" != 0 ]; then
  lit_src=$(dirname "$llvm_tools")/utils/lit/lit
  [ -d "$lit_src" ] || lit_src=$(python3 -c 'import lit, os; print(os.path.dirname(lit.__file__))' 2>/dev/null || true)
  if [ -d "$lit_src" ] && [ -x "$llvm_tools/FileCheck" ]; then
    mkdir -p "$stage/tools/bin" "$stage/tools/lib" "$stage/tools/lit"
    tar -cf - -C "$(dirname "$lit_src")" --exclude=__pycache__ --exclude='*.pyc' \
      --exclude=ExampleTests.ObjDir lit | tar -xf - -C "$stage/tools/lit"
    cat >"$stage/tools/lit/lit.py" <<'EOF'
#!/usr/bin/env python3
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lit.main import main

if __name__ == "__main__":
    main()
EOF
    chmod +x "$stage/tools/lit/lit.py"
    for tool in FileCheck not count split-file; do
      if [ -x "$llvm_tools/$tool" ]; then
        strip --strip-all -o "$stage/tools/bin/$tool" "$llvm_tools/$tool"
      fi
    done
    # Shared libraries of those tools that are not part of every Ubuntu, in
    # tools/lib (their RUNPATH is $ORIGIN/../lib). Debian's LLVM tools name
    # libz3.so.4 (23 MB) but use none of its symbols: such a library is
    # replaced by an empty one with its soname, which satisfies the loader.
    undefined=$(nm -D --undefined-only "$stage"/tools/bin/* 2>/dev/null |
      awk 'NF { print $NF }' | sed 's/@.*//' | sort -u)
    ldd "$stage"/tools/bin/* 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
      { grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libz|libzstd|libpthread|libdl|librt|ld-linux[^/]*)\.so' || true; } |
      while read -r lib; do
        name=$(basename "$lib")
        used=$(comm -12 <(echo "$undefined") <(nm -D --defined-only "$lib" 2>/dev/null |
          awk 'NF { print $NF }' | sed 's/@.*//' | sort -u) | head -1)
        if [ -z "$used" ] && command -v cc >/dev/null &&
          echo 'int fa_pack_stub;' | cc -shared -x c - -o "$stage/tools/lib/$name" -Wl,-soname,"$name"; then
          say "tools/lib/$name: an empty stand-in (the tools use none of its symbols)"
        else
          cp -L "$lib" "$stage/tools/lib/"
        fi
      done
  else
    say "warning: lit or FileCheck not found (LLVM_TOOLS_DIR=$llvm_tools); the lit step will skip"
  fi
fi

# The manifest.
{
  echo "FA GPU pack"
  echo "created: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(grep -m1 '^PRETTY_NAME=' /etc/os-release 2>/dev/null | cut -d= -f2 | tr -d '"'))"
  if git rev-parse --git-dir >/dev/null 2>&1; then
    dirty=""
    if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
      dirty=" (with uncommitted changes)"
    fi
    echo "commit: $(git rev-parse HEAD)$dirty"
    echo "subject: $(git log -1 --format=%s)"
  fi
  echo "build: $build_abs ($(grep -m1 '^CMAKE_BUILD_TYPE' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2))"
  echo "compiler: $(c++ --version 2>/dev/null | head -1)"
  echo "gtests: ${packed_tests[*]}"
  echo
  echo "files (bytes sha256 path):"
  (cd "$stage_root" && find fa -type f ! -path 'fa/tools/lit/*' ! -path 'fa/test/*' \
    ! -path 'fa/include/*' ! -path 'fa/python/*' ! -path 'fa/examples/*' ! -path 'fa/bench/*' \
    -printf '%s %p\n' | sort -k2 | while read -r size path; do
    echo "$size $(sha256sum "$path" | cut -d' ' -f1) $path"
  done)
  echo "sources: $(cd "$stage_root" && find fa/test fa/include fa/python fa/bench fa/examples fa/tools/lit \
    -type f 2>/dev/null | wc -l) files under test/ include/ python/ bench/ examples/ tools/lit/"
} >"$stage/MANIFEST.txt"

# Compress. The three big binaries go first and together: they share most of
# their code (MLIR and LLVM), and with a dictionary larger than all three xz
# stores that code once (about 38 MB instead of 57 MB with plain -9).
mkdir -p "$(dirname "$out")"
list=$stage_root/files
{
  echo fa/bin/fa-jit
  echo fa/lib/libfa.so
  echo fa/bin/fa-opt
  (cd "$stage_root" && find fa ! -type d ! -path fa/bin/fa-jit ! -path fa/lib/libfa.so \
    ! -path fa/bin/fa-opt | sort)
} >"$list"
say "compressing $(du -sh "$stage" | cut -f1) with xz -9 (a few minutes on 2 cores)"
tmp_out=$out.tmp.$$
tar -cf - -C "$stage_root" --owner=0 --group=0 --numeric-owner -T "$list" |
  xz -9 -T2 --lzma2=preset=9,dict=384MiB >"$tmp_out"
mv "$tmp_out" "$out"

bytes=$(stat -c %s "$out")
mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
say "wrote $out ($mb MB): fa-opt, fa-jit, libfa.so, tests: ${packed_tests[*]}"
if [ "$bytes" -gt $((limit_mb * 1000000)) ]; then
  die "$out is $mb MB, over the $limit_mb MB limit (FA_PACK_LIT_TOOLS=0 leaves out ~1 MB of lit tools; the binaries are the rest)"
fi
say "next: the device tool, carry [\".pack\"], command: scripts/gpu/run.sh"
